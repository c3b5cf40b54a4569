'use strict'

/**
 * `polistes --workers N`: N balancer processes on one port (node:cluster).
 *
 * The primary never proxies. It starts the embedded fleet once (when there are no --backends) and
 * passes the backend list to the workers in the environment; it forks N workers, each of which runs
 * the ordinary balancer on the same port (node:cluster shares the listening socket; on Linux the
 * primary accepts connections and hands them to the workers round-robin). Signals:
 * - SIGINT / SIGTERM to the primary: it asks every worker to stop gracefully (IPC message), waits for
 *   all of them (killing what is left after graceMs + 5 s), closes the fleet, and exits 0.
 * - SIGHUP to the primary: forwarded as SIGHUP to every worker, whose own SIGHUP handler (if any,
 *   e.g. a config reload) does the work; a worker without one logs that it has none.
 * - A worker that dies after it was listening is restarted with backoff (100 ms doubling to 5 s,
 *   reset once a worker has stayed up 10 s) and logged. A worker that dies before listening
 *   (port in use, ...) already printed one line: the primary stops the others and exits with its code.
 *
 * Each worker has its own pool and policy state, so wasp runs as N independent colonies: with
 * N > 1, wasp's `balanced` option defaults to 16 (see docs/algorithms.md, "Several colonies").
 */

const cluster = require('node:cluster')

/** Environment variable carrying the backend list from the primary to its workers (JSON). */
const BACKENDS_ENV = 'POLISTES_CLUSTER_BACKENDS'
/** IPC messages between the primary and a worker. */
const MSG_LISTENING = 'polistes:listening'
const MSG_STOP = 'polistes:stop'

const BACKOFF_MIN_MS = 100
const BACKOFF_MAX_MS = 5000
const STABLE_MS = 10000

/** @returns {boolean} true in a worker forked by `runPrimary` */
function isWorker () {
  return cluster.isWorker && process.env[BACKENDS_ENV] !== undefined
}

/**
 * Whether this process must become the primary of several workers.
 * @param {{ workers: number }} config
 */
function isPrimaryOfMany (config) {
  return config.workers > 1 && !isWorker()
}

/** wasp's `balanced` in a worker of several, unless policyOptions gives it. */
const WORKER_BALANCED = 16

/**
 * A worker's config: wasp's `balanced` set to 16 unless policyOptions gives it, so that the
 * independent colonies keep one division of labour (each key's owner in a packing they all compute
 * alike).
 * @param {object} config resolved config
 * @returns {object}
 */
function workerConfig (config) {
  if (config.workers <= 1 || config.algo !== 'wasp' || Object.hasOwn(config.policyOptions, 'balanced')) return config
  return { ...config, policyOptions: { ...config.policyOptions, balanced: WORKER_BALANCED } }
}

/** @returns {Array<{ id: string, url: string }> | undefined} the backends the primary passed, in a worker */
function backendsFromPrimary () {
  return isWorker() ? JSON.parse(process.env[BACKENDS_ENV]) : undefined
}

/**
 * In a worker: tell the primary it listens (so that a later death is restarted, not fatal).
 * Elsewhere: nothing.
 * @param {string} url
 */
function reportListening (url) {
  if (isWorker() && process.connected) process.send({ type: MSG_LISTENING, url, pid: process.pid })
}

/**
 * Call `stop(signal)` on shutdown. A single process stops on SIGINT or SIGTERM. A worker stops on
 * the primary's message or on SIGTERM, and ignores SIGINT (a terminal's Ctrl-C reaches the whole
 * process group; the primary orchestrates). A worker with no SIGHUP handler of its own gets one
 * that logs, so that a forwarded SIGHUP never kills it.
 * @param {(signal: string) => void} stop
 * @param {import('pino').Logger} logger
 */
function onShutdown (stop, logger) {
  if (!isWorker()) {
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
    return
  }
  let stopping = false
  const once = (signal) => {
    if (stopping) return
    stopping = true
    stop(signal)
  }
  process.on('SIGTERM', once)
  process.on('SIGINT', () => {})
  process.on('message', (msg) => { if (msg && msg.type === MSG_STOP) once(msg.signal) })
  process.on('disconnect', () => once('disconnect')) // the primary is gone: no orphan worker
  setImmediate(() => {
    if (process.listenerCount('SIGHUP') === 0) {
      process.on('SIGHUP', () => logger.info({ pid: process.pid }, 'SIGHUP: nothing to reload in this worker'))
    }
  })
}

