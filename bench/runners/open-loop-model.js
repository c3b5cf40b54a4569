#!/usr/bin/env node
'use strict'

/**
 * `node bench/runners/open-loop-model.js [--rates 1500,2000,...] [--zipf 1] [--pages 2000] [--workers 4|2,3,...] ...`:
 * the open-loop model (bench/model/open-loop.js) from the command line: the fleet's physical limit,
 * p99 per contender at each offered rate, and each contender's capacity at the SLO over a sweep
 * (`--only clairvoyant,counting`: the yardsticks of bench/model/reference-learners.js).
 */

const yargs = require('yargs/yargs')
const { physicalLimit, runAt, sweep, contenders } = require('../model/open-loop')
const { FLEET_SIZE } = require('../model/model-setup')
const { placementLimit, MAX_UPSTREAMS } = require('../model/placement-limit')
const { REFERENCES } = require('../model/reference-learners')

/** Print `open-loop: <message>` and exit 2 (a bad option: no stack trace). */
function fail (message) {
  process.stderr.write(`open-loop: ${message}\n`)
  process.exit(2)
}

function parseArgs (argv) {
  return yargs(argv)
    .scriptName('node bench/runners/open-loop-model.js')
    .option('rates', {
      type: 'string',
      default: '1500,2000,2500,3000,3500',
      describe: 'offered rates (req/s) for the table, comma-separated'
    })
    .option('sweep', {
      type: 'string',
      default: '1500:5000:100',
      describe: 'FROM:TO:STEP offered rates for the capacity at SLO ("" = no sweep)'
    })
    .option('zipf', { type: 'number', default: 1, describe: 'Zipf exponent (0 = uniform)' })
    .option('pages', { type: 'number', default: 2000 })
    .option('cache-pages', { type: 'number', default: 100 })
    .option('upstreams', { type: 'number', default: FLEET_SIZE })
    .option('workers', {
      type: 'string', default: '4', describe: 'workers per backend, or one per backend: 2,3,4,5,6,7,8'
    })
    .option('hit-ms', { type: 'number', default: 5 })
    .option('miss-ms', { type: 'number', default: 20 })
    .option('jitter', { type: 'number', default: 0 })
    .option('stall-every', {
      type: 'number',
      default: 0,
      describe: 'mean gap (ms) between the fleet\'s stalls: every backend held at once, as a shared event loop ' +
        'is over HTTP (0 = none)'
    })
    .option('stall-ms', { type: 'number', default: 0, describe: 'length of each stall, ms' })
    .option('arrivals', { choices: ['poisson', 'fixed'], default: 'poisson' })
    .option('ramp-ms', {
      type: 'number',
      default: 0,
      describe: 'the rate rises from 0 over this many ms at the start of each cell, as the HTTP bench\'s warm-up ' +
        'ramps it (0 = the full rate from the first request)'
    })
    .option('warmup', { type: 'number', default: 40000 })
    .option('measure', { type: 'number', default: 40000 })
    .option('seed', { type: 'number', default: 1 })
    .option('only', {
      type: 'string',
      describe: 'comma-separated contenders (default all policies), or the references that are told the fleet: ' +
        'clairvoyant (a static placement known from the start), counting (exact request counts)'
    })
    .option('policy-options', { type: 'string', default: '{}', describe: 'wasp options as JSON' })
    .strict().help().version(false)
    .fail((msg, err) => fail(err ? err.message : msg))
    .parse()
}

/** The model's fleet from the flags (exits 2 on a bad --workers). */
function fleetOf (args) {
  const workers = args.workers.split(',').map(Number)
  const bad = workers.some((w) => !Number.isInteger(w) || w < 1)
  if (bad || (workers.length !== 1 && workers.length !== args.upstreams)) {
    fail(`--workers must be one positive integer or ${args.upstreams} of them, got ${args.workers}`)
  }
  return {
    upstreams: args.upstreams,
    workers: workers.length === 1 ? workers[0] : workers,
    cacheSize: args['cache-pages'],
    keys: args.pages,
    popularity: args.zipf === 0 ? 'uniform' : { zipf: args.zipf },
    hitMs: args['hit-ms'],
    missMs: args['miss-ms'],
    jitter: args.jitter,
    stallEveryMs: args['stall-every'],
    stallMs: args['stall-ms'],
    arrivals: args.arrivals,
    rampMs: args['ramp-ms']
  }
}

