'use strict'

const { createWeightedRoundRobin } = require('../src/policies/weighted-round-robin')
const { upstreams, drive, replay, shares } = require('./policy-driver')

const failA = (policy, pool) => {
  policy.pick(pool) // a (current 5 - 7 = -2)
  policy.onEnd(pool[0], {}, { error: new Error('ECONNRESET') }) // a's effective weight 5 - 5/1 = 0
}

const cases = [
  {
    name: "weights 5, 1, 1 interleave as nginx's documented example",
    upstreams: [{ id: 'a', weight: 5 }, { id: 'b', weight: 1 }, { id: 'c', weight: 1 }],
    picks: 14,
    expected: ['a', 'a', 'b', 'a', 'c', 'a', 'a', 'a', 'a', 'b', 'a', 'c', 'a', 'a']
  },
  {
    name: 'weights 2, 1: a, b, a',
    upstreams: [{ id: 'a', weight: 2 }, { id: 'b', weight: 1 }],
    picks: 6,
    expected: ['a', 'b', 'a', 'a', 'b', 'a']
  },
  {
    name: 'no weight, 0, negative or NaN count as 1: plain rotation',
    upstreams: ['a', { id: 'b', weight: 0 }, { id: 'c', weight: -3 }, { id: 'd', weight: NaN }],
    picks: 8,
    expected: ['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd']
  },
  {
    name: 'a failure zeroes the effective weight (maxFails 1), which then grows back by 1 per pick',
    upstreams: [{ id: 'a', weight: 5 }, { id: 'b', weight: 1 }, { id: 'c', weight: 1 }],
    setup: failA,
    picks: 4,
    // hand-computed: currents (a,b,c) after each round: (-2,0,2) b; (-1,1,0) c; (1,-3,1) b; (-1,-2,2) a
    expected: ['b', 'c', 'b', 'a']
  },
  {
    name: 'with maxFails 5 a failure costs only weight / 5',
    options: { maxFails: 5 },
    upstreams: [{ id: 'a', weight: 5 }, { id: 'b', weight: 1 }, { id: 'c', weight: 1 }],
    setup: failA,
    picks: 3,
    expected: ['a', 'b', 'a']
  },
  {
    name: 'a member leaving keeps the others in step; a joiner starts from zero',
    upstreams: [{ id: 'a', weight: 2 }, 'b', 'c'],
    members: { 0: ['a', 'b'], 3: ['a', 'b', 'c'] },
    picks: 7,
    // hand-computed: (a,b) (-1,1) a; (1,-1) b; (0,0) a; then (a,b,c) (-2,1,1) a; (0,-2,2) b; (2,-1,-1) c; (0,0,0) a
    expected: ['a', 'b', 'a', 'a', 'b', 'c', 'a']
  }
]

const distributions = [
  { name: 'weights 3, 2, 1 share exactly 1/2, 1/3, 1/6', upstreams: [{ id: 'a', weight: 3 }, { id: 'b', weight: 2 }, { id: 'c', weight: 1 }], picks: 6000, expectedRatios: [0.5, 0.3333, 0.1667], tolerance: 0.001 },
  { name: 'fractional weights work too', upstreams: [{ id: 'a', weight: 0.5 }, { id: 'b', weight: 1.5 }], picks: 4000, expectedRatios: [0.25, 0.75], tolerance: 0.001 }
]

describe('weighted-round-robin', () => {
  test.each(cases)('$name', (testCase) => {
    expect(replay(createWeightedRoundRobin, testCase)).toEqual(testCase.expected)
  })

  test.each(distributions)('$name', ({ upstreams: specs, picks, expectedRatios, tolerance }) => {
    const pool = upstreams(specs)
    const got = shares(drive(createWeightedRoundRobin(), pool, { picks }), pool.map((u) => u.id))
    got.forEach((share, i) => expect(Math.abs(share - expectedRatios[i])).toBeLessThanOrEqual(tolerance))
  })

  test.each([0, 0.5, -1, 'x', NaN])('maxFails %p is refused with ERR_POLISTES_BAD_OPTION', (maxFails) => {
    expect(() => createWeightedRoundRobin({ maxFails })).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })

  test('state of departed members is forgotten once the table outgrows the list', () => {
    const policy = createWeightedRoundRobin()
    for (let i = 0; i < 100; i++) policy.pick(upstreams([`u${i}`]))
    expect(Object.keys(policy.snapshot().peers).length).toBeLessThanOrEqual(2 + 16 + 1)
  })
})
