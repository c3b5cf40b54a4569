'use strict'

const fs = require('node:fs')
const path = require('node:path')
const {
  PolistesError,
  ERR_POLISTES_BAD_CONFIG,
  ERR_POLISTES_BAD_OPTION,
  ERR_POLISTES_UNKNOWN_ALGO
} = require('../common/errors')
const { DEFAULTS, validateOptions, checkMembers } = require('./defaults')
const { TOP_KEYS } = require('./options')
const { onOption, badOption } = require('../common/option-checks')
const { policyNames, createPolicy } = require('../policies')
const { parseBackends } = require('../pool/backend-spec')

/** Keys a config file reads its own way: the listen address (also `address`), the policy (also `strategy`), the
 * backends (also `receiver_addresses`), and the object options. */
const SHAPED_KEYS = ['host', 'port', 'algo', 'backends', 'healthCheck', 'fleet']
/** Keys a config file may hold: every option of the table; `address`, `strategy` and `receiver_addresses` are the
 * seed's shape. */
const FILE_KEYS = new Set(['address', 'strategy', 'receiver_addresses', ...TOP_KEYS])
/** Keys taken from a file as they are (validated with the flags' values in resolveConfig). */
const PLAIN_KEYS = TOP_KEYS.filter((key) => !SHAPED_KEYS.includes(key))
const FLEET_KEYS = new Set(Object.keys(DEFAULTS.fleet))

/**
 * Where a set of settings came from, kept on the object (not enumerable, so merging ignores it) for
 * error messages: a config file's settings carry `{ file, names }` (the path, and the name a key had
 * in the file when it differs, e.g. `strategy` for `algo`); the CLI's flags carry `{ flagNames }`
 * (config key → `--flag`).
 */
const ORIGIN = Symbol('polistes.config.origin')

/**
 * Tag the CLI's flags with their names, so that an error about a setting given as a flag names the
 * flag (`--timeout must be ...`), not the config key.
 * @param {object} flags config keys set by flags
 * @param {Record<string, string>} flagNames config key path → `--flag`, for every flag that sets one
 * @returns {object} `flags`
 */
function withFlagNames (flags, flagNames) {
  return Object.defineProperty(flags, ORIGIN, { value: { flagNames } })
}

/**
 * Read and validate a JSON config file into the normalized option names.
 * @param {string} file path
 * @returns {object} partial config
 * @throws {PolistesError} ERR_POLISTES_BAD_CONFIG
 */
function readConfigFile (file) {
  let text
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    throw new ERR_POLISTES_BAD_CONFIG(`cannot read config file ${file}: ${err.code || err.message}`)
  }
  let json
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new ERR_POLISTES_BAD_CONFIG(`config file ${file} is not valid JSON: ${err.message}`)
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ERR_POLISTES_BAD_CONFIG(`config file ${file} must hold a JSON object`)
  }
  const unknown = Object.keys(json).filter((k) => !FILE_KEYS.has(k))
  if (unknown.length > 0) {
    throw new ERR_POLISTES_BAD_CONFIG(`config file ${file}: unknown key(s) ${unknown.join(', ')}; allowed: ` +
      `${[...FILE_KEYS].join(', ')}`)
  }
  const out = {}
  const names = {} // the file's name of a key, where it is another
  Object.defineProperty(out, ORIGIN, { value: { file, names } })
  const where = `config file ${file}`
  if (json.address !== undefined) {
    Object.assign(out, parseAddress(json.address, where))
    Object.assign(names, { host: 'the host of address', port: 'the port of address' })
  }
  /** the seed's names and `address`: the file's own key wins over them */
  const take = (key, value, name) => {
    if (value === undefined) return
    out[key] = value
    if (name) names[key] = name
    else delete names[key]
  }
  take('host', json.host)
  take('port', json.port)
  take('algo', json.strategy, 'strategy') // normalized (CamelCase too) with the flags' value
  take('algo', json.algo)
  take('backends', json.receiver_addresses, 'receiver_addresses')
  take('backends', json.backends)
  for (const key of PLAIN_KEYS) {
    if (json[key] !== undefined) out[key] = json[key]
  }
  for (const key of ['tlsCert', 'tlsKey', 'upstreamCa']) { // relative to the file, as nginx reads its own
    if (typeof out[key] === 'string' && out[key] !== '') out[key] = path.resolve(path.dirname(file), out[key])
  }
  if (json.fleet !== undefined) {
    if (json.fleet === null || typeof json.fleet !== 'object') {
      throw new ERR_POLISTES_BAD_CONFIG(`${where}: "fleet" must be an object`)
    }
    const bad = Object.keys(json.fleet).filter((k) => !FLEET_KEYS.has(k))
    if (bad.length > 0) throw new ERR_POLISTES_BAD_CONFIG(`${where}: unknown fleet key(s) ${bad.join(', ')}`)
    out.fleet = json.fleet
  }
  if (json.healthCheck !== undefined) {
    if (json.healthCheck === null || typeof json.healthCheck !== 'object' || Array.isArray(json.healthCheck)) {
      throw new ERR_POLISTES_BAD_CONFIG(`${where}: "healthCheck" must be an object`)
    }
    const bad = Object.keys(json.healthCheck).filter((k) => !Object.hasOwn(DEFAULTS.healthCheck, k))
    if (bad.length > 0) {
      throw new ERR_POLISTES_BAD_CONFIG(`${where}: unknown healthCheck key(s) ${bad.join(', ')}; allowed: ` +
        `${Object.keys(DEFAULTS.healthCheck).join(', ')}`)
    }
    out.healthCheck = json.healthCheck
  }
  return out
}

/**
 * "host:port", "[::1]:8080" or ":8080" → { host, port }.
 * @param {unknown} address
 * @param {string} where for the error message
 */
