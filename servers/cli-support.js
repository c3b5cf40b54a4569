'use strict'

/**
 * What the CLIs in servers/ share: a yargs 17 parser whose failures become a PolistesError, a
 * runner that turns any error into ONE line on stderr and exit code 2 (no stack trace), and a
 * clean stop on signals.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../src/common/errors')

/**
 * A strict yargs parser with `--help`, no `--version`, and failures thrown as PolistesError.
 *
 * @param {string[]} argv arguments without `node` and the script (`process.argv.slice(2)`)
 * @param {string} description one line shown by `--help`
 * @returns {import('yargs').Argv} the parser, to add options to
 */
function yargsFor (argv, description) {
  // loaded here: backend-options.js (used in-process by every fleet) needs only the number parsers below
  const yargs = require('yargs/yargs')
  return yargs(argv)
    .usage(`$0 [options]\n\n${description}`)
    .strict()
    .version(false)
    .help()
    .wrap(null)
    .fail((message, err) => {
      throw new ERR_POLISTES_BAD_OPTION(message || (err && err.message) || 'bad arguments')
    })
}

function bounds (min, max) {
  return max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`
}

/** Parse a numeric option; `kind` says which values count and how the message names them. */
function parseNumeric (name, text, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}, kind) {
  const raw = String(text).trim()
  const value = Number(raw)
  if (raw === '' || !kind.test(value) || value < min || value > max) {
    throw new ERR_POLISTES_BAD_OPTION(`--${name} must be ${kind.name} ${bounds(min, max)}, got "${text}"`)
  }
  return value
}

const INTEGER = { name: 'an integer', test: Number.isInteger }
const FINITE = { name: 'a number', test: Number.isFinite }

/**
 * Parse an integer option given as text.
 *
 * @param {string} name option name, for the message
 * @param {string|number} text the raw value
 * @param {{ min?: number, max?: number }} [range] inclusive bounds (default 0 .. MAX_SAFE_INTEGER)
 * @returns {number} the integer
 */
function intOption (name, text, range) {
  return parseNumeric(name, text, range, INTEGER)
}

/**
 * Parse a number option given as text.
 *
 * @param {string} name option name, for the message
 * @param {string|number} text the raw value
 * @param {{ min?: number, max?: number }} [range] inclusive bounds (default 0 .. MAX_SAFE_INTEGER)
 * @returns {number} the number
 */
function numberOption (name, text, range) {
  return parseNumeric(name, text, range, FINITE)
}

/**
 * Parse a comma-separated list, each item with `parseItem`. An empty string is an empty list.
 *
 * @template T
 * @param {string} name option name, for the message
 * @param {string|number} text the raw value, e.g. "10,15,20"
 * @param {(name: string, item: string) => T} parseItem parser of one item
 * @returns {T[]} the items
 */
function listOption (name, text, parseItem) {
  const raw = String(text).trim()
  if (raw === '') return []
  return raw.split(',').map((item) => parseItem(name, item))
}

/**
 * Run a CLI's main function: on any error print `<name>: <message>` on one line to stderr and
 * exit with the error's `exitCode` (2 for PolistesError and for anything unexpected).
 *
 * @param {string} name program name printed before the message
 * @param {(argv: string[]) => Promise<void>} main the program
 * @returns {Promise<void>} settles when main settles
 */
async function runCli (name, main) {
  try {
    await main(process.argv.slice(2))
  } catch (err) {
    const message = String((err && err.message) || err).split('\n')[0]
    process.stderr.write(`${name}: ${message}\n`)
    process.exitCode = (err && err.exitCode) || 2
    // Leave nothing running: a half-started server must not keep the process alive.
    setImmediate(() => process.exit(process.exitCode))
  }
}

/**
 * Stop a server CLI cleanly: on SIGINT, SIGTERM or, under a parent process, the parent's
 * disconnect (so that no orphan lingers), call `close` once, then exit 0.
 *
 * @param {() => Promise<void>} close stops what the CLI started
 */
function exitOnStop (close) {
  let stopping = false
  const stop = () => {
    if (stopping) return
    stopping = true
    close().then(() => process.exit(0))
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  if (process.send) process.on('disconnect', stop)
}

module.exports = { yargsFor, intOption, numberOption, listOption, runCli, exitOnStop }
