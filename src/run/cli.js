'use strict'

/**
 * The command line of polistes: flags and config file → one validated config → a running balancer.
 * The executable is bin/polistes.js, which also supplies the embedded fleet of test backends
 * (servers/): nothing under src/ imports servers/.
 */

const yargs = require('yargs/yargs')
const { PolistesError, ERR_POLISTES_BAD_OPTION, ERR_POLISTES_NO_BACKENDS } = require('../common/errors')
const { readConfigFile, resolveConfig, withFlagNames } = require('../config/config')
const {
  OPTIONS,
  GROUPS,
  EXAMPLES,
  DOCS_FILE,
  flagNames,
  flagsToConfig,
  missingValue,
  unknownFlags
} = require('./cli-options')
const cluster = require('./cluster')

/**
 * Parse argv into the flags that were actually given (so a config file can supply the rest).
 * @param {string[]} argv
 * @returns {{ flags: object, configFile?: string, logLevel: string, logFormat?: string }}
 */
function parseArgs (argv) {
  const bare = missingValue(argv)
  if (bare) {
    throw new ERR_POLISTES_BAD_OPTION(
      `${bare.typed === bare.flag ? bare.flag : `${bare.typed} (${bare.flag})`} needs a value`
    )
  }
  let args = yargs(argv)
    .scriptName('polistes')
    .usage('$0 [options]\n\nAn HTTP load balancer. Without --backends it starts an embedded fleet of cache-warming ' +
      'backends.')
    .parserConfiguration({ 'camel-case-expansion': false, 'dot-notation': false }) // one name per flag, as typed
    .updateStrings({ 'Argument: %s, Given: %s, Choices: %s': '--%s: got %s; expected one of: %s' })
  for (const { flag, key, group, parse, ...settings } of OPTIONS) {
    args = args.option(flag, { ...settings, group: GROUPS[group] })
  }
  for (const [command, description] of EXAMPLES) args = args.example(command, description)
  args = args
    .help()
    .version(require('../../package.json').version)
    .group(['help', 'version'], GROUPS.general)
    .epilogue(`Every setting with its default and config-file key: docs/configuration.md (${DOCS_FILE})`)
    .exitProcess(false)
    .fail((message, err) => {
      throw new ERR_POLISTES_BAD_OPTION(
        String(err ? err.message : message).replace(/^Invalid values:/, '').trim().replace(/\s*\n\s*/g, ' ')
      )
    })
    .wrap(Math.min(110, process.stdout.columns || 110))
  const argvParsed = args.parse()
  if (argvParsed.help || argvParsed.version) return { exit: true }
  const unknown = unknownFlags(argvParsed, argv)
  if (unknown.length > 0) {
    throw new ERR_POLISTES_BAD_OPTION(`unknown option${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} ` +
      '(polistes --help lists them)')
  }
  if (argvParsed._.length > 0) {
    throw new ERR_POLISTES_BAD_OPTION(`unexpected argument ${JSON.stringify(String(argvParsed._[0]))}: options ` +
      'start with -- (polistes --help lists them)')
  }
  const flags = withFlagNames(flagsToConfig(argvParsed), flagNames)
  if (argvParsed.watch && argvParsed.config === undefined) {
    throw new ERR_POLISTES_BAD_OPTION('--watch needs --config: it watches the config file')
  }
  return {
    flags,
    configFile: argvParsed.config,
    watch: Boolean(argvParsed.watch),
    logLevel: argvParsed['log-level'],
    logFormat: argvParsed['log-format']
  }
}

/**
 * Starts the embedded fleet from the resolved `fleet` options (count, basePort, cachePages, missMs, hitMs,
 * workers, service).
 * @callback StartFleet
 * @param {{ count: number, basePort: number, cachePages: number, missMs: number, hitMs: number,
 *   workers: number | number[], service: 'timer' | 'cpu' }} fleet
 * @returns {Promise<{ backends: Array<{ id: string, url: string }>, close: () => Promise<void>, statsPath?: string }>}
 *   `statsPath`: the path the fleet's backends are health-checked on (default `/_stats`)
 */

/**
 * Run the balancer (and the embedded fleet when no backends are given) until SIGINT/SIGTERM;
 * SIGHUP (and with --watch a change of the config file) reloads the config.
 * @param {string[]} argv
 * @param {{ startFleet?: StartFleet }} [options] without `startFleet`, backends are required
 * @returns {Promise<{ balancer: import('../balancer').Balancer, reload: (reason: string) => { ok: boolean } } |
 *   undefined>} `reload` is what SIGHUP calls (undefined after --help / --version)
 */
