'use strict'

/**
 * Backend options: defaults, validation (one PolistesError per bad value, message on one line),
 * and the CLI flags shared by static-server.js (one value each) and fleet.js (per-backend lists).
 */

const fs = require('node:fs')
const path = require('node:path')
const { ERR_POLISTES_BAD_OPTION } = require('../src/common/errors')
const { intOption, numberOption, listOption } = require('./cli-support')
const { normalizePeriodic, parsePeriodic } = require('./periodic-load')
const { DEFAULT_STATS_KEYS } = require('./served-counts')
const { isStatsToken } = require('./stats-token')

/** The repository's committed pages. */
const DEFAULT_ROOT = path.join(__dirname, '..', 'public')

/** Defaults of createBackend(), each with its reason. */
const DEFAULTS = Object.freeze({
  id: 'a',
  root: DEFAULT_ROOT,
  cachePages: 4, // well below the 25 pages: a backend cannot hold the whole site, so routing matters
  cacheBytes: 0, // 0 = the cache is bounded in pages; > 0: in bytes of page bodies (cachePages ignored)
  missMs: 20, // an I/O wait of the order of a disk read plus rendering; hits cost ~0
  missCpuMs: 0, // opt-in CPU work on a miss (blocks the event loop, like template rendering)
  hitMs: 0, // service time of a hit: ~0 unless emulating an application server (issue 28)
  // 0 = unlimited concurrency (no queue); n: n workers and a FIFO queue (servers/worker-pool.js)
  workers: 0,
  service: 'timer', // hitMs / missMs as a wait (event loop free); 'cpu': busy work (event loop blocked)
  latencyProfile: [], // no extra latency unless replaying an experiment
  periodic: null, // no periodic load unless replaying experiment B (servers/periodic-load.js)
  maxInflight: 0, // 0 = unlimited
  // page paths counted one by one in /_stats?keys=1: bounded, whatever clients send
  statsKeys: DEFAULT_STATS_KEYS,
  // null: /_stats answers anyone; a token: only `/_stats?token=<token>` (servers/stats-token.js)
  statsToken: null,
  closeGraceMs: 2000 // how long close() lets in-flight (non-hung) requests finish
})

function bad (message) {
  return new ERR_POLISTES_BAD_OPTION(message)
}

function checkInt (name, value, min = 0) {
  if (!Number.isInteger(value) || value < min) {
    throw bad(`${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`)
  }
  return value
}

function checkNumber (name, value) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw bad(`${name} must be a number >= 0, got ${JSON.stringify(value)}`)
  }
  return value
}

/** How a backend spends hitMs / missMs: a timer (the event loop stays free) or busy CPU work. */
const SERVICES = Object.freeze(['timer', 'cpu'])

function checkService (name, value) {
  if (!SERVICES.includes(value)) throw bad(`${name} must be ${SERVICES.join(' or ')}, got ${JSON.stringify(value)}`)
  return value
}

function checkRate (name, value) {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw bad(`${name} must be a number in [0, 1], got ${JSON.stringify(value)}`)
  }
  return value
}

/**
 * Validate and complete createBackend() options.
 *
 * @param {object} [options] see createBackend in static-server.js
 * @returns {object} options with defaults, `root` absolute; throws PolistesError ERR_POLISTES_BAD_OPTION
 */
