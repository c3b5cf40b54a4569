'use strict'

const fs = require('node:fs')
const { PolistesError } = require('./errors')
const { policyNames } = require('./policies')
const { parseBackends } = require('./backend-spec')

/** Defaults applied after the config file and the flags are merged (flags win over the file). */
const DEFAULTS = Object.freeze({
  algo: 'wasp',
  host: '127.0.0.1',
  port: 8080,
  keepAlive: true,
  timeoutMs: 30000,
  retries: 2,
  maxFails: 1,
  failTimeoutMs: 5000,
  graceMs: 10000,
  policyOptions: {},
  accessLog: false,
  fleet: { count: 7, basePort: 9101, cachePages: 4, missMs: 20 }
})

/** Keys a config file may hold. `address`, `strategy` and `receiver_addresses` are the seed's shape. */
const FILE_KEYS = new Set(['address', 'host', 'port', 'strategy', 'algo', 'backends', 'receiver_addresses',
  'keepAlive', 'timeoutMs', 'retries', 'maxFails', 'failTimeoutMs', 'graceMs', 'policyOptions', 'fleet',
  'accessLog', 'accessLogFile'])
const FLEET_KEYS = new Set(['count', 'basePort', 'cachePages', 'missMs'])

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
    throw new PolistesError('ERR_POLISTES_BAD_CONFIG', `cannot read config file ${file}: ${err.code || err.message}`)
  }
  let json
  try {
    json = JSON.parse(text)
  } catch (err) {
    throw new PolistesError('ERR_POLISTES_BAD_CONFIG', `config file ${file} is not valid JSON: ${err.message}`)
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new PolistesError('ERR_POLISTES_BAD_CONFIG', `config file ${file} must hold a JSON object`)
  }
  const unknown = Object.keys(json).filter((k) => !FILE_KEYS.has(k))
  if (unknown.length > 0) {
    throw new PolistesError('ERR_POLISTES_BAD_CONFIG', `config file ${file}: unknown key(s) ${unknown.join(', ')}; allowed: ${[...FILE_KEYS].join(', ')}`)
  }
  const out = {}
  const where = `config file ${file}`
  if (json.address !== undefined) Object.assign(out, parseAddress(json.address, where))
  if (json.host !== undefined) out.host = json.host
  if (json.port !== undefined) out.port = json.port
  const strategy = json.algo ?? json.strategy
  if (strategy !== undefined) out.algo = normalizeAlgo(strategy)
  const backends = json.backends ?? json.receiver_addresses
  if (backends !== undefined) out.backends = backends
  for (const key of ['keepAlive', 'timeoutMs', 'retries', 'maxFails', 'failTimeoutMs', 'graceMs', 'policyOptions', 'accessLog', 'accessLogFile']) {
    if (json[key] !== undefined) out[key] = json[key]
  }
  if (json.fleet !== undefined) {
    if (json.fleet === null || typeof json.fleet !== 'object') throw new PolistesError('ERR_POLISTES_BAD_CONFIG', `${where}: "fleet" must be an object`)
    const bad = Object.keys(json.fleet).filter((k) => !FLEET_KEYS.has(k))
    if (bad.length > 0) throw new PolistesError('ERR_POLISTES_BAD_CONFIG', `${where}: unknown fleet key(s) ${bad.join(', ')}`)
    out.fleet = json.fleet
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
  if (!m) throw new PolistesError('ERR_POLISTES_BAD_CONFIG', `${where}: address must look like "127.0.0.1:8080", got ${JSON.stringify(address)}`)
  const host = m[1] || m[2] || DEFAULTS.host
  return { host: host === 'localhost' ? '127.0.0.1' : host, port: Number(m[3]) }
}

/**
 * Accept registry names and the seed's CamelCase strategies: "RoundRobin" → "round-robin".
 * @param {unknown} name
 * @returns {string}
 */
function normalizeAlgo (name) {
  if (typeof name !== 'string') throw new PolistesError('ERR_POLISTES_UNKNOWN_ALGO', `algorithm must be a string, got ${JSON.stringify(name)}`)
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
  const config = { ...DEFAULTS, ...file, ...flags }
  config.fleet = { ...DEFAULTS.fleet, ...(file.fleet || {}), ...(flags.fleet || {}) }
  config.algo = normalizeAlgo(config.algo)
  if (!policyNames().includes(config.algo)) {
    throw new PolistesError('ERR_POLISTES_UNKNOWN_ALGO', `unknown algorithm "${config.algo}"; expected one of: ${policyNames().join(', ')}`)
  }
  checkInteger('port', config.port, 0, 65535)
  if (typeof config.host !== 'string' || config.host === '') throw badOption('host must be a non-empty string')
  if (typeof config.keepAlive !== 'boolean') throw badOption(`keepAlive must be true or false, got ${JSON.stringify(config.keepAlive)}`)
  if (typeof config.accessLog !== 'boolean') throw badOption(`accessLog must be true or false, got ${JSON.stringify(config.accessLog)}`)
  if (config.accessLogFile !== undefined) {
    if (typeof config.accessLogFile !== 'string' || config.accessLogFile === '') throw badOption(`accessLogFile must be a file path, got ${JSON.stringify(config.accessLogFile)}`)
    if (flags.accessLog === false && flags.accessLogFile !== undefined) throw badOption('--no-access-log and --access-log-file contradict each other: give one')
    if (flags.accessLog !== false) config.accessLog = true // a file asks for the log, unless a flag turns it off
  }
  checkNumber('timeoutMs', config.timeoutMs)
  checkNumber('failTimeoutMs', config.failTimeoutMs)
  checkNumber('graceMs', config.graceMs)
  checkInteger('retries', config.retries, 0, 100)
  checkInteger('maxFails', config.maxFails, 1, 1000)
  if (config.policyOptions === null || typeof config.policyOptions !== 'object' || Array.isArray(config.policyOptions)) {
    throw badOption('policyOptions must be a JSON object')
  }
  if (config.backends !== undefined) config.backends = parseBackends(config.backends)
  checkInteger('fleet count', config.fleet.count, 1, 1000)
  checkInteger('fleet base port', config.fleet.basePort, 0, 65535)
  checkInteger('cache pages', config.fleet.cachePages, 0, 1e6)
  if (!(Number.isFinite(config.fleet.missMs) && config.fleet.missMs >= 0)) throw badOption(`miss cost must be a non-negative number of ms, got ${config.fleet.missMs}`)
  return config
}

function checkInteger (name, value, min, max) {
  if (!(Number.isInteger(value) && value >= min && value <= max)) throw badOption(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`)
}

function checkNumber (name, value) {
  if (!(Number.isFinite(value) && value > 0)) throw badOption(`${name} must be a positive number, got ${JSON.stringify(value)}`)
}

function badOption (message) {
  return new PolistesError('ERR_POLISTES_BAD_OPTION', message)
}

module.exports = { DEFAULTS, readConfigFile, resolveConfig, normalizeAlgo, parseAddress }
