'use strict'

/**
 * The command line's options: the flags of the option table (src/config/options.js: each with its
 * config key, a dotted path such as `healthCheck.rise`, its --help group and text) and the few flags
 * that only steer the CLI. The CLI builds yargs from this list, reads the given flags into config
 * keys with it, and names a flag in an error through it (`flagNames`: key → `--flag`), so that a bad
 * value given as a flag is reported as that flag and the same value from a config file as its key there.
 */

const path = require('node:path')
const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { OPTIONS: TABLE } = require('../config/options')

/** The --help groups, in the order they are shown; `help` and `version` go in the last one. */
const GROUPS = {
  balancing: 'Balancing:',
  backends: 'Backends:',
  health: 'Health:',
  front: 'Front (client side):',
  observability: 'Observability:',
  fleet: 'Embedded fleet (without --backends):',
  general: 'General:'
}

/**
 * A comma list of HTTP statuses and/or `timeout` (`--retry-on 503,timeout`); the range is checked
 * with the options.
 * @param {string} flag for the message
 * @param {unknown} value
 * @returns {Array<number | 'timeout'>}
 */
function parseRetryOn (flag, value) {
  const parts = String(value).split(',').map((s) => s.trim())
  if (!parts.every((p) => /^\d{3}$/.test(p) || p === 'timeout')) {
    throw new ERR_POLISTES_BAD_OPTION(`--${flag} must be a comma list of statuses and/or timeout, e.g. 503,timeout, ` +
      `got "${value}"`)
  }
  return parts.map((p) => (p === 'timeout' ? p : Number(p)))
}

/**
 * A comma list (`--trusted-proxies 10.0.0.0/8,::1/128`); each item is checked with the options.
 * @param {string} flag
 * @param {unknown} value
 * @returns {string[]} none for an empty value
 */
function parseList (flag, value) {
  const text = String(value).trim()
  return text === '' ? [] : text.split(',').map((s) => s.trim())
}

/**
 * A number, or a comma list of numbers (`--fleet-workers 2,3,4`); the range is checked with the options.
 * @param {string} flag for the message
 * @param {unknown} value
 * @returns {number | number[]} a number for one item, else the list
 */
function parseNumberOrList (flag, value) {
  const parts = String(value).split(',').map((s) => s.trim())
  if (!parts.every((p) => p !== '' && Number.isFinite(Number(p)))) {
    throw new ERR_POLISTES_BAD_OPTION(`--${flag} must be a number or a comma list of numbers, e.g. 2,3, got "${value}"`)
  }
  const numbers = parts.map(Number)
  return numbers.length === 1 ? numbers[0] : numbers
}

/**
 * @param {string} flag for the message
 * @param {unknown} value
 */
function parseJson (flag, value) {
  try {
    return JSON.parse(value)
  } catch (err) {
    throw new ERR_POLISTES_BAD_OPTION(`--${flag} is not valid JSON: ${err.message}`)
  }
}

/** The option table's `flag.parse` names: raw value → config value. */
const PARSERS = {
  json: parseJson,
  list: parseList,
  retryOn: parseRetryOn,
  numberOrList: parseNumberOrList,
  emptyIsNull: (flag, value) => (value === '' ? null : value)
}

/**
 * The yargs option of an entry of the option table: its default shown in --help when it is a
 * number, a string or a boolean (the others are told in the text).
 * @param {import('../config/options').OptionEntry} o
 */
function fromTable (o) {
  const { name, group, type, alias, parse } = o.flag
  const shown = ['number', 'string', 'boolean'].includes(typeof o.default)
  return {
    flag: name,
    key: o.key,
    group,
    ...(alias ? { alias } : {}),
    type,
    ...(parse ? { parse: PARSERS[parse] } : {}),
    describe: o.doc,
    ...(shown ? { defaultDescription: String(o.default) } : {})
  }
}

/** The flags that steer the CLI only (no config key), by --help group. */
const CLI_ONLY = {
  observability: [
    {
      flag: 'log-level',
      group: 'observability',
      type: 'string',
      choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
      describe: 'log level (debug logs every request)'
    },
    {
      flag: 'log-format',
      group: 'observability',
      type: 'string',
      choices: ['pretty', 'json'],
      describe: 'log format',
      defaultDescription: 'pretty on a terminal when pino-pretty is installed, json otherwise'
    }
  ],
  general: [
    {
      flag: 'config',
      group: 'general',
      alias: 'c',
      type: 'string',
      describe: 'JSON config file ({ address, strategy, backends, ... }); flags override it'
    },
    {
      flag: 'watch',
      group: 'general',
      type: 'boolean',
      describe: 'reload when the --config file changes (SIGHUP always reloads)'
    }
  ]
}

