'use strict'

/**
 * A fleet of page backends (ids a, b, c, …), in this process or one child process per backend.
 * Options can differ per backend for heterogeneous experiments: a scalar option given as an array
 * (`cachePages: [2, 2, 4, 4, 8, 8, 8]`, `workers: [2, 3, 4, 5, 6, 7, 8]`) gives backend i the i-th
 * value, `latencyProfiles` gives one profile per backend, and `perBackend[i]` overrides anything for
 * backend i.
 *
 * The package entry `polistes/fleet` (types in fleet.d.ts): `startFleet`, `createBackend`, `backendId`.
 */

const path = require('node:path')
const { fork } = require('node:child_process')
const { ERR_POLISTES_BAD_OPTION, ERR_POLISTES_BAD_CONFIG, ERR_POLISTES_PORT_IN_USE } = require('../src/common/errors')
const { createBackend } = require('./static-server')
const { normalizeBackendOptions } = require('./backend-options')
const { formatPeriodic, normalizePeriodic } = require('./periodic-load')
const { STATS_TOKEN_ENV, newStatsToken, isStatsToken, statsPath } = require('./stats-token')
const { DEFAULTS } = require('../src/config/defaults')

const SERVER_SCRIPT = path.join(__dirname, 'static-server.js')
/** Options that may be given once for all backends or as one value per backend. */
const PER_BACKEND_SCALARS = [
  'root', 'cachePages', 'cacheBytes', 'missMs', 'missCpuMs', 'hitMs', 'workers', 'service', 'maxInflight', 'statsKeys',
  'closeGraceMs'
]
const FAULT_RATES = ['errorRate', 'hangRate', 'dropRate']
const READY_TIMEOUT_MS = 10000
/** Backends in a fleet when not given: polistes' own default (`--fleet-size`). */
const DEFAULT_COUNT = DEFAULTS.fleet.count
const EXIT_TIMEOUT_MS = 5000

function bad (message) {
  return new ERR_POLISTES_BAD_OPTION(message)
}

/** A kill's or restart's backend index, checked: a whole number below `count`, the fleet not closing. */
function checkIndex (index, count, closing) {
  if (!Number.isInteger(index) || index < 0 || index >= count) throw bad(`no backend at index ${index}`)
  if (closing) throw bad('the fleet is closing')
}

/**
 * The id of the i-th backend: a … z, then s27, s28, ….
 *
 * @param {number} index 0-based
 * @returns {string} the id
 */
function backendId (index) {
  return index < 26 ? String.fromCharCode(97 + index) : `s${index + 1}`
}

function nth (name, value, index, count) {
  if (!Array.isArray(value)) return value
  if (value.length === 1) return value[0]
  if (value.length !== count) throw bad(`${name} has ${value.length} values for ${count} backends`)
  return value[index]
}

/**
 * Resolve the createBackend() options of every backend, validated before anything starts.
 *
 * @param {object} shared options for all (scalars or per-backend arrays)
 * @param {number} count number of backends
 * @param {object[]} perBackend overrides by index
 * @returns {object[]} one createBackend() options object per backend
 */
