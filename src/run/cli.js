'use strict'

/**
 * The command line of polistes: flags and config file → one validated config → a running balancer.
 * The executable is bin/polistes.js, which also supplies the embedded fleet of test backends
 * (servers/): nothing under src/ imports servers/.
 */

const yargs = require('yargs/yargs')
const { PolistesError, ERR_POLISTES_BAD_OPTION, ERR_POLISTES_NO_BACKENDS } = require('../common/errors')
const { policyNames } = require('../policies')
const { readConfigFile, resolveConfig } = require('../config/config')
const { DEFAULTS } = require('../config/defaults')
const { startBalancer } = require('../proxy/balancer')
const { ENGINES } = require('../proxy/proxy-engine')
const { createLogger } = require('../common/logger')
const { createAccessLog } = require('../observe/access-log')

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
const { createReloader, balancerOptions, watchFile } = require('../config/reload')
const cluster = require('./cluster')

/**
 * Parse argv into the flags that were actually given (so a config file can supply the rest).
 * @param {string[]} argv
 * @returns {{ flags: object, configFile?: string, logLevel: string, logFormat?: string }}
 */
function parseArgs (argv) {
  const args = yargs(argv)
    .scriptName('polistes')
    .usage('$0 [options]\n\nAn HTTP load balancer. Without --backends it starts an embedded fleet of cache-warming backends.')
    .option('algo', { alias: 'a', type: 'string', describe: `routing policy: ${policyNames().join(', ')}`, defaultDescription: DEFAULTS.algo })
    .option('port', { alias: 'p', type: 'number', describe: 'listen port (0: any free port)', defaultDescription: String(DEFAULTS.port) })
    .option('host', { type: 'string', describe: 'listen address', defaultDescription: DEFAULTS.host })
    .option('backends', { alias: 'b', type: 'string', describe: 'comma-separated backend URLs, e.g. http://127.0.0.1:9101#eu&w=2 (fragment: region, w=weight, id=, backup)' })
    .option('config', { alias: 'c', type: 'string', describe: 'JSON config file ({ address, strategy, backends, ... }); flags override it' })
    .option('keep-alive', { type: 'boolean', describe: 'reuse upstream connections (--no-keep-alive: one connection per request)', defaultDescription: String(DEFAULTS.keepAlive) })
    .option('engine', { type: 'string', describe: `what moves the bytes: ${ENGINES.join(', ')}`, defaultDescription: DEFAULTS.engine })
    .option('timeout', { type: 'number', describe: 'upstream inactivity timeout in ms (answered with 504)', defaultDescription: String(DEFAULTS.timeoutMs) })
    .option('retries', { type: 'number', describe: 'extra attempts on other upstreams for idempotent requests without a body', defaultDescription: String(DEFAULTS.retries) })
    .option('retry-on', { type: 'string', describe: 'also retried like a failed connection: upstream 5xx statuses and/or timeout (no response head in time), e.g. 503,timeout (default: none)' })
    .option('try-timeout', { type: 'number', describe: 'ms an attempt may wait for the response head once the request is sent; then 504, or a retry with --retry-on timeout (default: --timeout only)' })
    .option('max-fails', { type: 'number', describe: 'consecutive failures that eject an upstream', defaultDescription: String(DEFAULTS.maxFails) })
    .option('fail-timeout', { type: 'number', describe: 'ms an ejected upstream is left out', defaultDescription: String(DEFAULTS.failTimeoutMs) })
    .option('max-connections', { type: 'number', describe: 'open client connections; beyond, new connections are closed at once', defaultDescription: String(DEFAULTS.maxConnections) })
    .option('headers-timeout', { type: 'number', describe: 'ms a client gets to send its request headers (and TLS handshake); then 408', defaultDescription: String(DEFAULTS.headersTimeoutMs) })
    .option('request-timeout', { type: 'number', describe: 'ms a client gets to send its whole request, body included; then 408', defaultDescription: String(DEFAULTS.requestTimeoutMs) })
    .option('keep-alive-timeout', { type: 'number', describe: 'ms an idle client connection is kept open', defaultDescription: String(DEFAULTS.keepAliveTimeoutMs) })
    .option('max-header-size', { type: 'number', describe: 'bytes of request line and headers; beyond, 431', defaultDescription: String(DEFAULTS.maxHeaderSize) })
    .option('front', { type: 'string', describe: 'client side: fast (simple GET/HEAD requests parsed and answered by polistes, the rest by node:http) or node (node:http for all)', defaultDescription: DEFAULTS.front })
    .option('max-body-size', { type: 'number', describe: 'bytes of request body; beyond, 413 (0: no limit)', defaultDescription: String(DEFAULTS.maxBodySize) })
    .option('tls-cert', { type: 'string', describe: 'PEM certificate (chain) file: with --tls-key, serve HTTPS' })
    .option('tls-key', { type: 'string', describe: 'PEM private key file of --tls-cert' })
    .option('upstream-ca', { type: 'string', describe: 'PEM CA file that https:// backends are verified against (default: Node\'s bundled CAs)' })
    .option('admin-port', { type: 'number', describe: 'serve /_polistes/* on this port only, not on the public one (0: any free port)' })
    .option('admin-host', { type: 'string', describe: 'address of the admin listener', defaultDescription: DEFAULTS.adminHost })
    .option('policy-options', { type: 'string', describe: 'policy options as JSON, e.g. \'{"rounds":4}\' (unknown names are refused)' })
    .option('routing-key', { type: 'string', describe: 'what wasp and chash-bounded route by: path, url (with query), host, header:<name>, cookie:<name> or param:<name>', defaultDescription: DEFAULTS.routingKey })
    .option('sticky-cookie', { type: 'string', describe: 'cookie stickiness: the first response sets this cookie naming its upstream, which later requests bearing it go to (attributes in the config file)' })
    .option('resolve', { type: 'number', describe: 'look backend host names up again every this many ms; pooled connections to addresses no longer returned are renewed (default: each new connection resolved by the OS)' })
    .option('slow-start', { type: 'number', describe: 'ms over which a recovered or added upstream\'s share ramps up (0: off)', defaultDescription: String(DEFAULTS.slowStartMs) })
    .option('health-check', { type: 'string', describe: 'active HTTP health check: the path to GET on every upstream (off unless given; the embedded fleet is checked on /_stats)' })
    .option('health-interval', { type: 'number', describe: 'ms between two checks of an upstream', defaultDescription: String(DEFAULTS.healthCheck.intervalMs) })
    .option('health-timeout', { type: 'number', describe: 'ms a check may take before it counts as failed', defaultDescription: String(DEFAULTS.healthCheck.timeoutMs) })
    .option('health-expect', { type: 'string', describe: 'statuses a passing check answers: 200, 200-399, 2xx or a comma list', defaultDescription: DEFAULTS.healthCheck.expectStatus })
    .option('health-rise', { type: 'number', describe: 'consecutive passed checks that bring a down upstream back', defaultDescription: String(DEFAULTS.healthCheck.rise) })
    .option('health-fall', { type: 'number', describe: 'consecutive failed checks that take an upstream down', defaultDescription: String(DEFAULTS.healthCheck.fall) })
    .option('watch', { type: 'boolean', describe: 'reload when the --config file changes (SIGHUP always reloads)' })
    .option('workers', { type: 'number', describe: 'balancer processes on the one port (node:cluster), each with its own policy state', defaultDescription: String(DEFAULTS.workers) })
    .option('fleet-size', { type: 'number', describe: 'embedded fleet: number of backends', defaultDescription: String(DEFAULTS.fleet.count) })
    .option('fleet-base-port', { type: 'number', describe: 'embedded fleet: first port (0: any free ports)', defaultDescription: String(DEFAULTS.fleet.basePort) })
    .option('cache-pages', { type: 'number', describe: 'embedded fleet: pages each backend caches', defaultDescription: String(DEFAULTS.fleet.cachePages) })
    .option('miss-ms', { type: 'number', describe: 'embedded fleet: emulated cost of a cache miss in ms', defaultDescription: String(DEFAULTS.fleet.missMs) })
    .option('access-log', { type: 'boolean', describe: 'one log line per request (method, path, status, upstream, attempts, ms, cache, bytes); --no-access-log: none', defaultDescription: String(DEFAULTS.accessLog) })
    .option('access-log-file', { type: 'string', describe: 'write the access log to this file (appended, asynchronous) instead of the log' })
    .option('log-level', { type: 'string', choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info', describe: 'log level (debug logs every request)' })
    .option('log-format', { type: 'string', choices: ['pretty', 'json'], describe: 'log format', defaultDescription: 'pretty on a terminal, json otherwise' })
    .strict()
    .help()
    .version(require('../../package.json').version)
    .exitProcess(false)
    .fail((message, err) => {
      throw new ERR_POLISTES_BAD_OPTION(err ? err.message : message)
    })
    .wrap(Math.min(110, process.stdout.columns || 110))
  const argvParsed = args.parse()
  if (argvParsed.help || argvParsed.version) return { exit: true }
  const numberFlags = {
    port: 'port',
    timeout: 'timeoutMs',
    'try-timeout': 'tryTimeoutMs',
    retries: 'retries',
    'max-fails': 'maxFails',
    'fail-timeout': 'failTimeoutMs',
    'max-connections': 'maxConnections',
    'headers-timeout': 'headersTimeoutMs',
    'request-timeout': 'requestTimeoutMs',
    'keep-alive-timeout': 'keepAliveTimeoutMs',
    'max-header-size': 'maxHeaderSize',
    'max-body-size': 'maxBodySize',
    'admin-port': 'adminPort',
    'slow-start': 'slowStartMs',
    workers: 'workers'
  }
  const stringFlags = { algo: 'algo', host: 'host', backends: 'backends', 'tls-cert': 'tlsCert', 'tls-key': 'tlsKey', 'upstream-ca': 'upstreamCa', 'admin-host': 'adminHost', engine: 'engine', front: 'front' }
  const flags = {}
  for (const [flag, key] of Object.entries(numberFlags)) {
    if (argvParsed[flag] !== undefined) flags[key] = requireNumber(flag, argvParsed[flag])
  }
  for (const [flag, key] of Object.entries(stringFlags)) {
    if (argvParsed[flag] !== undefined) flags[key] = argvParsed[flag]
  }
  if (argvParsed['keep-alive'] !== undefined) flags.keepAlive = argvParsed['keep-alive']
  if (argvParsed['access-log'] !== undefined) flags.accessLog = argvParsed['access-log']
  if (argvParsed['access-log-file'] !== undefined) flags.accessLogFile = argvParsed['access-log-file']
  if (argvParsed['routing-key'] !== undefined) flags.routingKey = argvParsed['routing-key']
  if (argvParsed.resolve !== undefined) flags.resolveMs = requireNumber('resolve', argvParsed.resolve)
  if (argvParsed['sticky-cookie'] !== undefined) flags.stickyCookie = argvParsed['sticky-cookie'] === '' ? null : argvParsed['sticky-cookie']
  if (argvParsed['retry-on'] !== undefined) flags.retryOn = parseRetryOn('retry-on', argvParsed['retry-on'])
  if (argvParsed['policy-options'] !== undefined) {
    try {
      flags.policyOptions = JSON.parse(argvParsed['policy-options'])
    } catch (err) {
      throw new ERR_POLISTES_BAD_OPTION(`--policy-options is not valid JSON: ${err.message}`)
    }
  }
  const fleetFlags = { 'fleet-size': 'count', 'fleet-base-port': 'basePort', 'cache-pages': 'cachePages', 'miss-ms': 'missMs' }
  for (const [flag, key] of Object.entries(fleetFlags)) {
    if (argvParsed[flag] !== undefined) (flags.fleet ||= {})[key] = requireNumber(flag, argvParsed[flag])
  }
  const healthFlags = { 'health-interval': 'intervalMs', 'health-timeout': 'timeoutMs', 'health-rise': 'rise', 'health-fall': 'fall' }
  for (const [flag, key] of Object.entries(healthFlags)) {
    if (argvParsed[flag] !== undefined) (flags.healthCheck ||= {})[key] = requireNumber(flag, argvParsed[flag])
  }
  if (argvParsed['health-check'] !== undefined) (flags.healthCheck ||= {}).path = argvParsed['health-check']
  if (argvParsed['health-expect'] !== undefined) (flags.healthCheck ||= {}).expectStatus = argvParsed['health-expect']
  if (argvParsed.watch && argvParsed.config === undefined) throw new ERR_POLISTES_BAD_OPTION('--watch needs --config: it watches the config file')
  return { flags, configFile: argvParsed.config, watch: Boolean(argvParsed.watch), logLevel: argvParsed['log-level'], logFormat: argvParsed['log-format'] }
}

function requireNumber (flag, value) {
  if (typeof value !== 'number' || Number.isNaN(value)) throw new ERR_POLISTES_BAD_OPTION(`--${flag} must be a number`)
  return value
}

/**
 * Starts the embedded fleet from the resolved `fleet` options (count, basePort, cachePages, missMs).
 * @callback StartFleet
 * @param {{ count: number, basePort: number, cachePages: number, missMs: number }} fleet
 * @returns {Promise<{ backends: Array<{ id: string, url: string }>, close: () => Promise<void> }>}
 */

/**
 * Run the balancer (and the embedded fleet when no backends are given) until SIGINT/SIGTERM;
 * SIGHUP (and with --watch a change of the config file) reloads the config.
 * @param {string[]} argv
 * @param {{ startFleet?: StartFleet }} [options] without `startFleet`, backends are required
 * @returns {Promise<{ balancer: import('../proxy/balancer').Balancer, reload: (reason: string) => { ok: boolean } } | undefined>}
 *   `reload` is what SIGHUP calls (undefined after --help / --version)
 */
async function main (argv, { startFleet } = {}) {
  const parsed = parseArgs(argv)
  if (parsed.exit) return
  const file = parsed.configFile ? readConfigFile(parsed.configFile) : {}
  const config = cluster.workerConfig(resolveConfig(parsed.flags, file))
  const base = createLogger({ level: parsed.logLevel, pretty: parsed.logFormat ? parsed.logFormat === 'pretty' : undefined })
  const logger = cluster.isWorker() ? base.child({ pid: process.pid }) : base // a worker's lines say whose they are
  const startBackends = () => startFleetIfNeeded(config, startFleet, logger)
  if (cluster.isPrimaryOfMany(config)) return cluster.runPrimary({ config, logger, startBackends })

  const { backends, fleet } = await startBackends()
  let balancer
  let accessLog = null
  try {
    if (config.accessLog) accessLog = createAccessLog(config.accessLogFile ? { file: config.accessLogFile } : { logger })
    balancer = await startBalancer({ ...balancerOptions(fleet ? config : { ...config, backends }, fleet), logger, accessLog })
  } catch (err) {
    if (fleet) await fleet.close()
    if (accessLog) await accessLog.close()
    if (err.code === 'ERR_POLISTES_PORT_IN_USE') err.message += ' (choose another with --port)'
    throw err
  }
  const adminBase = balancer.adminUrl || balancer.url
  if (cluster.isWorker()) {
    logger.info({ url: balancer.url, adminUrl: balancer.adminUrl }, `polistes worker ${process.pid} listening on ${balancer.url}`)
    cluster.reportListening(balancer.url)
  } else {
    logger.info({ algo: config.algo, url: balancer.url, adminUrl: balancer.adminUrl, keepAlive: config.keepAlive, engine: config.engine }, `polistes listening on ${balancer.url} (algo ${config.algo})`)
    if (balancer.adminUrl) logger.info({ adminUrl: balancer.adminUrl }, `admin surface /_polistes/* on ${balancer.adminUrl} only`)
    logger.info({ dashboard: `${adminBase}/_polistes/`, metrics: `${adminBase}/_polistes/metrics`, accessLog: accessLog ? (accessLog.file || 'log') : false }, `dashboard: ${adminBase}/_polistes/`)
    process.stdout.isTTY && console.log(`try: curl -i ${balancer.url}/page1.html    stats: ${adminBase}/_polistes/stats`)
  }

  const { reload, current } = createReloader({ balancer, configFile: parsed.configFile, flags: parsed.flags, config, fleet, backends, prepare: cluster.workerConfig, logger })
  process.on('SIGHUP', () => reload('SIGHUP'))
  const watcher = parsed.watch ? watchFile(parsed.configFile, () => reload('watch')) : null

  let stopping = false
  const stop = async (signal) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now')
      process.exit(1)
    }
    stopping = true
    logger.info({ signal }, 'shutting down: no new connections, waiting for in-flight requests')
    if (watcher) watcher.close()
    await balancer.close({ graceMs: current().graceMs })
    if (fleet) await fleet.close()
    if (accessLog) await accessLog.close()
    logger.info('stopped')
    process.exitCode = 0
    if (cluster.isWorker()) process.disconnect()
  }
  cluster.onShutdown(stop, logger)
  return { balancer, reload }
}

