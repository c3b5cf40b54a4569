'use strict'

const { createLowestLatency } = require('../src/policies/lowest-latency')
const { upstreams, drive, shares } = require('./policy-driver')

// docs/experiments.md, C: emea ~325-375 ms, us ~350-430 ms, asia ~535-600 ms round trip
const regional = (id, nth) => ({ emea: 325, us: 350, asia: 535 })[id] + (nth * 37) % ({ emea: 50, us: 80, asia: 65 })[id]

describe('lowest-latency', () => {
  test('probes each worker once, then sends everything to the fastest region', () => {
    const picked = drive(createLowestLatency(), upstreams(['us', 'asia', 'emea']), { picks: 2000, latency: regional })
    expect(picked.slice(0, 3)).toEqual(['us', 'asia', 'emea'])
    const [us, asia, emea] = shares(picked, ['us', 'asia', 'emea'])
    expect(emea).toBeGreaterThan(0.95)
    expect(asia).toBeLessThan(0.001)
    expect(us).toBeLessThan(0.05)
  })

  test('ignores in-flight work: the fastest wins however busy it is', () => {
    const pool = upstreams(['a', { id: 'b', inflight: 0 }])
    const policy = createLowestLatency()
    policy.onEnd(pool[0], {}, { latencyMs: 10 })
    policy.onEnd(pool[1], {}, { latencyMs: 11 })
    pool[0].inflight = 500
    expect(policy.pick(pool, {})).toBe(pool[0])
  })

  test('moves when the winner slows down', () => {
    const latency = (id, nth) => (id === 'a' ? (nth < 10 ? 10 : 200) : 50)
    const picked = drive(createLowestLatency(), upstreams(['a', 'b']), { picks: 40, latency })
    expect(picked.slice(-10)).toEqual(Array(10).fill('b'))
  })
})
