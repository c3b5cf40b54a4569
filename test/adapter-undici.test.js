'use strict'

const { request, fetch } = require('undici')
const { startFleet } = require('../servers/fleet')
const { PolicyDispatcher, replyFromOptions } = require('../src/adapters/undici')
const { createPolicy } = require('../src/policies')
const { mulberry32 } = require('../src/common/prng')
const { closedPort } = require('./helper')
const { hitRates, expectSpecialized, sharedFleet } = require('./adapter-helper')

const PAGES = 25

/** `n` GETs of uniformly random pages, `concurrency` at a time; the X-Cache of each answer. */
async function drive (dispatcher, n, { concurrency = 8, seed = 1 } = {}) {
  const random = mulberry32(seed)
  const caches = []
  let left = n
  async function worker () {
    while (left-- > 0) {
      const page = 1 + Math.floor(random() * PAGES)
      const res = await request(`http://polistes.test/page${page}.html`, { dispatcher })
      await res.body.dump()
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`)
      caches.push(res.headers['x-cache'])
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return caches.filter((c) => c === 'HIT').length / caches.length
}

describe('polistes/undici: a Dispatcher whose upstream choice is a policy', () => {
  const fleet = sharedFleet()

  test('wasp learns from the X-Cache it reports by itself: pages specialize, median hit rate of 3 runs >= 0.95 after warm-up', async () => {
    const dispatchers = []
    const rates = await hitRates(async (k) => {
      const dispatcher = new PolicyDispatcher(fleet.backends.map((b) => b.url), { random: mulberry32(7 + k) })
      dispatchers.push(dispatcher)
      return { url: 'http://polistes.test', dispatcher, close: () => dispatcher.close() }
    })
    expectSpecialized(rates)
    for (const d of dispatchers) {
      expect(d.policy.snapshot().keys).toBe(PAGES)
      expect(d.members.every((m) => m.inflight === 0)).toBe(true)
    }
  }, 120000)

  test('with round-robin the same load spreads every page over every cache (the policy is what decides)', async () => {
    const dispatcher = new PolicyDispatcher(fleet.backends.map((b) => b.url), { policy: 'round-robin' })
    try {
      // each of the 7 caches (4 pages) sees every one of the 25 pages: a hit rate near 4/25 = 0.16;
      // 200 to warm them (~29 each), 300 measured (standard deviation ~0.02, the bar 16 of them away)
      await drive(dispatcher, 200)
      expect(await drive(dispatcher, 300, { seed: 2 })).toBeLessThan(0.5)
    } finally {
      await dispatcher.close()
    }
  })

  test('undici fetch takes it as its dispatcher; the policy sees start and end of each request with status and cache', async () => {
    const policy = createPolicy('round-robin', {}, {})
    const ends = []
    policy.onEnd = (u, ctx, outcome) => ends.push({ id: u.id, key: ctx.key, ...outcome })
    const dispatcher = new PolicyDispatcher(fleet.backends.map((b) => b.url), { policy })
    try {
      const res = await fetch('http://polistes.test/page3.html?x=1', { dispatcher })
      expect(res.status).toBe(200)
      expect((await res.text()).length).toBeGreaterThan(1000)
      expect(ends).toHaveLength(1)
      // HIT or MISS as the cache answered: the fleet is shared with the tests before, and its LRU
      // holds page3 after their random pages about one time in six
      expect(['HIT', 'MISS']).toContain(res.headers.get('x-cache'))
      expect(ends[0]).toMatchObject({ key: '/page3.html', statusCode: 200, cache: res.headers.get('x-cache') })
      expect(ends[0].latencyMs).toBeGreaterThan(0)
    } finally {
      await dispatcher.close()
    }
  })

  test('an upstream that refuses connections: the request fails, the policy gets the error, nothing stays in flight', async () => {
    const port = await closedPort()
    const policy = createPolicy('round-robin', {}, {})
    const ends = []
    policy.onEnd = (u, ctx, outcome) => ends.push(outcome)
    const dispatcher = new PolicyDispatcher([`http://127.0.0.1:${port}`], { policy })
    try {
      await expect(request('http://polistes.test/page1.html', { dispatcher })).rejects.toThrow(/ECONNREFUSED/)
      expect(ends).toHaveLength(1)
      expect(ends[0].error).toMatch(/ECONNREFUSED/)
      expect(dispatcher.members[0].inflight).toBe(0)
    } finally {
      await dispatcher.destroy()
    }
  })

  test('a request to an upstream that refuses goes to another one; the refuser is left out for failTimeoutMs (both handler interfaces)', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}`
    const live = fleet.backends[0].url
    const policy = createPolicy('round-robin', {}, {})
    const ends = []
    policy.onEnd = (u, ctx, outcome) => ends.push({ id: u.id, ...outcome })
    let t = 0
    const dispatcher = new PolicyDispatcher([dead, live], { policy, now: () => t, failTimeoutMs: 1000 })
    try {
      // round-robin picks the dead upstream first: the request is answered by the live one all the same
      const first = await request('http://polistes.test/page1.html', { dispatcher })
      expect(first.statusCode).toBe(200)
      expect(first.headers['x-server']).toBe(fleet.backends[0].id)
      await first.body.dump()
      expect(ends.map((e) => [e.id, e.statusCode, Boolean(e.error)])).toEqual([[new URL(dead).origin, undefined, true], [new URL(live).origin, 200, false]])
      // while it is left out, round-robin has only the live one (fetch: the controller interface)
      for (let i = 0; i < 3; i++) {
        const res = await fetch('http://polistes.test/page2.html', { dispatcher })
        expect(res.status).toBe(200)
        await res.arrayBuffer()
      }
      expect(ends.slice(2).map((e) => e.id)).toEqual(Array(3).fill(new URL(live).origin))
      // after failTimeoutMs it is offered again, fails, and the request is retried once more
      t = 1001
      const again = await fetch('http://polistes.test/page3.html', { dispatcher })
      expect(again.status).toBe(200)
      await again.arrayBuffer()
      expect(ends.slice(5).map((e) => [e.id, e.statusCode])).toEqual([[new URL(dead).origin, undefined], [new URL(live).origin, 200]])
      expect(dispatcher.members.map((m) => m.inflight)).toEqual([0, 0])
    } finally {
      await dispatcher.destroy()
    }
  })

  test('retries: 0 gives the error to the caller; a streamed body is never sent twice', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}`
    const live = fleet.backends[0].url
    const none = new PolicyDispatcher([dead, live], { policy: 'round-robin', retries: 0 })
    const streamed = new PolicyDispatcher([dead, live], { policy: 'round-robin' })
    try {
      await expect(request('http://polistes.test/page1.html', { dispatcher: none })).rejects.toThrow(/ECONNREFUSED/)
      const { Readable } = require('node:stream')
      await expect(request('http://polistes.test/page1.html', { dispatcher: streamed, method: 'PUT', body: Readable.from(['x']) })).rejects.toThrow(/ECONNREFUSED/)
      expect(() => new PolicyDispatcher([live], { retries: -1 })).toThrow(/retries must be an integer/)
      expect(() => new PolicyDispatcher([live], { maxFails: 0 })).toThrow(/maxFails must be an integer/)
    } finally {
      await none.destroy()
      await streamed.destroy()
    }
  })

  test('removeUpstream takes a member out of the choice; a dispatcher with none left answers with an error', async () => {
    const urls = fleet.backends.slice(0, 2).map((b) => b.url)
    const dispatcher = new PolicyDispatcher(urls, { policy: 'round-robin' })
    try {
      dispatcher.removeUpstream(urls[0])
      expect(dispatcher.upstreams).toEqual([new URL(urls[1]).origin])
      for (let i = 0; i < 4; i++) {
        const res = await request('http://polistes.test/page1.html', { dispatcher })
        await res.body.dump()
        expect(res.headers['x-server']).toBe(fleet.backends[1].id)
      }
      dispatcher.removeUpstream(urls[1])
      await expect(request('http://polistes.test/page1.html', { dispatcher })).rejects.toThrow(/no upstream available/)
    } finally {
      await dispatcher.close()
    }
  })

  test.each([
    [[], /at least one upstream/],
    [['not a url'], /http\(s\) URL/],
    [['ftp://127.0.0.1:21'], /http\(s\) URL/]
  ])('refuses upstreams %j with a clear error', (upstreams, message) => {
    expect(() => new PolicyDispatcher(upstreams)).toThrow(message)
  })

  test('refuses an unknown policy name', () => {
    expect(() => new PolicyDispatcher(['http://127.0.0.1:1'], { policy: 'telepathy' })).toThrow(/telepathy/)
  })
})

