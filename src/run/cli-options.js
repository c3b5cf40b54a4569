'use strict'

/**
 * The command line's options, declared once: each flag with its config key (a dotted path such as
 * `healthCheck.rise`; none for the flags that only steer the CLI), its --help group and text. The CLI
 * builds yargs from this table, reads the given flags into config keys with it, and names a flag in
 * an error through it (`flagNames`: key → `--flag`), so that a bad value given as a flag is reported
 * as that flag and the same value from a config file as its key there.
 */

const path = require('node:path')
const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { policyNames } = require('../policies')
const { DEFAULTS } = require('../config/defaults')
const { ENGINES } = require('../proxy/proxy-engine')

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
  if (!parts.every((p) => /^\d{3}$/.test(p) || p === 'timeout')) throw new ERR_POLISTES_BAD_OPTION(`--${flag} must be a comma list of statuses and/or timeout, e.g. 503,timeout, got "${value}"`)
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

const dflt = (value) => ({ defaultDescription: String(value) })

/**
 * Every option: `flag` (yargs key), `key` (config key path; none: CLI only), `group`, `parse` (raw
 * value → config value; numbers are checked to be numbers), and the yargs settings (type, alias,
 * describe, defaultDescription, choices, default).
 * @type {Array<{ flag: string, key?: string, group: keyof GROUPS, type: 'string' | 'number' | 'boolean', parse?: (flag: string, value: unknown) => unknown, [yargs: string]: unknown }>}
 */
