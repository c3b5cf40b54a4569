'use strict'

/**
 * Command-line options of `npm run bench`, parsed and validated into one settings object.
 * Every mistake becomes a PolistesError with a one-line message; bench/runners/run.js prints it and exits 2.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const yargs = require('yargs/yargs')
const { PolistesError, ERR_POLISTES_BAD_OPTION, ERR_POLISTES_UNKNOWN_ALGO } = require('../../src/common/errors')
const { policyNames } = require('../../src/policies')
const { REFERENCE_NAMES, referenceProblem } = require('./references')
const { DEFAULT_ENGINE, ENGINES } = require('../../src/proxy/proxy-engine')
const { parseWorkload } = require('../workloads/workload-options')
const { pageSizes } = require('../workloads/page-sizes')
const { getScenario, scenarioNames } = require('../workloads/scenarios')
const { PEER_ARMS, parsePeers } = require('../peers/peer-configs')
const { findBinary, INSTALL } = require('../peers/peers')
const { parseSweep, parseKill, parseStealGate, backendWorkers, KILL_RATE } = require('./sweep-options')
const { readHostCpu } = require('./host-cpu')
const { MAX_WAIT_S, RETRY_S, QUIET_AFTER_WAVE } = require('./steal-gate')

/** The flags that change the scenario's workload or fleet, named beside its description when given. */
const WORKLOAD_FLAGS = ['pages', 'popularity', 'zipf', 'page-size', 'cache-pages', 'cache-bytes', 'hit-ms', 'miss-ms',
  'backend-workers', 'shift']

const RESULTS_DIR = path.join(__dirname, '..', 'results')

/** Trials and seconds per run of a scenario's full matrix (`--full`, or a scenario without a quick plan). */
const FULL_PLAN = Object.freeze({ trials: 3, warmup: 5, duration: 20 })

function bad (message) {
  return new ERR_POLISTES_BAD_OPTION(message)
}

/**
 * The yargs parser, without side effects (no exit, no printing), so tests can call it.
 * @param {string[]} argv
 */
