'use strict'

const { createEwma } = require('../src/policies/ewma')
const { upstreams, drive, replay, shares, aSlowsDown, probeThenLowest } = require('./policy-driver')

const cases = [
  probeThenLowest,
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

describe('ewma', () => {
  test.each(cases)('$name', (testCase) => {
    expect(replay(createEwma, testCase)).toEqual(testCase.expected)
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

  test.each([0, -0.1, 1.5, 'x', NaN])('alpha %p is refused with ERR_POLISTES_BAD_OPTION', (alpha) => {
    expect(() => createEwma({ alpha })).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })
})
