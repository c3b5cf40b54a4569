'use strict'

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { checkInteger, checkPositive, checkPath } = require('../common/option-checks')
const { validateHealthCheck } = require('../pool/health-check-options')
const { policyNames } = require('../policies')
const { DEFAULT_ENGINE, ENGINES } = require('../proxy/proxy-engine')
const { parseTrustedProxies } = require('../proxy/forwarded')
const { parseRoutingKey } = require('../proxy/routing-key')
const { parseStickyCookie } = require('../proxy/sticky-cookie')

/**
 * Every option of polistes, once: its config key, its default, its check, whether a reload can
 * change it, its command-line flag and its one-line doc. Everything else derives from this table:
 * the defaults and the validation (src/config/defaults.js), the keys a config file may hold
 * (src/config/config.js), the CLI's flags and --help (src/run/cli-options.js), the options the
 * balancer takes and which of them a reload applies or leaves to a restart (src/balancer.js,
 * src/reconfigure.js). test/options-table.test.js holds docs/configuration.md and the
 * `BalancerOptions` of src/index.d.ts to it.
 *
 * An entry:
 * - `key`: the config key; `group.member` for a member of an object option (`healthCheck`, `fleet`),
 *   whose own entry has no default (its members' defaults make it);
 * - `default`: none for an option without one (`backends`: the embedded fleet);
 * - `check(value, key)`: throws ERR_POLISTES_BAD_OPTION (through common/option-checks.js, which
 *   names the key); none for an option checked elsewhere (`algo` against the policy registry,
 *   `backends` by pool/backend-spec.js, `healthCheck`'s members by their object);
 * - `reload`: 'live' (a reload applies it) or 'restart' (bound to sockets or to what was started);
 * - `balancer`: createBalancer takes it (else the CLI and the config file only);
 * - `flag`: `{ name, group, type, alias?, parse? }` (src/run/cli-options.js), or none: config file only;
 * - `doc`: one line, the flag's --help text.
 * @typedef {{ key: string, default?: unknown, check?: (value: unknown, key: string) => void, reload: 'live' |
 *   'restart', balancer: boolean, flag?: { name: string, group: string, type: 'string' | 'number' | 'boolean', alias?:
 *   string,
 *   parse?: string }, doc: string }} OptionEntry
 */

const LIVE = 'live'
const RESTART = 'restart'

const positive = (v, key) => checkPositive(key, v)
const integer = (min, max) => (v, key) => checkInteger(key, v, min, max)
/** `check`, or null (the option off) */
const nullOr = (check) => (v, key) => { if (v !== null) check(v, key) }
const filePath = (v, key) => checkPath(key, v)
const boolean = (v, key) => {
  if (typeof v !== 'boolean') {
    throw new ERR_POLISTES_BAD_OPTION(`${key} must be true or false, got ${JSON.stringify(v)}`)
  }
}
/** a number of ms >= 0 */
const nonNegativeMs = (v, key) => {
  if (!(Number.isFinite(v) && v >= 0)) {
    throw new ERR_POLISTES_BAD_OPTION(`${key} must be a non-negative number of ms, got ${v}`)
  }
}
/** an integer in [min, max] for every backend, or a non-empty list of them, one per backend */
const integerOrList = (min, max) => (v, key) => {
  if (!Array.isArray(v)) return checkInteger(key, v, min, max)
  if (v.length === 0) throw new ERR_POLISTES_BAD_OPTION(`${key} must be an integer or a non-empty list of integers`)
  for (const item of v) checkInteger(key, item, min, max)
}
/** one of `names` */
const oneOf = (names) => (v, key) => {
  if (!names.includes(v)) {
    throw new ERR_POLISTES_BAD_OPTION(`${key} must be ${names.join(' or ')}, got ${JSON.stringify(v)}`)
  }
}
const address = (v, key) => {
  if (typeof v !== 'string' || v === '') {
    throw new ERR_POLISTES_BAD_OPTION(`${key} must be a non-empty string`)
  }
}

