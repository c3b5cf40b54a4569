'use strict'

/**
 * Wasp's queueing (src/policies/wasp/queueing.js) and spill (./spill.js), issue 28: the wait table
 * learnt from latencies by in-flight count, and what the policy does with it on a fleet whose
 * backends have a few workers each, and does not do on one whose backends never queue.
 */

const queueing = require('../src/policies/wasp/queueing')
const { createWasp } = require('../src/policies/wasp')
const { runAt } = require('../bench/model/open-loop')
const { createModel } = require('../bench/model/closed-loop')
const { mulberry32 } = require('../src/common/prng')

/** One response from an upstream with `f0` in flight at the pick. */
function respond (q, f0, latencyMs, cache) {
  const ctx = {}
  queueing.noteSent(ctx, { inflight: f0 })
  queueing.observe(q, ctx, { latencyMs, cache, statusCode: 200 })
}

describe('wasp queueing: the wait table', () => {
  test('a FIFO of 4 workers: no wait below the knee, the wait per request ahead above it', () => {
    const q = queueing.createQueueing()
    for (let i = 0; i < 40; i++) {
      for (let f = 0; f < 12; f++) {
        const wait = f >= 4 ? (f - 3) * 2 : 0 // 2 ms per request ahead of it in the queue
        respond(q, f, 5 + wait, 'HIT')
        respond(q, f, 20 + wait, 'MISS')
      }
    }
    expect(q.queued).toBe(true)
    expect(queueing.waitOf(q, 2)).toBeCloseTo(0, 6)
    expect(queueing.waitOf(q, 8)).toBeCloseTo(10, 6)
    expect(queueing.serviceOf(q, true)).toBeCloseTo(5, 6)
    expect(queueing.serviceOf(q, false)).toBeCloseTo(20, 6)
    // above every entry seen: at least a hit service time (5 ms) per request more than the last
    expect(queueing.waitOf(q, 15)).toBeCloseTo(16 + 5 * (15 - 11), 6)
  })

  test('service times jittered by ±50 % with no queue never read as one', () => {
    const q = queueing.createQueueing()
    const random = mulberry32(3)
    for (let i = 0; i < 20000; i++) {
      const f = Math.floor(random() * 10)
      const hit = random() < 0.5
      respond(q, f, (hit ? 1 : 20) * (0.5 + random()), hit ? 'HIT' : 'MISS')
    }
    expect(q.queued).toBe(false)
    expect(queueing.waitOf(q, 9)).toBe(0)
  })

  test('no base from requests sent with nothing in flight: nothing is learnt', () => {
    const q = queueing.createQueueing()
    for (let i = 0; i < 100; i++) respond(q, 6, 50, 'MISS')
    expect(q.queued).toBe(false)
    expect(q.samples[6]).toBe(0)
  })
})

describe('wasp spill: backends with a few workers each', () => {
  const fleet = { rate: 3000, keys: 500, cacheSize: 30 }
  const run = { seed: 1, warmup: 4000, measure: 4000 }
  const wasp = (options) => (random, now) => createWasp(options, { random, now })

  test('spilling past queued holders cuts the tail and evens the load (spill 0 = before)', () => {
    const on = runAt(wasp({}), fleet, run)
    const off = runAt(wasp({ spill: 0 }), fleet, run)
    expect(on.p99).toBeLessThan(off.p99)
    expect(on.busiest).toBeLessThan(off.busiest)
  })

  test('a fleet that never queues (the closed-loop model) picks exactly as with spill off', () => {
    const picks = (options) => {
      const model = createModel({ policy: createWasp(options, { random: mulberry32(9) }), seed: 2, popularity: { zipf: 1 }, recordPicks: true })
      model.run(3000)
      return model.picks.join(',')
    }
    expect(picks({})).toBe(picks({ spill: 0, replicateQueued: 1 }))
  })

  test('bad values are refused', () => {
    expect(() => createWasp({ spill: -1 })).toThrow(/spill/)
    expect(() => createWasp({ replicateQueued: -0.5 })).toThrow(/replicateQueued/)
  })
})
