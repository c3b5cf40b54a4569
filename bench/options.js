'use strict'

/**
 * Command-line options of `npm run bench`, parsed and validated into one settings object.
 * Every mistake becomes a PolistesError with a one-line message; bench/run.js prints it and exits 2.
 */

const path = require('node:path')
const yargs = require('yargs/yargs')
const { PolistesError, ERR_POLISTES_BAD_OPTION, ERR_POLISTES_UNKNOWN_ALGO } = require('../src/errors')
const { policyNames } = require('../src/policies')
const { parsePopularity } = require('./popularity')
const { getScenario, scenarioNames } = require('./scenarios')

const RESULTS_DIR = path.join(__dirname, 'results')

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
    .option('algos', { type: 'string', describe: 'comma-separated algorithms (default: the scenario\'s)' })
    .option('trials', { type: 'number', default: 3, describe: 'runs per algorithm, alternating' })
    .option('duration', { type: 'number', default: 20, describe: 'measured window, seconds' })
    .option('warmup', { type: 'number', default: 5, describe: 'learning phase before the window, seconds' })
    .option('jit-warmup', { type: 'number', default: 3, describe: 'untimed process warm-up before the first trial, seconds (0: none)' })
    .option('connections', { type: 'number', describe: 'concurrent client connections (default: the scenario\'s, 32)' })
    .option('pages', { type: 'number', describe: 'distinct pages (default 25)' })
    .option('cache-pages', { type: 'number', describe: 'pages each backend caches (default 4)' })
    .option('miss-ms', { type: 'number', describe: 'emulated cost of a cache miss, ms (default 20)' })
    .option('popularity', { type: 'string', describe: 'uniform | zipf:<s> (default uniform)' })
    .option('rate', { type: 'number', describe: 'fixed total request rate, req/s (default: closed loop, as fast as possible)' })
    .option('keep-alive', { type: 'boolean', describe: 'balancer-to-backend keep-alive; --no-keep-alive turns it off' })
    .option('policy-options', { type: 'string', describe: 'JSON object passed to the policy, e.g. \'{"xi":10}\'' })
    .option('workers', { type: 'number', default: 1, describe: 'balancer processes on one port (node:cluster, like polistes --workers); CPU is summed over them' })
    .option('seed', { type: 'number', default: 1, describe: 'seed of the page sequence' })
    .option('out', { type: 'string', describe: 'JSON result path (default bench/results/<timestamp>-<scenario>.json)' })
    .option('results-dir', { type: 'string', default: RESULTS_DIR, defaultDescription: 'bench/results', describe: 'where JSON, CSV and HTML go' })
    .option('profile', { type: 'boolean', default: false, describe: 'write a V8 CPU profile of each balancer child (node --cpu-prof) to <results-dir>/profiles' })
    .option('quiet', { type: 'boolean', default: false, describe: 'no progress line' })
    .strict()
    .help()
    .version(false)
    .exitProcess(false)
    .fail((msg, err) => { throw bad(err ? err.message : msg) })
}

function number (value, name, { min = -Infinity, integer = false, exclusiveMin = false } = {}) {
  if (typeof value !== 'number' || Number.isNaN(value) || !Number.isFinite(value)) {
    throw bad(`--${name} must be a number, got "${value}"`)
  }
  if (integer && !Number.isInteger(value)) throw bad(`--${name} must be an integer, got ${value}`)
  if (exclusiveMin ? value <= min : value < min) {
    throw bad(`--${name} must be ${exclusiveMin ? 'greater than' : 'at least'} ${min}, got ${value}`)
  }
  return value
}

/**
 * Parse and validate argv.
 * @param {string[]} argv arguments after `node bench/run.js`
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

  const known = policyNames()
  const algos = args.algos === undefined
    ? scenario.algos.slice()
    : String(args.algos).split(',').map((s) => s.trim()).filter(Boolean)
  if (algos.length === 0) throw bad('--algos needs at least one algorithm')
  for (const algo of algos) {
    if (!known.includes(algo)) {
      throw new ERR_POLISTES_UNKNOWN_ALGO(algo, known)
    }
  }
  if (new Set(algos).size !== algos.length) throw bad(`--algos lists an algorithm twice: ${algos.join(',')}`)

  const trials = number(args.trials, 'trials', { min: 1, integer: true })
  const duration = number(args.duration, 'duration', { min: 0, exclusiveMin: true, integer: true })
  const warmup = number(args.warmup, 'warmup', { min: 0, integer: true })
  const jitWarmup = number(args['jit-warmup'], 'jit-warmup', { min: 0, integer: true })
  const connections = number(args.connections ?? scenario.connections, 'connections', { min: 1, integer: true })
  const pages = number(args.pages ?? scenario.pages, 'pages', { min: 1, integer: true })
  const cachePages = number(args['cache-pages'] ?? scenario.fleet.cachePages, 'cache-pages', { min: 0, integer: true })
  const missMs = number(args['miss-ms'] ?? scenario.fleet.missMs, 'miss-ms', { min: 0 })
  const popularity = parsePopularity(args.popularity ?? scenario.popularity)
  const rate = args.rate === undefined ? undefined : number(args.rate, 'rate', { min: 0, exclusiveMin: true, integer: true })
  const seed = number(args.seed, 'seed', { integer: true })
  const workers = number(args.workers, 'workers', { min: 1, integer: true })
  if (workers > 64) throw bad(`--workers must be at most 64, got ${workers}`)

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
  for (const algo of algos) {
    for (const keepAlive of keepAliveVariants) {
      const label = keepAliveVariants.length > 1 && !keepAlive ? `${algo} (no-ka)` : algo
      arms.push({ label, algo, keepAlive })
    }
  }
  const baseline = algos.includes(scenario.baseline) ? scenario.baseline : algos[0]

  // Per-backend overrides in the scenario win over the global cache size and miss cost, as
  // startFleet() merges perBackend over the shared options.
  const fleet = { ...scenario.fleet, cachePages, missMs }

  return {
    scenario: args.scenario,
    description: scenario.description,
    columns: scenario.columns,
    targets: scenario.targets,
    backendLabels: scenario.backendLabels || [],
    algos,
    arms,
    baseline,
    trials,
    duration,
    warmup,
    jitWarmup,
    connections,
    pages,
    cachePages,
    missMs,
    popularity,
    rate,
    keepAlive: keepAliveVariants.length === 1 ? keepAliveVariants[0] : keepAliveVariants,
    policyOptions,
    seed,
    workers,
    fleet,
    out: args.out === undefined ? undefined : path.resolve(args.out),
    resultsDir: path.resolve(args['results-dir']),
    profile: args.profile,
    quiet: args.quiet
  }
}

module.exports = { parseOptions }