function parser (argv) {
  return yargs(argv)
    .scriptName('npm run bench --')
    .usage('$0 [options]\n\nCompare routing algorithms on a fresh fleet and balancer per run.')
    .option('scenario', { type: 'string', default: 'cache', describe: `one of: ${scenarioNames().join(', ')}` })
    .option('full', {
      type: 'boolean',
      default: false,
      describe: 'the scenario\'s full matrix instead of its quick default (cache: round-robin, ' +
        'chash-bounded, wasp and every installed peer arm, 3 trials of 5 s + 20 s, about 10.5 min; quick: ' +
        'round-robin, wasp and nginx-uri, 3 trials of 5 s + 7 s, about 2 min; capacity: every contender, 3 ' +
        'trials of 10 s + 15 s per cell, quick: 1 trial of 2 s + 3 s)'
    })
    .option('algos', {
      type: 'string',
      describe: 'comma-separated algorithms (default: the scenario\'s); the capacity scenario also takes the ' +
        'references clairvoyant and counting, told the fleet (bench/runners/references.js)'
    })
    .option('trials', {
      type: 'number',
      defaultDescription: `${FULL_PLAN.trials} (quick plan: the scenario's)`,
      describe: 'runs per algorithm, alternating'
    })
    .option('duration', {
      type: 'number',
      defaultDescription: `${FULL_PLAN.duration} (quick plan: the scenario's)`,
      describe: 'measured window, seconds'
    })
    .option('warmup', {
      type: 'number',
      defaultDescription: `${FULL_PLAN.warmup} (quick plan: the scenario's)`,
      describe: 'learning phase before the window, seconds'
    })
    .option('jit-warmup', {
      type: 'number',
      default: 3,
      describe: 'an untimed run before the first trial, seconds (0: none), discarded: it warms the machine\'s ' +
        'file cache (modules, pages); every run still starts its own processes, whose JIT starts cold'
    })
    .option('connections', { type: 'number', describe: 'concurrent client connections (default: the scenario\'s, 32)' })
    .option('pages', {
      type: 'number',
      describe: 'distinct pages, 1 to 100000, generated at start from --seed into a temporary directory ' +
        '(default: the scenario\'s, 25)'
    })
    .option('cache-pages', { type: 'number', describe: 'pages each backend caches (default: the scenario\'s, 4)' })
    .option('cache-bytes', {
      type: 'string',
      describe: 'bound each backend\'s cache in bytes instead of pages, e.g. 1.5m (LRU by size)'
    })
    .option('page-size', {
      type: 'string',
      describe: 'page sizes: fixed:BYTES | lognormal:MEDIAN,SIGMA | uniform:MIN,MAX, drawn from --seed ' +
        '(default: the scenario\'s; the cache scenario: the ~60 KB lorem pages)'
    })
    .option('miss-ms', { type: 'number', describe: 'emulated cost of a cache miss, ms (default 20)' })
    .option('hit-ms', {
      type: 'number',
      describe: 'service time of a hit, ms, on backends with --backend-workers (default: the scenario\'s; capacity: 5)'
    })
    .option('backend-workers', {
      type: 'string',
      describe: 'workers per backend (a FIFO queue in front; a request holds one for its service time): a number, ' +
        'or one per backend, e.g. 2,3,4,5,6,7,8 (default: the scenario\'s; capacity: 4; others unlimited)'
    })
    .option('popularity', { type: 'string', describe: 'uniform | zipf:<s> (default: the scenario\'s, uniform)' })
    .option('zipf', { type: 'number', describe: 'Zipf exponent s > 0: the same as --popularity zipf:<s>' })
    .option('rates', {
      type: 'string',
      describe: 'capacity scenario: the offered rates swept, req/s, comma-separated (default 1500,2000,2500,3000,3500)'
    })
    .option('slo', {
      type: 'number',
      describe: 'capacity scenario: the p99 target of the capacity at SLO, ms (default 4 x hit + miss service time, 40)'
    })
    .option('stop-after', {
      type: 'number',
      describe: 'capacity scenario: a contender\'s sweep stops after this many rates over the SLO (default 2)'
    })
    .option('kill', {
      type: 'string',
      describe: 'capacity scenario: AT:DOWN, a kill/restart cell per contender at one offered rate (--rates, ' +
        `default ${KILL_RATE}): backend a crashed AT s into the measured window (its listening socket and ` +
        'connections closed at once) and started again, cold, on its port DOWN s later; reports the failed ' +
        'requests by kind and the regain time'
    })
    .option('steal-gate', {
      type: 'string',
      describe: 'capacity scenario: CORES[:SECONDS], before each cell ask for every CPU for SECONDS (default 2) and ' +
        `hold the cell until the hypervisor withheld at most CORES (Linux /proc/stat; probes every ${RETRY_S} s, ` +
        `after one over CORES ${QUIET_AFTER_WAVE} quiet in a row; up to ${MAX_WAIT_S / 60} min, then the cell ` +
        'runs anyway)'
    })
    .option('shift', {
      type: 'string',
      describe: 'SECONDS[,STEP]: the popularity ranking rotates by STEP places (default a tenth of the ' +
        'pages) every SECONDS (needs zipf)'
    })
    .option('churn', {
      type: 'boolean',
      describe: 'SIGKILL one backend (a) a third into the measured window and restart it, cold, a third ' +
        'later (backends run as processes)'
    })
    .option('ramp', {
      type: 'number',
      defaultDescription: 'half the warm-up with an offered rate (--rate, the capacity scenario), else 0',
      describe: 'open loop: seconds at the start of the warm-up over which the offered rate rises from 0 to its ' +
        'value (0: the full rate from the first request, on a fleet and balancer started cold)'
    })
    .option('rate', {
      type: 'number',
      describe: 'open loop: requests/s at fixed intended send times, spread over the connections; latency ' +
        'counted from the intended time (default: closed loop, as fast as possible)'
    })
    .option('load', {
      type: 'string',
      default: 'auto',
      describe: 'closed-loop load generator: autocannon | wrk | node | auto (wrk when peers run and wrk is ' +
        'installed; node with --sources)'
    })
    .option('sources', {
      type: 'number',
      describe: 'spread the connections over this many loopback source addresses 127.0.1.1, 127.0.1.2, ... ' +
        '(Linux), so the balancer sees many clients (Node generator; default: the scenario\'s, else one)'
    })
    .option('retry-on', {
      type: 'string',
      describe: 'the balancer retries these upstream statuses (and timeout) elsewhere (its --retry-on), ' +
        'e.g. 503,timeout (default: the scenario\'s arms, else none)'
    })
    .option('try-timeout', {
      type: 'number',
      describe: 'the balancer\'s --try-timeout on every arm: ms an attempt may wait for its response head ' +
        '(default: the scenario\'s arms, else none)'
    })
    .option('requests', {
      type: 'number',
      describe: 'closed loop (node generator): measure this many requests after the learning phase instead ' +
        'of --duration seconds, as ApacheBench -n; 0: --duration (default: the scenario\'s, else 0)'
    })
    .option('peers', {
      type: 'string',
      describe: 'HAProxy/nginx arms in front of the same fleet: none, or haproxy,nginx and/or arm names ' +
        '(default: the scenario\'s peers found on PATH; the cache scenario\'s quick plan: nginx-uri)'
    })
    .option('keep-alive', { type: 'boolean', describe: 'balancer-to-backend keep-alive; --no-keep-alive turns it off' })
    .option('engine', {
      type: 'string',
      default: DEFAULT_ENGINE,
      describe: `balancer proxy engine: ${ENGINES.join(', ')}`
    })
    .option('policy-options', { type: 'string', describe: 'JSON object passed to the policy, e.g. \'{"xi":10}\'' })
    .option('workers', {
      type: 'number',
      default: 1,
      describe: 'balancer processes on one port (node:cluster, like polistes --workers); CPU is summed over them'
    })
    .option('peer-workers', {
      type: 'number',
      describe: 'HAProxy threads (nbthread) and nginx worker processes (worker_processes) of the peer arms; ' +
        'CPU is summed over them (default: --workers)'
    })
    .option('seed', { type: 'number', default: 1, describe: 'seed of the page sequence' })
    .option('out', { type: 'string', describe: 'JSON result path (default bench/results/<timestamp>-<scenario>.json)' })
    .option('results-dir', {
      type: 'string',
      default: RESULTS_DIR,
      defaultDescription: 'bench/results',
      describe: 'where JSON, CSV and HTML go'
    })
    .option('profile', {
      type: 'boolean',
      default: false,
      describe: 'write a V8 CPU profile of each balancer child (node --cpu-prof) to <results-dir>/profiles'
    })
    .option('quiet', { type: 'boolean', default: false, describe: 'no progress line' })
    .strict()
    .help()
    .version(false)
    .exitProcess(false)
    .fail((msg, err) => { throw bad(err ? err.message : msg) })
}