function resolveBackends (shared, count, perBackend) {
  const { latencyProfile, latencyProfiles, periodic, faults = {}, random, ...rest } = shared
  if (latencyProfiles !== undefined) {
    if (latencyProfile !== undefined && latencyProfile.length > 0) {
      throw bad('give latencyProfile or latencyProfiles, not both')
    }
    if (!Array.isArray(latencyProfiles) || (latencyProfiles.length !== count && latencyProfiles.length !== 1)) {
      const got = Array.isArray(latencyProfiles) ? latencyProfiles.length : typeof latencyProfiles
      throw bad(`latencyProfiles needs one profile per backend (${count}), got ${got}`)
    }
  }
  const unknown = Object.keys(rest).filter((k) => !PER_BACKEND_SCALARS.includes(k) && !FAULT_RATES.includes(k))
  if (unknown.length > 0) throw bad(`unknown backend option: ${unknown[0]}`)
  const configs = []
  for (let i = 0; i < count; i++) {
    const config = { id: backendId(i), faults: {} }
    for (const name of PER_BACKEND_SCALARS) if (rest[name] !== undefined) config[name] = nth(name, rest[name], i, count)
    for (const name of FAULT_RATES) {
      const value = rest[name] !== undefined ? rest[name] : faults[name]
      if (value !== undefined) config.faults[name] = nth(name, value, i, count)
    }
    config.latencyProfile = latencyProfiles ? nth('latencyProfiles', latencyProfiles, i, count) : (latencyProfile || [])
    if (random) config.random = random
    if (periodic) config.periodic = periodic
    const override = perBackend[i] || {}
    Object.assign(config, override, { faults: { ...config.faults, ...(override.faults || {}) } })
    normalizeBackendOptions(config) // throws now, not after half the fleet is up
    configs.push(config)
  }
  if (new Set(configs.map((c) => c.id)).size !== configs.length) throw bad('backend ids must be distinct')
  return configs
}

/**
 * Start a fleet of backends.
 *
 * @param {object} [options] backend options (see createBackend), each scalar also accepted as an
 *   array with one value per backend, plus:
 * @param {number} [options.count] number of backends (default: polistes' `fleet.count`, 7)
 * @param {number} [options.basePort=9101] backend i listens on basePort + i; 0 = ephemeral ports
 * @param {string} [options.host='127.0.0.1'] interface
 * @param {boolean} [options.processes=false] one child process per backend (forked static-server.js)
 * @param {number[][]} [options.latencyProfiles] one latency profile per backend
 * @param {object[]} [options.perBackend=[]] overrides for backend i
 * @param {boolean | string | null} [options.statsToken=null] `true`: draw a random stats token, a
 *   string: that token; every backend then answers `/_stats` only with `?token=<token>`
 *   (servers/stats-token.js); null / false: `/_stats` answers anyone
 * @returns {Promise<{ backends: { id: string, url: string, port: number, pid?: number }[], close: () => Promise<void>,
 *   statsToken: string | null, statsPath: string,
 *   kill?: (index: number) => Promise<void>, restart?: (index: number) => Promise<object> }>}
 *   `statsPath`: the path of every backend's `/_stats`, token included (what a health checker of
 *   the fleet GETs); `kill` (SIGKILL; in-process: its listening socket and connections closed at once, as a
 *   crash) and `restart` (cold, same port) of one backend; rejects with a PolistesError (bad option, port in
 *   use, child failed); nothing is left running then
 */
async function startFleet (options = {}) {
  const {
    count = DEFAULT_COUNT, basePort = 9101, host = '127.0.0.1', processes = false, perBackend = [],
    statsToken: tokenOption = null, ...shared
  } = options
  if (!Number.isInteger(count) || count < 1 || count > 1000) {
    throw bad(`count must be an integer from 1 to 1000, got ${JSON.stringify(count)}`)
  }
  if (!Number.isInteger(basePort) || basePort < 0 || basePort + count - 1 > 65535) {
    throw bad(`basePort must be 0 or a port with room for ${count} backends, got ${JSON.stringify(basePort)}`)
  }
  if (typeof host !== 'string' || host === '') throw bad('host must be a non-empty string')
  if (!Array.isArray(perBackend)) throw bad('perBackend must be an array')
  if (processes && shared.random) throw bad('random cannot be passed to child processes')
  const statsToken = resolveStatsToken(tokenOption)
  const configs = resolveBackends(shared, count, perBackend).map((c) => ({ ...c, statsToken }))
  const portOf = (i) => (basePort === 0 ? 0 : basePort + i)
  const fleet = await (processes ? startChildren(configs, portOf, host) : startInProcess(configs, portOf, host))
  return { ...fleet, statsToken, statsPath: statsPath(statsToken) }
}