/**
 * Every flag: `flag` (yargs key), `key` (config key path; none: CLI only), `group`, `parse` (raw
 * value → config value; numbers are checked to be numbers), and the yargs settings (type, alias,
 * describe, defaultDescription, choices, default); group by group, in the table's order.
 * @type {Array<{ flag: string, key?: string, group: keyof GROUPS, type: 'string' | 'number' | 'boolean', parse?: (flag:
 * string, value: unknown) => unknown, [yargs: string]: unknown }>}
 */
const OPTIONS = Object.keys(GROUPS).flatMap((group) => [
  ...TABLE.filter((o) => o.flag && o.flag.group === group).map(fromTable),
  ...(CLI_ONLY[group] || [])
])

/** Examples shown by --help. */
const EXAMPLES = [
  ['$0', 'the embedded fleet of seven cache-warming backends on 127.0.0.1:9101-9107, balanced by wasp, on :8080'],
  ['$0 -a round-robin -b http://10.0.0.1:80,http://10.0.0.2:80#w=2', 'round-robin over two backends, the second with twice the share'],
  ['$0 -b https://app1:8443,https://app2:8443 --upstream-ca ca.pem --health-check /health', 'https:// backends, verified against ca.pem, actively health-checked'],
  ['$0 --config polistes.json --watch', 'settings from a file, reloaded when it changes (flags override it)']
]

/** Where every setting, flag and config key is described: the file shipped in the package. */
const DOCS_FILE = path.resolve(__dirname, '..', '..', 'docs', 'configuration.md')

/** config key path → `--flag`, for every option that sets a config key. */
const flagNames = Object.freeze(Object.fromEntries(OPTIONS.filter((o) => o.key).map((o) => [o.key, `--${o.flag}`])))

/**
 * The config keys the given flags set, read from yargs' result: numbers checked to be numbers, the
 * rest through the option's `parse`. Nested keys (`healthCheck.rise`) become nested objects.
 * @param {Record<string, unknown>} argv yargs' result (dashed keys)
 * @returns {object} only the keys whose flag was given
 */
function flagsToConfig (argv) {
  const flags = {}
  for (const o of OPTIONS) {
    const raw = argv[o.flag]
    if (!o.key || raw === undefined) continue
    let value = raw
    if (o.parse) value = o.parse(o.flag, raw)
    else if (o.type === 'number' && (typeof raw !== 'number' || Number.isNaN(raw))) {
      throw new ERR_POLISTES_BAD_OPTION(`--${o.flag} must be a number`)
    }
    const parts = o.key.split('.')
    let at = flags
    for (const part of parts.slice(0, -1)) at = (at[part] ||= {})
    at[parts.at(-1)] = value
  }
  return flags
}

/**
 * The first option in `argv` that takes a value but was given none (`--port` last, `--port --host x`,
 * `--port=`): yargs would read it as nothing (a number), `''` (a string) or 0 (`--port=`).
 * Stops at `--`. Negative numbers count as values.
 * @param {string[]} argv
 * @returns {{ typed: string, flag: string } | undefined}
 */
function missingValue (argv) {
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]
    if (token === '--') return undefined
    const m = /^(--?)([^=]+)(=.*)?$/.exec(token)
    if (!m) continue
    const option = OPTIONS.find((o) => (m[1] === '--' ? o.flag === m[2] : o.alias === m[2]))
    if (!option || option.type === 'boolean') continue
    const value = m[3] !== undefined ? m[3].slice(1) : argv[i + 1]
    const isValue = value !== undefined && value !== '' && (!value.startsWith('-') || /^-\d/.test(value))
    if (!isValue) return { typed: `${m[1]}${m[2]}`, flag: `--${option.flag}` }
  }
  return undefined
}

/**
 * The names yargs' result holds that no option declares, each as the user typed it (`--bogus-flag`,
 * `-x`, `--no-colour`).
 * @param {Record<string, unknown>} argv yargs' result, with camel-case expansion off
 * @param {string[]} raw the arguments as given
 * @returns {string[]}
 */
function unknownFlags (argv, raw) {
  const known = new Set(['_', '$0', 'help', 'version'])
  for (const o of OPTIONS) {
    known.add(o.flag)
    if (o.alias) known.add(o.alias)
  }
  return Object.keys(argv).filter((k) => !known.has(k)).map((k) => {
    const typed = raw.find((t) => new RegExp(`^--?(?:no-)?${k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:=|$)`).test(t))
    return typed ? typed.split('=')[0] : `${k.length === 1 ? '-' : '--'}${k}`
  })
}

module.exports = { OPTIONS, GROUPS, EXAMPLES, DOCS_FILE, flagNames, flagsToConfig, missingValue, unknownFlags }