/** Table columns of an open-loop run: latency at a fixed rate, the tail included. */
const OPEN_LOOP_COLUMNS = ['rps', 'p50', 'p90', 'p99', 'p999', 'max', 'hitRate', 'cpuPer10k', 'errors']

/**
 * The load generator: `open-loop` with --rate (bench/load/open-loop.js), else autocannon or wrk.
 * `auto` takes wrk when peers run (their rates would take a core of autocannon's) and wrk is
 * installed.
 */
function loadGenerator (value, { rate, sources, peers, popularity, notes }) {
  if (!['auto', 'autocannon', 'wrk', 'node'].includes(value)) {
    throw bad(`--load must be auto, autocannon, wrk or node, got "${value}"`)
  }
  if (rate) {
    if (value !== 'auto') {
      throw bad(`--rate (and the capacity scenario's --rates) runs the open-loop generator; --load ${value} is ` +
        'closed loop only (leave --load out)')
    }
    return 'open-loop'
  }
  if (sources > 1) {
    if (value !== 'auto' && value !== 'node') {
      throw bad(`--sources needs the Node generator (--load node or auto), not ${value}`)
    }
    return 'node'
  }
  if (value === 'node') return 'node'
  const wrkOk = Boolean(popularity)
  if (value === 'wrk') {
    if (!findBinary('wrk')) throw bad('--load wrk: wrk not found on PATH (install: apt-get install wrk)')
    return 'wrk'
  }
  if (value === 'auto' && peers && wrkOk) {
    if (findBinary('wrk')) return 'wrk'
    notes.push('note: wrk not found on PATH, autocannon drives the load and may lack headroom at the ' +
      'peers\' rates (install: apt-get install wrk)')
  }
  return 'autocannon'
}

function number (value, name, { min = -Infinity, max = Infinity, integer = false, exclusiveMin = false } = {}) {
  if (typeof value !== 'number' || Number.isNaN(value) || !Number.isFinite(value)) {
    throw bad(`--${name} must be a number, got "${value}"`)
  }
  if (integer && !Number.isInteger(value)) throw bad(`--${name} must be an integer, got ${value}`)
  if (exclusiveMin ? value <= min : value < min) {
    throw bad(`--${name} must be ${exclusiveMin ? 'greater than' : 'at least'} ${min}, got ${value}`)
  }
  if (value > max) throw bad(`--${name} must be at most ${max}, got ${value}`)
  return value
}