/**
 * The primary: start the backends once, fork `config.workers` workers, supervise and stop them.
 * Resolves once every worker listens; the process then lives until a signal stops it.
 * @param {object} params
 * @param {object} params.config resolved config
 * @param {import('pino').Logger} params.logger
 * @param {() => Promise<{ backends: Array<{ id: string, url: string }>, fleet: { close: () => Promise<void> } | null
 * }>} params.startBackends
 * @returns {Promise<{ workers: () => number[], stop: (signal?: string) => Promise<void> }>}
 */
async function runPrimary ({ config, logger, startBackends }) {
  const { backends, fleet } = await startBackends()
  const env = { [BACKENDS_ENV]: JSON.stringify(backends.map((b) => ({ ...b }))) }
  const live = new Set()
  let stopping = null
  let backoff = BACKOFF_MIN_MS
  let url

  const fork = () => {
    const worker = cluster.fork(env)
    worker.listening = false
    worker.startedAt = Date.now()
    live.add(worker)
    worker.on('message', (msg) => {
      if (msg && msg.type === MSG_LISTENING) {
        worker.listening = true
        url = msg.url
        worker.emit('polistes:ready')
      }
    })
    worker.on('exit', (code, signal) => onExit(worker, code, signal))
    return worker
  }

  const onExit = (worker, code, signal) => {
    live.delete(worker)
    if (stopping) return
    if (!worker.listening) {
      // it printed its one line (port in use, ...): a restart would fail the same way
      logger.error({ pid: worker.process.pid, code, signal }, 'a worker failed to start: stopping')
      stop('worker failed').then(() => { process.exitCode = code || 1 })
      return
    }
    if (Date.now() - worker.startedAt > STABLE_MS) backoff = BACKOFF_MIN_MS
    logger.error({ pid: worker.process.pid, code, signal, restartInMs: backoff }, 'a worker died: restarting it')
    const delay = backoff
    backoff = Math.min(BACKOFF_MAX_MS, backoff * 2)
    setTimeout(() => { if (!stopping) fork() }, delay).unref()
  }

  const stop = (signal) => {
    if (stopping) return stopping
    logger.info({ signal, workers: live.size }, 'shutting down: stopping every worker')
    stopping = (async () => {
      const exits = [...live].map((w) => new Promise((resolve) => {
        if (w.isDead()) return resolve()
        w.once('exit', resolve)
        try { w.send({ type: MSG_STOP, signal }) } catch { w.process.kill('SIGTERM') }
      }))
      const timer = setTimeout(() => { for (const w of live) w.process.kill('SIGKILL') }, config.graceMs + 5000)
      await Promise.all(exits)
      clearTimeout(timer)
      if (fleet) await fleet.close()
      process.off('SIGHUP', hup)
      logger.info('stopped')
    })()
    return stopping
  }

  const hup = () => {
    logger.info({ workers: live.size }, 'SIGHUP: forwarding to every worker')
    for (const w of live) w.process.kill('SIGHUP')
  }

  let second = false
  const onSignal = (signal) => {
    if (stopping) {
      if (second) return
      second = true
      logger.warn({ signal }, 'second signal: killing the workers and exiting now')
      for (const w of live) w.process.kill('SIGKILL')
      process.exit(1)
    }
    stop(signal).then(() => { process.exitCode = 0 })
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  process.on('SIGHUP', hup)

  // one worker first: a startup failure (port in use, ...) is then reported once, by that worker
  const ready = (w) => new Promise((resolve) => {
    w.once('polistes:ready', resolve)
    w.once('exit', resolve)
  })
  const first = [fork()]
  await ready(first[0])
  if (!stopping) {
    for (let i = 1; i < config.workers; i++) first.push(fork())
    await Promise.all(first.slice(1).map(ready))
  }
  if (stopping) await stopping
  else {
    logger.info(
      { algo: config.algo, url, workers: config.workers, pids: first.map((w) => w.process.pid) },
      `polistes listening on ${url} (algo ${config.algo}, ${config.workers} workers)`
    )
    process.stdout.isTTY && console.log(`try: curl -i ${url}/page1.html    stats (one worker's): ` +
      `${url}/_polistes/stats`)
  }
  return { workers: () => [...live].map((w) => w.process.pid), stop }
}

module.exports = {
  runPrimary,
  isPrimaryOfMany,
  isWorker,
  workerConfig,
  backendsFromPrimary,
  reportListening,
  onShutdown
}