/** p99 (hit rate, busiest share) of each contender at each rate of --rates. */
function rateTable (all, names, fleet, run, rates) {
  console.log('\np99 ms (hit rate, busiest share) per offered rate')
  const rows = []
  for (const name of names) {
    const row = { contender: name }
    for (const rate of rates) {
      const r = runAt(all[name], { ...fleet, rate }, run)
      row[`${rate} req/s`] = `${r.p99.toFixed(1)} (${r.hitRate.toFixed(3)}, ${r.busiest.toFixed(3)})`
    }
    rows.push(row)
  }
  console.table(rows)
}

/** Each contender's capacity at the SLO over the --sweep rates. */
function capacityTable (all, names, fleet, run, { spec, slo, limit }) {
  const [from, to, step] = spec.split(':').map(Number)
  const grid = []
  for (let r = from; r <= to + 1e-9; r += step) grid.push(r)
  const rows = []
  for (const name of names) {
    const s = sweep(all[name], fleet, grid, { slo, ...run })
    const at = s.rows.find((x) => x.rate === s.capacity)
    rows.push({
      contender: name,
      'capacity at SLO': s.capacity,
      'of physical limit': (s.capacity / limit.rate).toFixed(3),
      'p99 there': at ? at.p99.toFixed(1) : '-',
      'hit rate there': at ? at.hitRate.toFixed(3) : '-',
      'busiest there': at ? at.busiest.toFixed(3) : '-'
    })
  }
  console.log(`\ncapacity at SLO (sweep ${spec}; last rate before the first p99 > ${slo} ms)`)
  console.table(rows)
}

/** The command line: the fleet and its limit, then the rate table and the capacity sweep. */
function main (argv) {
  const args = parseArgs(argv)
  let waspOptions
  try { waspOptions = JSON.parse(args['policy-options']) } catch (err) { fail(`--policy-options: ${err.message}`) }
  const fleet = fleetOf(args)
  const run = { seed: args.seed, warmup: args.warmup, measure: args.measure }
  const policies = contenders(waspOptions)
  const all = { ...policies, ...REFERENCES }
  const names = args.only ? args.only.split(',') : Object.keys(policies)
  for (const name of names) {
    if (!all[name]) fail(`unknown contender ${name} (${Object.keys(all).join(', ')})`)
  }
  if (names.includes('clairvoyant') && fleet.upstreams > MAX_UPSTREAMS) {
    fail(`clairvoyant takes at most ${MAX_UPSTREAMS} backends (its placement tries every subset), ` +
      `got ${fleet.upstreams}`)
  }
  const limit = physicalLimit(fleet)
  const slo = 4 * fleet.hitMs + fleet.missMs
  const popularity = args.zipf === 0 ? 'uniform' : `zipf(${args.zipf})`
  console.log(`fleet: ${fleet.upstreams} backends x ${args.workers} workers, ` +
    `LRU ${fleet.cacheSize} of ${fleet.keys} pages, ${popularity}, ` +
    `hit ${fleet.hitMs} ms, miss ${fleet.missMs} ms, ${fleet.arrivals} arrivals` +
    (fleet.stallEveryMs > 0 && fleet.stallMs > 0
      ? `, stalls of ${fleet.stallMs} ms every ${fleet.stallEveryMs} ms`
      : '') +
    (fleet.rampMs > 0 ? `, the rate ramped from 0 over ${fleet.rampMs} ms` : '') +
    `; seed ${args.seed}, ` +
    `${run.warmup} warm-up + ${run.measure} measured requests per cell; wasp options ${JSON.stringify(waspOptions)}`)
  console.log(`physical limit: ${limit.rate.toFixed(0)} req/s (best static hit rate ${limit.hitRate.toFixed(3)}, ` +
    `mean service ${limit.serviceMs.toFixed(2)} ms); SLO p99 <= ${slo} ms`)
  if (fleet.upstreams <= MAX_UPSTREAMS) {
    const bound = placementLimit(fleet)
    console.log(`placement limit (any static placement of these workers and caches): ${bound.rate.toFixed(0)} req/s ` +
      `(hit rate ${bound.hitRate.toFixed(3)}); one placement reaches ${bound.achieved.toFixed(0)}`)
  }
  const rates = args.rates ? args.rates.split(',').map(Number) : []
  if (rates.length) rateTable(all, names, fleet, run, rates)
  if (args.sweep) capacityTable(all, names, fleet, run, { spec: args.sweep, slo, limit })
}

if (require.main === module) main(process.argv.slice(2))
