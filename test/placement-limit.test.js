'use strict'

const { placementLimit } = require('../bench/model/placement-limit')
const { physicalLimit } = require('../bench/model/open-loop')

const ISSUE = { upstreams: 7, workers: 4, cacheSize: 100, keys: 2000, popularity: { zipf: 1 }, hitMs: 5, missMs: 20 }

describe('placement limit (an upper bound on any static placement)', () => {
  test('a hand-computed fleet where the caches, not the workers, bind: 650 req/s against the physical limit 2,000', () => {
    // 2 pages, uniform; backend 0: 1 worker, room for both pages; backend 1: 9 workers, no cache.
    // Only backend 0 can hit: at most 1000 / 5 = 200 hits/s; backend 1 serves misses: 9 x 1000 / 20 = 450/s
    const fleet = { upstreams: 2, workers: [1, 9], cacheSize: [2, 0], keys: 2, popularity: 'uniform', hitMs: 5, missMs: 20 }
    const l = placementLimit(fleet)
    expect(l.rate).toBeCloseTo(650, 6)
    expect(l.hitRate).toBeCloseTo(200 / 650, 6)
    expect(l.achieved).toBeCloseTo(650, 6) // and the greedy placement reaches it
    expect(physicalLimit(fleet).rate).toBeCloseTo(2000, 6) // which assumed every request a hit
  })

  test('a page hotter than one backend can serve needs a replica: the bound counts its share, the greedy its slots', () => {
    // one page, two backends of one worker, one slot each: 2 workers x 1000 / 5 ms, the page on both
    const l = placementLimit({ upstreams: 2, workers: 1, cacheSize: 1, keys: 1, popularity: 'uniform', hitMs: 5, missMs: 20 })
    expect(l.rate).toBeCloseTo(400, 6)
    expect(l.achieved).toBeCloseTo(400, 6)
  })

  test('equal workers: the physical limit of the issue fleet, on Zipf(1), (0.8), (1.2) and 20,000 pages', () => {
    for (const change of [{}, { popularity: { zipf: 0.8 } }, { popularity: { zipf: 1.2 } }, { keys: 20000 }]) {
      const fleet = { ...ISSUE, ...change }
      const l = placementLimit(fleet)
      const p = physicalLimit(fleet)
      expect(l.rate).toBeLessThanOrEqual(p.rate * (1 + 1e-9))
      expect(l.rate / p.rate).toBeGreaterThan(1 - 1e-6)
      expect(l.achieved / l.rate).toBeGreaterThan(0.999)
      expect(l.achieved).toBeLessThanOrEqual(l.rate * (1 + 1e-9))
    }
  })

  test('workers 2-8: no ceiling below the physical limit, 5,054 req/s, and an integral placement reaches it', () => {
    const fleet = { ...ISSUE, workers: [2, 3, 4, 5, 6, 7, 8] }
    const l = placementLimit(fleet)
    expect(Math.round(l.rate)).toBe(5054)
    expect(l.rate / physicalLimit(fleet).rate).toBeGreaterThan(1 - 1e-6)
    expect(l.achieved / l.rate).toBeGreaterThan(0.999)
    expect(l.achievedHitRate).toBeCloseTo(0.872, 3)
  })

  test('bad input: a clear error', () => {
    expect(() => placementLimit({ hitMs: 30, missMs: 20 })).toThrow(/hitMs <= missMs/)
    expect(() => placementLimit({ workers: [4, 0, 4, 4, 4, 4, 4] })).toThrow(/workers must be > 0/)
    expect(() => placementLimit({ upstreams: 21 })).toThrow(/at most 20 backends/)
  })
})
