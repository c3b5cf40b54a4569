#!/usr/bin/env node
'use strict'

/**
 * `npm run bench:model [-- --colonies 1,2,4] [--seeds 5] [--assign random] [--policy-options JSON]`:
 * the closed-loop model (bench/model/closed-loop.js) from the command line. Without --colonies, hit
 * rate, balance and key spread per policy; with it, the hit rate of K independent colonies (balancer
 * workers) sharing the same backends, per policy, wasp with the options `polistes --workers K` gives
 * it (`balanced` 16 for K > 1 unless --policy-options sets it); with any workload option (--pages,
 * --churn, ...), wasp, chash-bounded, unbounded chash and round-robin against the static optimum.
 */

const yargs = require('yargs/yargs')
const { scenario, DEFAULTS } = require('../model/closed-loop')
const { runWorkload } = require('../model/model-workload')
const { FLEET_SIZE } = require('../model/model-setup')
const { parseWorkload } = require('../workloads/workload-options')
const { createRoundRobin } = require('../../src/policies/round-robin')
const { createRandom } = require('../../src/policies/random')
const { createChashBounded } = require('../../src/policies/chash-bounded')
const { createWasp } = require('../../src/policies/wasp')

const WORKLOAD_FLAGS = ['pages', 'popularity', 'cache-pages', 'cache-bytes', 'page-size', 'churn', 'shift', 'warmup',
  'measure']

/** Print `bench:model: <message>` and exit 2 (a bad option: no stack trace). */
function fail (message) {
  process.stderr.write(`bench:model: ${message}\n`)
  process.exit(2)
}

function parseArgs (argv) {
  return yargs(argv)
    .scriptName('npm run bench:model --')
    .option('colonies', { type: 'string', describe: 'comma-separated colony counts, e.g. 1,2,4,8,16' })
    .option('seeds', { type: 'number', default: 5, describe: 'seeds 1..N, averaged' })
    .option('assign', {
      type: 'string',
      choices: ['round-robin', 'random'],
      default: 'round-robin',
      describe: 'which colony takes the next request'
    })
    .option('policy-options', { type: 'string', default: '{}', describe: 'wasp options as JSON' })
    .option('pages', {
      type: 'number',
      describe: 'workload: distinct pages (2 to 100000); with any workload option the table shows ' +
        'each policy against the static optimum'
    })
    .option('popularity', { type: 'string', describe: 'workload: uniform | zipf:<s> (default zipf:1)' })
    .option('cache-pages', {
      type: 'number',
      describe: `workload: pages each upstream caches (default: 12 % of the pages over ${FLEET_SIZE} upstreams)`
    })
    .option('cache-bytes', {
      type: 'string', describe: 'workload: bytes each upstream caches instead of pages, e.g. 1m (LRU by size)'
    })
    .option('page-size', {
      type: 'string', describe: 'workload: fixed:BYTES | lognormal:MEDIAN,SIGMA (default fixed:62000)'
    })
    .option('churn', {
      type: 'boolean', describe: 'workload: one upstream down for the middle third of the measured window'
    })
    .option('shift', {
      type: 'string',
      describe: 'workload: SECONDS[,STEP]: the popularity ranking rotates by STEP places ' +
        '(default a tenth of the pages) every SECONDS of simulated time'
    })
    .option('warmup', {
      type: 'number', describe: 'workload: requests before the measured window (default: 100 per page, at least 20,000)'
    })
    .option('measure', { type: 'number', describe: 'workload: measured requests (default 30,000)' })
    .strict().help().version(false)
    .fail((msg, err) => fail(err ? err.message : msg))
    .parse()
}

/** --policy-options as wasp options, checked by building a wasp with them. */
function waspOptionsOf (args) {
  try {
    const options = JSON.parse(args['policy-options'])
    createWasp(options)
    return options
  } catch (err) {
    return fail(`--policy-options: ${err.message}`)
  }
}

const avg = (runs, f) => runs.reduce((a, r) => a + f(r), 0) / runs.length
const label = (p) => p === 'uniform' ? 'uniform' : `zipf(${p.zipf})`
const median = (xs) => {
  const a = [...xs].sort((x, y) => x - y)
  const m = a.length >> 1
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2
}

/** The standard scenario's header line. */
function scenarioHead (seeds) {
  const d = DEFAULTS
  return `${d.upstreams} upstreams x LRU ${d.cacheSize} pages, ${d.keys} keys, ${d.inflight} in flight; ` +
    `mean of seeds 1-${seeds}; 5,000 warm-up, 5,000 measured`
}

/** Without --colonies: hit rate, balance and key spread per policy, uniform and Zipf(1). */
function policyTable (args, seeds, waspOptions) {
  const policies = {
    'round-robin': (random) => createRoundRobin({}, { random }),
    random: (random) => createRandom({}, { random }),
    wasp: (random) => createWasp(waspOptions, { random })
  }
  const rows = []
  for (const popularity of ['uniform', { zipf: 1 }]) {
    for (const [name, make] of Object.entries(policies)) {
      const runs = seeds.map((seed) => scenario(make, { seed, popularity }))
      rows.push({
        popularity: label(popularity),
        policy: name,
        'hit rate': avg(runs, (r) => r.hitRate).toFixed(3),
        'balance (max/mean)': avg(runs, (r) => r.balance).toFixed(2),
        'top-2 share (min key)': avg(runs, (r) => r.top2.min).toFixed(3),
        'keys with top-2 >= 0.9': avg(runs, (r) => r.top2.keysOver90).toFixed(2)
      })
    }
  }
  console.log(scenarioHead(args.seeds))
  console.table(rows)
}

