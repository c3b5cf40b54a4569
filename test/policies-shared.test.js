'use strict'

const {
  checkOptions, inflightOf, weightOf, forgetAbsent, smoothPick, createRotation, randomIndex, fnv1a32, fmix32, hash32, ewma, largest
} = require('../src/policies/shared')
const { upstreams } = require('./policy-driver')

describe('shared policy helpers', () => {
  test('checkOptions returns the options when every key is known, {} when none were given', () => {
    const options = { alpha: 0.5 }
    expect(checkOptions('ewma', options, ['alpha'])).toBe(options)
    expect(checkOptions('ewma', undefined, ['alpha'])).toEqual({})
  })

  test('checkOptions names the unknown key and lists the known ones', () => {
    expect(() => checkOptions('wasp', { maxRounds: 4 }, ['rounds', 'phi'])).toThrow('wasp: unknown option "maxRounds"; known options: rounds, phi')
    expect(() => checkOptions('random', { seed: 1 }, [])).toThrow('random: unknown option "seed"; it takes no options')
  })

  test.each([
    [3, 3], [0, 0], [-2, 0], [NaN, 0], [undefined, 0], ['4', 0], [0.5, 0.5]
  ])('inflightOf reads inflight %p as %p', (inflight, expected) => {
    expect(inflightOf({ id: 'a', inflight })).toBe(expected)
  })

  test.each([
    [2, 2], [0.5, 0.5], [0, 1], [-3, 1], [NaN, 1], [Infinity, 1], [undefined, 1], ['2', 1]
  ])('weightOf reads weight %p as %p', (weight, expected) => {
    expect(weightOf({ id: 'a', weight })).toBe(expected)
  })

  test('forgetAbsent keeps departed ids until the table outgrows the list, then drops only them', () => {
    const state = new Map()
    for (let i = 0; i < 20; i++) state.set(`u${i}`, i)
    forgetAbsent(state, upstreams(['u0', 'u1']))
    expect(state.size).toBe(20) // 20 <= 2 × 2 + 16
    state.set('u20', 20)
    state.set('u21', 21)
    forgetAbsent(state, upstreams(['u0', 'u1']))
    expect([...state.keys()]).toEqual(['u0', 'u1'])
  })

  test("smoothPick interleaves weights 5, 1, 1 as nginx's documented example", () => {
    const pool = upstreams([{ id: 'a', weight: 5 }, { id: 'b', weight: 1 }, { id: 'c', weight: 1 }])
    const state = new Map()
    const picked = Array.from({ length: 7 }, () => smoothPick(pool, weightOf, state).id)
    expect(picked).toEqual(['a', 'a', 'b', 'a', 'c', 'a', 'a'])
    // after a full cycle every peer's current is back to 0
    expect([...state.values()].map((p) => p.current)).toEqual([0, 0, 0])
  })

  test('createRotation follows the id served last when members leave and join', () => {
    const rotation = createRotation()
    const [a, b, c, d, e] = upstreams(['a', 'b', 'c', 'd', 'e'])
    expect(rotation.snapshot()).toEqual({ cursor: 0, last: null })
    expect([rotation.next([a, b, c]), rotation.next([a, b, c])].map((u) => u.id)).toEqual(['a', 'b'])
    expect(rotation.next([d, a, b, c]).id).toBe('c') // b moved to index 2: its successor
    expect(rotation.next([d, a, b, e]).id).toBe('e') // c (index 3) left: whoever now stands there
    expect(rotation.snapshot()).toEqual({ cursor: 4, last: 'e' })
  })

  test.each([
    [0, 5, 0], [0.999, 5, 4], [0.5, 4, 2], [1, 5, 4], [-0.1, 5, 0], [0.3, 1, 0]
  ])('randomIndex maps random() = %p over n = %p to %p (clamped into range)', (r, n, expected) => {
    expect(randomIndex(() => r, n)).toBe(expected)
  })

  test('fnv1a32 matches the published FNV-1a 32 vectors and chains through its seed', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5)
    expect(fnv1a32('a')).toBe(0xe40c292c)
    expect(fnv1a32('foobar')).toBe(0xbf9cf968)
    expect(fnv1a32('bar', fnv1a32('foo'))).toBe(fnv1a32('foobar'))
  })

  test("fmix32 is murmur3's finalizer; hash32 chains the two and spreads near-identical strings", () => {
    expect(fmix32(0)).toBe(0)
    expect(fmix32(1)).toBe(0x514e28b7)
    expect(hash32('a#1')).toBe(fmix32(fnv1a32('a#1')))
    // FNV-1a alone leaves "a#1" and "a#2" close; finalized, they differ in about half the bits
    const differing = (hash32('a#1') ^ hash32('a#2')).toString(2).replace(/0/g, '').length
    expect(differing).toBeGreaterThan(8)
  })

  test('ewma starts at the first sample, then moves alpha of the way to each new one', () => {
    let avg
    for (const sample of [100, 20, 60]) avg = ewma(avg, sample, 0.25)
    expect(avg).toBe(75) // 100 → 0.25·20 + 0.75·100 = 80 → 0.25·60 + 0.75·80 = 75
    expect(ewma(10, 50, 1)).toBe(50)
  })

  test('ewma with an explicit keep weight uses it exactly instead of 1 − alpha', () => {
    const w = Math.exp(-8000 / 10000)
    expect(ewma(40, 10, 1 - w, w)).toBe(40 * w + 10 * (1 - w))
  })

  test('largest gives the greatest estimate of a table, undefined when empty', () => {
    expect(largest(new Map(), (e) => e)).toBeUndefined()
    expect(largest(new Map([['a', { v: 3 }], ['b', { v: 9 }], ['c', { v: 1 }]]), (e) => e.v)).toBe(9)
  })
})
