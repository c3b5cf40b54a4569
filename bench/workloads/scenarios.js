'use strict'

/**
 * Bench scenarios as data. A scenario names the fleet to start, the algorithms it compares by
 * default, the load, the columns its table shows and the targets it checks. Command-line
 * options override the load and fleet fields; nothing else in the bench knows a scenario by name.
 *
 * Fields:
 * - `fleet`: options for `startFleet()` (servers/fleet.js), minus host and ports.
 * - `backendLabels`: optional extra fields per backend index merged into the balancer's backend
 *   list (e.g. `region`), for policies that read them.
 * - `balancerOptions`: optional balancer options of every polistes arm (e.g. `{ failTimeoutMs: 1000 }`).
 * - `requests`: optional, closed loop: the measured window is this many requests, not `--duration` seconds.
 * - `algos`, `baseline`: default algorithms, and the one ratios are taken against.
 * - `keepAliveVariants`: run each algorithm with these balancer keep-alive settings.
 * - `arms`: optional explicit arms `{ algo, retryOn?, tryTimeoutMs?, sources? }` run instead of algos x keep-alive
 *   (when neither --algos nor --retry-on is given).
 * - `rate`, `sources`: default open-loop rate and loopback source addresses of the load.
 * - `peers`: HAProxy / nginx arms run by default beside the algorithms when installed: a program
 *   (its default arms) or an arm by name (bench/peers/peer-configs.js; `--peers` overrides).
 * - `quick`: optional `{ algos, peers, trials, warmup, duration }`, the smaller plan run by default
 *   (without `--full`) in about two minutes; `algos`, `peers` and the bench's own defaults (3 trials
 *   of 5 s + 20 s) are then the full matrix of `--full`. Every option given explicitly overrides both.
 * - `pages`, `popularity`, `pageSize`, `churn`: the workload (bench/workloads/workload-options.js); without
 *   `pageSize` the pages are the ~60 KB lorem pages.
 * - `full`: optional `{ trials?, warmup?, duration? }` of the full matrix, where it differs from the bench's.
 * - `sweep`: optional `{ rates, stopAfter }`: the scenario is a sweep of open-loop offered rates (req/s,
 *   ascending), each contender at each rate a run of its own (a cell), a contender's sweep stopping
 *   after `stopAfter` rates over the SLO (bench/runners/capacity.js; `--rates`, `--slo`, `--stop-after`).
 * - `columns`: table columns (see report-console.js for the known ones).
 * - `targets`: checks printed under the table, on medians over trials.
 */

const { DEFAULTS } = require('../../src/config/defaults')

const LOREM_PAGES = 25

/** The default fleet's seven backends, whose 4-page caches cannot hold the 25 pages, 20 ms per miss. */
const CACHE_FLEET = { count: DEFAULTS.fleet.count, cachePages: 4, missMs: 20 }

/** Caches larger than the page set and free misses: every page is cached after its first miss. */
const NO_CACHE_EFFECT = { cachePages: 1000, missMs: 0 }

/** The algorithms compared where caches matter. */
const CACHE_ALGOS = ['round-robin', 'chash-bounded', 'wasp']

/**
 * A scenario from the fields it sets; the others are the common ones: the 25 lorem pages asked
 * uniformly, round-robin as the baseline, balancer keep-alive on, no targets.
 *
 * @param {object} fields
 * @returns {object} the scenario
 */
function scenario (fields) {
  return {
    pages: LOREM_PAGES,
    popularity: 'uniform',
    baseline: 'round-robin',
    keepAliveVariants: [true],
    targets: [],
    ...fields
  }
}