function parseAddress (address, where) {
  const m = typeof address === 'string' && /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(address.trim())
  if (!m) {
    throw new ERR_POLISTES_BAD_CONFIG(`${where}: address must look like "127.0.0.1:8080", got ` +
    `${JSON.stringify(address)}`)
  }
  const host = m[1] || m[2] || DEFAULTS.host
  return { host: host === 'localhost' ? '127.0.0.1' : host, port: Number(m[3]) }
}

/**
 * Accept registry names and the seed's CamelCase strategies: "RoundRobin" → "round-robin".
 * @param {unknown} name
 * @returns {string}
 */
function normalizeAlgo (name) {
  if (typeof name !== 'string') throw new ERR_POLISTES_UNKNOWN_ALGO(name, policyNames())
  return name.trim().replace(/([a-z0-9])([A-Z])/g, '$1-$2').replace(/[_\s]+/g, '-').toLowerCase()
}

/**
 * Merge file config, flags and defaults, then validate everything. Flags win over the file.
 * @param {object} flags options given on the command line (only those given)
 * @param {object} [file] options read from a config file
 * @returns {object} a complete, valid config
 * @throws {PolistesError}
 */
function resolveConfig (flags, file = {}) {
  try {
    return merge(flags, file)
  } catch (err) {
    throw nameTheSource(err, flags, file)
  }
}

/** resolveConfig's work; its errors name config keys (`err.options`). */
function merge (flags, file) {
  const config = { ...DEFAULTS, ...file, ...flags }
  config.fleet = { ...DEFAULTS.fleet, ...(file.fleet || {}), ...(flags.fleet || {}) }
  config.healthCheck = { ...DEFAULTS.healthCheck, ...(file.healthCheck || {}), ...(flags.healthCheck || {}) }
  onOption('algo', () => {
    config.algo = normalizeAlgo(config.algo)
    if (!policyNames().includes(config.algo)) throw new ERR_POLISTES_UNKNOWN_ALGO(config.algo, policyNames())
  })
  validateOptions(config)
  if (config.accessLogFile !== undefined) {
    if (flags.accessLog === false && flags.accessLogFile !== undefined) {
      throw new ERR_POLISTES_BAD_OPTION('--no-access-log and --access-log-file contradict each other: give one')
    }
    if (flags.accessLog !== false) config.accessLog = true // a file asks for the log, unless a flag turns it off
  }
  // the policy's own check of its options (unknown names, ranges)
  onOption('policyOptions', () => createPolicy(config.algo, config.policyOptions))
  if (config.backends !== undefined) {
    try {
      config.backends = parseBackends(config.backends)
    } catch (err) {
      // "backend #2 healthCheck.rise ...": one of the backends
      if (err instanceof PolistesError) err.options = ['backends']
      throw err
    }
  }
  checkMembers('fleet', config.fleet)
  checkFleetLists(config.fleet)
  return config
}

/**
 * A per-backend list of the fleet (`fleet.workers`) has one value per backend.
 * @param {{ count: number, workers: number | number[] }} fleet checked member by member already
 */
function checkFleetLists (fleet) {
  if (Array.isArray(fleet.workers) && fleet.workers.length !== fleet.count) {
    throw badOption(['fleet.workers', 'fleet.count'], `fleet.workers has ${fleet.workers.length} values for ` +
      `${fleet.count} backends (fleet.count): give one per backend, or one number for all`)
  }
}

/**
 * Rewrite an error about config keys (`err.options`, the one at fault first) to name each key where
 * its value came from: a flag as the flag (`--timeout must be ...`), a config file's key as the file
 * names it, with the file's path in front (`config file /etc/p.json: timeoutMs must be ...`); a key
 * set nowhere is named as the flag that would set it when the flags are the CLI's, else as the key.
 * Settings from neither (the API's) leave the message as it is.
 * @param {unknown} err
 * @param {object} flags
 * @param {object} file
 * @returns {unknown} `err`, its message rewritten when it names keys
 */
function nameTheSource (err, flags, file) {
  const keys = err instanceof PolistesError && Array.isArray(err.options) ? err.options : []
  const fileOrigin = file[ORIGIN]
  if (keys.length === 0 || (!fileOrigin && !flags[ORIGIN])) return err // the API's own objects: keys are their names
  const flagNames = flags[ORIGIN]?.flagNames ?? {}
  const fromFile = (key) => Boolean(fileOrigin) && !hasPath(flags, key) && hasPath(file, key)
  const subjectInFile = fromFile(keys[0])
  const label = (key) => {
    if (fromFile(key)) return fileOrigin.names[key] ?? key
    if (hasPath(flags, key) || !subjectInFile) return flagNames[key] ?? key
    return key
  }
  const [subject, ...related] = keys
  const head = new RegExp(`^${escapeRegExp(subject)}(?![\\w.])`)
  let message = head.test(err.message) ? err.message.replace(head, label(subject)) : `${label(subject)}: ${err.message}`
  for (const key of related) {
    message = message.replace(
      new RegExp(`(?<![\\w.-])${escapeRegExp(key)}(?![\\w.])`, 'g'),
      label(key)
    )
  }
  if (keys.some(fromFile)) message = `config file ${fileOrigin.file}: ${message}`
  err.message = message
  return err
}

/** Whether `object` holds the dotted `path` (`healthCheck.rise`). */
function hasPath (object, path) {
  let at = object
  for (const part of path.split('.')) {
    if (at === null || typeof at !== 'object' || !Object.hasOwn(at, part)) return false
    at = at[part]
  }
  return true
}

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

module.exports = { DEFAULTS, readConfigFile, resolveConfig, withFlagNames, normalizeAlgo, parseAddress }
