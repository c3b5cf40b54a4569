'use strict'

const { createSma } = require('../src/policies/sma')
const { upstreams, drive, replay, shares, aSlowsDown, probeThenLowest } = require('./policy-driver')

const cases = [
  probeThenLowest,
  {
    name: 'window 3: a stays until the mean of its last three (10, 100, 100 = 70) passes b',
    upstreams: ['a', 'b'],
    latency: aSlowsDown,
    picks: 10,
    // a's 6th sample: mean (10, 10, 100) = 40 < 50, keeps a; 7th: (10, 100, 100) = 70 > 50
    expected: ['a', 'b', 'a', 'a', 'a', 'a', 'a', 'a', 'b', 'b']
  },
  {
    name: 'window 1: reacts to the very next sample',
    options: { window: 1 },
    upstreams: ['a', 'b'],
    latency: aSlowsDown,
    picks: 10,
    expected: ['a', 'b', 'a', 'a', 'a', 'a', 'a', 'b', 'b', 'b']
  },
  {
    name: 'window 5: reacts later (mean of 10, 10, 100, 100, 100 = 64)',
    options: { window: 5 },
    upstreams: ['a', 'b'],
    latency: aSlowsDown,
    picks: 10,
    expected: ['a', 'b', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'b']
  },
  {
    name: 'an unsampled member that joins is probed at once',
    upstreams: ['a', 'b', 'c'],
    members: { 0: ['a', 'b'], 4: ['a', 'b', 'c'] },
    latency: (id) => ({ a: 10, b: 20, c: 5 })[id],
    picks: 7,
    expected: ['a', 'b', 'a', 'a', 'c', 'c', 'c']
  },
  {
    name: 'an unsampled member whose probe is still in flight is not flooded',
    upstreams: ['a', { id: 'b', inflight: 1 }],
    setup: (policy, pool) => policy.onEnd(pool[0], {}, { latencyMs: 10 }),
    hold: true,
    picks: 3,
    expected: ['a', 'a', 'a']
  },
  {
    name: 'nothing sampled and everyone busy: the least busy is probed',
    upstreams: [{ id: 'a', inflight: 2 }, { id: 'b', inflight: 1 }],
    hold: true,
    picks: 3,
    expected: ['b', 'a', 'b']
  },
  {
    name: 'a fast failure counts as the worst known latency: it does not attract traffic',
    upstreams: ['a', 'b', 'c'],
    options: { window: 1 },
    latency: (id) => (id === 'c' ? { error: new Error('ECONNRESET'), latencyMs: 1 } : ({ a: 20, b: 40 })[id]),
    picks: 6,
    expected: ['a', 'b', 'c', 'a', 'a', 'a']
  }
]

describe('sma', () => {
  test.each(cases)('$name', (testCase) => {
    expect(replay(createSma, testCase)).toEqual(testCase.expected)
  })

  test('sends almost all traffic to the fastest (10 / 50 / 100 ms)', () => {
    const pool = upstreams(['a', 'b', 'c'])
    const picked = drive(createSma(), pool, { picks: 1000, latency: (id) => ({ a: 10, b: 50, c: 100 })[id] })
    const [a, b, c] = shares(picked, ['a', 'b', 'c'])
    expect(a).toBeGreaterThan(0.99)
    expect(b + c).toBeLessThanOrEqual(0.002)
  })

  test('snapshot shows the window of samples and their mean', () => {
    const policy = createSma()
    drive(policy, upstreams(['a']), { picks: 4, latency: (id, nth) => [10, 20, 30, 40][nth] })
    expect(policy.snapshot()).toEqual({ window: 3, upstreams: { a: { averageMs: 30, samples: [40, 20, 30] } } })
  })

  test.each([0, 2.5, -1, 'x'])('window %p is refused with ERR_POLISTES_BAD_OPTION', (window) => {
    expect(() => createSma({ window })).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })
})