function normalizeBackendOptions (options = {}) {
  const o = { ...DEFAULTS, ...stripUndefined(options) }
  if (typeof o.id !== 'string' || !/^[\w.-]{1,64}$/.test(o.id)) {
    throw bad(`id must be 1-64 letters, digits, "_", "." or "-", got ${JSON.stringify(o.id)}`)
  }
  if (typeof o.root !== 'string' || o.root === '') throw bad('root must be a directory path')
  const root = path.resolve(o.root)
  let stat
  try { stat = fs.statSync(root) } catch { stat = null }
  if (!stat || !stat.isDirectory()) throw bad(`root is not a directory: ${root}`)
  const latencyProfile = o.latencyProfile
  if (!Array.isArray(latencyProfile)) throw bad('latencyProfile must be an array of milliseconds')
  latencyProfile.forEach((ms, i) => checkNumber(`latencyProfile[${i}]`, ms))
  const faults = { errorRate: 0, hangRate: 0, dropRate: 0, ...stripUndefined(o.faults || {}) }
  for (const name of ['errorRate', 'hangRate', 'dropRate']) checkRate(`faults.${name}`, faults[name])
  if (faults.errorRate + faults.hangRate + faults.dropRate > 1) {
    throw bad('faults: errorRate + hangRate + dropRate must not exceed 1')
  }
  if (o.random !== undefined && typeof o.random !== 'function') throw bad('random must be a function returning [0, 1)')
  if (o.now !== undefined && typeof o.now !== 'function') throw bad('now must be a function returning ms')
  if (o.statsToken !== null && !isStatsToken(o.statsToken)) {
    throw bad('statsToken must be null or 16 to 256 letters, digits, "_" or "-"')
  }
  return {
    id: o.id,
    root: fs.realpathSync(root),
    cachePages: checkInt('cachePages', o.cachePages),
    cacheBytes: checkInt('cacheBytes', o.cacheBytes),
    missMs: checkNumber('missMs', o.missMs),
    missCpuMs: checkNumber('missCpuMs', o.missCpuMs),
    hitMs: checkNumber('hitMs', o.hitMs),
    workers: checkInt('workers', o.workers),
    service: checkService('service', o.service),
    latencyProfile: [...latencyProfile],
    periodic: o.periodic === null ? null : normalizePeriodic(o.periodic),
    maxInflight: checkInt('maxInflight', o.maxInflight),
    statsKeys: checkInt('statsKeys', o.statsKeys, 1),
    statsToken: o.statsToken,
    faults,
    random: o.random || Math.random,
    now: o.now || Date.now,
    closeGraceMs: checkNumber('closeGraceMs', o.closeGraceMs)
  }
}

function stripUndefined (object) {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined))
}

/**
 * The backend flags, as yargs option specs (all parsed as strings, validated here, so that
 * `--miss-ms -5` is a clear error rather than yargs' number coercion).
 */
const BACKEND_FLAGS = {
  root: {
    type: 'string',
    describe: 'directory of pages to serve',
    default: DEFAULT_ROOT,
    defaultDescription: 'the repository\'s public/'
  },
  'cache-pages': {
    type: 'string',
    describe: 'pages kept in the in-memory LRU page cache (0 = no cache)',
    default: String(DEFAULTS.cachePages)
  },
  'cache-bytes': {
    type: 'string',
    describe: 'bound the page cache by bytes of page bodies instead of pages (LRU by size; 0 = by pages)',
    default: String(DEFAULTS.cacheBytes)
  },
  'miss-ms': { type: 'string', describe: 'emulated I/O wait of a cache miss, ms', default: String(DEFAULTS.missMs) },
  'miss-cpu-ms': {
    type: 'string',
    describe: 'emulated CPU work of a cache miss, ms (blocks the event loop)',
    default: String(DEFAULTS.missCpuMs)
  },
  'hit-ms': { type: 'string', describe: 'service time of a cache hit, ms', default: String(DEFAULTS.hitMs) },
  workers: {
    type: 'string',
    describe: 'workers: a page request holds one for its service time and queues (FIFO) when all are busy ' +
      '(0 = unlimited)',
    default: String(DEFAULTS.workers)
  },
  service: {
    type: 'string',
    describe: 'how --hit-ms and --miss-ms are spent: timer (a wait, the event loop stays free) or cpu ' +
      '(busy work, the event loop is blocked)',
    default: DEFAULTS.service
  },
  'latency-profile': {
    type: 'string',
    describe: 'repeating extra ms per response, comma list, e.g. 10,15,20,400',
    default: ''
  },
  periodic: {
    type: 'string',
    describe: 'extra ms per response by wall time, ' +
      'e.g. square:period=4000,fast=20,slow=3000[,duty=0.5][,phase=0] (or sine:...)',
    default: ''
  },
  'max-inflight': {
    type: 'string',
    describe: 'answer 503 + Retry-After: 1 beyond this many requests in flight (0 = unlimited)',
    default: String(DEFAULTS.maxInflight)
  },
  'stats-keys': {
    type: 'string',
    describe: 'page paths counted one by one in /_stats?keys=1 (least recently served out)',
    default: String(DEFAULTS.statsKeys)
  },
  'error-rate': { type: 'string', describe: 'fraction of page requests answered 500', default: '0' },
  'hang-rate': { type: 'string', describe: 'fraction of page requests never answered', default: '0' },
  'drop-rate': {
    type: 'string',
    describe: 'fraction of page requests whose socket is destroyed before any byte',
    default: '0'
  }
}