async function main (argv, { startFleet } = {}) {
  const parsed = parseArgs(argv)
  if (parsed.exit) return
  const file = parsed.configFile ? readConfigFile(parsed.configFile) : {}
  const config = cluster.workerConfig(resolveConfig(parsed.flags, file))
  // loaded once the config is valid: a bad flag or file exits after a third of the loading (~70 ms of
  // CPU, not ~200), which is most of the command's runs in the tests
  const { startBalancer } = require('../balancer')
  const { createLogger } = require('../common/logger')
  const { createAccessLog } = require('../observe/access-log')
  const { createReloader, balancerOptions, watchFile } = require('./reload')
  const base = createLogger({
    level: parsed.logLevel,
    pretty: parsed.logFormat ? parsed.logFormat === 'pretty' : undefined
  })
  const logger = cluster.isWorker() ? base.child({ pid: process.pid }) : base // a worker's lines say whose they are
  const startBackends = () => startFleetIfNeeded(config, startFleet, logger)
  if (cluster.isPrimaryOfMany(config)) return cluster.runPrimary({ config, logger, startBackends })

  const { backends, fleet } = await startBackends()
  let balancer
  let accessLog = null
  try {
    if (config.accessLog) {
      accessLog = createAccessLog(config.accessLogFile ? { file: config.accessLogFile } : { logger })
    }
    balancer = await startBalancer({
      ...balancerOptions(fleet ? config : { ...config, backends }, fleet),
      logger,
      accessLog
    })
  } catch (err) {
    if (fleet) await fleet.close()
    if (accessLog) await accessLog.close()
    if (err.code === 'ERR_POLISTES_PORT_IN_USE') {
      err.message += ` (choose another with ${err.listener === 'admin listener' ? '--admin-port' : '--port'})`
    }
    throw err
  }
  // the signal handlers first, then the announcement: a SIGHUP sent as soon as the listening line
  // is read must reach the reloader, not the default action (which ends the process)
  const { reload, current } = createReloader({
    balancer,
    configFile: parsed.configFile,
    flags: parsed.flags,
    config,
    fleet,
    backends,
    prepare: cluster.workerConfig,
    logger
  })
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
  const adminBase = balancer.adminUrl || balancer.url
  if (cluster.isWorker()) {
    logger.info(
      { url: balancer.url, adminUrl: balancer.adminUrl },
      `polistes worker ${process.pid} listening on ${balancer.url}`
    )
    cluster.reportListening(balancer.url)
  } else {
    logger.info(
      {
        algo: config.algo,
        url: balancer.url,
        adminUrl: balancer.adminUrl,
        keepAlive: config.keepAlive,
        engine: config.engine
      },
      `polistes listening on ${balancer.url} (algo ${config.algo})`
    )
    if (balancer.adminUrl) {
      logger.info({ adminUrl: balancer.adminUrl }, `admin surface /_polistes/* on ${balancer.adminUrl} only`)
    }
    logger.info(
      {
        dashboard: `${adminBase}/_polistes/`,
        metrics: `${adminBase}/_polistes/metrics`,
        accessLog: accessLog ? (accessLog.file || 'log') : false
      },
      `dashboard: ${adminBase}/_polistes/`
    )
    process.stdout.isTTY && console.log(`try: curl -i ${balancer.url}/page1.html    stats: ` +
      `${adminBase}/_polistes/stats`)
  }

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
    if (err.code === 'ERR_POLISTES_PORT_IN_USE') {
      err.message += ' (embedded fleet: choose other ports with --fleet-base-port, or 0 for any free ones)'
    }
    throw err
  }
  logger.info(
    { backends: fleet.backends.map((b) => `${b.id}=${b.url}`) },
    `embedded fleet of ${fleet.backends.length} backends (${fleetSummary(config.fleet)})`
  )
  return { backends: fleet.backends.map((b) => ({ id: b.id, url: b.url })), fleet }
}

/**
 * The fleet's settings for the start-up line: cache and miss always, the finite capacity (issue 28)
 * when it is set.
 * @param {{ cachePages: number, missMs: number, hitMs: number, workers: number | number[], service: string }} f
 */
function fleetSummary (f) {
  const parts = [`cache ${f.cachePages} pages`, `miss ${f.missMs} ms`]
  if (f.hitMs > 0) parts.push(`hit ${f.hitMs} ms`)
  if (f.service !== 'timer') parts.push(`service ${f.service}`)
  if (Array.isArray(f.workers) || f.workers > 0) parts.push(`workers ${[].concat(f.workers).join(',')}`)
  return parts.join(', ')
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
