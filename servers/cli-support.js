'use strict'

/**
 * What the CLIs in servers/ share: a yargs 17 parser whose failures become a PolistesError, and a
 * runner that turns any error into ONE line on stderr and exit code 2 (no stack trace).
 */

const yargs = require('yargs/yargs')
const { ERR_POLISTES_BAD_OPTION } = require('../src/errors')

/**
 * A strict yargs parser with `--help`, no `--version`, and failures thrown as PolistesError.
 *
 * @param {string[]} argv arguments without `node` and the script (`process.argv.slice(2)`)
 * @param {string} description one line shown by `--help`
 * @returns {import('yargs').Argv} the parser, to add options to
 */
function yargsFor (argv, description) {
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

/**
 * Parse an integer option given as text.
 *
 * @param {string} name option name, for the message
 * @param {string|number} text the raw value
 * @param {{ min?: number, max?: number }} [range] inclusive bounds
 * @returns {number} the integer
 */
function intOption (name, text, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}) {
  const value = Number(String(text).trim())
  if (String(text).trim() === '' || !Number.isInteger(value) || value < min || value > max) {
    throw new ERR_POLISTES_BAD_OPTION(`--${name} must be an integer ${bounds(min, max)}, got "${text}"`)
  }
  return value
}

/**
 * Parse a number option given as text.
 *
 * @param {string} name option name, for the message
 * @param {string|number} text the raw value
 * @param {{ min?: number, max?: number }} [range] inclusive bounds
 * @returns {number} the number
 */
function numberOption (name, text, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}) {
  const value = Number(String(text).trim())
  if (String(text).trim() === '' || !Number.isFinite(value) || value < min || value > max) {
    throw new ERR_POLISTES_BAD_OPTION(`--${name} must be a number ${bounds(min, max)}, got "${text}"`)
  }
  return value
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

module.exports = { yargsFor, intOption, numberOption, listOption, runCli }
