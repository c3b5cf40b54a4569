'use strict'

const { createTelemetry, LATENCY_BUCKETS_MS, NO_UPSTREAM, OTHER_PAGE } = require('../src/observe/telemetry')

/** A telemetry with a hand-moved clock (ms), starting at t = 1,000,000 s. */
function setup (options = {}) {
  const clock = { ms: 1e9 }
  const t = createTelemetry({ now: () => clock.ms, ...options })
  return { t, clock, tick: (s = 1) => { clock.ms += s * 1000 } }
}

const sum = (xs) => xs.reduce((x, y) => x + y, 0)

describe('telemetry: counters since start', () => {
  test('counts responses by status class, cache hits and misses, and bytes per upstream', () => {
    const { t } = setup()
    t.record({ upstream: 'a', key: '/p1', status: 200, ms: 1, cache: 'HIT', bytes: 100 })
    t.record({ upstream: 'a', key: '/p1', status: 304, ms: 1, cache: 'MISS', bytes: 50 })
    t.record({ upstream: 'b', key: '/p2', status: 502, ms: 3, cache: undefined, bytes: 10 })
    t.record({ upstream: null, key: '/p3', status: 503, ms: 0.1, cache: undefined, bytes: 5 })
    t.record({ upstream: 'b', key: '/p2', status: 0, ms: 1, cache: undefined, bytes: NaN })
    const a = t.upstream('a')
    expect([...a.statuses]).toEqual([0, 1, 1, 0, 0, 0])
    expect([a.hits, a.misses, a.bytes, a.count]).toEqual([1, 1, 150, 2])
    const b = t.upstream('b')
    expect([...b.statuses]).toEqual([0, 0, 0, 0, 1, 1])
    expect(b.bytes).toBe(10)
    expect([...t.upstream(NO_UPSTREAM).statuses]).toEqual([0, 0, 0, 0, 1, 0])
    expect(t.total).toBe(5)
  })

  test('the latency histogram separates a sub-ms hit from a 20 ms+ miss', () => {
    const { t } = setup()
    t.record({ upstream: 'a', key: '/p', status: 200, ms: 0.3, cache: 'HIT', bytes: 0 })
    t.record({ upstream: 'a', key: '/p', status: 200, ms: 22, cache: 'MISS', bytes: 0 })
    t.record({ upstream: 'a', key: '/p', status: 200, ms: 20000, cache: 'MISS', bytes: 0 })
    const buckets = t.upstream('a').buckets
    const le = (ms) => LATENCY_BUCKETS_MS.indexOf(ms)
    expect(buckets[le(0.5)]).toBe(1)
    expect(buckets[le(30)]).toBe(1)
    expect(buckets[LATENCY_BUCKETS_MS.length]).toBe(1) // +Inf
    expect(buckets.reduce((x, y) => x + y, 0)).toBe(3)
    expect(t.upstream('a').latencySumMs).toBeCloseTo(20022.3)
  })

  test('upstream() registers a member before it serves, in order of first sight', () => {
    const { t } = setup()
    t.upstream('z')
    t.record({ upstream: 'a', key: '/p', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    expect(t.upstreams().map((u) => u.id)).toEqual(['z', 'a'])
    expect(t.upstream('z').count).toBe(0)
  })

  test('a retired upstream keeps its record for one window, then it goes; one back in time keeps it', () => {
    const { t, tick } = setup({ windowS: 3 })
    for (const id of ['a', 'b', 'c']) t.record({ upstream: id, key: '/p', status: 200, ms: 1, cache: 'HIT', bytes: 10 })
    t.retire('b')
    t.retire('c')
    t.retire('nobody') // never seen: nothing to retire
    tick(2)
    t.tick()
    expect(t.upstreams().map((u) => u.id)).toEqual(['a', 'b', 'c'])
    t.upstream('c') // back in the pool before its window passed
    tick(1)
    t.record({ upstream: 'a', key: '/p', status: 200, ms: 1, cache: 'HIT', bytes: 10 })
    expect(t.upstreams().map((u) => [u.id, u.index])).toEqual([['a', 0], ['c', 1]])
    expect(t.upstream('c').count).toBe(1) // kept its history
    tick(10)
    t.tick()
    expect(t.upstreams().map((u) => u.id)).toEqual(['a', 'c'])
    expect(t.upstream('b').count).toBe(0) // seen again: a new record, a new column at the end
    expect(t.upstreams().map((u) => u.id)).toEqual(['a', 'c', 'b'])
  })

  test('bad options throw', () => {
    expect(() => createTelemetry({ windowS: 0 })).toThrow(/windowS/)
    expect(() => createTelemetry({ maxPages: 1.5 })).toThrow(/maxPages/)
    expect(() => createTelemetry({ halfLifeS: 0 })).toThrow(/halfLifeS/)
  })
})

describe('telemetry: per-second series', () => {
  test('completed seconds only, with request rate and hit rate per upstream and overall', () => {
    const { t, tick } = setup()
    for (let i = 0; i < 3; i++) t.record({ upstream: 'a', key: '/p', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    t.record({ upstream: 'b', key: '/p', status: 200, ms: 1, cache: 'MISS', bytes: 0 })
    expect(t.series().t).toEqual([]) // the current second is still filling
    tick()
    t.record({ upstream: 'b', key: '/p', status: 200, ms: 1, cache: undefined, bytes: 0 })
    tick()
    const s = t.series()
    expect(s.t).toEqual([1e6, 1e6 + 1])
    expect(s.rps).toEqual([4, 1])
    expect(s.hitRate).toEqual([0.75, null])
    expect(s.upstreams.map((u) => u.id)).toEqual(['a', 'b'])
    expect(s.upstreams[0].rps).toEqual([3, 0])
    expect(s.upstreams[1].hitRate).toEqual([0, null])
    expect(t.series(1e6 + 1).t).toEqual([1e6 + 1])
  })

  test('p50 and p99 per second within the 2^(1/8) bucket width (about 9 %)', () => {
    const { t, tick } = setup()
    for (let i = 0; i < 990; i++) t.record({ upstream: 'a', key: '/p', status: 200, ms: 0.5, cache: 'HIT', bytes: 0 })
    for (let i = 0; i < 10; i++) t.record({ upstream: 'a', key: '/p', status: 200, ms: 25, cache: 'MISS', bytes: 0 })
    tick()
    const s = t.series()
    expect(s.p50[0]).toBeGreaterThan(0.5 / 1.1)
    expect(s.p50[0]).toBeLessThan(0.5 * 1.1)
    expect(s.p99[0]).toBeGreaterThan(0.5 / 1.1)
    expect(s.p99[0]).toBeLessThan(25 * 1.1)
    const [p50, p995] = t.recentQuantiles(10, [0.5, 0.995])
    expect(p50).toBeCloseTo(s.p50[0], 6)
    expect(p995).toBeGreaterThan(25 / 1.1)
    expect(p995).toBeLessThan(25 * 1.1)
  })

  test('a second without requests has null percentiles; the window forgets old seconds', () => {
    const { t, tick } = setup({ windowS: 5 })
    t.record({ upstream: 'a', key: '/p', status: 200, ms: 2, cache: 'HIT', bytes: 0 })
    tick(2)
    expect(t.series().p50).toEqual([expect.any(Number), null])
    tick(10)
    const s = t.series()
    expect(s.t).toHaveLength(4) // windowS - 1 completed seconds
    expect(s.rps).toEqual([0, 0, 0, 0])
    expect(t.recent(60).get('a')).toEqual({ rps: 0, hitRate: null })
  })

  test('recent() gives the request rate and hit ratio per upstream over the last seconds', () => {
    const { t, tick } = setup()
    for (let s = 0; s < 4; s++) {
      t.record({ upstream: 'a', key: '/p', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
      t.record({ upstream: 'a', key: '/p', status: 200, ms: 1, cache: s === 0 ? 'MISS' : 'HIT', bytes: 0 })
      tick()
    }
    expect(t.recent(2).get('a')).toEqual({ rps: 2, hitRate: 1 })
    expect(t.recent(4).get('a')).toEqual({ rps: 2, hitRate: 7 / 8 })
  })
})

describe('telemetry: pages x upstreams heat map', () => {
  test('share of each page\'s requests per upstream, pages in natural order', () => {
    const { t } = setup()
    for (let i = 0; i < 3; i++) t.record({ upstream: 'a', key: '/page10.html', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    t.record({ upstream: 'b', key: '/page10.html', status: 200, ms: 1, cache: 'MISS', bytes: 0 })
    t.record({ upstream: 'b', key: '/page2.html', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    const h = t.heatmap(['a', 'b', 'c'])
    expect(h.pages).toEqual(['/page2.html', '/page10.html'])
    expect(h.upstreams).toEqual(['a', 'b', 'c'])
    expect(h.share).toEqual([[0, 1, 0], [0.75, 0.25, 0]])
  })

  test('counts decay with the half-life, so a page moving to another upstream shows in seconds', () => {
    const { t, tick } = setup({ halfLifeS: 2 })
    for (let i = 0; i < 100; i++) t.record({ upstream: 'a', key: '/p', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    tick(2)
    expect(t.heatmap().counts[0][0]).toBeCloseTo(50, 6)
    for (let i = 0; i < 50; i++) t.record({ upstream: 'b', key: '/p', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    tick(4)
    for (let i = 0; i < 50; i++) t.record({ upstream: 'b', key: '/p', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    // a: 100 halved three times = 12.5; b: 50 halved twice + 50 = 62.5
    const share = t.heatmap().share[0]
    expect(share[0]).toBeCloseTo(12.5 / 75, 3)
    expect(share[1]).toBeCloseTo(62.5 / 75, 3)
  })

  test('at most maxPages rows; later keys share the (other) row, shown last', () => {
    const { t } = setup({ maxPages: 2 })
    for (const key of ['/b', '/a', '/c', '/d']) t.record({ upstream: 'u', key, status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    const h = t.heatmap()
    expect(h.pages).toEqual(['/a', '/b', OTHER_PAGE])
    expect(h.counts.map((row) => row[0])).toEqual([1, 1, 2])
  })

  test('a key that becomes hot after maxPages others were seen gets its own row', () => {
    const { t } = setup()
    for (let i = 0; i < 100; i++) t.record({ upstream: 'a', key: `/cold${i}`, status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    for (let i = 0; i < 10; i++) t.record({ upstream: i % 2 ? 'a' : 'b', key: '/late', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    const h = t.heatmap()
    expect(h.pages).toHaveLength(65)
    expect(h.pages[64]).toBe(OTHER_PAGE)
    const late = h.pages.indexOf('/late')
    expect(late).toBeGreaterThanOrEqual(0)
    // its first request went to (other), the next ones to its row: both upstreams show there
    expect(h.counts[late][0]).toBeGreaterThan(0)
    expect(h.counts[late][1]).toBeGreaterThan(0)
    expect(sum(h.counts.flat())).toBe(110)
  })

  test('rows plus (other) hold every request, per upstream, while rows change hands', () => {
    const { t } = setup({ maxPages: 8 })
    const served = { a: 0, b: 0, c: 0 }
    let n = 0
    for (let round = 0; round < 40; round++) {
      // a hot set that moves every 10 rounds, and a tail of keys seen once
      for (let k = 0; k < 12; k++) {
        const up = ['a', 'b', 'c'][(k + round) % 3]
        t.record({ upstream: up, key: `/hot${k + 8 * Math.floor(round / 10)}`, status: 200, ms: 1, cache: 'HIT', bytes: 0 })
        served[up]++
        n++
      }
      t.record({ upstream: 'c', key: `/tail${round}`, status: 200, ms: 1, cache: 'MISS', bytes: 0 })
      served.c++
      n++
    }
    expect(t.hotPages.replacements).toBeGreaterThan(0)
    const h = t.heatmap()
    expect(h.pages).toHaveLength(9)
    const column = (j) => sum(h.counts.map((row) => row[j]))
    expect([column(0), column(1), column(2)]).toEqual([served.a, served.b, served.c])
    expect(sum(h.counts.flat())).toBe(n)
  })

  test('memory stays bounded after 100,000 distinct keys; a steadily hot key keeps its row', () => {
    const { t } = setup()
    const candidates = t.hotPages.candidates.length
    for (let i = 0; i < 100000; i++) {
      t.record({ upstream: 'a', key: `/k${i}`, status: 200, ms: 1, cache: 'HIT', bytes: 0 })
      if (i % 10 === 0) t.record({ upstream: 'b', key: '/hot', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    }
    expect(t.hotPages.byKey.size).toBe(64)
    expect(t.hotPages.names).toHaveLength(64)
    expect(t.hotPages.candidates).toHaveLength(candidates)
    expect(t.upstream('a').pages).toHaveLength(65)
    const h = t.heatmap()
    expect(h.pages).toHaveLength(65)
    expect(h.counts[h.pages.indexOf('/hot')]).toEqual([0, 10000])
    expect(sum(h.counts.flat())).toBe(110000)
  })

  test('a hot key that cooled down is replaced by a newly hot one; its counts move to (other)', () => {
    const { t, tick } = setup({ maxPages: 2, halfLifeS: 5 })
    for (let i = 0; i < 120; i++) t.record({ upstream: 'a', key: '/old', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    for (let i = 0; i < 200; i++) t.record({ upstream: 'b', key: '/steady', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    tick(30) // halved six times: /old 1.875, /steady 3.125
    for (let i = 0; i < 5; i++) t.record({ upstream: 'a', key: '/new', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    const h = t.heatmap()
    expect(h.pages).toEqual(['/new', '/steady', OTHER_PAGE])
    // /new's first two requests are admission candidates (counted in (other)): 2 is more than
    // /old's 1.875 but not 1.25 times more; at the third it takes /old's row, whose counts join (other)
    expect(h.counts.slice(0, 2)).toEqual([[3, 0], [0, 3.125]])
    expect(h.counts[2][0]).toBeCloseTo(2 + 1.875, 2)
    expect(h.counts[2][1]).toBe(0)
    expect(t.hotPages.replacements).toBe(1)
  })

  test('a tail of keys seen once does not push out rows hotter than its admission counters', () => {
    const { t } = setup({ maxPages: 4 })
    for (const key of ['/p1', '/p2', '/p3', '/p4']) for (let i = 0; i < 50; i++) t.record({ upstream: 'a', key, status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    for (let i = 0; i < 1000; i++) t.record({ upstream: 'a', key: `/tail${i}`, status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    expect(t.hotPages.replacements).toBe(0)
    expect(t.heatmap().pages).toEqual(['/p1', '/p2', '/p3', '/p4', OTHER_PAGE])
  })

  test('the row table stays consistent: lightest row on top, key <-> row both ways (long keys too)', () => {
    const { t, tick } = setup({ maxPages: 16 })
    const hot = t.hotPages
    let seed = 7
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
    const long = '/' + 'x'.repeat(200)
    // the same checks after every record, in plain code (165,000 expect() calls took ~10 CPU-s);
    // the first broken one is the failure, with the record it followed
    let broken = null
    for (let i = 0; i < 5000 && broken === null; i++) {
      const k = Math.floor(Math.pow(random(), 3) * 400) // skewed towards small k
      t.record({ upstream: 'a', key: k % 5 === 0 ? `${long}/${k}` : `/p${k}`, status: 200, ms: 1, cache: 'HIT', bytes: 0 })
      if (i % 500 === 499) tick()
      const least = Math.min(...hot.weight.subarray(0, hot.names.length))
      if (hot.weight[hot.heap[0]] !== least) broken = { record: i, top: hot.weight[hot.heap[0]], least }
      for (let j = 0; j < hot.names.length && broken === null; j++) {
        if (hot.byKey.get(hot.names[j]) !== j) broken = { record: i, row: j, name: hot.names[j], byKey: hot.byKey.get(hot.names[j]) }
        else if (hot.heap[hot.place[j]] !== j) broken = { record: i, row: j, place: hot.place[j], heapAt: hot.heap[hot.place[j]] }
      }
    }
    expect(broken).toBeNull()
    expect(hot.byKey.size).toBe(16)
    expect(hot.replacements).toBeGreaterThan(0)
  })

  test('the no-upstream record is not a column', () => {
    const { t } = setup()
    t.record({ upstream: null, key: '/p', status: 503, ms: 0.1, cache: undefined, bytes: 0 })
    t.record({ upstream: 'a', key: '/p', status: 200, ms: 1, cache: 'HIT', bytes: 0 })
    expect(t.heatmap().upstreams).toEqual(['a'])
    expect(t.series().upstreams.map((u) => u.id)).toEqual(['a'])
  })
})
