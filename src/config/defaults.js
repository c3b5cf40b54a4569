'use strict'

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { checkInteger, checkPositive, checkPath, badOption, onOption } = require('../common/option-checks')
const { validateHealthCheck } = require('../pool/health-check-options')
const { DEFAULT_ENGINE, ENGINES } = require('../proxy/proxy-engine')
const { parseTrustedProxies } = require('../proxy/forwarded')
const { parseRoutingKey } = require('../proxy/routing-key')
const { parseStickyCookie } = require('../proxy/sticky-cookie')

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
  fleet: { count: 7, basePort: 9101, cachePages: 4, missMs: 20 },
  // what the keyed policies route by (src/proxy/routing-key.js): the path without its query
  routingKey: 'path',
  // cookie stickiness (src/proxy/sticky-cookie.js): off
  stickyCookie: null,
  // look backend host names up again every this many ms (src/pool/resolver.js); null: the OS, per new connection
  resolveMs: null
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
  healthCheck: (v) => validateHealthCheck(v, 'healthCheck'),
  routingKey: (v) => { parseRoutingKey(v) },
  stickyCookie: (v) => { parseStickyCookie(v) },
  resolveMs: (v) => { if (v !== null && !(Number.isFinite(v) && v >= 10)) throw new ERR_POLISTES_BAD_OPTION(`resolveMs must be a number of ms >= 10, or null (no re-resolution), got ${JSON.stringify(v)}`) }
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

module.exports = { DEFAULTS, validateOptions }
