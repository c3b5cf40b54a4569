'use strict'

const { startBalancer } = require('../src/balancer')
const { ENGINES } = require('../src/proxy/proxy-engine')
const { request, startUpstream, closedPort } = require('./helper')

/**
 * An upstream that records, per request, the Cache-Control it received (every line of it, from
 * the raw headers, so a duplicated line would show) and answers 200.
 */
async function recordingUpstream () {
  const seen = []
  const up = await startUpstream((req, res) => {
    const lines = []
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      if (req.rawHeaders[i].toLowerCase() === 'cache-control') lines.push(req.rawHeaders[i + 1])
    }
    seen.push({ method: req.method, url: req.url, cacheControl: lines })
    req.resume()
    req.on('end', () => res.end('ok'))
  })
  return { up, seen }
}

/**
 * A policy that picks the first candidate and sets ctx.noStore by the path's first segment:
 * /cold/* true, /warm/* false, anything else left alone (undefined, as other policies leave it).
 */
const byKey = {
  name: 'no-store-by-key',
  pick (candidates, ctx) {
    if (ctx.key.startsWith('/cold/')) ctx.noStore = true
    else if (ctx.key.startsWith('/warm/')) ctx.noStore = false
    return candidates[0]
  }
}

// what the client sends -> the Cache-Control lines the upstream must receive
const CASES = [
  { path: '/cold/a', headers: {}, want: ['no-store'] },
  { path: '/plain/a', headers: {}, want: [] },
  { path: '/cold/b', headers: { 'cache-control': 'max-age=0' }, want: ['max-age=0, no-store'] },
  { path: '/warm/a', headers: { 'cache-control': 'max-age=0' }, want: ['max-age=0'] },
  { path: '/cold/c', headers: { 'cache-control': 'No-Store, max-age=0' }, want: ['No-Store, max-age=0'] },
  { path: '/warm/b', headers: {}, want: [] },
  { path: '/plain/b', headers: { 'cache-control': 'no-cache' }, want: ['no-cache'] },
  { path: '/cold/d?q=1', headers: { 'cache-control': 'no-cache' }, want: ['no-cache, no-store'] },
  // a Cache-Control the client's Connection names is hop-by-hop: dropped, and no-store alone goes on
  { path: '/cold/e', headers: { connection: 'keep-alive, cache-control', 'cache-control': 'max-age=0' }, want: ['no-store'] },
  { path: '/plain/c', headers: { connection: 'keep-alive, cache-control', 'cache-control': 'max-age=0' }, want: [] }
]

describe.each(ENGINES)('Cache-Control: no-store from ctx.noStore with the %s engine', (engine) => {
  const open = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((x) => x.close()))
  })
  const start = async (options) => {
    const lb = await startBalancer({ port: 0, engine, ...options })
    open.push(lb)
    return lb
  }

  test('the upstream gets no-store exactly when the pick set it, merged into the client\'s Cache-Control', async () => {
    const { up, seen } = await recordingUpstream()
    open.push(up)
    const lb = await start({ backends: [up.url], policy: byKey })
    // one keep-alive client connection after another (the fast front where the engine has it), in order
    for (const c of CASES) {
      const res = await request(`${lb.url}${c.path}`, { headers: c.headers })
      expect(res.status).toBe(200)
    }
    expect(seen.map((s) => s.cacheControl)).toEqual(CASES.map((c) => c.want))
    expect(seen.map((s) => s.url)).toEqual(CASES.map((c) => c.path))
  })

  test('a request with a body (node:http\'s front) carries it too', async () => {
    const { up, seen } = await recordingUpstream()
    open.push(up)
    const lb = await start({ backends: [up.url], policy: byKey })
    const body = 'payload'
    const cold = await request(`${lb.url}/cold/post`, { method: 'POST', body, headers: { 'content-type': 'text/plain', 'cache-control': 'max-age=5' } })
    const plain = await request(`${lb.url}/plain/post`, { method: 'POST', body, headers: { 'content-type': 'text/plain', 'cache-control': 'max-age=5' } })
    expect([cold.status, plain.status]).toEqual([200, 200])
    expect(seen).toEqual([
      { method: 'POST', url: '/cold/post', cacheControl: ['max-age=5, no-store'] },
      { method: 'POST', url: '/plain/post', cacheControl: ['max-age=5'] }
    ])
  })

  test.each([
    // the first pick (the refused upstream) and the retry's pick: what the retry's upstream gets
    { picks: [true, undefined], want: [], ends: [true, undefined] },
    { picks: [true, false], want: [], ends: [true, false] },
    { picks: [false, true], want: ['no-store'], ends: [false, true] },
    { picks: [undefined, true], want: ['no-store'], ends: [undefined, true] }
  ])('a retry after a refused connection follows the second pick ($picks)', async ({ picks, want, ends }) => {
    const { up, seen } = await recordingUpstream()
    open.push(up)
    const seenByOnEnd = []
    let n = 0
    const policy = {
      name: 'scripted-no-store',
      pick (candidates, ctx) {
        const decision = picks[n++]
        if (decision !== undefined) ctx.noStore = decision
        return candidates[0]
      },
      onEnd (upstream, ctx) { seenByOnEnd.push(ctx.noStore) }
    }
    const lb = await start({ backends: [`http://127.0.0.1:${await closedPort()}`, up.url], policy })
    const res = await request(`${lb.url}/page1.html`)
    expect(res.status).toBe(200)
    expect(lb.stats()).toMatchObject({ retries: 1, failures: { connect: 1 } })
    expect(n).toBe(2)
    expect(seen.map((s) => s.cacheControl)).toEqual([want])
    expect(seenByOnEnd).toEqual(ends)
  })
})

describe('through the balancer to a page backend', () => {
  const open = []
  afterAll(async () => {
    await Promise.all(open.map((x) => x.close()))
  })

  test('pages the policy marks no-store are served but never kept; the others are kept', async () => {
    const path = require('node:path')
    const { createBackend } = require('../servers/static-server')
    const backend = createBackend({ root: path.join(__dirname, '..', 'public'), cachePages: 4, missMs: 0 })
    const { url } = await backend.listen(0, '127.0.0.1')
    open.push(backend)
    const policy = {
      name: 'keep-page1-only',
      pick (candidates, ctx) {
        ctx.noStore = ctx.key !== '/page1.html'
        return candidates[0]
      }
    }
    const lb = await startBalancer({ port: 0, backends: [url], policy })
    open.push(lb)
    const cache = async (p) => (await request(`${lb.url}${p}`)).headers['x-cache']
    expect([await cache('/page1.html'), await cache('/page1.html')]).toEqual(['MISS', 'HIT'])
    expect([await cache('/page2.html'), await cache('/page2.html')]).toEqual(['MISS', 'MISS'])
    expect(backend.stats()).toMatchObject({ hits: 1, misses: 3, notStored: 2, cachedKeys: ['/page1.html'] })
  })
})
