'use strict'

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { DEFAULT_ENGINE, ENGINES } = require('../proxy/proxy-engine')
const { parseTrustedProxies } = require('../proxy/forwarded')

/**
 * The one source of default option values: the balancer's constructor, the config resolver and the
 * CLI's help text all read them here.
 */
const DEFAULTS = Object.freeze({
  algo: 'wasp',
  host: '127.0.0.1',
  port: 8080,
  keepAlive: true,
  engine: DEFAULT_ENGINE,
  timeoutMs: 30000,
  tryTimeoutMs: null, // no limit on the wait for a response head but timeoutMs (inactivity)
  retries: 2,
  retryOn: [], // as nginx and HAProxy: only failed connections are retried unless a status (or timeout) is named
  maxFails: 1,
  failTimeoutMs: 5000,
  graceMs: 10000,
  policyOptions: {},
  accessLog: false,
  slowStartMs: 0,
  healthCheck: Object.freeze({ path: null, intervalMs: 2000, timeoutMs: 1000, expectStatus: '200-399', rise: 2, fall: 3 }),
  workers: 1,
  // the front (client side): limits as nginx and HAProxy set them, see docs/configuration.md
  maxConnections: 10000,
  headersTimeoutMs: 10000,
  requestTimeoutMs: 60000,
  keepAliveTimeoutMs: 5000,
  maxHeaderSize: 16384,
  maxBodySize: 1048576,
  front: 'fast', // simple requests parsed and answered by src/front/fast-front.js; 'node': node:http for all
  // TLS: file paths (PEM), read at start
  tlsCert: null,
  tlsKey: null,
  upstreamCa: null,
  // the admin listener (/_polistes/*): null serves it on the public listener
  adminPort: null,
  adminHost: '127.0.0.1',
  // dashboards' event streams (/_polistes/events) open at once; beyond, 503
  maxEventStreams: 16,
  // peers (CIDRs) whose X-Forwarded-For/-Host/-Proto/-Port are kept; everyone else's are replaced
  trustedProxies: Object.freeze([]),
  fleet: { count: 7, basePort: 9101, cachePages: 4, missMs: 20 }
})

/** One check per option, the same wherever the option comes from (flag, config file, API). */
const RULES = {
  port: (v) => checkInteger('port', v, 0, 65535),
  host: (v) => { if (typeof v !== 'string' || v === '') throw new ERR_POLISTES_BAD_OPTION('host must be a non-empty string') },
  keepAlive: (v) => { if (typeof v !== 'boolean') throw new ERR_POLISTES_BAD_OPTION(`keepAlive must be true or false, got ${JSON.stringify(v)}`) },
  engine: (v) => { if (!ENGINES.includes(v)) throw new ERR_POLISTES_BAD_OPTION(`unknown proxy engine ${JSON.stringify(v)}; expected one of: ${ENGINES.join(', ')}`) },
  timeoutMs: (v) => checkPositive('timeoutMs', v),
  tryTimeoutMs: (v) => { if (v !== null) checkPositive('tryTimeoutMs', v) },
  failTimeoutMs: (v) => checkPositive('failTimeoutMs', v),
  graceMs: (v) => checkPositive('graceMs', v),
  retries: (v) => checkInteger('retries', v, 0, 100),
  maxFails: (v) => checkInteger('maxFails', v, 1, 1000),
  accessLog: (v) => { if (typeof v !== 'boolean') throw new ERR_POLISTES_BAD_OPTION(`accessLog must be true or false, got ${JSON.stringify(v)}`) },
  accessLogFile: (v) => { if (typeof v !== 'string' || v === '') throw new ERR_POLISTES_BAD_OPTION(`accessLogFile must be a file path, got ${JSON.stringify(v)}`) },
  retryOn: (v) => {
    if (!Array.isArray(v) || !v.every((s) => s === 'timeout' || (Number.isInteger(s) && s >= 500 && s <= 599))) throw new ERR_POLISTES_BAD_OPTION(`retryOn must be a list of 5xx statuses and/or "timeout", e.g. [503, "timeout"], got ${JSON.stringify(v)}`)
  },
  workers: (v) => checkInteger('workers', v, 1, 256),
  policyOptions: (v) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ERR_POLISTES_BAD_OPTION('policyOptions must be a JSON object')
  },
  maxConnections: (v) => checkInteger('maxConnections', v, 1, 10_000_000),
  headersTimeoutMs: (v) => checkPositive('headersTimeoutMs', v),
  requestTimeoutMs: (v) => checkPositive('requestTimeoutMs', v),
  keepAliveTimeoutMs: (v) => checkPositive('keepAliveTimeoutMs', v),
  maxHeaderSize: (v) => checkInteger('maxHeaderSize', v, 1024, 1_048_576),
  maxBodySize: (v) => checkInteger('maxBodySize', v, 0, Number.MAX_SAFE_INTEGER),
  front: (v) => { if (v !== 'fast' && v !== 'node') throw new ERR_POLISTES_BAD_OPTION(`front must be "fast" or "node", got ${JSON.stringify(v)}`) },
  tlsCert: (v) => checkPath('tlsCert', v),
  tlsKey: (v) => checkPath('tlsKey', v),
  upstreamCa: (v) => checkPath('upstreamCa', v),
  adminPort: (v) => { if (v !== null) checkInteger('adminPort', v, 0, 65535) },
  adminHost: (v) => { if (typeof v !== 'string' || v === '') throw new ERR_POLISTES_BAD_OPTION('adminHost must be a non-empty string') },
  maxEventStreams: (v) => checkInteger('maxEventStreams', v, 0, 100_000),
  trustedProxies: (v) => { parseTrustedProxies(v) },
  slowStartMs: (v) => { if (!(Number.isFinite(v) && v >= 0)) throw new ERR_POLISTES_BAD_OPTION(`slowStartMs must be a number of ms >= 0, got ${JSON.stringify(v)}`) },
  healthCheck: (v) => validateHealthCheck(v, 'healthCheck')
}

