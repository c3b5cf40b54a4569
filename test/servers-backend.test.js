'use strict'

const fs = require('node:fs')
const path = require('node:path')
const http = require('node:http')
const { createBackend } = require('../servers/static-server')
const { createPageCache } = require('../servers/page-cache')
const { createLatencyProfile } = require('../servers/latency-profile')
const { createFaults } = require('../servers/faults')
const { createServedCounts } = require('../servers/served-counts')
const { statsAllowed, statsPath, newStatsToken } = require('../servers/stats-token')
const { rawRequest } = require('./helper')

const PUBLIC = path.join(__dirname, '..', 'public')
const open = []

/** Start a backend on an ephemeral port; closed in afterAll. */
async function start (options = {}) {
  const backend = createBackend({ root: PUBLIC, ...options })
  const { url, port } = await backend.listen(0, '127.0.0.1')
  open.push(backend)
  return { backend, url, port }
}

/** A `random` that returns the given values in order, then 0.99 forever. */
function scripted (...values) {
  return () => (values.length > 0 ? values.shift() : 0.99)
}

const get = (url, p, options) => rawRequest(url, p, options)

async function until (predicate, timeoutMs = 2000) {
  const end = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > end) throw new Error('condition not reached')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

afterAll(async () => {
  await Promise.all(open.map((b) => b.close()))
})

describe('responses', () => {
  test('a page carries X-Server and X-Cache: MISS first, then HIT, with the file as body', async () => {
    const { url } = await start({ id: 'zeta', missMs: 1 })
    const first = await get(url, '/page3.html')
    const second = await get(url, '/page3.html')
    const file = fs.readFileSync(path.join(PUBLIC, 'page3.html'))
    for (const res of [first, second]) {
      expect(res.status).toBe(200)
      expect(res.headers['x-server']).toBe('zeta')
      expect(res.headers['content-type']).toMatch(/text\/html/)
      expect(Number(res.headers['content-length'])).toBe(file.length)
      expect(res.body.equals(file)).toBe(true)
    }
    expect(first.headers['x-cache']).toBe('MISS')
    expect(second.headers['x-cache']).toBe('HIT')
    expect(second.headers.etag).toBe(first.headers.etag)
  })

  test('a missing page is a 404 MISS and is not cached', async () => {
    const { url, backend } = await start({ missMs: 0 })
    const res = await get(url, '/nope.html')
    expect(res.status).toBe(404)
    expect(res.headers['x-server']).toBe('a')
    expect(res.headers['x-cache']).toBe('MISS')
    expect(backend.stats()).toMatchObject({ requests: 1, misses: 1, hits: 0, cachedKeys: [] })
  })

  test('the query string is not part of the cache key', async () => {
    const { url } = await start({ missMs: 0 })
    expect((await get(url, '/page1.html?a=1')).headers['x-cache']).toBe('MISS')
    expect((await get(url, '/page1.html?b=2')).headers['x-cache']).toBe('HIT')
  })
})