describe('polistes/undici as the dispatcher of @fastify/reply-from', () => {
  test('reply-from given { undici: dispatcher } alone answers a path 500: it makes the URL before the dispatcher (why replyFromOptions gives a base)', async () => {
    const Fastify = require('fastify')
    const fleet = await startFleet({ count: 1, basePort: 0, host: '127.0.0.1' })
    const dispatcher = new PolicyDispatcher(fleet.backends.map((b) => b.url))
    const app = Fastify()
    await app.register(require('@fastify/reply-from'), { undici: dispatcher })
    app.get('/*', (request, reply) => reply.from(request.url))
    const url = await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const res = await request(`${url}/page5.html`)
      expect(res.statusCode).toBe(500)
      expect(await res.body.text()).toMatch(/ERR_INVALID_URL/)
    } finally {
      await app.close()
      await dispatcher.close()
      await fleet.close()
    }
  })

  test('replyFromOptions merges reply-from options, keeps the dispatcher, and refuses anything else', () => {
    const dispatcher = new PolicyDispatcher(['http://127.0.0.1:9101/x', 'http://127.0.0.1:9102'])
    expect(replyFromOptions(dispatcher, { retryMethods: ['GET'] })).toEqual({ base: 'http://127.0.0.1:9101', retryMethods: ['GET'], undici: dispatcher })
    expect(replyFromOptions(dispatcher, { undici: {} }).undici).toBe(dispatcher)
    expect(() => replyFromOptions({ undici: dispatcher })).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
    return dispatcher.close()
  })

  test('Fastify forwards through it, registered as documented (replyFromOptions, no base of yours); the policy picks and hears each request end with status and X-Cache', async () => {
    const Fastify = require('fastify')
    const fleet = await startFleet({ count: 3, cachePages: 4, missMs: 2, basePort: 0, host: '127.0.0.1' })
    const policy = createPolicy('round-robin', {}, {})
    const ends = []
    policy.onEnd = (u, ctx, outcome) => ends.push({ id: u.id, key: ctx.key, ...outcome })
    const dispatcher = new PolicyDispatcher(fleet.backends.map((b) => ({ url: b.url, id: b.id })), { policy })
    const app = Fastify()
    await app.register(require('@fastify/reply-from'), replyFromOptions(dispatcher))
    app.get('/*', (request, reply) => reply.from(request.url))
    const url = await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const servers = []
      for (let i = 0; i < 3; i++) {
        const res = await request(`${url}/page5.html`)
        expect(res.statusCode).toBe(200)
        expect((await res.body.text()).length).toBeGreaterThan(1000)
        servers.push(res.headers['x-server'])
      }
      expect(servers.sort()).toEqual(fleet.backends.map((b) => b.id).sort()) // round-robin over the three
      expect(ends.map((e) => [e.key, e.statusCode, e.cache])).toEqual([['/page5.html', 200, 'MISS'], ['/page5.html', 200, 'MISS'], ['/page5.html', 200, 'MISS']])
    } finally {
      await app.close()
      await dispatcher.close()
      await fleet.close()
    }
  })
})