/**
 * Parse and validate argv.
 * @param {string[]} argv arguments after `node bench/runners/run.js`
 * @returns {object | null} settings, or null when --help was asked (yargs printed it)
 * @throws {PolistesError} on any bad option
 */
function parseOptions (argv) {
  let args
  let helped = false
  const y = parser(argv)
  try {
    args = y.parseSync(argv, {}, (err, _argv, output) => {
      if (err) throw bad(err.message)
      if (output) { helped = true; console.log(output) }
    })
  } catch (err) {
    if (err instanceof PolistesError) throw err
    throw bad(err.message)
  }
  if (helped || args.help) return null

  const scenario = getScenario(args.scenario)
  if (!scenario) {
    throw bad(`unknown scenario "${args.scenario}"; expected one of: ${scenarioNames().join(', ')}`)
  }

  // the quick plan of the scenario (cache: `npm run bench` with no arguments), unless --full;
  // whatever is given explicitly overrides it
  const quick = !args.full && scenario.quick ? scenario.quick : null
  const plan = quick || { ...FULL_PLAN, ...(scenario.full || {}), algos: scenario.algos, peers: scenario.peers }

  const known = policyNames().concat(REFERENCE_NAMES)
  const algos = args.algos === undefined
    ? plan.algos.slice()
    : String(args.algos).split(',').map((s) => s.trim()).filter(Boolean)
  if (algos.length === 0) throw bad('--algos needs at least one algorithm')
  for (const algo of algos) {
    if (!known.includes(algo)) {
      throw new ERR_POLISTES_UNKNOWN_ALGO(algo, known)
    }
  }
  if (new Set(algos).size !== algos.length) throw bad(`--algos lists an algorithm twice: ${algos.join(',')}`)

  const trials = number(args.trials ?? plan.trials, 'trials', { min: 1, integer: true })
  const duration = number(args.duration ?? plan.duration, 'duration', { min: 0, exclusiveMin: true, integer: true })
  const warmup = number(args.warmup ?? plan.warmup, 'warmup', { min: 0, integer: true })
  const jitWarmup = number(args['jit-warmup'], 'jit-warmup', { min: 0, integer: true })
  const connections = number(args.connections ?? scenario.connections, 'connections', { min: 1, integer: true })
  if (args.zipf !== undefined && args.popularity !== undefined) {
    throw bad('--zipf and --popularity exclude each other: --zipf S is --popularity zipf:S')
  }
  if (args.zipf !== undefined) number(args.zipf, 'zipf', { min: 0, exclusiveMin: true })
  const workload = parseWorkload({
    pages: args.pages,
    popularity: args.zipf !== undefined ? `zipf:${args.zipf}` : args.popularity,
    'cache-pages': args['cache-pages'],
    'cache-bytes': args['cache-bytes'],
    'page-size': args['page-size'],
    shift: args.shift,
    churn: args.churn ?? scenario.churn
  }, {
    pages: scenario.pages,
    popularity: scenario.popularity,
    pageSize: scenario.pageSize,
    cachePages: scenario.fleet.cachePages,
    minPages: 1,
    minCachePages: 0,
    upstreams: scenario.fleet.count
  })
  const { pages, popularity } = workload
  const cachePages = workload.cachePages ?? scenario.fleet.cachePages
  const missMs = number(args['miss-ms'] ?? scenario.fleet.missMs, 'miss-ms', { min: 0 })
  const hitMs = args['hit-ms'] ?? scenario.fleet.hitMs
  if (hitMs !== undefined) number(hitMs, 'hit-ms', { min: 0 })
  const workersPerBackend = backendWorkers(args['backend-workers'], scenario.fleet)
  const sweep = parseSweep(args, scenario, { hitMs, missMs })
  const kill = parseKill(args.kill, { duration, sweep, rates: args.rates })
  if (kill && args.rates === undefined) sweep.rates = [KILL_RATE]
  const stealGate = parseStealGate(args['steal-gate'], {
    sweep, cpus: os.cpus().length, hostCounters: () => readHostCpu() !== null
  })
  if (kill && (args.churn ?? scenario.churn)) throw bad('--kill and --churn exclude each other: both kill backend a')
  if (sweep && args.rate !== undefined) throw bad(`the ${args.scenario} scenario sweeps --rates; --rate sets one rate`)
  const rateArg = args.rate ?? scenario.rate
  const rate = rateArg === undefined
    ? undefined
    : number(rateArg, 'rate', { min: 0, exclusiveMin: true, integer: true })
  const ramp = parseRamp(args.ramp, { warmup, open: Boolean(sweep || rate) })
  const sources = number(args.sources ?? scenario.sources ?? 1, 'sources', { min: 1, max: 250 * 254, integer: true })
  const retryOn = args['retry-on'] === undefined ? undefined : statusList(args['retry-on'])
  const tryTimeoutMs = args['try-timeout'] === undefined
    ? undefined
    : number(args['try-timeout'], 'try-timeout', { min: 0, exclusiveMin: true, integer: true })
  const requestsArg = args.requests ?? scenario.requests
  const requests = requestsArg === undefined || requestsArg === 0
    ? undefined
    : number(requestsArg, 'requests', { min: 1, integer: true })
  const seed = number(args.seed, 'seed', { integer: true })
  if (!ENGINES.includes(args.engine)) {
    throw bad(`unknown --engine "${args.engine}"; expected one of: ${ENGINES.join(', ')}`)
  }
  const workers = number(args.workers, 'workers', { min: 1, integer: true })
  if (workers > 64) throw bad(`--workers must be at most 64, got ${workers}`)
  const peerWorkers = number(args['peer-workers'] ?? workers, 'peer-workers', { min: 1, max: 64, integer: true })

  let policyOptions = {}
  if (args['policy-options'] !== undefined) {
    try {
      policyOptions = JSON.parse(args['policy-options'])
    } catch {
      throw bad(`--policy-options must be a JSON object, got ${args['policy-options']}`)
    }
    if (!policyOptions || typeof policyOptions !== 'object' || Array.isArray(policyOptions)) {
      throw bad(`--policy-options must be a JSON object, got ${args['policy-options']}`)
    }
  }

  const keepAliveVariants = args['keep-alive'] === undefined ? scenario.keepAliveVariants : [args['keep-alive']]
  const arms = []
  if (scenario.arms && args.algos === undefined && retryOn === undefined && tryTimeoutMs === undefined) {
    // the scenario's own arms: an algorithm with its balancer or load settings (retry-on, try timeout, sources)
    for (const arm of scenario.arms) {
      arms.push({ keepAlive: keepAliveVariants[0], engine: args.engine, label: armLabel(arm), ...arm })
    }
  } else {
    for (const algo of algos) {
      for (const keepAlive of keepAliveVariants) {
        const label = keepAliveVariants.length > 1 && !keepAlive ? `${algo} (no-ka)` : algo
        arms.push({
          label,
          algo,
          ...(REFERENCE_NAMES.includes(algo) ? { reference: true } : {}),
          keepAlive,
          engine: args.engine,
          ...(retryOn ? { retryOn } : {}),
          ...(tryTimeoutMs ? { tryTimeoutMs } : {})
        })
      }
    }
  }
  const notes = []
  // the quick plan's note on its one peer is the cache scenario's; a sweep names its peers in its plan
  for (const label of peerArms(args.peers, plan, notes, { quick: Boolean(quick) && !sweep })) {
    arms.push({
      label,
      algo: label,
      keepAlive: true,
      peer: PEER_ARMS[label].peer,
      mode: PEER_ARMS[label].mode,
      workers: peerWorkers
    })
  }
  const load = loadGenerator(args.load, {
    rate: sweep ? sweep.rates[0] : rate,
    sources: Math.max(sources, ...arms.map((a) => a.sources || 0)),
    peers: arms.some((a) => a.peer),
    popularity,
    notes
  })
  if (requests !== undefined && workload.churn) {
    throw bad('--churn kills a backend a third into a window of --duration seconds; it cannot be timed in --requests')
  }
  if (requests !== undefined && load !== 'node') {
    throw bad('--requests counts requests of the closed-loop Node generator (--load node, or --sources); ' +
      `this run uses ${load}`)
  }
  // where the results go, checked now: a run of minutes must not end in EISDIR or EACCES
  const out = args.out === undefined ? undefined : writablePath(args.out, 'out', { dir: false })
  const resultsDir = writablePath(args['results-dir'], 'results-dir', { dir: true })
  const baseline = algos.includes(scenario.baseline) ? scenario.baseline : algos[0]

  // Per-backend overrides in the scenario win over the global cache size and miss cost, as
  // startFleet() merges perBackend over the shared options.
  const fleet = { ...scenario.fleet, cachePages, missMs }
  if (hitMs !== undefined) fleet.hitMs = hitMs
  if (workersPerBackend !== undefined) fleet.workers = workersPerBackend
  if (workload.cacheBytes !== undefined) fleet.cacheBytes = workload.cacheBytes
  if (workload.churn && !fleet.processes) {
    fleet.processes = true
    notes.push('note: --churn runs each backend as a process of its own (to SIGKILL one)')
  }

  const references = algos.filter((a) => REFERENCE_NAMES.includes(a))
  const referenceError = references.length ? referenceProblem({ sweep, workload, fleet, workers }, references) : null
  if (referenceError) throw bad(referenceError)

  // the scenario's description names its own workload: a run that changes it says so beside it
  const changed = WORKLOAD_FLAGS.filter((flag) => args[flag] !== undefined).map((flag) => `--${flag} ${args[flag]}`)

  return {
    scenario: args.scenario,
    // 'quick': the scenario's quick default (`npm run bench` with no arguments); 'full': its whole matrix
    plan: quick ? 'quick' : 'full',
    description: changed.length
      ? `${scenario.description}; this run's options changed: ${changed.join(', ')}`
      : scenario.description,
    columns: rate ? OPEN_LOOP_COLUMNS : scenario.columns,
    // a sweep of offered rates (the capacity scenario): { rates, sloMs, stopAfter }, else null
    sweep,
    // a kill/restart cell (--kill): { index, at, down } seconds into the measured window, else null
    kill,
    // --steal-gate: { limit, probeS }, the most steal in cores a probe of probeS s may read for a cell to start
    stealGate,
    // ratio targets are set against the scenario's own baseline: without it in the run they mean nothing
    targets: baseline === scenario.baseline ? scenario.targets : (scenario.targets || []).filter((t) => !t.ratio),
    backendLabels: scenario.backendLabels || [],
    balancerOptions: scenario.balancerOptions || {},
    algos,
    peers: arms.filter((a) => a.peer).map((a) => a.label),
    arms,
    baseline,
    trials,
    duration,
    warmup,
    ramp,
    jitWarmup,
    connections,
    pages,
    cachePages,
    missMs,
    ...(hitMs !== undefined ? { hitMs } : {}),
    popularity,
    workload,
    // bytes of each page when generated with --page-size (else the fleet's own pages)
    pageSizes: workload.pageSizes ? pageSizes(workload.pageSizes, pages, seed) : undefined,
    rate,
    load,
    sources,
    requests,
    keepAlive: keepAliveVariants.length === 1 ? keepAliveVariants[0] : keepAliveVariants,
    policyOptions,
    engine: args.engine,
    seed,
    workers,
    peerWorkers,
    fleet,
    out,
    resultsDir,
    profile: args.profile,
    quiet: args.quiet,
    notes
  }
}

