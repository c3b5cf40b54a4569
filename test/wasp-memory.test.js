'use strict'

const { createMemory, FORGET_AFTER } = require('../src/policies/wasp/memory')
const { defaults } = require('../src/policies/wasp')

const make = (options = {}) => createMemory({ ...defaults, ...options })

describe('wasp memory', () => {
  test('an unserved key forgets at φ per step for an upstream there from the start, stays neutral for a newcomer', () => {
    const m = make({ thetaStart: 500, phi: 3 })
    m.tick()
    const early = m.upstream('a')
    const krec = m.key('/k', true)
    m.tick()
    const late = m.upstream('b') // joined after the key was born
    krec.step = 10
    expect(m.theta(krec, early)).toBe(530)
    expect(m.theta(krec, late)).toBe(500)
  })

  test('adjust learns, clamps to [thetaMin, thetaMax] and restarts forgetting from the current step', () => {
    const m = make({ thetaMin: 1, thetaMax: 1000, thetaStart: 500, phi: 3 })
    const a = m.upstream('a')
    const krec = m.key('/k', true)
    krec.step = 1
    m.adjust(krec, a, -100)
    expect(m.theta(krec, a)).toBe(403) // 500 + 3 × 1 − 100
    krec.step = 4
    expect(m.theta(krec, a)).toBe(412) // + 3 × 3 steps served elsewhere
    m.adjust(krec, a, -10000)
    expect(m.theta(krec, a)).toBe(1)
    m.adjust(krec, a, 10000)
    expect(m.theta(krec, a)).toBe(1000)
  })

  test('the key table is an LRU of maxKeys: a touched key survives, the least recently used goes', () => {
    const m = make({ maxKeys: 2 })
    m.key('/a', true)
    m.key('/b', true)
    m.key('/a', false) // touch
    m.key('/c', true)
    expect([...m.keys.keys()]).toEqual(['/a', '/c'])
    expect(m.key('/b', false)).toBeUndefined()
  })

  test('an upstream absent for more than FORGET_AFTER picks is forgotten; on return it is a new record without its thresholds', () => {
    const m = make()
    const a = m.upstream('a')
    const krec = m.key('/k', true)
    m.adjust(krec, a, -400)
    expect(m.theta(krec, a)).toBe(100)
    for (let i = 0; i < FORGET_AFTER + 1024; i++) m.tick()
    expect(m.ups.has('a')).toBe(false)
    const back = m.upstream('a')
    expect(back).not.toBe(a)
    expect(m.theta(krec, back)).toBe(defaults.thetaStart) // a newcomer to a key born before it
    expect(m.picks).toBe(FORGET_AFTER + 1024)
  })

  test('a key keeps one threshold entry per current upstream record: a forgotten record\'s entry goes at the next adjust', () => {
    const m = make()
    const a = m.upstream('a')
    const b = m.upstream('b')
    const krec = m.key('/k', true)
    m.adjust(krec, a, -400)
    m.adjust(krec, b, -100)
    m.adjust(krec, a, -50)
    expect(krec.entries.map((e) => [e.u.id, e.theta])).toEqual([['a', 50], ['b', 400]])
    for (let i = 0; i < FORGET_AFTER + 1024; i++) { m.tick(); if (i % 1000 === 0) m.upstream('b').seen = m.picks }
    expect(m.ups.has('a')).toBe(false)
    const back = m.upstream('a')
    m.adjust(krec, back, -10)
    expect(krec.entries.map((e) => [e.u.id, e.u === back || e.u === b])).toEqual([['b', true], ['a', true]])
    expect(m.theta(krec, back)).toBe(defaults.thetaStart - 10)
  })
})
