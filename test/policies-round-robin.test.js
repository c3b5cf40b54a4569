'use strict'

const { createRoundRobin } = require('../src/policies/round-robin')
const { upstreams, drive } = require('./policy-driver')

const cases = [
  {
    name: 'takes the members in list order, then wraps',
    upstreams: ['a', 'b', 'c'],
    picks: 7,
    expected: ['a', 'b', 'c', 'a', 'b', 'c', 'a']
  },
  {
    name: 'a member joining mid-turn is reached in order, nobody is served twice in a row',
    upstreams: ['a', 'b', 'c', 'd'],
    members: { 0: ['a', 'b', 'c'], 5: ['a', 'b', 'c', 'd'] },
    picks: 9,
    // a pick counter would give 5 % 4 = 1: b twice in a row
    expected: ['a', 'b', 'c', 'a', 'b', 'c', 'd', 'a', 'b']
  },
  {
    name: 'the member last picked leaves: its successor goes next',
    upstreams: ['a', 'b', 'c'],
    members: { 0: ['a', 'b', 'c'], 2: ['a', 'c'] },
    picks: 5,
    expected: ['a', 'b', 'c', 'a', 'c']
  },
  {
    name: 'the last member of the list leaves right after its turn: wraps to the first',
    upstreams: ['a', 'b', 'c'],
    members: { 0: ['a', 'b', 'c'], 3: ['a', 'b'] },
    picks: 5,
    expected: ['a', 'b', 'c', 'a', 'b']
  },
  {
    name: 'in-flight counts are ignored',
    upstreams: [{ id: 'a', inflight: 9 }, 'b'],
    picks: 4,
    expected: ['a', 'b', 'a', 'b']
  },
  // weights: nginx's smooth weighted round-robin, the same sequences as weighted-round-robin's
  {
    name: 'weights 2, 1, 1 (the --backends ...#w=2 case): a gets 4 of 8, interleaved',
    upstreams: [{ id: 'a', weight: 2 }, 'b', 'c'],
    picks: 8,
    expected: ['a', 'b', 'c', 'a', 'a', 'b', 'c', 'a']
  },
  {
    name: "weights 5, 1, 1 interleave as nginx's documented example",
    upstreams: [{ id: 'a', weight: 5 }, { id: 'b', weight: 1 }, { id: 'c', weight: 1 }],
    picks: 14,
    expected: ['a', 'a', 'b', 'a', 'c', 'a', 'a', 'a', 'a', 'b', 'a', 'c', 'a', 'a']
  },
  {
    name: 'weights 3, 2: a, b, a, b, a per turn of five',
    upstreams: [{ id: 'a', weight: 3 }, { id: 'b', weight: 2 }],
    picks: 10,
    expected: ['a', 'b', 'a', 'b', 'a', 'a', 'b', 'a', 'b', 'a']
  },
  {
    name: 'equal weights other than 1 are the plain rotation',
    upstreams: [{ id: 'a', weight: 3 }, { id: 'b', weight: 3 }, { id: 'c', weight: 3 }],
    picks: 6,
    expected: ['a', 'b', 'c', 'a', 'b', 'c']
  },
  {
    name: 'no weight, 0, negative or NaN count as 1: plain rotation',
    upstreams: ['a', { id: 'b', weight: 0 }, { id: 'c', weight: -3 }, { id: 'd', weight: NaN }],
    picks: 8,
    expected: ['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd']
  },
  {
    name: 'a weighted member leaving keeps the others in step; a joiner starts from zero',
    upstreams: [{ id: 'a', weight: 2 }, 'b', 'c'],
    members: { 0: ['a', 'b'], 3: ['a', 'b', 'c'] },
    picks: 7,
    // as weighted-round-robin's test: (a,b) (-1,1) a; (1,-1) b; (0,0) a; then (a,b,c) (-2,1,1) a; (0,-2,2) b; (2,-1,-1) c; (0,0,0) a
    expected: ['a', 'b', 'a', 'a', 'b', 'c', 'a']
  },
  {
    name: 'the heavy member leaves: the rest, now equal, rotate on from the last pick',
    upstreams: [{ id: 'a', weight: 2 }, 'b', 'c'],
    members: { 0: ['a', 'b', 'c'], 2: ['b', 'c'] },
    picks: 5,
    expected: ['a', 'b', 'c', 'b', 'c']
  }
]

const distributions = [
  { name: 'weights 3, 2, 1 share exactly 1/2, 1/3, 1/6', upstreams: [{ id: 'a', weight: 3 }, { id: 'b', weight: 2 }, { id: 'c', weight: 1 }], picks: 6000, expected: { a: 3000, b: 2000, c: 1000 } },
  { name: 'fractional weights work too', upstreams: [{ id: 'a', weight: 0.5 }, { id: 'b', weight: 1.5 }], picks: 4000, expected: { a: 1000, b: 3000 } },
  { name: 'equal weights share evenly', upstreams: ['a', 'b', 'c', 'd'], picks: 4000, expected: { a: 1000, b: 1000, c: 1000, d: 1000 } }
]

describe('round-robin', () => {
  test.each(cases)('$name', ({ upstreams: specs, expected, ...run }) => {
    expect(drive(createRoundRobin(), upstreams(specs), run)).toEqual(expected)
  })

  test.each(distributions)('$name', ({ upstreams: specs, picks, expected }) => {
    const counts = {}
    for (const id of drive(createRoundRobin(), upstreams(specs), { picks })) counts[id] = (counts[id] || 0) + 1
    expect(counts).toEqual(expected)
  })

  test('snapshot reports the last member picked', () => {
    const policy = createRoundRobin()
    drive(policy, upstreams(['a', 'b']), { picks: 3 })
    expect(policy.snapshot()).toEqual({ cursor: 1, last: 'a' })
  })
})