/** With --colonies: the hit rate of K independent colonies per policy, wasp as `polistes --workers K` sets it. */
function coloniesTable (args, seeds, waspOptions) {
  const counts = String(args.colonies).split(',').map(Number)
  if (counts.some((k) => !Number.isInteger(k) || k < 1 || k > 64)) {
    fail(`--colonies must list integers in [1, 64], got ${args.colonies}`)
  }
  // K colonies get the options of `polistes --workers K` (wasp's `balanced` unless given)
  const { workerConfig } = require('../../src/run/cluster')
  const waspFor = (colonies) =>
    workerConfig({ algo: 'wasp', policyOptions: waspOptions, workers: colonies }).policyOptions
  const policies = {
    wasp: (colonies) => (random) => createWasp(waspFor(colonies), { random }),
    'chash-bounded': () => (random) => createChashBounded({}, { random }),
    'round-robin': () => (random) => createRoundRobin({}, { random })
  }
  const rows = []
  for (const popularity of ['uniform', { zipf: 1 }]) {
    for (const [name, make] of Object.entries(policies)) {
      const row = { popularity: label(popularity), policy: name }
      for (const colonies of counts) {
        const runs = seeds.map((seed) => scenario(make(colonies), { seed, popularity, colonies, assign: args.assign }))
        const worst = Math.min(...runs.map((r) => r.hitRate))
        row[`K=${colonies}`] = `${avg(runs, (r) => r.hitRate).toFixed(3)} (${worst.toFixed(3)})`
      }
      rows.push(row)
    }
  }
  console.log(`${scenarioHead(args.seeds)}\n` +
    `hit rate with K independent colonies (requests to colonies ${args.assign}); mean (worst seed)`)
  console.log(`wasp options: K = 1 ${JSON.stringify(waspFor(1))}; ` +
    `K > 1 ${JSON.stringify(waspFor(2))} (as with polistes --workers K)`)
  console.table(rows)
}

/** The workload, and its warm-up and measured requests, from the workload flags (exits 2 when bad). */
function workloadOf (args) {
  let w
  try {
    w = parseWorkload(args)
  } catch (err) {
    fail(err.message)
  }
  const warmup = args.warmup ?? Math.max(20000, 100 * w.pages)
  const measure = args.measure ?? 30000
  for (const [flag, n] of [['warmup', warmup], ['measure', measure]]) {
    if (!Number.isInteger(n) || n < (flag === 'warmup' ? 0 : 3)) {
      fail(`--${flag} must be a ${flag === 'warmup' ? 'non-negative' : 'positive'} integer of requests, got ${n}`)
    }
  }
  return { w, warmup, measure }
}

/** With workload options: wasp, chash-bounded, unbounded chash and round-robin against the static optimum. */
function workloadTable (args, seeds, waspOptions) {
  const { w, warmup, measure } = workloadOf(args)
  const policies = {
    wasp: (random) => createWasp(waspOptions, { random }),
    'chash-bounded': (random) => createChashBounded({}, { random }),
    // unbounded consistent hashing: what HAProxy `balance uri` + `hash-type consistent` and nginx
    // `hash $request_uri consistent` do (the bench's haproxy-uri and nginx-uri peers)
    chash: (random) => createChashBounded({ balanceFactor: Number.MAX_SAFE_INTEGER }, { random }),
    'round-robin': (random) => createRoundRobin({}, { random })
  }
  const rows = []
  let optimum
  for (const [name, make] of Object.entries(policies)) {
    const runs = seeds.map((seed) => runWorkload(make, w, { seed, warmup, measure }))
    optimum = median(runs.map((r) => r.optimum))
    rows.push({
      policy: name,
      'hit rate (median)': median(runs.map((r) => r.hitRate)).toFixed(3),
      'per seed': runs.map((r) => r.hitRate.toFixed(3)).join(' '),
      'distance to optimum': median(runs.map((r) => r.distance)).toFixed(3),
      'balance (max/mean)': median(runs.map((r) => r.balance)).toFixed(2)
    })
  }
  console.log(`workload: ${w.describe}; seeds 1-${seeds.length}; ${warmup} warm-up, ${measure} measured requests`)
  const over = w.churn ? ', time-averaged over the churn' : ''
  console.log(`static optimum (the hottest pages that fit in the fleet's cache${over}): ${optimum.toFixed(3)}`)
  console.table(rows)
}

/** The command line: one of the three tables. */
function main (argv) {
  const args = parseArgs(argv)
  const waspOptions = waspOptionsOf(args)
  const seeds = Array.from({ length: args.seeds }, (_, i) => i + 1)
  if (WORKLOAD_FLAGS.some((k) => args[k] !== undefined)) return workloadTable(args, seeds, waspOptions)
  if (args.colonies === undefined) return policyTable(args, seeds, waspOptions)
  return coloniesTable(args, seeds, waspOptions)
}

if (require.main === module) main(process.argv.slice(2))
