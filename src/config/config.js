'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { ERR_POLISTES_BAD_CONFIG, ERR_POLISTES_BAD_OPTION, ERR_POLISTES_UNKNOWN_ALGO } = require('../common/errors')
const { DEFAULTS, validateOptions, checkInteger } = require('./defaults')
const { policyNames, createPolicy } = require('../policies')
const { parseBackends } = require('../pool/backend-spec')

/** The client side: limits, TLS and the admin listener. */
const FRONT_KEYS = ['front', 'maxConnections', 'headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'maxHeaderSize', 'maxBodySize',
  'tlsCert', 'tlsKey', 'upstreamCa', 'adminPort', 'adminHost']
/** Keys a config file may hold. `address`, `strategy` and `receiver_addresses` are the seed's shape. */
const FILE_KEYS = new Set(['address', 'host', 'port', 'strategy', 'algo', 'backends', 'receiver_addresses',
  'keepAlive', 'engine', 'timeoutMs', 'tryTimeoutMs', 'retries', 'retryOn', 'maxFails', 'failTimeoutMs', 'graceMs', 'policyOptions', 'slowStartMs', 'healthCheck', 'workers', 'fleet',
  'accessLog', 'accessLogFile', ...FRONT_KEYS,
  'routingKey', 'stickyCookie', 'resolveMs'])
/** Keys taken from a file as they are (validated with the flags' values in resolveConfig). */
const PLAIN_KEYS = ['keepAlive', 'engine', 'timeoutMs', 'tryTimeoutMs', 'retries', 'retryOn', 'maxFails', 'failTimeoutMs', 'graceMs', 'policyOptions', 'slowStartMs', 'workers',
  'accessLog', 'accessLogFile', ...FRONT_KEYS,
  'routingKey', 'stickyCookie', 'resolveMs']
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
    throw new ERR_POLISTES_BAD_CONFIG(`config file ${file}: unknown key(s) ${unknown.join(', ')}; allowed: ${[...FILE_KEYS].join(', ')}`)
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
  for (const key of PLAIN_KEYS) {
    if (json[key] !== undefined) out[key] = json[key]
  }
  for (const key of ['tlsCert', 'tlsKey', 'upstreamCa']) { // relative to the file, as nginx reads its own
    if (typeof out[key] === 'string' && out[key] !== '') out[key] = path.resolve(path.dirname(file), out[key])
  }
  if (json.fleet !== undefined) {
    if (json.fleet === null || typeof json.fleet !== 'object') throw new ERR_POLISTES_BAD_CONFIG(`${where}: "fleet" must be an object`)
    const bad = Object.keys(json.fleet).filter((k) => !FLEET_KEYS.has(k))
    if (bad.length > 0) throw new ERR_POLISTES_BAD_CONFIG(`${where}: unknown fleet key(s) ${bad.join(', ')}`)
    out.fleet = json.fleet
  }
  if (json.healthCheck !== undefined) {
    if (json.healthCheck === null || typeof json.healthCheck !== 'object' || Array.isArray(json.healthCheck)) throw new ERR_POLISTES_BAD_CONFIG(`${where}: "healthCheck" must be an object`)
    const bad = Object.keys(json.healthCheck).filter((k) => !Object.hasOwn(DEFAULTS.healthCheck, k))
    if (bad.length > 0) throw new ERR_POLISTES_BAD_CONFIG(`${where}: unknown healthCheck key(s) ${bad.join(', ')}; allowed: ${Object.keys(DEFAULTS.healthCheck).join(', ')}`)
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
  if (!m) throw new ERR_POLISTES_BAD_CONFIG(`${where}: address must look like "127.0.0.1:8080", got ${JSON.stringify(address)}`)
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
  const config = { ...DEFAULTS, ...file, ...flags }
  config.fleet = { ...DEFAULTS.fleet, ...(file.fleet || {}), ...(flags.fleet || {}) }
  config.healthCheck = { ...DEFAULTS.healthCheck, ...(file.healthCheck || {}), ...(flags.healthCheck || {}) }
  config.algo = normalizeAlgo(config.algo)
  if (!policyNames().includes(config.algo)) {
    throw new ERR_POLISTES_UNKNOWN_ALGO(config.algo, policyNames())
  }
  validateOptions(config)
  if (config.accessLogFile !== undefined) {
    if (flags.accessLog === false && flags.accessLogFile !== undefined) throw new ERR_POLISTES_BAD_OPTION('--no-access-log and --access-log-file contradict each other: give one')
    if (flags.accessLog !== false) config.accessLog = true // a file asks for the log, unless a flag turns it off
  }
  createPolicy(config.algo, config.policyOptions) // the policy's own check of its options (unknown names, ranges)
  if (config.backends !== undefined) config.backends = parseBackends(config.backends)
  checkInteger('fleet count', config.fleet.count, 1, 1000)
  checkInteger('fleet base port', config.fleet.basePort, 0, 65535)
  checkInteger('cache pages', config.fleet.cachePages, 0, 1e6)
  if (!(Number.isFinite(config.fleet.missMs) && config.fleet.missMs >= 0)) throw new ERR_POLISTES_BAD_OPTION(`miss cost must be a non-negative number of ms, got ${config.fleet.missMs}`)
  return config
}

module.exports = { DEFAULTS, readConfigFile, resolveConfig, normalizeAlgo, parseAddress }