/** @type {Record<string, object>} */
const scenarios = {
  cache: scenario({
    description: `cache affinity: ${CACHE_FLEET.count} backends with 4-page caches, 25 pages, 20 ms per miss`,
    fleet: { ...CACHE_FLEET },
    connections: 32,
    algos: CACHE_ALGOS,
    peers: ['haproxy', 'nginx'],
    // `npm run bench` with no arguments: the comparison a newcomer runs to see the effect, in about
    // two minutes: 3 arms x 3 trials x 12 s (each arm first, middle and last once). nginx-uri is the
    // best peer of the README's headline (the most req/s and the least CPU per request); it runs
    // when nginx is installed.
    quick: { algos: ['round-robin', 'wasp'], peers: ['nginx-uri'], trials: 3, warmup: 5, duration: 7 },
    columns: ['rps', 'mean', 'p50', 'p90', 'p99', 'max', 'hitRate', 'specialization', 'cpuPer10k', 'errors'],
    targets: [
      { algo: 'wasp', metric: 'hitRate', min: 0.90 },
      { algo: 'wasp', metric: 'rps', ratio: true, min: 2.0 },
      { algo: 'wasp', metric: 'p99', ratio: true, max: 0.5 },
      { algo: 'wasp', metric: 'mean', ratio: true, max: 0.35 },
      { algo: '*', metric: 'errors', max: 0 }
    ]
  }),

  // issue 18, as a new user tried it: Zipf(1) over 200 pages of 20-80 KB, 7 backends (one process
  // each, so --churn can SIGKILL one) caching 24 pages each. The hottest page takes 17 % of the
  // requests, more than one backend's seventh: it needs replicas.
  zipf: scenario({
    description: `issue 18: Zipf(1) over 200 pages of 20-80 KB, ${CACHE_FLEET.count} backends (processes) ` +
      'caching 12 % of the pages each (24 of 200), 20 ms per miss',
    pages: 200,
    popularity: 'zipf:1',
    pageSize: 'uniform:20k,80k',
    // no cachePages: 12 % of the pages each, as bench:model (24 of 200, 240 of 2,000)
    fleet: { count: CACHE_FLEET.count, missMs: 20, processes: true },
    connections: 32,
    algos: ['chash-bounded', 'wasp'],
    baseline: 'chash-bounded',
    peers: ['haproxy-uri', 'haproxy-uri-bounded', 'nginx-uri'],
    columns: ['rps', 'mean', 'p99', 'hitRate', 'distance', 'hotReplicas', 'specialization', 'cpuPer10k', 'errors'],
    targets: [
      { algo: 'wasp', metric: 'distance', max: 0.02 },
      { algo: '*', metric: 'errors', max: 0 }
    ]
  }),

  // issue 28: the backends are the bottleneck. Each has 4 workers (a FIFO queue; a hit holds one 5 ms,
  // a miss 20 ms, on timers) and an LRU of 100 pages; 2,000 pages of 4 KB under Zipf(1). An open-loop
  // sweep of offered rates: per contender the latency-throughput curve and the capacity at the SLO
  // (p99 <= 4 x hit + miss), beside the fleet's physical limit. The quick plan is one trial of 5 s +
  // 3 s per cell (every contender, about 7 minutes); --full the issue's: 3 trials of 10 s + 15 s.
  capacity: scenario({
    description: `issue 28: ${CACHE_FLEET.count} backends x 4 workers (FIFO; hit 5 ms, miss 20 ms, timers), an ` +
      'LRU of 100 pages each, 2,000 pages of 4 KB under Zipf(1), open-loop sweep of offered rates',
    pages: 2000,
    popularity: 'zipf:1',
    pageSize: 'fixed:4096',
    fleet: { count: CACHE_FLEET.count, cachePages: 100, workers: 4, hitMs: 5, missMs: 20, service: 'timer' },
    // in flight at 3,500 req/s and 40 ms: 140; more lanes than that, so that a slow answer holds up few
    // requests queued behind it on its connection
    connections: 256,
    algos: ['wasp', 'least-connections', 'p2c-peak-ewma', 'chash-bounded'],
    baseline: 'wasp',
    peers: ['nginx-uri-consistent', 'haproxy-uri', 'haproxy-uri-bounded', 'haproxy-uri-bounded-150',
      'haproxy-uri-bounded-200', 'haproxy-leastconn'],
    sweep: { rates: [1500, 2000, 2500, 3000, 3500], stopAfter: 2 },
    quick: {
      algos: ['wasp', 'least-connections', 'p2c-peak-ewma', 'chash-bounded'],
      peers: ['nginx-uri-consistent', 'haproxy-uri-bounded', 'haproxy-uri-bounded-150', 'haproxy-uri-bounded-200',
        'haproxy-leastconn'],
      trials: 1,
      // 5 s, its first 2.5 s ramping the rate up: with 2 s (1 s of ramp) every cell at 1,500 req/s still
      // drained the cold start's backlog in the window (p99 235-580 ms; 27-31 ms with 5 s)
      warmup: 5,
      duration: 3
    },
    full: { trials: 3, warmup: 10, duration: 15 },
    columns: ['p50', 'p99', 'p999', 'hitRate', 'errors']
  }),

  // docs/experiments.md, A: latency-aware routing, no cache effect (every page cached after its first miss).
  'latency-profiles': scenario({
    description: 'latency profiles A 10,15,20,400x3,10,15,20 / B 200 / C 250 ms, no cache effect',
    fleet: {
      count: 3,
      ...NO_CACHE_EFFECT,
      perBackend: [
        { latencyProfile: [10, 15, 20, 400, 400, 400, 10, 15, 20] },
        { latencyProfile: [200] },
        { latencyProfile: [250] }
      ]
    },
    connections: 100,
    algos: ['round-robin', 'sma', 'ewma', 'p2c-peak-ewma'],
    keepAliveVariants: [true, false],
    columns: ['rps', 'mean', 'p50', 'p95', 'p99', 'share', 'errors']
  }),

  // Caches of unequal size and one backend twice as slow on a miss.
  heterogeneous: scenario({
    description: 'caches 2,2,4,4,8,8,8 pages; the last backend pays 40 ms per miss, the others 20',
    fleet: {
      ...CACHE_FLEET,
      perBackend: [
        { cachePages: 2 }, { cachePages: 2 }, { cachePages: 4 }, { cachePages: 4 },
        { cachePages: 8 }, { cachePages: 8 }, { cachePages: 8, missMs: 40 }
      ]
    },
    connections: 32,
    algos: CACHE_ALGOS,
    peers: ['haproxy', 'nginx'],
    columns: ['rps', 'mean', 'p50', 'p99', 'hitRate', 'specialization', 'share', 'errors']
  }),

  // docs/experiments.md, B: two servers whose service time follows a periodic pattern, a connection
  // limit, open-loop load at 50 req/s. b's pattern runs half a period after a's, so one server
  // always has room (in step, no policy and no retry could help while both are slow).
  periodic: scenario({
    description: 'two backends, square-wave service time (period 6 s: 3 s at 3000 ms, 3 s at 20 ms, b half ' +
      'a period after a), max 40 in flight (503 beyond), 50 req/s open loop',
    fleet: {
      count: 2,
      ...NO_CACHE_EFFECT,
      maxInflight: 40,
      perBackend: [
        { periodic: { shape: 'square', period: 6000, fast: 20, slow: 3000, phase: 0 } },
        { periodic: { shape: 'square', period: 6000, fast: 20, slow: 3000, phase: 3000 } }
      ]
    },
    rate: 50,
    connections: 200,
    algos: ['random', 'round-robin', 'least-connections', 'p2c-peak-ewma', 'ewma', 'latency-weighted'],
    arms: [
      { algo: 'random' },
      { algo: 'round-robin' },
      { algo: 'random', retryOn: [503] },
      { algo: 'round-robin', retryOn: [503] },
      { algo: 'least-connections', retryOn: [503] },
      { algo: 'p2c-peak-ewma', retryOn: [503] },
      { algo: 'ewma', retryOn: [503] },
      { algo: 'latency-weighted', retryOn: [503] },
      // a request caught on the server that just turned slow is given up after 250 ms (12x the
      // fast phase) and sent to the other one
      ...['random', 'round-robin', 'least-connections', 'p2c-peak-ewma', 'ewma', 'latency-weighted'].map(
        (algo) => ({ algo, retryOn: [503, 'timeout'], tryTimeoutMs: 250 })
      )
    ],
    // passive health suited to a 3 s slow phase: a server ejected by a timed-out attempt is left
    // out for 1 s, not the default 5 s (most of a period, by when it is fast and the other slow)
    balancerOptions: { failTimeoutMs: 1000 },
    baseline: 'random',
    columns: ['rps', 'mean', 'p50', 'p90', 'p99', 'max', 'share', 'errors']
  }),

  // docs/experiments.md, D: many clients, ten backends, 1,000 concurrent connections, 100,000
  // requests (ApacheBench -n 100000 -c 1000). Each connection leaves from its own loopback address
  // (127.0.1.1 ...), so ip-hash sees 1,000 clients; the one-address arm is D's situation
  // (ApacheBench on one machine).
  'many-clients': scenario({
    description: 'ten backends (no cache effect), 1,000 connections from 1,000 loopback addresses, closed ' +
      'loop, 100,000 requests',
    fleet: { count: 10, ...NO_CACHE_EFFECT },
    connections: 1000,
    sources: 1000,
    requests: 100000,
    algos: ['random', 'round-robin', 'ip-hash', 'least-connections', 'p2c-peak-ewma', 'wasp'],
    arms: [
      { algo: 'random' },
      { algo: 'round-robin' },
      { algo: 'ip-hash' },
      { algo: 'ip-hash', sources: 1 },
      { algo: 'least-connections' },
      { algo: 'p2c-peak-ewma' },
      { algo: 'wasp' }
    ],
    columns: ['rps', 'mean', 'p50', 'p99', 'max', 'share', 'errors']
  }),

  // docs/experiments.md, E as it was run: the same 7 backends and 25 pages, but no page cache of
  // their own and no miss cost (every request read from the OS page cache, shared by all).
  'cache-off': scenario({
    description: `E as it was run: ${CACHE_FLEET.count} backends without page caches (every request from ` +
      'the OS page cache), 25 pages',
    fleet: { ...CACHE_FLEET, cachePages: 0, missMs: 0 },
    connections: 32,
    algos: ['round-robin', 'wasp'],
    columns: ['rps', 'mean', 'p50', 'p90', 'p99', 'max', 'hitRate', 'specialization', 'cpuPer10k', 'errors']
  }),

  // docs/experiments.md, C: workers in regions at different distances.
  // Regions of unequal size (3 eu, 2 us, 1 asia), as a deployment grows: with equal sizes
  // equal-regions would be round-robin under another name.
  regions: scenario({
    description: 'six backends in three regions of unequal size, added latency eu 300 (x3), us 350 (x2), ' +
      'asia 550 ms (x1)',
    fleet: {
      count: 6,
      ...NO_CACHE_EFFECT,
      perBackend: [
        { latencyProfile: [300] }, { latencyProfile: [300] }, { latencyProfile: [300] },
        { latencyProfile: [350] }, { latencyProfile: [350] },
        { latencyProfile: [550] }
      ]
    },
    backendLabels: [
      { region: 'eu' }, { region: 'eu' }, { region: 'eu' }, { region: 'us' }, { region: 'us' },
      { region: 'asia' }
    ],
    connections: 100,
    algos: ['round-robin', 'equal-regions', 'latency-weighted'],
    columns: ['rps', 'mean', 'p50', 'p95', 'p99', 'share', 'errors']
  })
}

/** @returns {string[]} scenario names */
function scenarioNames () {
  return Object.keys(scenarios)
}

/**
 * @param {string} name
 * @returns {object | undefined} the scenario, or undefined when unknown
 */
function getScenario (name) {
  return Object.hasOwn(scenarios, name) ? scenarios[name] : undefined
}

module.exports = { scenarioNames, getScenario }