describe('page cache', () => {
  test('hits, misses and evictions after a known sequence match /_stats (5 pages through a 4-page cache)', async () => {
    const { url, backend } = await start({ cachePages: 4, missMs: 0 })
    const sequence = [1, 2, 3, 4, 1, 5, 2, 1]
    const expected = ['MISS', 'MISS', 'MISS', 'MISS', 'HIT', 'MISS', 'MISS', 'HIT']
    const seen = []
    for (const n of sequence) seen.push((await get(url, `/page${n}.html`)).headers['x-cache'])
    expect(seen).toEqual(expected)
    const res = await get(url, '/_stats')
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toMatch(/application\/json/)
    const stats = JSON.parse(res.body)
    // page5 evicted page2 (least recently used), page2 then evicted page3.
    expect(stats).toMatchObject({
      id: 'a',
      requests: 8,
      hits: 2,
      misses: 6,
      evictions: 2,
      cachedKeys: ['/page1.html', '/page2.html', '/page5.html', '/page4.html'],
      inflight: 0,
      cachePages: 4
    })
    expect(stats.cachedBytes).toBe(['page1.html', 'page2.html', 'page5.html', 'page4.html']
      .reduce((sum, f) => sum + fs.statSync(path.join(PUBLIC, f)).size, 0))
    const { uptimeMs, ...programmatic } = backend.stats()
    const { uptimeMs: httpUptime, ...overHttp } = stats
    expect(overHttp).toEqual(programmatic) // /_stats itself is not counted
  })

  test('cacheBytes bounds the cache by bytes: the least recently used pages go until a new one fits', async () => {
    const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'polistes-bytes-'))
    try {
      const { generatePages } = require('../servers/pages')
      generatePages({ count: 4, dir, sizes: [40000, 30000, 30000, 90000] })
      // 100,000 bytes: page1 + page2 + page3 fit (100,000), page4 (90,000) pushes all three out
      const { url, backend } = await start({ root: dir, cacheBytes: 100000, cachePages: 1, missMs: 0 })
      const cache = async (p) => (await get(url, p)).headers['x-cache']
      expect([await cache('/page1.html'), await cache('/page2.html'), await cache('/page3.html')]).toEqual(['MISS', 'MISS', 'MISS'])
      expect(backend.stats()).toMatchObject({ cacheBytes: 100000, cachedBytes: 100000, evictions: 0 })
      expect(await cache('/page1.html')).toBe('HIT') // cachePages 1 is ignored: three pages are kept
      expect(await cache('/page4.html')).toBe('MISS')
      let s = backend.stats()
      expect(s.cachedKeys).toEqual(['/page4.html'])
      expect(s.cachedBytes).toBe(90000)
      expect(s.evictions).toBe(3)
      expect(await cache('/page2.html')).toBe('MISS') // 30,000 more: page4 (the LRU) goes
      s = backend.stats()
      expect(s.cachedKeys).toEqual(['/page2.html'])
      expect(s.evictions).toBe(4)
      // requests per page, counted by the backend, on demand
      const withKeys = JSON.parse((await get(url, '/_stats?keys=1')).body)
      expect(withKeys.served).toEqual({ '/page1.html': 2, '/page2.html': 2, '/page3.html': 1, '/page4.html': 1 })
      expect(JSON.parse((await get(url, '/_stats')).body).served).toBeUndefined()
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a page larger than a byte-bounded cache is served and not kept', async () => {
    const { url, backend } = await start({ cacheBytes: 2048, missMs: 0 })
    expect((await get(url, '/page1.html')).headers['x-cache']).toBe('MISS')
    expect((await get(url, '/page1.html')).headers['x-cache']).toBe('MISS')
    expect(backend.stats()).toMatchObject({ cachedKeys: [], cachedBytes: 0 })
  })

  test('cachePages 0 disables the cache: every request misses', async () => {
    const { url, backend } = await start({ cachePages: 0, missMs: 0 })
    for (let i = 0; i < 3; i++) expect((await get(url, '/page1.html')).headers['x-cache']).toBe('MISS')
    expect(backend.stats()).toMatchObject({ hits: 0, misses: 3, evictions: 0, cachedKeys: [] })
  })

  test('createPageCache counts an overwrite as no eviction and keeps most recent first', () => {
    const cache = createPageCache(2)
    const page = (s) => ({ body: Buffer.from(s), headers: {} })
    expect(cache.lookup('x')).toBeUndefined()
    cache.store('x', page('1'))
    cache.store('x', page('22'))
    cache.store('y', page('3'))
    expect(cache.lookup('x').body.toString()).toBe('22')
    cache.store('z', page('4'))
    expect(cache.stats()).toEqual({ hits: 1, misses: 1, evictions: 1, noStoreHits: 0, notStored: 0, cachedKeys: ['z', 'x'], cachedBytes: 3 })
  })

  test('createPageCache: a no-store lookup counts its hit or miss and leaves the recency as it was', () => {
    const cache = createPageCache(2)
    const page = (s) => ({ body: Buffer.from(s), headers: {} })
    expect(cache.lookup('x', true)).toBeUndefined()
    cache.store('x', page('1'))
    cache.store('y', page('2'))
    expect(cache.lookup('x', true).body.toString()).toBe('1')
    cache.store('z', page('3')) // x is still the least recently used
    expect(cache.stats()).toEqual({ hits: 1, misses: 1, evictions: 1, noStoreHits: 1, notStored: 1, cachedKeys: ['z', 'y'], cachedBytes: 2 })
  })
})