/** Rules between options, checked once each single option is valid. */
function checkCombinations (o) {
  if ((o.tlsCert == null) !== (o.tlsKey == null) && Object.hasOwn(o, 'tlsCert') && Object.hasOwn(o, 'tlsKey')) {
    const given = o.tlsCert == null ? 'tlsKey' : 'tlsCert'
    throw badOption([given, given === 'tlsCert' ? 'tlsKey' : 'tlsCert'], 'tlsCert and tlsKey go together: give both or neither')
  }
  if (Number.isFinite(o.headersTimeoutMs) && Number.isFinite(o.requestTimeoutMs) && o.headersTimeoutMs > o.requestTimeoutMs) {
    throw badOption(['headersTimeoutMs', 'requestTimeoutMs'], `headersTimeoutMs (${o.headersTimeoutMs}) must not exceed requestTimeoutMs (${o.requestTimeoutMs})`)
  }
  if (Number.isFinite(o.tryTimeoutMs) && Number.isFinite(o.timeoutMs) && o.tryTimeoutMs > o.timeoutMs) {
    throw badOption(['tryTimeoutMs', 'timeoutMs'], `tryTimeoutMs (${o.tryTimeoutMs}) must not exceed timeoutMs (${o.timeoutMs}): the inactivity timeout would always fire first`)
  }
}

/** The keys of a `healthCheck` object, each with its check. */
const HEALTH_CHECK_RULES = {
  path: (v, where) => {
    if (v !== null && !(typeof v === 'string' && v.startsWith('/'))) throw badOption([`${where}.path`], `${where}.path must be a path starting with "/" (or null: no active checks), got ${JSON.stringify(v)}`)
  },
  intervalMs: (v, where) => checkPositive(`${where}.intervalMs`, v),
  timeoutMs: (v, where) => checkPositive(`${where}.timeoutMs`, v),
  expectStatus: (v, where) => parseExpectStatus(v, `${where}.expectStatus`),
  rise: (v, where) => checkInteger(`${where}.rise`, v, 1, 1000),
  fall: (v, where) => checkInteger(`${where}.fall`, v, 1, 1000)
}