/** @type {OptionEntry[]} in --help order, group by group */
const OPTIONS = [
  // balancing
  {
    key: 'algo',
    default: 'wasp',
    reload: LIVE,
    balancer: true,
    flag: { name: 'algo', alias: 'a', group: 'balancing', type: 'string' },
    doc: `routing policy: ${policyNames().join(', ')}`
  },
  {
    key: 'policyOptions',
    default: {},
    check: (v) => {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) {
        throw new ERR_POLISTES_BAD_OPTION('policyOptions must be a JSON object')
      }
    },
    reload: LIVE,
    balancer: true,
    flag: { name: 'policy-options', group: 'balancing', type: 'string', parse: 'json' },
    doc: 'policy options as JSON, e.g. \'{"rounds":4}\' (unknown names are refused)'
  },
  // what the keyed policies route by (src/proxy/routing-key.js): the path without its query
  {
    key: 'routingKey',
    default: 'path',
    check: (v) => { parseRoutingKey(v) },
    reload: LIVE,
    balancer: true,
    flag: { name: 'routing-key', group: 'balancing', type: 'string' },
    doc: 'what wasp and chash-bounded route by: path, url (with query), host, header:<name>, cookie:<name> or ' +
      'param:<name>'
  },
  // cookie stickiness (src/proxy/sticky-cookie.js): off
  {
    key: 'stickyCookie',
    default: null,
    check: (v) => { parseStickyCookie(v) },
    reload: LIVE,
    balancer: true,
    flag: { name: 'sticky-cookie', group: 'balancing', type: 'string', parse: 'emptyIsNull' },
    doc: 'cookie stickiness: the first response sets this cookie naming its upstream, which later requests bearing ' +
      'it go to (attributes in the config file)'
  },
  {
    key: 'timeoutMs',
    default: 30000,
    check: positive,
    reload: LIVE,
    balancer: true,
    flag: { name: 'timeout', group: 'balancing', type: 'number' },
    doc: 'upstream inactivity timeout in ms (answered with 504)'
  },
  {
    key: 'retries',
    default: 2,
    check: integer(0, 100),
    reload: LIVE,
    balancer: true,
    flag: { name: 'retries', group: 'balancing', type: 'number' },
    doc: 'extra attempts on other upstreams for idempotent requests without a body'
  },
  // no limit on the wait for a response head but timeoutMs (inactivity)
  {
    key: 'tryTimeoutMs',
    default: null,
    check: nullOr(positive),
    reload: LIVE,
    balancer: true,
    flag: { name: 'try-timeout', group: 'balancing', type: 'number' },
    doc: 'ms an attempt may wait for the response head once the request is sent; then 504, or a retry with ' +
      '--retry-on timeout (default: --timeout only)'
  },
  // as nginx and HAProxy: only failed connections are retried unless a status (or timeout) is named
  {
    key: 'retryOn',
    default: [],
    check: (v) => {
      if (!Array.isArray(v) || !v.every((s) => s === 'timeout' || (Number.isInteger(s) && s >= 500 && s <= 599))) {
        throw new ERR_POLISTES_BAD_OPTION('retryOn must be a list of 5xx statuses and/or "timeout", e.g. [503, ' +
          `"timeout"], got ${JSON.stringify(v)}`)
      }
    },
    reload: LIVE,
    balancer: true,
    flag: { name: 'retry-on', group: 'balancing', type: 'string', parse: 'retryOn' },
    doc: 'also retried like a failed connection: upstream 5xx statuses and/or timeout (no response head in time), ' +
      'e.g. 503,timeout (default: none)'
  },

  // backends
  { key: 'backends', reload: LIVE, balancer: true, flag: { name: 'backends', alias: 'b', group: 'backends', type: 'string' }, doc: 'comma-separated backend URLs, e.g. http://127.0.0.1:9101#eu&w=2 (fragment: region, w=weight, id=, backup)' },
  {
    key: 'keepAlive',
    default: true,
    check: boolean,
    reload: LIVE,
    balancer: true,
    flag: { name: 'keep-alive', group: 'backends', type: 'boolean' },
    doc: 'reuse upstream connections (--no-keep-alive: one connection per request)'
  },
  {
    key: 'engine',
    default: DEFAULT_ENGINE,
    check: (v) => {
      if (!ENGINES.includes(v)) {
        throw new ERR_POLISTES_BAD_OPTION(`unknown proxy engine ${JSON.stringify(v)}; expected one of: ` +
          `${ENGINES.join(', ')}`)
      }
    },
    reload: RESTART,
    balancer: true,
    flag: { name: 'engine', group: 'backends', type: 'string' },
    doc: `what moves the bytes: ${ENGINES.join(', ')}`
  },
  // a file path (PEM), read at start
  { key: 'upstreamCa', default: null, check: filePath, reload: RESTART, balancer: true, flag: { name: 'upstream-ca', group: 'backends', type: 'string' }, doc: 'PEM CA file that https:// backends are verified against (default: Node\'s bundled CAs)' },
  // look backend host names up again every this many ms (src/pool/resolver.js); null: the OS, per new connection
  {
    key: 'resolveMs',
    default: null,
    check: (v) => {
      if (v !== null && !(Number.isFinite(v) && v >= 10)) {
        throw new ERR_POLISTES_BAD_OPTION('resolveMs must be a number of ms >= 10, or null (no re-resolution), got ' +
          `${JSON.stringify(v)}`)
      }
    },
    reload: LIVE,
    balancer: true,
    flag: { name: 'resolve', group: 'backends', type: 'number' },
    doc: 'look backend host names up again every this many ms; pooled connections to addresses no longer returned ' +
      'are renewed (default: each new connection resolved by the OS)'
  },
  {
    key: 'slowStartMs',
    default: 0,
    check: (v) => {
      if (!(Number.isFinite(v) && v >= 0)) {
        throw new ERR_POLISTES_BAD_OPTION(`slowStartMs must be a number of ms >= 0, got ${JSON.stringify(v)}`)
      }
    },
    reload: LIVE,
    balancer: true,
    flag: { name: 'slow-start', group: 'backends', type: 'number' },
    doc: 'ms over which a recovered or added upstream\'s share ramps up (0: off)'
  },

  // health
  {
    key: 'maxFails',
    default: 1,
    check: integer(1, 1000),
    reload: LIVE,
    balancer: true,
    flag: { name: 'max-fails', group: 'health', type: 'number' },
    doc: 'consecutive failures that eject an upstream'
  },
  {
    key: 'failTimeoutMs',
    default: 5000,
    check: positive,
    reload: LIVE,
    balancer: true,
    flag: { name: 'fail-timeout', group: 'health', type: 'number' },
    doc: 'ms an ejected upstream is left out'
  },
  {
    key: 'healthCheck',
    check: (v, key) => validateHealthCheck(v, key),
    reload: LIVE,
    balancer: true,
    doc: 'active HTTP health checks: the members below; a backend spec\'s own healthCheck overrides them'
  },
  {
    key: 'healthCheck.path',
    default: null,
    reload: LIVE,
    balancer: true,
    flag: { name: 'health-check', group: 'health', type: 'string' },
    doc: 'active HTTP health check: the path to GET on every upstream (off unless given; the embedded fleet is ' +
      'checked on /_stats)'
  },
  {
    key: 'healthCheck.intervalMs',
    default: 2000,
    reload: LIVE,
    balancer: true,
    flag: { name: 'health-interval', group: 'health', type: 'number' },
    doc: 'ms between two checks of an upstream'
  },
  {
    key: 'healthCheck.timeoutMs',
    default: 1000,
    reload: LIVE,
    balancer: true,
    flag: { name: 'health-timeout', group: 'health', type: 'number' },
    doc: 'ms a check may take before it counts as failed'
  },
  {
    key: 'healthCheck.expectStatus',
    default: '200-399',
    reload: LIVE,
    balancer: true,
    flag: { name: 'health-expect', group: 'health', type: 'string' },
    doc: 'statuses a passing check answers: 200, 200-399, 2xx or a comma list'
  },
  {
    key: 'healthCheck.rise',
    default: 2,
    reload: LIVE,
    balancer: true,
    flag: { name: 'health-rise', group: 'health', type: 'number' },
    doc: 'consecutive passed checks that bring a down upstream back'
  },
  {
    key: 'healthCheck.fall',
    default: 3,
    reload: LIVE,
    balancer: true,
    flag: { name: 'health-fall', group: 'health', type: 'number' },
    doc: 'consecutive failed checks that take an upstream down'
  },

  // the front (client side): limits as nginx and HAProxy set them, see docs/configuration.md
  {
    key: 'host',
    default: '127.0.0.1',
    check: address,
    reload: RESTART,
    balancer: true,
    flag: { name: 'host', group: 'front', type: 'string' },
    doc: 'listen address'
  },
  {
    key: 'port',
    default: 8080,
    check: integer(0, 65535),
    reload: RESTART,
    balancer: true,
    flag: { name: 'port', alias: 'p', group: 'front', type: 'number' },
    doc: 'listen port (0: any free port)'
  },
  // simple requests parsed and answered by src/front/fast-front.js; 'node': node:http for all
  {
    key: 'front',
    default: 'fast',
    check: (v) => {
      if (v !== 'fast' && v !== 'node') {
        throw new ERR_POLISTES_BAD_OPTION(`front must be "fast" or "node", got ${JSON.stringify(v)}`)
      }
    },
    reload: RESTART,
    balancer: true,
    flag: { name: 'front', group: 'front', type: 'string' },
    doc: 'client side: fast (simple GET/HEAD requests parsed and answered by polistes, the rest by node:http) or ' +
      'node (node:http for all)'
  },
  {
    key: 'workers',
    default: 1,
    check: integer(1, 256),
    reload: RESTART,
    balancer: false,
    flag: { name: 'workers', group: 'front', type: 'number' },
    doc: 'balancer processes on the one port (node:cluster), each with its own policy state'
  },
  {
    key: 'maxConnections',
    default: 10000,
    check: integer(1, 10_000_000),
    reload: RESTART,
    balancer: true,
    flag: { name: 'max-connections', group: 'front', type: 'number' },
    doc: 'open client connections; beyond, new connections are closed at once'
  },
  {
    key: 'headersTimeoutMs',
    default: 10000,
    check: positive,
    reload: RESTART,
    balancer: true,
    flag: { name: 'headers-timeout', group: 'front', type: 'number' },
    doc: 'ms a client gets to send its request headers (and TLS handshake); then 408'
  },
  {
    key: 'requestTimeoutMs',
    default: 60000,
    check: positive,
    reload: RESTART,
    balancer: true,
    flag: { name: 'request-timeout', group: 'front', type: 'number' },
    doc: 'ms a client gets to send its whole request, body included; then 408'
  },
  {
    key: 'keepAliveTimeoutMs',
    default: 5000,
    check: positive,
    reload: RESTART,
    balancer: true,
    flag: { name: 'keep-alive-timeout', group: 'front', type: 'number' },
    doc: 'ms an idle client connection is kept open'
  },
  {
    key: 'maxHeaderSize',
    default: 16384,
    check: integer(1024, 1_048_576),
    reload: RESTART,
    balancer: true,
    flag: { name: 'max-header-size', group: 'front', type: 'number' },
    doc: 'bytes of request line and headers; beyond, 431'
  },
  {
    key: 'maxBodySize',
    default: 1048576,
    check: integer(0, Number.MAX_SAFE_INTEGER),
    reload: LIVE,
    balancer: true,
    flag: { name: 'max-body-size', group: 'front', type: 'number' },
    doc: 'bytes of request body; beyond, 413 (0: no limit)'
  },
  // TLS: file paths (PEM), read at start
  {
    key: 'tlsCert',
    default: null,
    check: filePath,
    reload: RESTART,
    balancer: true,
    flag: { name: 'tls-cert', group: 'front', type: 'string' },
    doc: 'PEM certificate (chain) file: with --tls-key, serve HTTPS'
  },
  {
    key: 'tlsKey',
    default: null,
    check: filePath,
    reload: RESTART,
    balancer: true,
    flag: { name: 'tls-key', group: 'front', type: 'string' },
    doc: 'PEM private key file of --tls-cert'
  },
  // the admin listener (/_polistes/*): null serves it on the public listener
  {
    key: 'adminPort',
    default: null,
    check: nullOr(integer(0, 65535)),
    reload: RESTART,
    balancer: true,
    flag: { name: 'admin-port', group: 'front', type: 'number' },
    doc: 'serve /_polistes/* on this port only, not on the public one (0: any free port)'
  },
  // peers (CIDRs) whose X-Forwarded-For/-Host/-Proto/-Port are kept; everyone else's are replaced
  {
    key: 'trustedProxies',
    default: Object.freeze([]),
    check: (v) => { parseTrustedProxies(v) },
    reload: LIVE,
    balancer: true,
    flag: { name: 'trusted-proxies', group: 'front', type: 'string', parse: 'list' },
    doc: 'comma-separated CIDRs of proxies in front of polistes whose X-Forwarded-* are kept, e.g. ' +
      '10.0.0.0/8,::1/128 (default: none, every client\'s are replaced)'
  },
  {
    key: 'adminHost',
    default: '127.0.0.1',
    check: address,
    reload: RESTART,
    balancer: true,
    flag: { name: 'admin-host', group: 'front', type: 'string' },
    doc: 'address of the admin listener'
  },

  // observability
  // dashboards' event streams (/_polistes/events) open at once; beyond, 503
  {
    key: 'maxEventStreams',
    default: 16,
    check: integer(0, 100_000),
    reload: LIVE,
    balancer: true,
    flag: { name: 'max-event-streams', group: 'observability', type: 'number' },
    doc: 'dashboard event streams (/_polistes/events) open at once; beyond, 503 (0: none)'
  },
  {
    key: 'accessLog',
    default: false,
    check: boolean,
    reload: RESTART,
    balancer: false,
    flag: { name: 'access-log', group: 'observability', type: 'boolean' },
    doc: 'one log line per request (method, path, status, upstream, attempts, ms, cache, bytes); --no-access-log: none'
  },
  {
    key: 'accessLogFile',
    check: (v) => {
      if (typeof v !== 'string' || v === '') {
        throw new ERR_POLISTES_BAD_OPTION(`accessLogFile must be a file path, got ${JSON.stringify(v)}`)
      }
    },
    reload: RESTART,
    balancer: false,
    flag: { name: 'access-log-file', group: 'observability', type: 'string' },
    doc: 'write the access log to this file (appended, asynchronous) instead of the log'
  },

  // the embedded fleet (without --backends)
  {
    key: 'fleet',
    reload: RESTART,
    balancer: false,
    doc: 'the embedded fleet of test backends, started when no backends are given: the members below'
  },
  {
    key: 'fleet.count',
    default: 7,
    check: integer(1, 1000),
    reload: RESTART,
    balancer: false,
    flag: { name: 'fleet-size', group: 'fleet', type: 'number' },
    doc: 'number of backends'
  },
  {
    key: 'fleet.basePort',
    default: 9101,
    check: integer(0, 65535),
    reload: RESTART,
    balancer: false,
    flag: { name: 'fleet-base-port', group: 'fleet', type: 'number' },
    doc: 'first port (0: any free ports)'
  },
  {
    key: 'fleet.cachePages',
    default: 4,
    check: integer(0, 1e6),
    reload: RESTART,
    balancer: false,
    flag: { name: 'cache-pages', group: 'fleet', type: 'number' },
    doc: 'pages each backend caches'
  },
  {
    key: 'fleet.missMs',
    default: 20,
    check: nonNegativeMs,
    reload: RESTART,
    balancer: false,
    flag: { name: 'miss-ms', group: 'fleet', type: 'number' },
    doc: 'emulated cost of a cache miss in ms'
  },
  {
    key: 'fleet.hitMs',
    default: 0,
    check: nonNegativeMs,
    reload: RESTART,
    balancer: false,
    flag: { name: 'hit-ms', group: 'fleet', type: 'number' },
    doc: 'emulated service time of a cache hit in ms'
  },
  // finite backends (issue 28): a FIFO queue in front of n workers; the list's length is checked
  // against fleet.count in src/config/config.js
  {
    key: 'fleet.workers',
    default: 0,
    check: integerOrList(0, 100000),
    reload: RESTART,
    balancer: false,
    flag: { name: 'fleet-workers', group: 'fleet', type: 'string', parse: 'numberOrList' },
    doc: 'workers per backend, a request holding one for its service time and queueing when all are busy: one ' +
      'number, or a comma list with one per backend (0 = unlimited)'
  },
  {
    key: 'fleet.service',
    default: 'timer',
    check: oneOf(['timer', 'cpu']),
    reload: RESTART,
    balancer: false,
    flag: { name: 'fleet-service', group: 'fleet', type: 'string' },
    doc: 'how hit and miss times are spent: timer (a wait) or cpu (busy work, blocking the backend\'s event loop)'
  },

  // general
  {
    key: 'graceMs',
    default: 10000,
    check: positive,
    reload: LIVE,
    balancer: false,
    doc: 'on shutdown, ms in-flight requests get before what is left is cut'
  }
]