/**
 * The absolute path of `--out` (a file) or `--results-dir` (a directory), once it is known that the
 * run can write there: an existing path of the right kind, writable, or a path whose nearest existing
 * ancestor is a writable directory (run.js creates the folders missing in between).
 * @param {string} value as given
 * @param {string} name the option's name, for the message
 * @param {{ dir: boolean }} kind a directory (--results-dir) or a file (--out)
 * @returns {string}
 * @throws {PolistesError} when the run could not write there
 */
function writablePath (value, name, { dir }) {
  if (String(value).trim() === '') throw bad(`--${name} needs a path`)
  const resolved = path.resolve(String(value))
  const stat = statOf(resolved)
  if (stat) {
    if (dir && !stat.isDirectory()) throw bad(`--${name} ${value} is not a directory`)
    if (!dir && stat.isDirectory()) {
      throw bad(`--${name} ${value} is a directory; give the JSON file's path, e.g. ${path.join(value, 'run.json')}`)
    }
    if (!writable(resolved)) throw bad(`--${name} ${value} is not writable`)
    return resolved
  }
  let parent = path.dirname(resolved)
  let parentStat = statOf(parent)
  while (!parentStat && path.dirname(parent) !== parent) {
    parent = path.dirname(parent)
    parentStat = statOf(parent)
  }
  if (!parentStat || !parentStat.isDirectory()) throw bad(`--${name} ${value}: ${parent} is not a directory`)
  if (!writable(parent)) throw bad(`--${name} ${value}: cannot write in ${parent}`)
  return resolved
}

