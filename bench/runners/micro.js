'use strict'

/**
 * Micro benchmark: the cost of one routing decision (`pick` + `onEnd`) for wasp and round-robin,
 * at 7, 100 and 1,000 upstreams and 25 and 100,000 keys. process.hrtime.bigint timing, a warm-up,
 * several repetitions, median nanoseconds per decision. Keys are drawn uniformly from a
 * pre-generated list; in-flight counts are set from a seeded PRNG before each batch.
 *
 *   npm run bench:micro            # table
 *   node bench/runners/micro.js --json     # machine-readable
 */

const { mulberry32 } = require('../../src/common/prng')
const { createWasp } = require('../../src/policies/wasp')
const { createRoundRobin } = require('../../src/policies/round-robin')

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

function main () {
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
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify({ node: process.version, rows }, null, 2))
  } else {
    console.log(`median ns per pick + onEnd, ${REPS} repetitions, node ${process.version}`)
    console.table(rows)
  }
  return rows
}

if (require.main === module) main()