const OPTIONS = [
  { flag: 'algo', key: 'algo', group: 'balancing', alias: 'a', type: 'string', describe: `routing policy: ${policyNames().join(', ')}`, defaultDescription: DEFAULTS.algo },
  { flag: 'policy-options', key: 'policyOptions', group: 'balancing', type: 'string', parse: parseJson, describe: 'policy options as JSON, e.g. \'{"rounds":4}\' (unknown names are refused)' },
  { flag: 'routing-key', key: 'routingKey', group: 'balancing', type: 'string', describe: 'what wasp and chash-bounded route by: path, url (with query), host, header:<name>, cookie:<name> or param:<name>', defaultDescription: DEFAULTS.routingKey },
  { flag: 'sticky-cookie', key: 'stickyCookie', group: 'balancing', type: 'string', parse: (flag, value) => (value === '' ? null : value), describe: 'cookie stickiness: the first response sets this cookie naming its upstream, which later requests bearing it go to (attributes in the config file)' },
  { flag: 'timeout', key: 'timeoutMs', group: 'balancing', type: 'number', describe: 'upstream inactivity timeout in ms (answered with 504)', ...dflt(DEFAULTS.timeoutMs) },
  { flag: 'retries', key: 'retries', group: 'balancing', type: 'number', describe: 'extra attempts on other upstreams for idempotent requests without a body', ...dflt(DEFAULTS.retries) },
  { flag: 'retry-on', key: 'retryOn', group: 'balancing', type: 'string', parse: parseRetryOn, describe: 'also retried like a failed connection: upstream 5xx statuses and/or timeout (no response head in time), e.g. 503,timeout (default: none)' },
  { flag: 'try-timeout', key: 'tryTimeoutMs', group: 'balancing', type: 'number', describe: 'ms an attempt may wait for the response head once the request is sent; then 504, or a retry with --retry-on timeout (default: --timeout only)' },

  { flag: 'backends', key: 'backends', group: 'backends', alias: 'b', type: 'string', describe: 'comma-separated backend URLs, e.g. http://127.0.0.1:9101#eu&w=2 (fragment: region, w=weight, id=, backup)' },
  { flag: 'keep-alive', key: 'keepAlive', group: 'backends', type: 'boolean', describe: 'reuse upstream connections (--no-keep-alive: one connection per request)', ...dflt(DEFAULTS.keepAlive) },
  { flag: 'engine', key: 'engine', group: 'backends', type: 'string', describe: `what moves the bytes: ${ENGINES.join(', ')}`, defaultDescription: DEFAULTS.engine },
  { flag: 'upstream-ca', key: 'upstreamCa', group: 'backends', type: 'string', describe: 'PEM CA file that https:// backends are verified against (default: Node\'s bundled CAs)' },
  { flag: 'resolve', key: 'resolveMs', group: 'backends', type: 'number', describe: 'look backend host names up again every this many ms; pooled connections to addresses no longer returned are renewed (default: each new connection resolved by the OS)' },
  { flag: 'slow-start', key: 'slowStartMs', group: 'backends', type: 'number', describe: 'ms over which a recovered or added upstream\'s share ramps up (0: off)', ...dflt(DEFAULTS.slowStartMs) },

  { flag: 'max-fails', key: 'maxFails', group: 'health', type: 'number', describe: 'consecutive failures that eject an upstream', ...dflt(DEFAULTS.maxFails) },
  { flag: 'fail-timeout', key: 'failTimeoutMs', group: 'health', type: 'number', describe: 'ms an ejected upstream is left out', ...dflt(DEFAULTS.failTimeoutMs) },
  { flag: 'health-check', key: 'healthCheck.path', group: 'health', type: 'string', describe: 'active HTTP health check: the path to GET on every upstream (off unless given; the embedded fleet is checked on /_stats)' },
  { flag: 'health-interval', key: 'healthCheck.intervalMs', group: 'health', type: 'number', describe: 'ms between two checks of an upstream', ...dflt(DEFAULTS.healthCheck.intervalMs) },
  { flag: 'health-timeout', key: 'healthCheck.timeoutMs', group: 'health', type: 'number', describe: 'ms a check may take before it counts as failed', ...dflt(DEFAULTS.healthCheck.timeoutMs) },
  { flag: 'health-expect', key: 'healthCheck.expectStatus', group: 'health', type: 'string', describe: 'statuses a passing check answers: 200, 200-399, 2xx or a comma list', defaultDescription: DEFAULTS.healthCheck.expectStatus },
  { flag: 'health-rise', key: 'healthCheck.rise', group: 'health', type: 'number', describe: 'consecutive passed checks that bring a down upstream back', ...dflt(DEFAULTS.healthCheck.rise) },
  { flag: 'health-fall', key: 'healthCheck.fall', group: 'health', type: 'number', describe: 'consecutive failed checks that take an upstream down', ...dflt(DEFAULTS.healthCheck.fall) },

  { flag: 'port', key: 'port', group: 'front', alias: 'p', type: 'number', describe: 'listen port (0: any free port)', ...dflt(DEFAULTS.port) },
  { flag: 'host', key: 'host', group: 'front', type: 'string', describe: 'listen address', defaultDescription: DEFAULTS.host },
  { flag: 'front', key: 'front', group: 'front', type: 'string', describe: 'client side: fast (simple GET/HEAD requests parsed and answered by polistes, the rest by node:http) or node (node:http for all)', defaultDescription: DEFAULTS.front },
  { flag: 'workers', key: 'workers', group: 'front', type: 'number', describe: 'balancer processes on the one port (node:cluster), each with its own policy state', ...dflt(DEFAULTS.workers) },
  { flag: 'tls-cert', key: 'tlsCert', group: 'front', type: 'string', describe: 'PEM certificate (chain) file: with --tls-key, serve HTTPS' },
  { flag: 'tls-key', key: 'tlsKey', group: 'front', type: 'string', describe: 'PEM private key file of --tls-cert' },
  { flag: 'max-connections', key: 'maxConnections', group: 'front', type: 'number', describe: 'open client connections; beyond, new connections are closed at once', ...dflt(DEFAULTS.maxConnections) },
  { flag: 'headers-timeout', key: 'headersTimeoutMs', group: 'front', type: 'number', describe: 'ms a client gets to send its request headers (and TLS handshake); then 408', ...dflt(DEFAULTS.headersTimeoutMs) },
  { flag: 'request-timeout', key: 'requestTimeoutMs', group: 'front', type: 'number', describe: 'ms a client gets to send its whole request, body included; then 408', ...dflt(DEFAULTS.requestTimeoutMs) },
  { flag: 'keep-alive-timeout', key: 'keepAliveTimeoutMs', group: 'front', type: 'number', describe: 'ms an idle client connection is kept open', ...dflt(DEFAULTS.keepAliveTimeoutMs) },
  { flag: 'max-header-size', key: 'maxHeaderSize', group: 'front', type: 'number', describe: 'bytes of request line and headers; beyond, 431', ...dflt(DEFAULTS.maxHeaderSize) },
  { flag: 'max-body-size', key: 'maxBodySize', group: 'front', type: 'number', describe: 'bytes of request body; beyond, 413 (0: no limit)', ...dflt(DEFAULTS.maxBodySize) },
  { flag: 'admin-port', key: 'adminPort', group: 'front', type: 'number', describe: 'serve /_polistes/* on this port only, not on the public one (0: any free port)' },
  { flag: 'trusted-proxies', key: 'trustedProxies', group: 'front', type: 'string', parse: parseList, describe: 'comma-separated CIDRs of proxies in front of polistes whose X-Forwarded-* are kept, e.g. 10.0.0.0/8,::1/128 (default: none, every client\'s are replaced)' },
  { flag: 'admin-host', key: 'adminHost', group: 'front', type: 'string', describe: 'address of the admin listener', defaultDescription: DEFAULTS.adminHost },

  { flag: 'max-event-streams', key: 'maxEventStreams', group: 'observability', type: 'number', describe: 'dashboard event streams (/_polistes/events) open at once; beyond, 503 (0: none)', ...dflt(DEFAULTS.maxEventStreams) },
  { flag: 'access-log', key: 'accessLog', group: 'observability', type: 'boolean', describe: 'one log line per request (method, path, status, upstream, attempts, ms, cache, bytes); --no-access-log: none', ...dflt(DEFAULTS.accessLog) },
  { flag: 'access-log-file', key: 'accessLogFile', group: 'observability', type: 'string', describe: 'write the access log to this file (appended, asynchronous) instead of the log' },
  { flag: 'log-level', group: 'observability', type: 'string', choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info', describe: 'log level (debug logs every request)' },
  { flag: 'log-format', group: 'observability', type: 'string', choices: ['pretty', 'json'], describe: 'log format', defaultDescription: 'pretty on a terminal when pino-pretty is installed, json otherwise' },

  { flag: 'fleet-size', key: 'fleet.count', group: 'fleet', type: 'number', describe: 'number of backends', ...dflt(DEFAULTS.fleet.count) },
  { flag: 'fleet-base-port', key: 'fleet.basePort', group: 'fleet', type: 'number', describe: 'first port (0: any free ports)', ...dflt(DEFAULTS.fleet.basePort) },
  { flag: 'cache-pages', key: 'fleet.cachePages', group: 'fleet', type: 'number', describe: 'pages each backend caches', ...dflt(DEFAULTS.fleet.cachePages) },
  { flag: 'miss-ms', key: 'fleet.missMs', group: 'fleet', type: 'number', describe: 'emulated cost of a cache miss in ms', ...dflt(DEFAULTS.fleet.missMs) },

  { flag: 'config', group: 'general', alias: 'c', type: 'string', describe: 'JSON config file ({ address, strategy, backends, ... }); flags override it' },
  { flag: 'watch', group: 'general', type: 'boolean', describe: 'reload when the --config file changes (SIGHUP always reloads)' }
]

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
    else if (o.type === 'number' && (typeof raw !== 'number' || Number.isNaN(raw))) throw new ERR_POLISTES_BAD_OPTION(`--${o.flag} must be a number`)
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