/** The fleet's stats token from its option: true draws one, a string is checked, null / false: none. */
function resolveStatsToken (option) {
  if (option === null || option === false) return null
  if (option === true) return newStatsToken()
  if (!isStatsToken(option)) throw bad('statsToken must be true, false, null or 16 to 256 letters, digits, "_" or "-"')
  return option
}

async function startInProcess (configs, portOf, host) {
  const started = configs.map((config) => createBackend(config))
  const results = await Promise.allSettled(started.map((b, i) => b.listen(portOf(i), host)))
  const close = async () => { await Promise.all(started.map((b) => b.close())) }
  const failed = results.find((r) => r.status === 'rejected')
  if (failed) {
    await close()
    throw failed.reason
  }
  const backends = results.map((r, i) => ({ id: configs[i].id, url: r.value.url, port: r.value.port }))
  let closing = false
  const check = (index) => checkIndex(index, started.length, closing)
  /**
   * Crash backend `index` (churn, a kill/restart cell): its listening socket and every connection closed at
   * once, the requests in flight never answered; resolves once it no longer listens.
   */
  const kill = async (index) => {
    check(index)
    const { server } = started[index]
    if (!server.listening) return
    const closed = new Promise((resolve) => server.close(() => resolve()))
    server.closeAllConnections()
    await closed
  }
  /** Start backend `index` again, cold (a new backend, an empty cache), on its old port. */
  const restart = async (index) => {
    check(index)
    if (started[index].server.listening) throw bad(`backend ${configs[index].id} is still running`)
    const backend = createBackend(configs[index])
    const { url, port } = await backend.listen(backends[index].port, host)
    started[index] = backend
    backends[index] = { id: configs[index].id, url, port }
    return backends[index]
  }
  return { backends, close: () => { closing = true; return close() }, kill, restart }
}

function childArgs (config, port, host) {
  const f = config.faults || {}
  const args = [
    `--id=${config.id}`, `--port=${port}`, `--host=${host}`,
    `--latency-profile=${(config.latencyProfile || []).join(',')}`
  ]
  if (config.root !== undefined) args.push(`--root=${config.root}`)
  if (config.periodic) args.push(`--periodic=${formatPeriodic(normalizePeriodic(config.periodic))}`)
  const flags = {
    'cache-pages': config.cachePages,
    'cache-bytes': config.cacheBytes,
    'miss-ms': config.missMs,
    'miss-cpu-ms': config.missCpuMs,
    'hit-ms': config.hitMs,
    workers: config.workers,
    service: config.service,
    'max-inflight': config.maxInflight,
    'stats-keys': config.statsKeys,
    'error-rate': f.errorRate,
    'hang-rate': f.hangRate,
    'drop-rate': f.dropRate
  }
  for (const [flag, value] of Object.entries(flags)) if (value !== undefined) args.push(`--${flag}=${value}`)
  return args
}

function startChild (config, port, host) {
  // the stats token goes in the environment: argv is visible to every user (ps)
  const env = { ...process.env }
  if (config.statsToken) env[STATS_TOKEN_ENV] = config.statsToken
  else delete env[STATS_TOKEN_ENV]
  const child = fork(SERVER_SCRIPT, childArgs(config, port, host), { env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
  let stderr = ''
  let ready = false
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (text) => {
    if (ready) process.stderr.write(text.replace(/^(?=.)/gm, `[${config.id}] `))
    else stderr = (stderr + text).slice(-4000)
  })
  const started = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      fail(new ERR_POLISTES_BAD_CONFIG(`backend ${config.id} did not report ready within ${READY_TIMEOUT_MS} ms`))
    }, READY_TIMEOUT_MS)
    function fail (err) {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('exit', onExit)
      reject(err)
    }
    function onMessage (msg) {
      if (!msg || msg.type !== 'ready') return
      clearTimeout(timer)
      ready = true
      child.off('exit', onExit)
      child.off('message', onMessage)
      resolve({ id: msg.id, url: msg.url, port: msg.port, pid: child.pid })
    }
    function onExit (code, signal) {
      // The child printed "static-server: <message>" and exited 2: pass its line on, unchanged
      // (a taken port is rebuilt as the same error the in-process backend throws).
      const line = stderr.trim().split('\n').pop() || `exited with ${signal || code}`
      const message = line.replace(/^static-server: /, '')
      fail(/ is already in use$/.test(message) ? new ERR_POLISTES_PORT_IN_USE(`backend ${config.id}`, host, port) : new ERR_POLISTES_BAD_OPTION(message))
    }
    child.on('message', onMessage)
    child.on('exit', onExit)
    child.on('error', (err) => fail(new ERR_POLISTES_BAD_CONFIG(`backend ${config.id}: ${err.message}`)))
  })
  return { child, started }
}

