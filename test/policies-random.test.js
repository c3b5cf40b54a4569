'use strict'

const { createRandom } = require('../src/policies/random')
const { mulberry32, sequence, upstreams, drive, shares } = require('./policy-driver')

const exact = [
  { name: 'maps [0, 1) onto list positions', random: [0, 0.34, 0.99, 0.5], upstreams: ['a', 'b', 'c'], expected: ['a', 'b', 'c', 'b'] },
  { name: 'a source returning exactly 1 still yields a member (the last)', random: [1], upstreams: ['a', 'b'], expected: ['b', 'b'] },
  { name: 'a source returning NaN still yields a member (the first)', random: [NaN], upstreams: ['a', 'b'], expected: ['a'] }
]

const distributions = [
  { name: 'three members share evenly', seed: 1, upstreams: ['a', 'b', 'c'], picks: 10000, expectedRatios: [0.333, 0.333, 0.333], tolerance: 0.02 },
  { name: 'weights are ignored', seed: 2, upstreams: [{ id: 'a', weight: 9 }, 'b'], picks: 10000, expectedRatios: [0.5, 0.5], tolerance: 0.02 }
]

describe('random', () => {
  test.each(exact)('$name', ({ random, upstreams: specs, expected }) => {
    const policy = createRandom({}, { random: sequence(random) })
    expect(drive(policy, upstreams(specs), { picks: expected.length })).toEqual(expected)
  })

  test.each(distributions)('$name', ({ seed, upstreams: specs, picks, expectedRatios, tolerance }) => {
    const pool = upstreams(specs)
    const picked = drive(createRandom({}, { random: mulberry32(seed) }), pool, { picks })
    shares(picked, pool.map((u) => u.id)).forEach((share, i) => {
      expect(Math.abs(share - expectedRatios[i])).toBeLessThanOrEqual(tolerance)
    })
  })
})