/**
 * Validate a (possibly partial) `healthCheck` object: known keys only, each value in range.
 * @param {unknown} value
 * @param {string} where its name in messages, e.g. "healthCheck" or "backend #2 healthCheck"
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function validateHealthCheck (value, where) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ERR_POLISTES_BAD_OPTION(`${where} must be an object such as { "path": "/health" }, got ${JSON.stringify(value)}`)
  for (const key of Object.keys(value)) {
    const rule = HEALTH_CHECK_RULES[key]
    if (!rule) throw new ERR_POLISTES_BAD_OPTION(`${where}: unknown key ${JSON.stringify(key)}; known keys: ${Object.keys(HEALTH_CHECK_RULES).join(', ')}`)
    rule(value[key], where)
  }
}

/**
 * Read an expected-status spec into a predicate: a status (`200`), a range (`"200-399"`), a class
 * (`"2xx"`), or a comma-separated list of these (`"200,204,3xx"`).
 * @param {unknown} spec
 * @param {string} [where] its name in messages
 * @returns {(status: number) => boolean}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function parseExpectStatus (spec, where = 'expectStatus') {
  const bad = () => badOption([where], `${where} must be a status (200), a range ("200-399"), a class ("2xx") or a comma-separated list of these, got ${JSON.stringify(spec)}`)
  const text = typeof spec === 'number' ? String(spec) : spec
  if (typeof text !== 'string' || text.trim() === '') throw bad()
  const ranges = text.split(',').map((item) => {
    const m = /^\s*(?:([1-5])xx|([1-5]\d\d)(?:\s*-\s*([1-5]\d\d))?)\s*$/i.exec(item)
    if (!m) throw bad()
    if (m[1]) return [Number(m[1]) * 100, Number(m[1]) * 100 + 99]
    const lo = Number(m[2])
    const hi = m[3] ? Number(m[3]) : lo
    if (hi < lo) throw bad()
    return [lo, hi]
  })
  return (status) => ranges.some(([lo, hi]) => status >= lo && status <= hi)
}

/**
 * Validate the balancer options present in `options` (port, host, keepAlive, engine, timeoutMs,
 * tryTimeoutMs, failTimeoutMs, graceMs, retries, retryOn, maxFails, workers, policyOptions, slowStartMs,
 * healthCheck, the front's limits, TLS files and admin listener, maxEventStreams, trustedProxies), then the rules between them
 * (tlsCert with tlsKey, headersTimeoutMs ≤ requestTimeoutMs, tryTimeoutMs ≤ timeoutMs); other keys are left alone.
 * @param {object} options
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION on the first bad value
 */
function validateOptions (options) {
  for (const key of Object.keys(RULES)) {
    if (Object.hasOwn(options, key)) onOption(key, () => RULES[key](options[key]))
  }
  checkCombinations(options)
}

/**
 * An ERR_POLISTES_BAD_OPTION about config keys, which the message names as keys: `options` lists
 * them, the one at fault first, so that a caller that knows where each value came from (the CLI's
 * flags, a config file) can name them its way (config.js `resolveConfig`).
 * @param {string[]} options config key paths, e.g. ['tryTimeoutMs', 'timeoutMs'] or ['healthCheck.rise']
 * @param {string} message
 * @returns {import('../common/errors').PolistesError}
 */
function badOption (options, message) {
  return Object.assign(new ERR_POLISTES_BAD_OPTION(message), { options })
}

/**
 * Run `fn`; an error it throws that names no config key yet is marked as being about `key`.
 * @template T
 * @param {string} key config key path
 * @param {() => T} fn
 * @returns {T}
 */
function onOption (key, fn) {
  try {
    return fn()
  } catch (err) {
    if (err && typeof err === 'object' && !err.options) err.options = [key]
    throw err
  }
}

/**
 * @param {string} name for the message
 * @param {unknown} value
 * @param {number} min inclusive
 * @param {number} max inclusive
 */
function checkInteger (name, value, min, max) {
  if (!(Number.isInteger(value) && value >= min && value <= max)) throw badOption([name], `${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`)
}

/**
 * A duration: a positive number of ms.
 * @param {string} name for the message
 * @param {unknown} value
 */
function checkPositive (name, value) {
  if (!(Number.isFinite(value) && value > 0)) throw badOption([name], `${name} must be a positive number of ms, got ${JSON.stringify(value)}`)
}

/**
 * @param {string} name for the message
 * @param {unknown} value a file path, or null for none
 */
function checkPath (name, value) {
  if (value !== null && (typeof value !== 'string' || value === '')) throw badOption([name], `${name} must be a file path, got ${JSON.stringify(value)}`)
}

module.exports = { DEFAULTS, validateOptions, validateHealthCheck, parseExpectStatus, checkInteger, badOption, onOption }