describe('Cache-Control: no-store requests', () => {
  const noStore = { headers: { 'cache-control': 'no-store' } }
  const xcache = async (url, p, options) => {
    const res = await get(url, p, options)
    expect(res.status).toBe(200)
    return res.headers['x-cache']
  }

  test('a no-store miss is served whole and not kept: the next plain request misses, then stores', async () => {
    const { url, backend } = await start({ cachePages: 4, missMs: 0 })
    const res = await get(url, '/page1.html', noStore)
    expect(res.status).toBe(200)
    expect(res.headers['x-cache']).toBe('MISS')
    expect(res.body.equals(fs.readFileSync(path.join(PUBLIC, 'page1.html')))).toBe(true)
    expect(backend.stats()).toMatchObject({ misses: 1, notStored: 1, cachedKeys: [] })
    expect(await xcache(url, '/page1.html')).toBe('MISS')
    expect(await xcache(url, '/page1.html')).toBe('HIT')
    expect(backend.stats()).toMatchObject({ hits: 1, misses: 2, noStoreHits: 0, notStored: 1, cachedKeys: ['/page1.html'] })
  })

  test('a no-store hit is a HIT that does not refresh recency: A, B, A (no-store), C evicts A, not B', async () => {
    const { url, backend } = await start({ cachePages: 2, missMs: 0 })
    expect([await xcache(url, '/page1.html'), await xcache(url, '/page2.html')]).toEqual(['MISS', 'MISS'])
    const hit = await get(url, '/page1.html', noStore)
    expect(hit.headers['x-cache']).toBe('HIT')
    expect(hit.body.equals(fs.readFileSync(path.join(PUBLIC, 'page1.html')))).toBe(true)
    expect(backend.stats().cachedKeys).toEqual(['/page2.html', '/page1.html'])
    expect(await xcache(url, '/page3.html')).toBe('MISS')
    expect(backend.stats()).toMatchObject({ evictions: 1, noStoreHits: 1, notStored: 0, cachedKeys: ['/page3.html', '/page2.html'] })
    expect(await xcache(url, '/page2.html')).toBe('HIT')
    expect(await xcache(url, '/page1.html')).toBe('MISS')
  })

  test('the same sequence with a plain request for A refreshes it: C evicts B', async () => {
    const { url, backend } = await start({ cachePages: 2, missMs: 0 })
    for (const p of ['/page1.html', '/page2.html', '/page1.html', '/page3.html']) await xcache(url, p)
    expect(backend.stats().cachedKeys).toEqual(['/page3.html', '/page1.html'])
  })

  test('no-store is a directive among others, in any case; a longer token is not it', async () => {
    const { url, backend } = await start({ cachePages: 4, missMs: 0 })
    expect(await xcache(url, '/page1.html', { headers: { 'cache-control': 'max-age=0, No-Store' } })).toBe('MISS')
    expect(await xcache(url, '/page2.html', { headers: { 'cache-control': 'max-age=0,NO-STORE ' } })).toBe('MISS')
    expect(await xcache(url, '/page3.html', { headers: { 'cache-control': 'no-storey' } })).toBe('MISS')
    expect(await xcache(url, '/page4.html', { headers: { 'cache-control': 'no-cache' } })).toBe('MISS')
    expect(backend.stats()).toMatchObject({ misses: 4, notStored: 2, cachedKeys: ['/page4.html', '/page3.html'] })
  })

  test('a no-store miss of a missing page is a 404 MISS, counted in notStored', async () => {
    const { url, backend } = await start({ missMs: 0 })
    const res = await get(url, '/nope.html', noStore)
    expect(res.status).toBe(404)
    expect(res.headers['x-cache']).toBe('MISS')
    expect(backend.stats()).toMatchObject({ misses: 1, notStored: 1, cachedKeys: [] })
  })
})