function statOf (p) {
  try {
    return fs.statSync(p)
  } catch {
    return null
  }
}

function writable (p) {
  try {
    fs.accessSync(p, fs.constants.W_OK)
    return true
  } catch {
    return false
  }
}

/** A scenario arm's label: its algorithm and what sets it apart. */
function armLabel (arm) {
  const parts = [arm.algo]
  if (arm.retryOn) parts.push(`+retry ${arm.retryOn.join(',')}`)
  if (arm.tryTimeoutMs) parts.push(`(try ${arm.tryTimeoutMs} ms)`)
  if (arm.sources) parts.push(`(${arm.sources} client address${arm.sources === 1 ? '' : 'es'})`)
  return parts.join(' ')
}

/**
 * `--ramp`: seconds of the warm-up over which an open loop's rate rises from 0 (bench/load/open-loop.js).
 * Default half the warm-up with an offered rate: a fleet and a balancer started cold (caches empty,
 * JIT cold, ten processes on a few cores) and flooded at the full rate build a backlog in the first
 * second that can outlast the warm-up (docs/benchmarks.md); 0 otherwise.
 * @param {number | undefined} value
 * @param {{ warmup: number, open: boolean }} run
 * @returns {number}
 */
function parseRamp (value, { warmup, open }) {
  if (value === undefined) return open ? warmup / 2 : 0
  number(value, 'ramp', { min: 0 })
  if (value > warmup) throw bad(`--ramp must fit in the warm-up (--warmup ${warmup}), got ${value}`)
  if (value > 0 && !open) throw bad('--ramp raises an offered rate: it needs --rate or the capacity scenario')
  return value
}

