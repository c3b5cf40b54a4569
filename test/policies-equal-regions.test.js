'use strict'

const { createEqualRegions } = require('../src/policies/equal-regions')
const { mulberry32, sequence, upstreams, drive, shares } = require('./policy-driver')

const fleet = [
  { id: 'eu1', region: 'eu' }, { id: 'eu2', region: 'eu' },
  { id: 'us1', region: 'us' },
  { id: 'as1', region: 'asia' }, { id: 'as2', region: 'asia' }, { id: 'as3', region: 'asia' },
  { id: 'x' } // no region: the "default" region
]

const cases = [
  {
    name: 'regions in turn, sorted by name (asia, default, eu, us); random 0 takes the first member',
    random: [0],
    upstreams: fleet,
    picks: 8,
    expected: ['as1', 'x', 'eu1', 'us1', 'as1', 'x', 'eu1', 'us1']
  },
  {
    name: 'the member within a region follows the random source',
    random: [0.99, 0.5, 0.5, 0],
    upstreams: fleet,
    picks: 4,
    expected: ['as3', 'x', 'eu2', 'us1']
  },
  {
    name: 'a region that empties is skipped; the others keep their turn',
    random: [0],
    upstreams: fleet,
    members: { 0: ['eu1', 'us1', 'as1', 'x'], 2: ['eu1', 'us1', 'as1'] },
    picks: 5,
    // after default: eu (next name after "default"), us, asia, eu
    expected: ['as1', 'x', 'eu1', 'us1', 'as1']
  },
  {
    name: 'an empty-string region is the default region',
    random: [0],
    upstreams: [{ id: 'a', region: '' }, { id: 'b' }, { id: 'c', region: 'eu' }],
    picks: 4,
    expected: ['a', 'c', 'a', 'c']
  }
]

describe('equal-regions', () => {
  test.each(cases)('$name', ({ random, upstreams: specs, expected, ...run }) => {
    expect(drive(createEqualRegions({}, { random: sequence(random) }), upstreams(specs), run)).toEqual(expected)
  })

  test('each region takes 1/4 whatever its size; members share their region evenly', () => {
    const ids = fleet.map((u) => u.id)
    const got = shares(drive(createEqualRegions({}, { random: mulberry32(3) }), upstreams(fleet), { picks: 12000 }), ids)
    const expectedRatios = [1 / 8, 1 / 8, 1 / 4, 1 / 12, 1 / 12, 1 / 12, 1 / 4]
    got.forEach((share, i) => expect(Math.abs(share - expectedRatios[i])).toBeLessThanOrEqual(0.01))
  })
})