describe('miss cost', () => {
  test('a miss waits missMs; a hit does not pay it', async () => {
    const { url } = await start({ missMs: 250 })
    const miss = await get(url, '/page7.html')
    const hit = await get(url, '/page7.html')
    expect(miss.headers['x-cache']).toBe('MISS')
    expect(miss.ms).toBeGreaterThanOrEqual(240)
    expect(hit.headers['x-cache']).toBe('HIT')
    expect(hit.ms).toBeLessThan(miss.ms)
  })

  test('the default miss costs at least about 20 ms', async () => {
    const { url } = await start({})
    const miss = await get(url, '/page8.html')
    expect(miss.headers['x-cache']).toBe('MISS')
    expect(miss.ms).toBeGreaterThanOrEqual(18)
  })

  test('missCpuMs burns CPU on a miss', async () => {
    const { url } = await start({ missMs: 0, missCpuMs: 40 })
    const miss = await get(url, '/page9.html')
    expect(miss.ms).toBeGreaterThanOrEqual(38)
  })
})

describe('latency profile', () => {
  test('extra delays cycle through the profile, one per response', async () => {
    const { url, backend } = await start({ missMs: 0, latencyProfile: [0, 150] })
    const times = []
    const indexes = []
    for (let i = 0; i < 4; i++) {
      times.push((await get(url, '/page1.html')).ms)
      indexes.push(backend.stats().latencyIndex)
    }
    expect(indexes).toEqual([1, 0, 1, 0])
    expect(times[1]).toBeGreaterThanOrEqual(140)
    expect(times[3]).toBeGreaterThanOrEqual(140)
  })

  test('createLatencyProfile cycles and an empty profile adds nothing', () => {
    const p = createLatencyProfile([10, 15, 20, 400])
    expect(Array.from({ length: 6 }, () => p.next())).toEqual([10, 15, 20, 400, 10, 15])
    expect(createLatencyProfile([]).next()).toBe(0)
  })
})

describe('maxInflight', () => {
  test('beyond the limit the backend answers 503 with Retry-After: 1 at once', async () => {
    const { url, backend } = await start({ missMs: 400, maxInflight: 1 })
    const order = []
    const slow = get(url, '/page2.html').then((res) => { order.push('slow'); return res })
    await until(() => backend.stats().inflight === 1)
    const busy = await get(url, '/page3.html')
    order.push('busy')
    expect(busy.status).toBe(503)
    expect(busy.headers['retry-after']).toBe('1')
    expect(busy.headers['x-server']).toBe('a')
    expect((await slow).status).toBe(200)
    expect(order).toEqual(['busy', 'slow']) // the 503 did not wait for the slot
    await until(() => backend.stats().inflight === 0)
    expect(backend.stats()).toMatchObject({ requests: 2, rejected: 1, misses: 1, inflight: 0 })
  })
})

describe('faults', () => {
  test('errorRate answers 500', async () => {
    const { url, backend } = await start({ missMs: 0, faults: { errorRate: 0.5 }, random: scripted(0.1, 0.9) })
    expect((await get(url, '/page1.html')).status).toBe(500)
    expect((await get(url, '/page1.html')).status).toBe(200)
    expect(backend.stats().faults).toEqual({ errors: 1, hangs: 0, drops: 0 })
  })

  test('dropRate destroys the socket before any byte', async () => {
    const { url, backend } = await start({ missMs: 0, faults: { dropRate: 0.5 }, random: scripted(0.1) })
    await expect(get(url, '/page1.html')).rejects.toThrow(/socket hang up|ECONNRESET/)
    expect((await get(url, '/page1.html')).status).toBe(200)
    await until(() => backend.stats().inflight === 0)
    expect(backend.stats().faults).toEqual({ errors: 0, hangs: 0, drops: 1 })
  })

  test('hangRate never answers; a client abort releases the request', async () => {
    const { url, backend } = await start({ missMs: 0, faults: { hangRate: 0.5 }, random: scripted(0.1) })
    await expect(get(url, '/page1.html', { timeoutMs: 200 })).rejects.toThrow(/no answer/)
    await until(() => backend.stats().inflight === 0)
    expect((await get(url, '/page1.html')).status).toBe(200)
    expect(backend.stats().faults).toEqual({ errors: 0, hangs: 1, drops: 0 })
  })

  test('the counters add up: requests = hits + misses + rejected + faults', async () => {
    const { url, backend } = await start({ missMs: 0, faults: { errorRate: 0.2, dropRate: 0.2 }, random: scripted(0.1, 0.3, 0.5, 0.9, 0.1) })
    for (let i = 0; i < 5; i++) await get(url, '/page1.html').catch(() => {})
    const s = backend.stats()
    expect(s.requests).toBe(5)
    expect(s.hits + s.misses + s.rejected + s.faults.errors + s.faults.hangs + s.faults.drops).toBe(5)
    expect(s.faults).toEqual({ errors: 1, hangs: 0, drops: 2 })
  })

  test('createFaults draws nothing when every rate is 0 and stacks drop, hang, error on [0, 1)', () => {
    const random = jest.fn(() => 0)
    expect(createFaults({}, random).draw()).toBeNull()
    expect(random).not.toHaveBeenCalled()
    const f = createFaults({ dropRate: 0.1, hangRate: 0.1, errorRate: 0.1 }, scripted(0.05, 0.15, 0.25, 0.35))
    expect([f.draw(), f.draw(), f.draw(), f.draw()]).toEqual(['drop', 'hang', 'error', null])
  })
})