const intItem = (name, text) => intOption(name, text)
const msItem = (name, text) => numberOption(name, text)
const rateItem = (name, text) => numberOption(name, text, { min: 0, max: 1 })
const serviceItem = (name, text) => {
  const value = String(text).trim()
  if (!SERVICES.includes(value)) throw bad(`--${name} must be ${SERVICES.join(' or ')}, got "${text}"`)
  return value
}

/** Flag name → [createBackend option, item parser]. */
const SCALAR_FLAGS = {
  'cache-pages': ['cachePages', intItem],
  'cache-bytes': ['cacheBytes', intItem],
  'miss-ms': ['missMs', msItem],
  'miss-cpu-ms': ['missCpuMs', msItem],
  'hit-ms': ['hitMs', msItem],
  workers: ['workers', intItem],
  service: ['service', serviceItem],
  'max-inflight': ['maxInflight', intItem],
  'stats-keys': ['statsKeys', intItem],
  'error-rate': ['errorRate', rateItem],
  'hang-rate': ['hangRate', rateItem],
  'drop-rate': ['dropRate', rateItem]
}

/**
 * Parse the backend flags of one backend (static-server.js): one value per flag.
 *
 * @param {Record<string, string>} args yargs result
 * @returns {object} createBackend() options (without id)
 */
function backendOptionsFromArgs (args) {
  const out = {
    root: args.root,
    latencyProfile: listOption('latency-profile', args['latency-profile'], msItem),
    periodic: periodicOption(args.periodic),
    faults: {}
  }
  for (const [flag, [option, parse]] of Object.entries(SCALAR_FLAGS)) {
    const value = parse(flag, args[flag])
    if (option.endsWith('Rate')) out.faults[option] = value
    else out[option] = value
  }
  return out
}

/**
 * Parse the backend flags of a fleet: each scalar flag may be a comma list, one value per backend
 * (`--cache-pages 2,2,4,4,8,8,8`); a single value applies to all.
 *
 * @param {Record<string, string>} args yargs result
 * @returns {object} startFleet() backend options: values or arrays of values (numbers; `service` strings)
 */
function fleetOptionsFromArgs (args) {
  const out = { root: args.root }
  for (const [flag, [option, parse]] of Object.entries(SCALAR_FLAGS)) {
    const values = listOption(flag, args[flag], parse)
    if (values.length === 0) throw bad(`--${flag} needs a value`)
    out[option] = values.length === 1 ? values[0] : values
  }
  if (args['latency-profile'] !== '' && args['latency-profiles'] !== '') {
    throw bad('use --latency-profile or --latency-profiles, not both')
  }
  out.latencyProfile = listOption('latency-profile', args['latency-profile'], msItem)
  out.periodic = periodicOption(args.periodic)
  if (args['latency-profiles'] !== '') {
    out.latencyProfiles = String(args['latency-profiles']).split(';')
      .map((one) => listOption('latency-profiles', one, msItem))
  }
  return out
}

/** The --periodic flag: empty for none. */
function periodicOption (text) {
  return text === undefined || text === '' ? null : parsePeriodic(text)
}

module.exports = { BACKEND_FLAGS, normalizeBackendOptions, backendOptionsFromArgs, fleetOptionsFromArgs }
