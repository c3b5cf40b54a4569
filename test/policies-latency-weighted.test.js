'use strict'

const { createLatencyWeighted } = require('../src/policies/latency-weighted')
const { upstreams, drive, shares } = require('./policy-driver')

const distributions = [
  {
    name: 'three times faster gets three times the requests (10 vs 30 ms)',
    upstreams: ['a', 'b'],
    latency: (id) => ({ a: 10, b: 30 })[id],
    picks: 10000,
    expectedRatios: [0.75, 0.25],
    tolerance: 0.05
  },
  {
    name: 'shares proportional to 1 / latency (10, 20, 40 ms → 4 : 2 : 1)',
    upstreams: ['a', 'b', 'c'],
    latency: (id) => ({ a: 10, b: 20, c: 40 })[id],
    picks: 7000,
    expectedRatios: [4 / 7, 2 / 7, 1 / 7],
    tolerance: 0.02
  },
  {
    name: 'upstream.weight multiplies: weight 3 at 30 ms equals weight 1 at 10 ms',
    upstreams: ['a', { id: 'b', weight: 3 }],
    latency: (id) => ({ a: 10, b: 30 })[id],
    picks: 10000,
    expectedRatios: [0.5, 0.5],
    tolerance: 0.02
  },
  {
    name: 'a latency of 0 ms is floored, not infinite',
    upstreams: ['a', 'b'],
    options: { minLatencyMs: 1 },
    latency: (id) => ({ a: 0, b: 3 })[id],
    picks: 4000,
    expectedRatios: [0.75, 0.25],
    tolerance: 0.02
  },
  {
    name: 'noisy latencies (EWMA) still split about 3 : 1',
    upstreams: ['a', 'b'],
    latency: (id, nth) => (id === 'a' ? 10 : 30) * (0.8 + 0.4 * ((nth * 7919) % 101) / 100),
    picks: 10000,
    expectedRatios: [0.75, 0.25],
    tolerance: 0.05
  }
]

describe('latency-weighted', () => {
  test.each(distributions)('$name', ({ upstreams: specs, options, picks, latency, expectedRatios, tolerance }) => {
    const pool = upstreams(specs)
    const got = shares(drive(createLatencyWeighted(options), pool, { picks, latency }), pool.map((u) => u.id))
    got.forEach((share, i) => expect(Math.abs(share - expectedRatios[i])).toBeLessThanOrEqual(tolerance))
  })

  test('exact sequence from cold: probe, probe, then 3 : 1 without a transient burst', () => {
    // weights are speeds over their mean: (a, b) = (1, 1) until b's sample, then (1.5, 0.5)
    const picked = drive(createLatencyWeighted(), upstreams(['a', 'b']), { picks: 13, latency: (id) => ({ a: 10, b: 30 })[id] })
    expect(picked).toEqual(['a', 'b', 'a', 'a', 'b', 'a', 'a', 'a', 'b', 'a', 'a', 'a', 'b'])
  })

  test('nothing sampled yet: plain rotation', () => {
    const picked = drive(createLatencyWeighted(), upstreams(['a', 'b', 'c']), { picks: 6, hold: true })
    expect(picked).toEqual(['a', 'b', 'c', 'a', 'b', 'c'])
  })

  test('the 3 : 1 split is smooth: b is served at least once in every 5 consecutive requests', () => {
    const picked = drive(createLatencyWeighted(), upstreams(['a', 'b']), { picks: 400, latency: (id) => ({ a: 10, b: 30 })[id] })
    for (let i = 0; i + 5 <= picked.length; i++) expect(picked.slice(i, i + 5)).toContain('b')
  })

  test('an unsampled joiner gets the mean speed: probed soon, not flooded', () => {
    const pool = upstreams(['a', 'b', 'c'])
    const picked = drive(createLatencyWeighted(), pool, {
      picks: 40,
      members: { 0: ['a', 'b'], 20: ['a', 'b', 'c'] },
      hold: false,
      latency: (id) => ({ a: 10, b: 30, c: 10 })[id]
    })
    const after = picked.slice(20)
    expect(after.slice(0, 4)).toContain('c')
    expect(after.filter((id) => id === 'c').length).toBeLessThan(after.length * 0.6)
  })

  test.each([{ alpha: 0 }, { minLatencyMs: 0 }, { minLatencyMs: -1 }, { minLatencyMs: Infinity }])('option %p is refused', (options) => {
    expect(() => createLatencyWeighted(options)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })
})