/**
 * The backends: the configured ones, those the cluster primary passed to this worker, or an
 * embedded fleet started here (then `fleet` is set, to be closed on shutdown).
 * @param {object} config
 * @param {StartFleet | undefined} startFleet
 * @param {import('pino').Logger} logger
 */
async function startFleetIfNeeded (config, startFleet, logger) {
  const backends = config.backends || cluster.backendsFromPrimary()
  if (backends) return { backends, fleet: null }
  if (!startFleet) throw new ERR_POLISTES_NO_BACKENDS()
  let fleet
  try {
    fleet = await startFleet(config.fleet)
  } catch (err) {
    if (err.code === 'ERR_POLISTES_PORT_IN_USE') err.message += ' (embedded fleet: choose other ports with --fleet-base-port, or 0 for any free ones)'
    throw err
  }
  logger.info({ backends: fleet.backends.map((b) => `${b.id}=${b.url}`) }, `embedded fleet of ${fleet.backends.length} backends (cache ${config.fleet.cachePages} pages, miss ${config.fleet.missMs} ms)`)
  return { backends: fleet.backends.map((b) => ({ id: b.id, url: b.url })), fleet }
}

/** Print one line for a known error and exit 2; anything else is a bug and keeps its stack. */
function onError (err) {
  if (err instanceof PolistesError) {
    process.stderr.write(`polistes: ${err.message}\n`)
    process.exit(err.exitCode)
  }
  process.stderr.write(`polistes: unexpected error: ${err && err.stack}\n`)
  process.exit(1)
}

module.exports = { main, parseArgs, onError }
