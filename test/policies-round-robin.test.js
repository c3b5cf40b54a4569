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
    name: 'weights and in-flight counts are ignored',
    upstreams: [{ id: 'a', weight: 5, inflight: 9 }, 'b'],
    picks: 4,
    expected: ['a', 'b', 'a', 'b']
  }
]

describe('round-robin', () => {
  test.each(cases)('$name', ({ upstreams: specs, expected, ...run }) => {
    expect(drive(createRoundRobin(), upstreams(specs), run)).toEqual(expected)
  })

  test('snapshot reports the last member picked', () => {
    const policy = createRoundRobin()
    drive(policy, upstreams(['a', 'b']), { picks: 3 })
    expect(policy.snapshot()).toEqual({ cursor: 1, last: 'a' })
  })
})