describe('close', () => {
  test('close() ends idle keep-alive sockets and destroys hung requests, then resolves', async () => {
    const backend = createBackend({ root: PUBLIC, missMs: 0, closeGraceMs: 10000, faults: { hangRate: 0.5 }, random: scripted(0.9, 0.1) })
    const { url } = await backend.listen(0, '127.0.0.1')
    const agent = new http.Agent({ keepAlive: true })
    try {
      expect((await get(url, '/page1.html', { agent })).status).toBe(200) // leaves an idle keep-alive socket
      const hung = get(url, '/page2.html', { timeoutMs: 5000 }).then(() => 'answered', (err) => err.message)
      await until(() => backend.stats().faults.hangs === 1)
      const started = performance.now()
      await backend.close()
      expect(performance.now() - started).toBeLessThan(5000) // far inside closeGraceMs: nothing waited for the grace
      expect(await hung).toMatch(/socket hang up|ECONNRESET/)
      expect(backend.server.listening).toBe(false)
      await backend.close() // idempotent
    } finally {
      agent.destroy()
    }
  })

  test('listen() on a taken port rejects with ERR_POLISTES_PORT_IN_USE', async () => {
    const { port } = await start({})
    const other = createBackend({ root: PUBLIC })
    await expect(other.listen(port, '127.0.0.1')).rejects.toMatchObject({ code: 'ERR_POLISTES_PORT_IN_USE', exitCode: 2 })
  })
})

describe('bounded per-page counts (issue 25)', () => {
  test('the served table keeps the cap most recently served paths, counts exact while they stay', () => {
    const served = createServedCounts(2)
    for (const p of ['/a', '/b', '/a', '/c', '/a', '/d']) served.count(p)
    // /b went when /c came (least recently served), /c when /d came
    expect(served.snapshot()).toEqual({ '/a': 3, '/d': 1 })
    expect({ size: served.size, dropped: served.dropped, cap: served.cap }).toEqual({ size: 2, dropped: 2, cap: 2 })
    served.count('/b') // back: starts over
    expect(served.snapshot()).toEqual({ '/d': 1, '/b': 1 })
    expect(() => createServedCounts(0)).toThrow(/cap must be a positive integer/)
  })

  test('over HTTP: 404s are never counted per path, and more distinct pages than statsKeys leave statsKeys paths', async () => {
    const { url } = await start({ statsKeys: 3, cachePages: 2, missMs: 0 })
    for (let i = 0; i < 200; i++) expect((await get(url, `/nope-${i}-${'x'.repeat(200)}.html`)).status).toBe(404)
    for (const n of [1, 2, 3, 4, 5, 6, 6]) expect((await get(url, `/page${n}.html?v=${n}`)).status).toBe(200)
    expect((await get(url, '/page6.html', { method: 'HEAD' })).status).toBe(200) // a HIT: counted
    const stats = JSON.parse((await get(url, '/_stats?keys=1')).body)
    expect(stats.served).toEqual({ '/page4.html': 1, '/page5.html': 1, '/page6.html': 3 })
    expect(stats).toMatchObject({ statsKeys: 3, servedKeys: 3, servedDropped: 3, requests: 208, misses: 206, hits: 2 })
  })
})