function stopChild (child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_TIMEOUT_MS)
    child.once('exit', () => { clearTimeout(timer); resolve() })
    child.kill('SIGTERM')
  })
}

async function startChildren (configs, portOf, host) {
  const children = configs.map((config, i) => startChild(config, portOf(i), host))
  const results = await Promise.allSettled(children.map((c) => c.started))
  let closing = null
  const close = () => {
    closing = closing || Promise.all(children.map((c) => stopChild(c.child))).then(() => {})
    return closing
  }
  const failed = results.find((r) => r.status === 'rejected')
  if (failed) {
    await close()
    throw failed.reason
  }
  const backends = results.map((r) => r.value)
  const check = (index) => checkIndex(index, children.length, closing)
  /** SIGKILL backend `index` (churn): no goodbye to its clients; resolves once it has exited. */
  const kill = async (index) => {
    check(index)
    const { child } = children[index]
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }
  /** Start backend `index` again, cold (an empty cache), on its old port. */
  const restart = async (index) => {
    check(index)
    const { child } = children[index]
    if (child.exitCode === null && child.signalCode === null) throw bad(`backend ${configs[index].id} is still running`)
    children[index] = startChild(configs[index], backends[index].port, host)
    const started = await children[index].started
    backends[index] = started
    return started
  }
  return { backends, close, kill, restart }
}

module.exports = { startFleet, createBackend, backendId }

if (require.main === module) {
  const { runCli, yargsFor, intOption, exitOnStop } = require('./cli-support')
  const { BACKEND_FLAGS, fleetOptionsFromArgs } = require('./backend-options')
  runCli('fleet', async (argv) => {
    const args = yargsFor(argv, 'A fleet of page backends a, b, c, … ' +
      'Scalar backend flags take one value for all or a comma list, one per backend.')
      .option('count', { type: 'string', default: String(DEFAULT_COUNT), describe: 'number of backends' })
      .option('base-port', {
        type: 'string', default: '9101', describe: 'backend i listens on base-port + i (0 = ephemeral ports)'
      })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'interface to listen on' })
      .option('processes', { type: 'boolean', default: false, describe: 'one child process per backend' })
      .options(BACKEND_FLAGS)
      .option('latency-profile', {
        ...BACKEND_FLAGS['latency-profile'],
        describe: 'one repeating latency profile for every backend, e.g. 10,15,20,400'
      })
      .option('latency-profiles', {
        type: 'string',
        default: '',
        describe: 'one profile per backend, ";" between backends, e.g. "10,15,20,400;200;250"'
      })
      .parse()
    const count = intOption('count', args.count, { min: 1, max: 1000 })
    const basePort = intOption('base-port', args['base-port'], { min: 0, max: 65535 })
    const fleet = await startFleet({
      count, basePort, host: args.host, processes: args.processes, ...fleetOptionsFromArgs(args)
    })
    for (const b of fleet.backends) console.log(`backend ${b.id} ${b.url}${b.pid ? ` pid ${b.pid}` : ''}`)
    exitOnStop(() => fleet.close())
    if (process.send) process.send({ type: 'ready', backends: fleet.backends })
  })
}
