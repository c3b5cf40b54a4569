'use strict'

const { createLeastConnections } = require('../src/policies/least-connections')
const { upstreams, drive } = require('./policy-driver')

const cases = [
  {
    name: 'the fewest in flight wins',
    upstreams: [{ id: 'a', inflight: 3 }, { id: 'b', inflight: 1 }, { id: 'c', inflight: 2 }],
    picks: 3,
    expected: ['b', 'b', 'b']
  },
  {
    name: 'weighted: inflight / weight (a: 4/2 = 2, b: 1/1, c: 3/1) — b',
    upstreams: [{ id: 'a', inflight: 4, weight: 2 }, { id: 'b', inflight: 1 }, { id: 'c', inflight: 3 }],
    picks: 2,
    expected: ['b', 'b']
  },
  {
    name: 'weighted: a heavier member carries proportionally more (a: 3/4 < b: 1/1)',
    upstreams: [{ id: 'a', inflight: 3, weight: 4 }, { id: 'b', inflight: 1 }],
    picks: 2,
    expected: ['a', 'a']
  },
  {
    name: 'ties rotate (nginx: smooth weighted round-robin among the tied)',
    upstreams: ['a', 'b', 'c'],
    picks: 6,
    expected: ['a', 'b', 'c', 'a', 'b', 'c']
  },
  {
    name: 'only the tied members rotate',
    upstreams: ['a', { id: 'b', inflight: 1 }, 'c'],
    picks: 4,
    expected: ['a', 'c', 'a', 'c']
  },
  {
    name: 'tied members rotate by weight',
    upstreams: [{ id: 'a', weight: 2 }, 'b'],
    picks: 6,
    expected: ['a', 'b', 'a', 'a', 'b', 'a']
  },
  {
    name: 'held requests fill the members evenly',
    upstreams: ['a', 'b', 'c'],
    hold: true,
    picks: 9,
    // each round of three goes once to each member: after 3k picks all hold k
    expectedInflight: [3, 3, 3]
  },
  {
    name: 'held requests fill weighted members in proportion',
    upstreams: [{ id: 'a', weight: 3 }, 'b'],
    hold: true,
    picks: 8,
    expectedInflight: [6, 2]
  }
]

describe('least-connections', () => {
  test.each(cases)('$name', ({ upstreams: specs, expected, expectedInflight, ...run }) => {
    const pool = upstreams(specs)
    const picked = drive(createLeastConnections(), pool, run)
    if (expected) expect(picked).toEqual(expected)
    if (expectedInflight) expect(pool.map((u) => u.inflight)).toEqual(expectedInflight)
  })

  test('a member that joins with nothing in flight takes the next requests', () => {
    const pool = upstreams([{ id: 'a', inflight: 5 }, { id: 'b', inflight: 5 }, 'c'])
    const picked = drive(createLeastConnections(), pool, { members: { 0: ['a', 'b'], 2: ['a', 'b', 'c'] }, hold: true, picks: 6 })
    expect(picked.slice(2)).toEqual(['c', 'c', 'c', 'c'])
  })
})
