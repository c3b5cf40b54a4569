'use strict'

/**
 * The models pinned seed for seed: a small closed-loop run, open-loop run and workload run per policy
 * at seed 1, compared with figures recorded from the code before the model was split from its
 * command-line runners (issue 27). Any change in the order of random draws, of events or of picks
 * shows here. When a policy or the model is changed on purpose, record the new figures (and say why
 * in the commit).
 */

const crypto = require('node:crypto')
const { createModel } = require('../bench/model/closed-loop')
const { runAt } = require('../bench/model/open-loop')
const { runWorkload } = require('../bench/model/model-workload')
const { mulberry32 } = require('../src/common/prng')
const { createWasp } = require('../src/policies/wasp')
const { createRoundRobin } = require('../src/policies/round-robin')
const { createChashBounded } = require('../src/policies/chash-bounded')

const POLICIES = {
  wasp: (random, now) => createWasp({}, { random, now }),
  'round-robin': (random) => createRoundRobin({}, { random }),
  'chash-bounded': (random) => createChashBounded({}, { random })
}

// recorded with the code of commit 094b256 (before the split)
const EXPECTED = {
  wasp: {
    closed: {
      counts: { u0: 266, u1: 296, u2: 245, u3: 404, u4: 378, u5: 183, u6: 228 },
      hits: 1909,
      picks: '106066d6e26a6704',
      now: 249.41283331252635
    },
    // recorded with spill 1 the default (issue 28: the queue read from latencies, a spread at rest
    // in its bar, replicas for the keys of queued holders); with spill 0 the picks were those before
    // issue 28: hit rate 0.745, p99 337.7 ms, the busiest 0.205 (test/wasp-queueing.test.js); re-recorded
    // when keys stopped moving to busy upstreams while the backends queue (before: hit rate 0.7585,
    // p99 219.2 ms, the busiest 0.174), and again when the queue was read from the cold start's first
    // responses (the fleet's base from 4 requests at rest; before: hit rate 0.764, p99 181.1 ms, the
    // busiest 0.167: this cell is a cold start), and again when admission read a key's slow gap until
    // it has 32 gaps (before: hit rate 0.8115, p99 27.56 ms, the busiest 0.163; the workload's hit rate
    // 0.88, balance 1.379), and again when admission ranked a young key by the picks so far over its
    // requests (before: hit rate 0.811, p99 28.29 ms, the busiest 0.1725; the workload's hit rate
    // 0.8907, balance 1.288), and again when a young key's admission position followed the picks
    // (admission.js `age`; before: hit rate 0.8175, p99 24.63 ms, the busiest 0.1595; the workload's
    // hit rate 0.8903, balance 1.365. This cell is 4,000 requests from cold at 3,000 req/s: over seeds
    // 1-10 its hit rate's median went 0.815 → 0.806, while the five workloads at the bench's ramp
    // held or gained: docs/algorithms.md, "Eighth pass")
    open: {
      share: { u0: 0.14, u1: 0.1405, u2: 0.1425, u3: 0.153, u4: 0.159, u5: 0.1305, u6: 0.1345 },
      hitRate: 0.8095,
      p50: 6.24263434363138,
      p99: 33.62859231760774,
      mean: 10.070170044199376
    },
    workload: { hitRate: 0.882, optimum: 0.9617054351512231, balance: 1.323 }
  },
  'round-robin': {
    closed: {
      counts: { u0: 286, u1: 286, u2: 286, u3: 285, u4: 285, u5: 286, u6: 286 },
      hits: 708,
      picks: '36aa133c0aa85520',
      now: 1669.4531726276036
    },
    open: {
      share: { u0: 0.143, u1: 0.143, u2: 0.143, u3: 0.1425, u4: 0.1425, u5: 0.143, u6: 0.143 },
      hitRate: 0.4435,
      p50: 485.72819888948584,
      p99: 652.2762117148645,
      mean: 481.0913244179689
    },
    workload: { hitRate: 0.49466666666666664, optimum: 0.9617054351512231, balance: 1.001 }
  },
  'chash-bounded': {
    closed: {
      counts: { u0: 225, u1: 273, u2: 373, u3: 168, u4: 426, u5: 141, u6: 394 },
      hits: 1475,
      picks: 'dfe3f42cf3ea6dba',
      now: 757.3503729295917
    },
    open: {
      share: { u0: 0.1435, u1: 0.142, u2: 0.145, u3: 0.132, u4: 0.172, u5: 0.087, u6: 0.1785 },
      hitRate: 0.727,
      p50: 68.78021327116176,
      p99: 106.93153842400716,
      mean: 65.99793420900043
    },
    workload: { hitRate: 0.7613333333333333, optimum: 0.9617054351512231, balance: 1.575 }
  }
}

describe('the models, seed 1, as recorded', () => {
  test.each(Object.keys(POLICIES))('closed loop, %s: picks per upstream, hits, pick sequence, clock', (name) => {
    // Zipf(1) over the default 25 keys, 7 upstreams with 4-page caches, 32 in flight
    const policy = POLICIES[name](mulberry32(1 * 7919 + 17)) // as scenario() seeds it
    const model = createModel({ policy, seed: 1, popularity: { zipf: 1 }, recordPicks: true })
    model.run(2000)
    const w = model.run(2000)
    const picks = crypto.createHash('sha256').update(model.picks.join(',')).digest('hex').slice(0, 16)
    expect({ counts: w.counts, hits: w.hits, picks, now: model.now }).toEqual(EXPECTED[name].closed)
  })

  test.each(Object.keys(POLICIES))('open loop, %s: shares, hit rate and latencies', (name) => {
    const r = runAt(POLICIES[name], { rate: 3000, keys: 500, cacheSize: 30 }, { seed: 1, warmup: 2000, measure: 2000 })
    expect({
      share: r.share,
      hitRate: r.hitRate,
      p50: r.p50,
      p99: r.p99,
      mean: r.mean
    }).toEqual(EXPECTED[name].open)
  })

  test.each(Object.keys(POLICIES))('workload with churn, %s: hit rate, optimum and balance', (name) => {
    const w = { pages: 200, popularity: { kind: 'zipf', s: 1 }, upstreams: 7, cachePages: 24, churn: true }
    const r = runWorkload(POLICIES[name], w, { seed: 1, warmup: 2000, measure: 3000 })
    expect({ hitRate: r.hitRate, optimum: r.optimum, balance: r.balance }).toEqual(EXPECTED[name].workload)
  })
})
