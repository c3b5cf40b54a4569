'use strict'

const { hitRate, perBackend, specialization, cpuPer10k, cpuSeconds, balancerCounts } = require('../bench/reports/metrics')
const { startBalancer } = require('../src/balancer')
const { request, closedPort } = require('./helper')

const before = [
  { id: 'a', requests: 10, hits: 5, misses: 5, evictions: 1 },
  { id: 'b', requests: 4, hits: 0, misses: 4, evictions: 0 }
]
const after = [
  { id: 'a', requests: 110, hits: 95, misses: 15, evictions: 2 },
  { id: 'b', requests: 44, hits: 30, misses: 14, evictions: 5 }
]

describe('bench metrics', () => {
  test('the hit rate of a window comes from the deltas of hits and misses', () => {
    expect(hitRate(before, after)).toBeCloseTo((90 + 30) / (100 + 40))
    expect(hitRate(undefined, before)).toBeCloseTo(5 / 14)
    expect(hitRate(after, after)).toBeNaN()
  })

  test('per-backend rows carry requests, share, hit rate, evictions and client counts', () => {
    const rows = perBackend(before, after, { a: 99 })
    expect(rows[0]).toEqual({ id: 'a', requests: 100, share: 100 / 140, hits: 90, misses: 10, hitRate: 0.9, evictions: 1, clientRequests: 99 })
    expect(rows[1]).toMatchObject({ id: 'b', requests: 40, hitRate: 0.75, evictions: 5, clientRequests: 0 })
  })

  test('specialization is 1 when each key has one backend and 1/n for an even spread', () => {
    expect(specialization({ '/1': { a: 10 }, '/2': { b: 3 } })).toBe(1)
    expect(specialization({ '/1': { a: 5, b: 5, c: 5, d: 5 } })).toBe(0.25)
    expect(specialization({ '/1': { a: 9, b: 1 }, '/2': { a: 1, b: 1 } })).toBeCloseTo((0.9 + 0.5) / 2)
    expect(specialization({})).toBeNaN()
  })

  test('CPU per 10k requests sums user and system time', () => {
    const c0 = { user: 1e6, system: 0.5e6 }
    const c1 = { user: 3e6, system: 1.5e6 }
    expect(cpuSeconds(c0, c1)).toBe(3)
    expect(cpuPer10k(c0, c1, 20000)).toBe(1.5)
    expect(cpuPer10k(c0, c1, 0)).toBeNaN()
  })

  test('the balancer counts sum failed upstream attempts and requests no upstream could take', async () => {
    const port = await closedPort()
    // a policy that routes /page1.html only: anything else finds no upstream
    const policy = { name: 'page1-only', pick: (candidates, ctx) => ctx.key === '/page1.html' ? candidates[0] : undefined }
    const lb = await startBalancer({ backends: [{ id: 'a', url: `http://127.0.0.1:${port}` }], policy, port: 0 })
    try {
      expect((await request(`${lb.url}/page1.html`)).status).toBe(502) // connect refused
      expect((await request(`${lb.url}/page2.html`)).status).toBe(503) // no upstream
      expect(balancerCounts(lb.stats())).toEqual({
        requests: 2, retries: 0, failures: { connect: 1, timeout: 0, stream: 0 }, noUpstream: 1, errors: 2
      })
    } finally {
      await lb.close()
    }
    expect(balancerCounts(undefined)).toBeUndefined()
  })
})