/**
 * The options createBalancer takes besides the table's: objects and functions given in code, which
 * no flag or config file can hold. With the table's `balancer` entries they make `BalancerOptions`
 * in src/index.d.ts (test/options-table.test.js).
 */
const API_OPTIONS = Object.freeze({
  policy: 'a ready policy object (overrides algo)',
  admin: 'serve /_polistes/* on the public listener (default true; false: proxied like any path)',
  telemetry: 'the per-request aggregates (default: a new one)',
  accessLog: 'one line per finished request (createAccessLog(); default none)',
  logger: 'a pino logger (default: silent)',
  random: 'the random source injected into the policy',
  now: 'the clock (ms) injected into the policy and the pool',
  lookup: 'the lookup of backend host names (default node:dns\'s)'
})

/** The top-level keys (members of an object option excluded), in table order. */
const TOP_KEYS = OPTIONS.filter((o) => !o.key.includes('.')).map((o) => o.key)

/** The top-level options createBalancer takes. */
const BALANCER_KEYS = OPTIONS.filter((o) => o.balancer && !o.key.includes('.')).map((o) => o.key)

/** The balancer's options a reload cannot change (bound to the listening sockets, or the engine). */
const RESTART_ONLY = OPTIONS.filter((o) => o.balancer && o.reload === RESTART).map((o) => o.key)

/** The balancer's options a reload applies. */
const RELOADABLE = OPTIONS.filter((o) => o.balancer && o.reload === LIVE && !o.key.includes('.')).map((o) => o.key)

/**
 * The balancer's settings in `o`: every option of the table it takes, backends aside (the balancer
 * keeps their specs); what a reload compares a new config with.
 * @param {object} o options, defaults filled in
 * @returns {object}
 */
function settingsOf (o) {
  return Object.fromEntries(BALANCER_KEYS.filter((key) => key !== 'backends').map((key) => [key, o[key]]))
}

module.exports = { OPTIONS, API_OPTIONS, TOP_KEYS, BALANCER_KEYS, RESTART_ONLY, RELOADABLE, settingsOf }
