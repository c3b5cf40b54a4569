'use strict'

const { createEwma, latencySample, pickLowest } = require('../src/policies/ewma')
const { upstreams, drive, shares } = require('./policies-prng')

// a is fast (10 ms) for its first 5 requests, then slow (100 ms); b is a steady 50 ms
const aSlowsDown = (id, nth) => (id === 'b' ? 50 : nth < 5 ? 10 : 100)

const cases = [
  {
    name: 'probes every unsampled upstream first, then the lowest average wins',
    upstreams: ['a', 'b', 'c'],
    latency: (id) => ({ a: 30, b: 10, c: 20 })[id],
    picks: 6,
    expected: ['a', 'b', 'c', 'b', 'b', 'b']
  },
  {
    name: 'alpha 0.2: a keeps traffic until its average passes 50 (10 → 28 → 42.4 → 53.9)',
    upstreams: ['a', 'b'],
    latency: aSlowsDown,
    picks: 10,
    expected: ['a', 'b', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'b']
  },
  {
    name: 'alpha 0.5: reacts after one slow sample (10 → 55)',
    options: { alpha: 0.5 },
    upstreams: ['a', 'b'],
    latency: aSlowsDown,
    picks: 10,
    expected: ['a', 'b', 'a', 'a', 'a', 'a', 'a', 'b', 'b', 'b']
  },
  {
    name: 'equal averages: the one with fewer in flight, then list order',
    upstreams: [{ id: 'a', inflight: 2 }, 'b', 'c'],
    setup: (policy, pool) => pool.forEach((u) => policy.onEnd(u, {}, { latencyMs: 10 })),
    picks: 1,
    expected: ['b']
  }
]

const samples = [
  { name: 'a success gives its latency', outcome: { latencyMs: 12, statusCode: 200 }, worst: 100, sample: 12 },
  { name: 'a 404 is a success for latency', outcome: { latencyMs: 3, statusCode: 404 }, worst: 100, sample: 3 },
  { name: 'a fast error counts as the worst known', outcome: { latencyMs: 2, error: new Error('reset') }, worst: 100, sample: 100 },
  { name: 'a fast 503 counts as the worst known', outcome: { latencyMs: 2, statusCode: 503 }, worst: 80, sample: 80 },
  { name: 'a slow error keeps its own latency', outcome: { latencyMs: 3000, error: 'timeout' }, worst: 80, sample: 3000 },
  { name: 'an error without latency counts as the worst known', outcome: { error: 'refused' }, worst: 80, sample: 80 },
  { name: 'an error with nothing known is ignored', outcome: { error: 'refused' }, worst: undefined, sample: undefined },
  { name: 'no latency is ignored', outcome: { statusCode: 200 }, worst: 80, sample: undefined },
  { name: 'NaN is ignored', outcome: { latencyMs: NaN }, worst: 80, sample: undefined },
  { name: 'a negative latency is ignored', outcome: { latencyMs: -1 }, worst: 80, sample: undefined },
  { name: 'Infinity is ignored', outcome: { latencyMs: Infinity }, worst: 80, sample: undefined },
  { name: 'no outcome is ignored', outcome: undefined, worst: 80, sample: undefined }
]

describe('ewma', () => {
  test.each(cases)('$name', ({ upstreams: specs, options, setup, expected, ...run }) => {
    const policy = createEwma(options)
    const pool = upstreams(specs)
    if (setup) setup(policy, pool)
    expect(drive(policy, pool, run)).toEqual(expected)
  })

  test('docs/experiments.md A backends: the steady 200 ms B takes most, the 250 ms C almost nothing', () => {
    const profileA = [10, 15, 20, 400, 400, 400, 10, 15, 20]
    const latency = (id, nth) => (id === 'A' ? profileA[nth % profileA.length] : id === 'B' ? 200 : 250)
    const [a, b, c] = shares(drive(createEwma(), upstreams(['A', 'B', 'C']), { picks: 3000, latency }), ['A', 'B', 'C'])
    expect(b).toBeGreaterThan(0.95)
    expect(c).toBeLessThan(0.01)
    expect(a).toBeGreaterThan(0)
  })

  test('sends almost all traffic to the fastest (10 / 50 / 100 ms)', () => {
    const picked = drive(createEwma(), upstreams(['a', 'b', 'c']), { picks: 1000, latency: (id) => ({ a: 10, b: 50, c: 100 })[id] })
    expect(shares(picked, ['a'])[0]).toBeGreaterThan(0.99)
  })

  test('the estimate follows alpha × sample + (1 - alpha) × estimate', () => {
    const policy = createEwma({ alpha: 0.25 })
    drive(policy, upstreams(['a']), { picks: 3, latency: (id, nth) => [100, 20, 60][nth] })
    // 100 → 0.25·20 + 0.75·100 = 80 → 0.25·60 + 0.75·80 = 75
    expect(policy.snapshot()).toEqual({ alpha: 0.25, upstreams: { a: { estimateMs: 75, samples: 3 } } })
  })

  test.each(samples)('latencySample: $name', ({ outcome, worst, sample }) => {
    expect(latencySample(outcome, worst)).toBe(sample)
  })

  test('pickLowest never returns an unsampled member whose probe is out while a sampled one exists', () => {
    const pool = upstreams(['a', { id: 'b', inflight: 1 }])
    expect(pickLowest(pool, (u) => (u.id === 'a' ? 500 : undefined))).toBe(pool[0])
    expect(pickLowest(pool, () => undefined)).toBe(pool[0])
  })

  test.each([0, -0.1, 1.5, 'x', NaN])('alpha %p is refused with ERR_POLISTES_BAD_OPTION', (alpha) => {
    expect(() => createEwma({ alpha })).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })
})