describe('the stats token', () => {
  const token = newStatsToken()

  test('statsAllowed: no token, anyone; with one, only the query parameter token equal to it', () => {
    expect(token).toMatch(/^[0-9a-f]{32}$/)
    expect(statsAllowed('/_stats', null)).toBe(true)
    expect(statsAllowed('/_stats', token)).toBe(false)
    expect(statsAllowed(`/_stats?token=${token}`, token)).toBe(true)
    expect(statsAllowed(`/_stats?keys=1&token=${token}`, token)).toBe(true)
    expect(statsAllowed(`/_stats?token=${token}x`, token)).toBe(false)
    expect(statsAllowed(`/_stats?token=${token.slice(1)}`, token)).toBe(false)
    expect(statsAllowed(`/_stats?token=${encodeURIComponent('\u00e9'.repeat(32))}`, token)).toBe(false) // same length in characters, not in bytes
    expect(statsPath(null)).toBe('/_stats')
    expect(statsPath(token, { keys: true })).toBe(`/_stats?token=${token}&keys=1`)
  })

  test('a backend with a token answers /_stats 404 without it (any method, any other token), 200 with it', async () => {
    const { url, backend } = await start({ statsToken: token, missMs: 0 })
    expect((await get(url, '/page1.html')).status).toBe(200)
    for (const target of ['/_stats', '/_stats?keys=1', '/_stats?token=', `/_stats?token=${token.toUpperCase()}`, '/_%73tats']) {
      const res = await get(url, target)
      expect([target, res.status]).toEqual([target, 404])
      expect(res.body.toString()).toBe('not found\n')
    }
    expect((await get(url, '/_stats', { method: 'HEAD' })).status).toBe(404)
    expect((await get(url, '/_stats', { method: 'OPTIONS' })).status).toBe(404)
    const res = await get(url, statsPath(token))
    expect(res.status).toBe(200)
    const stats = JSON.parse(res.body)
    expect(stats).toMatchObject({ requests: 1, guarded: 7 })
    expect(stats.served).toBeUndefined()
    expect(JSON.parse((await get(url, statsPath(token, { keys: true }))).body).served).toEqual({ '/page1.html': 1 })
    expect(backend.stats().guarded).toBe(7)
  })
})

describe('options', () => {
  test.each([
    [{ cachePages: -1 }, /cachePages/],
    [{ cachePages: 1.5 }, /cachePages/],
    [{ cacheBytes: -1 }, /cacheBytes must be an integer >= 0, got -1/],
    [{ cacheBytes: '1m' }, /cacheBytes must be an integer/],
    [{ missMs: -5 }, /missMs/],
    [{ latencyProfile: [10, 'x'] }, /latencyProfile\[1\]/],
    [{ latencyProfile: '10,20' }, /latencyProfile/],
    [{ maxInflight: -1 }, /maxInflight/],
    [{ faults: { errorRate: 1.5 } }, /errorRate/],
    [{ faults: { hangRate: -0.1 } }, /hangRate/],
    [{ root: '/definitely/not/here' }, /root/],
    [{ id: 'a b' }, /id/],
    [{ statsKeys: 0 }, /statsKeys must be an integer >= 1/],
    [{ statsToken: 'short' }, /statsToken must be null or 16 to 256/],
    [{ statsToken: 'a b c d e f g h i j' }, /statsToken/]
  ])('createBackend(%j) throws ERR_POLISTES_BAD_OPTION', (options, message) => {
    expect(() => createBackend({ root: PUBLIC, ...options })).toThrow(message)
    try { createBackend({ root: PUBLIC, ...options }) } catch (err) { expect(err.code).toBe('ERR_POLISTES_BAD_OPTION') }
  })
})
