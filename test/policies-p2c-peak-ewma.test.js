'use strict'

const { createP2cPeakEwma } = require('../src/policies/p2c-peak-ewma')
const { mulberry32, sequence, fakeClock, upstreams, drive, shares } = require('./policy-driver')

/** A policy with a scripted or seeded random and a fake clock. */
function make (options, random = mulberry32(5)) {
  const clock = fakeClock(0)
  return { clock, policy: createP2cPeakEwma(options, { random, now: clock.now }) }
}

// the two draws: i = floor(r0 · n), j = floor(r1 · (n - 1)), shifted past i
const pairs = [
  { name: 'the cheaper of the pair wins (a 10 ms vs b 100 ms)', random: [0, 0], latencies: { a: 10, b: 100 }, upstreams: ['a', 'b'], expected: 'a' },
  { name: 'order of the draws does not matter', random: [0.9, 0], latencies: { a: 10, b: 100 }, upstreams: ['a', 'b'], expected: 'a' },
  { name: 'cost multiplies by inflight + 1: a 10 ms × 20 > b 100 ms × 1', random: [0, 0], latencies: { a: 10, b: 100 }, upstreams: [{ id: 'a', inflight: 19 }, 'b'], expected: 'b' },
  { name: 'only the drawn two compete: c is best but not drawn', random: [0, 0], latencies: { a: 50, b: 100, c: 1 }, upstreams: ['a', 'b', 'c'], expected: 'a' },
  { name: 'equal cost: the first draw', random: [0.6, 0], latencies: { a: 10, b: 10 }, upstreams: ['a', 'b'], expected: 'b' },
  { name: 'unsampled (default): costs the largest known estimate, so it loses to a faster one', random: [0, 0.5], latencies: { a: 10, b: 50 }, upstreams: ['a', 'b', 'c'], expected: 'a' },
  { name: 'unsampled (default): ties with the slowest, first draw wins', random: [0.9, 0.6], latencies: { a: 10, b: 50 }, upstreams: ['a', 'b', 'c'], expected: 'c' },
  { name: 'unsampled with initialLatencyMs 0: probed before anyone', options: { initialLatencyMs: 0 }, random: [0, 0.9], latencies: { a: 10, b: 50 }, upstreams: ['a', 'b', 'c'], expected: 'c' },
  { name: 'unsampled with initialLatencyMs 1000: avoided', options: { initialLatencyMs: 1000 }, random: [0.9, 0.9], latencies: { a: 10, b: 500 }, upstreams: ['a', 'b', 'c'], expected: 'b' }
]

// one upstream, samples at given times; the estimate read at `at`
const estimates = [
  { name: 'first sample sets the estimate', samples: [[0, 40]], at: 0, estimate: 40 },
  { name: 'a higher sample replaces it at once (peak)', samples: [[0, 10], [1, 400]], at: 1, estimate: 400 },
  { name: 'a lower sample pulls it down by 1 - exp(-Δt / tau)', samples: [[0, 100], [10000, 10]], at: 10000, estimate: 100 * Math.exp(-1) + 10 * (1 - Math.exp(-1)) },
  { name: 'lower samples in quick succession barely move it', samples: [[0, 100], [10, 10]], at: 10, estimate: 100 * Math.exp(-0.001) + 10 * (1 - Math.exp(-0.001)) },
  { name: 'idle, it decays toward zero: e^-1 after tau', samples: [[0, 100]], at: 10000, estimate: 100 * Math.exp(-1) },
  { name: 'tau 1 s decays ten times faster', options: { tau: 1000 }, samples: [[0, 100]], at: 1000, estimate: 100 * Math.exp(-1) },
  { name: 'a fast failure counts as the worst known estimate', samples: [[0, 10], [0, { error: new Error('reset'), latencyMs: 1 }]], at: 0, estimate: 10 }
]

describe('p2c-peak-ewma', () => {
  test.each(pairs)('$name', ({ options, random, latencies, upstreams: specs, expected }) => {
    const { policy } = make(options, sequence(random))
    const pool = upstreams(specs)
    for (const [id, ms] of Object.entries(latencies)) {
      const u = pool.find((x) => x.id === id)
      if (u) policy.onEnd(u, {}, { latencyMs: ms, statusCode: 200 })
    }
    const unsampled = pool.filter((u) => !(u.id in latencies))
    expect(unsampled.length).toBeLessThanOrEqual(1)
    expect(policy.pick(pool, {}).id).toBe(expected)
  })

  test.each(estimates)('estimate: $name', ({ options, samples, at, estimate }) => {
    const { policy, clock } = make(options)
    const [u] = upstreams(['a'])
    for (const [t, s] of samples) {
      clock.advance(t - clock.now())
      policy.onEnd(u, {}, typeof s === 'number' ? { latencyMs: s } : s)
    }
    clock.advance(at - clock.now())
    expect(policy.snapshot().upstreams.a.estimateMs).toBeCloseTo(estimate, 6)
  })

  test('sequential traffic over 10 / 20 / 40 ms: the fastest wins every pair it is in (≈ 2/3, 1/3, 0)', () => {
    const { policy, clock } = make({}, mulberry32(11))
    const picked = drive(policy, upstreams(['a', 'b', 'c']), { picks: 10000, clock, latency: (id) => ({ a: 10, b: 20, c: 40 })[id] })
    const got = shares(picked, ['a', 'b', 'c'])
    ;[2 / 3, 1 / 3, 0].forEach((r, i) => expect(Math.abs(got[i] - r)).toBeLessThanOrEqual(0.02))
  })

  test('held requests: queues grow in proportion to speed (cost = latency × (inflight + 1))', () => {
    const { policy } = make({}, mulberry32(12))
    const pool = upstreams(['a', 'b'])
    policy.onEnd(pool[0], {}, { latencyMs: 10 })
    policy.onEnd(pool[1], {}, { latencyMs: 30 })
    drive(policy, pool, { picks: 400, hold: true })
    // a's queue settles where 10 × (qa + 1) ≈ 30 × (qb + 1): about 3 : 1
    expect(pool[0].inflight / pool[1].inflight).toBeGreaterThan(2.7)
    expect(pool[0].inflight / pool[1].inflight).toBeLessThan(3.3)
  })

  test('a slow spike on a is avoided at once, and a is tried again after its estimate decays', () => {
    const { policy, clock } = make({}, mulberry32(13))
    const pool = upstreams(['a', 'b'])
    policy.onEnd(pool[0], {}, { latencyMs: 10 })
    policy.onEnd(pool[1], {}, { latencyMs: 50 })
    expect(policy.pick(pool, {})).toBe(pool[0])
    policy.onEnd(pool[0], {}, { latencyMs: 500 })
    expect(policy.pick(pool, {})).toBe(pool[1])
    // b keeps answering in 50 ms while a is idle: a's 500 decays below 50 after tau · ln(10) ≈ 23 s
    clock.advance(24000)
    policy.onEnd(pool[1], {}, { latencyMs: 50 })
    expect(policy.pick(pool, {})).toBe(pool[0])
  })

  test.each([{ tau: 0 }, { tau: -1 }, { tau: 'x' }, { initialLatencyMs: -1 }, { initialLatencyMs: NaN }, { initialLatencyMs: Infinity }])('option %p is refused', (options) => {
    expect(() => createP2cPeakEwma(options)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })
})