/** `--retry-on 503,timeout` → [503, 'timeout']. */
function statusList (value) {
  const parts = String(value).split(',').map((s) => s.trim())
  if (!parts.every((p) => /^5\d\d$/.test(p) || p === 'timeout')) {
    throw bad(`--retry-on must be a comma list of 5xx statuses and/or timeout, e.g. 503,timeout, got "${value}"`)
  }
  return parts.map((p) => (p === 'timeout' ? p : Number(p)))
}

/**
 * The peer arms to run: `--peers` as given (each program must be installed), or by default the
 * plan's peers that are installed, with a note for each one that is not. The quick plan's peer
 * gets a line either way: which arm runs, or that none does and why.
 * @param {string | undefined} value the --peers option
 * @param {{ peers?: string[] }} plan the scenario's quick plan or full matrix
 * @param {string[]} notes collects the notes
 * @param {{ quick?: boolean, find?: (program: string) => string | null }} [options] quick: the plan
 *   is the scenario's quick default; find: where a program is installed (default: on PATH or in sbin)
 * @returns {string[]} arm labels
 */
function peerArms (value, plan, notes, { quick = false, find = findBinary } = {}) {
  if (value === undefined) {
    const labels = []
    for (const name of plan.peers || []) {
      // a program (haproxy, nginx: its default arms) or one arm by name
      const program = Object.hasOwn(PEER_ARMS, name) ? PEER_ARMS[name].peer : name
      const found = find(program)
      if (found) labels.push(...parsePeers(name).filter((l) => !labels.includes(l)))
      if (quick) {
        notes.push(found
          ? `peer: ${name}, the best peer of the README's headline (--full runs every installed peer arm)`
          : `peer: none, ${program} not found on PATH, so no ${name} arm (install: ${INSTALL[program]}; ` +
            '--peers none hides this note)')
      } else if (!found) {
        if (program !== name) {
          notes.push(`note: ${program} not found on PATH, ${name} is left out (install: ` +
            `${INSTALL[program]}; --peers none hides this note)`)
        } else {
          notes.push(`note: ${name} not found on PATH, its arms are left out (install: ${INSTALL[name]}; ` +
            '--peers none hides this note)')
        }
      }
    }
    return labels
  }
  let labels
  try {
    labels = parsePeers(value)
  } catch (err) {
    throw bad(err.message)
  }
  for (const name of new Set(labels.map((l) => PEER_ARMS[l].peer))) {
    if (!find(name)) throw bad(`--peers: ${name} not found on PATH (install: ${INSTALL[name]})`)
  }
  return labels
}

module.exports = { parseOptions, peerArms, FULL_PLAN }
