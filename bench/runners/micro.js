'use strict'

/**
 * Micro benchmark: the cost of one routing decision (`pick` + `onEnd`) for wasp and round-robin,
 * at 7, 100 and 1,000 upstreams and 25 and 100,000 keys. process.hrtime.bigint timing, a warm-up,
 * several repetitions, median nanoseconds per decision. Keys are drawn uniformly from a
 * pre-generated list; in-flight counts are set from a seeded PRNG before each batch; every answer
 * is a HIT and nothing queues, so this is the cheapest path of each policy, its caches warm.
 *
 * Then the same cost where a balancer pays it (./micro-fleet.js): each policy in the capacity
 * scenario's fleet (the open-loop model, 2,000 req/s), its CPU caches warm, and with `--evict` KB
 * of memory touched between two calls (default 1,024: what reproduced the in-balancer figures).
 *
 *   npm run bench:micro            # tables
 *   npm run bench:micro -- --evict 4096
 *   node bench/runners/micro.js --json     # machine-readable
 */

const yargs = require('yargs/yargs')

const { mulberry32 } = require('../../src/common/prng')
const { createWasp } = require('../../src/policies/wasp')
const { createRoundRobin } = require('../../src/policies/round-robin')
const { createPolicy } = require('../../src/policies')
const { REFERENCES } = require('../model/reference-learners')
const { measureInFleet, EVICT_KB } = require('./micro-fleet')

const UPSTREAMS = [7, 100, 1000]
const KEYS = [25, 100000]
const REPS = 7

function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s[s.length >> 1]
}

function measure (makePolicy, nUp, nKeys) {
  const random = mulberry32(nUp * 7 + nKeys)
  const policy = makePolicy(mulberry32(42))
  const upstreams = Array.from({ length: nUp }, (_, i) => ({ id: `u${i}`, inflight: 0 }))
  const keys = Array.from({ length: nKeys }, (_, i) => `/page${i + 1}`)
  const outcome = { latencyMs: 1, statusCode: 200, error: undefined, cache: 'HIT' }
  // decisions per batch: enough for ~10-50 ms of work
  const batch = Math.max(2000, Math.min(200000, Math.floor(2e6 / nUp)))
  const ctxs = Array.from({ length: 4096 }, () => ({ key: keys[Math.floor(random() * nKeys)] }))
  function run (count) {
    let sink = 0
    for (let i = 0; i < count; i++) {
      const ctx = ctxs[i & 4095]
      const up = policy.pick(upstreams, ctx)
      if (policy.onEnd) policy.onEnd(up, ctx, outcome)
      sink += up.inflight
    }
    return sink
  }
  for (const u of upstreams) u.inflight = Math.floor(random() * 8)
  // warm-up: fill the key table (up to its cap) and let the JIT settle
  run(Math.min(batch * 2, Math.max(batch, nKeys)))
  const samples = []
  for (let r = 0; r < REPS; r++) {
    for (const u of upstreams) u.inflight = Math.floor(random() * 8)
    const t0 = process.hrtime.bigint()
    run(batch)
    samples.push(Number(process.hrtime.bigint() - t0) / batch)
  }
  return median(samples)
}

/** Print `bench:micro: <message>` and exit 2 (a bad option: no stack trace). */
function fail (message) {
  process.stderr.write(`bench:micro: ${message}\n`)
  process.exit(2)
}

/** The command line, checked: `{ json, evict }`. */
function parseArgs (argv) {
  const args = yargs(argv)
    .scriptName('npm run bench:micro --')
    .option('json', { type: 'boolean', default: false, describe: 'print JSON instead of tables' })
    .option('evict', {
      type: 'string',
      default: String(EVICT_KB),
      requiresArg: true,
      describe: 'KB of memory touched between two calls in the fleet table (0 = none)'
    })
    .strict().help().version(false)
    .fail((message) => fail(message))
    .parse()
  const evict = Number(args.evict)
  if (args.evict === '' || !Number.isInteger(evict) || evict < 0) {
    fail(`--evict must be an integer >= 0 (KB), got "${args.evict}"`)
  }
  return { json: args.json, evict }
}

/** The policies of the fleet table, by name: (random, now) => policy, with the balancer's defaults. */
function fleetPolicies () {
  const named = (name) => (random, now) => createPolicy(name, {}, { random, now })
  return {
    wasp: named('wasp'),
    'chash-bounded': named('chash-bounded'),
    'least-connections': named('least-connections'),
    'p2c-peak-ewma': named('p2c-peak-ewma'),
    'round-robin': named('round-robin'),
    // told the fleet (not a policy a balancer can run): the cost of a lookup in a static placement
    clairvoyant: REFERENCES.clairvoyant
  }
}

/** Each policy's cost per request in the fleet, caches warm and with `evict` KB evicted between calls. */
function fleetRows (evict) {
  const rows = []
  for (const [name, make] of Object.entries(fleetPolicies())) {
    const warm = measureInFleet(make, { evictKB: 0 })
    const row = { policy: name, 'ns, caches warm': Math.round(warm.ns) }
    if (evict > 0) row[`ns, ${evict} KB evicted`] = Math.round(measureInFleet(make, { evictKB: evict }).ns)
    row['hit rate'] = Number(warm.hitRate.toFixed(3))
    rows.push(row)
  }
  return rows
}

function main (argv = process.argv.slice(2)) {
  const { json, evict } = parseArgs(argv)
  const policies = {
    wasp: (random) => createWasp({}, { random }),
    'round-robin': () => createRoundRobin()
  }
  const rows = []
  for (const nUp of UPSTREAMS) {
    for (const nKeys of KEYS) {
      const row = { upstreams: nUp, keys: nKeys }
      for (const [name, make] of Object.entries(policies)) row[`${name} ns`] = Math.round(measure(make, nUp, nKeys))
      row['wasp ns / upstream'] = Math.round(row['wasp ns'] / nUp)
      rows.push(row)
    }
  }
  const fleet = fleetRows(evict)
  if (json) {
    console.log(JSON.stringify({ node: process.version, rows, fleet: { evictKB: evict, rows: fleet } }, null, 2))
  } else {
    console.log(`median ns per pick + onEnd, ${REPS} repetitions, node ${process.version}`)
    console.table(rows)
    const evicted = evict > 0
      ? `; then with ${evict} KB of memory touched between two calls, as a balancer's own work evicts the ` +
        'policy\'s records from the CPU caches'
      : ''
    console.log('\nmean ns per request (pick, onStart, onEnd) in the capacity scenario\'s fleet (the open-loop ' +
      'model: 7 x 4 workers, LRU 100 of 2,000 pages, Zipf(1), 5 / 20 ms, 2,000 req/s; 20,000 requests learnt, ' +
      `20,000 timed)${evicted}`)
    console.table(fleet)
  }
  return { rows, fleet }
}

if (require.main === module) main()
