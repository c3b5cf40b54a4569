'use strict'

const fs = require('node:fs')
const http = require('node:http')
const { once } = require('node:events')
const { startBalancer } = require('../src/balancer')
const { Pool } = require('../src/pool/pool')
const { createHealthChecker } = require('../src/pool/health-checker')
const { request, startUpstream, closedPort, sleep, waitFor, makeCertificates } = require('./helper')

/**
 * An upstream whose /health answers `state.status` (after `state.delayMs`), and whose pages answer
 * 200 with X-Server: id. Counts health requests, the most in flight at once, and their headers.
 */
async function checkedUpstream (id, state = { status: 200, delayMs: 0 }) {
  const checks = { count: 0, inflight: 0, maxInflight: 0, headers: [] }
  const served = new Map() // socket → the URLs it carried
  const upstream = await startUpstream((req, res) => {
    if (!served.has(req.socket)) served.set(req.socket, [])
    served.get(req.socket).push(req.url)
    if (req.url === '/health') {
      checks.count++
      checks.inflight++
      checks.maxInflight = Math.max(checks.maxInflight, checks.inflight)
      checks.headers.push(req.headers)
      res.on('close', () => { checks.inflight-- })
      setTimeout(() => { res.writeHead(state.status); res.end('health\n') }, state.delayMs)
      return
    }
    res.writeHead(200, { 'x-server': id })
    res.end(`${id} ${req.url}\n`)
  })
  return Object.assign(upstream, { id, state, checks, served })
}

const upstreamStats = (lb, id) => lb.stats().upstreams.find((u) => u.id === id)

describe('active health checks through real HTTP', () => {
  const open = []
  afterEach(async () => {
    for (const x of open.splice(0)) await x.close()
  })

  test('an upstream failing its checks gets no traffic; after rise passes it comes back; stats show it', async () => {
    const a = await checkedUpstream('a')
    const b = await checkedUpstream('b', { status: 503, delayMs: 0 })
    open.push(a, b)
    const lb = await startBalancer({
      backends: [{ url: a.url, id: 'a' }, { url: b.url, id: 'b' }],
      algo: 'round-robin',
      port: 0,
      healthCheck: { path: '/health', intervalMs: 20, timeoutMs: 500, rise: 2, fall: 2 }
    })
    open.push(lb)
    await waitFor(() => upstreamStats(lb, 'b').state === 'down')
    expect(upstreamStats(lb, 'b')).toMatchObject({ healthy: false, check: { rise: 2, fall: 2, downs: 1, last: { ok: false, status: 503, error: 'status 503' } } })
    expect(upstreamStats(lb, 'a')).toMatchObject({ state: 'up', healthy: true, ramp: 1, check: { failed: 0, last: { ok: true, status: 200 } } })
    const served = []
    for (let i = 0; i < 10; i++) served.push((await request(`${lb.url}/p${i}`)).headers['x-server'])
    expect(served).toEqual(Array(10).fill('a'))

    b.state.status = 200
    await waitFor(() => upstreamStats(lb, 'b').state === 'up')
    expect(upstreamStats(lb, 'b').check.passed).toBeGreaterThanOrEqual(2)
    served.length = 0
    for (let i = 0; i < 10; i++) served.push((await request(`${lb.url}/p${i}`)).headers['x-server'])
    expect(served.filter((s) => s === 'b')).toHaveLength(5)
  })

  test('when every upstream is down by its checks the balancer answers 503', async () => {
    const port = await closedPort()
    const lb = await startBalancer({
      backends: [`http://127.0.0.1:${port}`],
      port: 0,
      healthCheck: { path: '/health', intervalMs: 20, timeoutMs: 200, rise: 1, fall: 1 }
    })
    open.push(lb)
    await waitFor(() => lb.stats().upstreams[0].state === 'down')
    expect(lb.stats().upstreams[0].check.last.error).toBe('ECONNREFUSED')
    const res = await request(`${lb.url}/x`)
    expect(res.status).toBe(503)
    expect(res.headers['x-polistes-error']).toBe('no-upstream')
  })

  test('a slow check times out, counts as failed, and never overlaps the next one', async () => {
    const a = await checkedUpstream('a', { status: 200, delayMs: 150 })
    open.push(a)
    const pool = new Pool([{ id: 'a', url: a.url, weight: 1 }])
    const checker = createHealthChecker(pool)
    open.push({ close: async () => checker.stop() })
    checker.sync(() => ({ path: '/health', intervalMs: 5, timeoutMs: 40, expectStatus: '200-399', rise: 1, fall: 2 }))
    await waitFor(() => pool.health(pool.get('a')).state === 'down')
    await sleep(100)
    expect(pool.health(pool.get('a')).check.last).toMatchObject({ ok: false, error: 'no answer within 40 ms' })
    expect(a.checks.count).toBeGreaterThanOrEqual(3)
    expect(a.checks.maxInflight).toBe(1)
    expect(a.checks.headers.every((h) => h.connection === 'close' && h['user-agent'] === 'polistes-health-check')).toBe(true)
  })

  test('checks take no socket from the proxy\'s keep-alive pool', async () => {
    const a = await checkedUpstream('a')
    open.push(a)
    const lb = await startBalancer({ backends: [a.url], port: 0, healthCheck: { path: '/health', intervalMs: 10 } })
    open.push(lb)
    const agent = new http.Agent({ keepAlive: true })
    for (let i = 0; i < 5; i++) await request(`${lb.url}/page`, { agent })
    await waitFor(() => a.checks.count >= 5)
    agent.destroy()
    // pages: one pooled connection; checks: one connection each, never a page's
    const carried = [...a.served.values()]
    const pageSockets = carried.filter((urls) => urls.includes('/page'))
    expect(pageSockets).toEqual([Array(5).fill('/page')])
    const checkSockets = carried.filter((urls) => urls.includes('/health'))
    expect(checkSockets.length).toBeGreaterThanOrEqual(5)
    expect(checkSockets.every((urls) => urls.length === 1)).toBe(true)
  })

  test('close() stops the checks', async () => {
    const a = await checkedUpstream('a')
    open.push(a)
    const lb = await startBalancer({ backends: [a.url], port: 0, healthCheck: { path: '/health', intervalMs: 10 } })
    await waitFor(() => a.checks.count >= 2)
    await lb.close()
    await sleep(100) // a check sent just before close() may still arrive (slowly, on a loaded machine)
    const after = a.checks.count
    await sleep(200) // every 10 ms, checks that had not stopped would add about 20
    expect(a.checks.count).toBe(after)
  })

  test('a backend may override the checks or turn them off', async () => {
    const a = await checkedUpstream('a')
    const b = await checkedUpstream('b')
    open.push(a, b)
    const lb = await startBalancer({
      backends: [{ url: a.url, id: 'a', healthCheck: false }, { url: b.url, id: 'b', healthCheck: { intervalMs: 10, expectStatus: 204 } }],
      port: 0,
      healthCheck: { path: '/health', intervalMs: 10 }
    })
    open.push(lb)
    await waitFor(() => upstreamStats(lb, 'b').state === 'down')
    expect(upstreamStats(lb, 'a')).toMatchObject({ state: 'up', check: null })
    expect(a.checks.count).toBe(0)
  })
})

describe('health checks on https and IPv6 upstreams', () => {
  let certs
  beforeAll(() => { certs = makeCertificates() })
  afterAll(() => certs.remove())

  test('an https upstream is checked over TLS, verified against --upstream-ca, with its Host; an unverifiable one fails its checks', async () => {
    const seen = []
    const tls = { cert: fs.readFileSync(certs.cert), key: fs.readFileSync(certs.key) }
    const good = await startUpstream((req, res) => { seen.push({ url: req.url, host: req.headers.host, tls: req.socket.encrypted === true }); res.end('ok') }, { tls })
    const lb = await startBalancer({ backends: [{ url: good.url, id: 'a' }], port: 0, upstreamCa: certs.ca, healthCheck: { path: '/health', intervalMs: 20, timeoutMs: 1000, rise: 1, fall: 1 } })
    try {
      await waitFor(() => upstreamStats(lb, 'a').check.passed >= 2)
      expect(upstreamStats(lb, 'a')).toMatchObject({ state: 'up', check: { failed: 0, last: { ok: true, status: 200 } } })
      expect(seen[0]).toEqual({ url: '/health', host: new URL(good.url).host, tls: true })
    } finally {
      await lb.close()
    }
    // the same upstream without the CA that signed it: the check must not pass (no plain HTTP, no unverified TLS)
    const lb2 = await startBalancer({ backends: [{ url: good.url, id: 'a' }], port: 0, healthCheck: { path: '/health', intervalMs: 20, timeoutMs: 1000, rise: 1, fall: 1 } })
    try {
      await waitFor(() => upstreamStats(lb2, 'a').state === 'down')
      expect(upstreamStats(lb2, 'a').check.last.error).toMatch(/UNABLE_TO_VERIFY|SELF_SIGNED|CERT/i)
    } finally {
      await lb2.close()
      await good.close()
    }
  })

  test('an IPv6 literal upstream ([::1]) is checked on ::1', async () => {
    const server = http.createServer((req, res) => res.end('ok'))
    server.listen(0, '::1')
    try {
      await once(server, 'listening')
    } catch (err) {
      return console.warn(`no IPv6 loopback here (${err.code}); skipped`)
    }
    const url = `http://[::1]:${server.address().port}`
    const lb = await startBalancer({ backends: [{ url, id: 'a' }], port: 0, healthCheck: { path: '/health', intervalMs: 20, timeoutMs: 1000, rise: 1, fall: 1 } })
    try {
      await waitFor(() => upstreamStats(lb, 'a').check.passed >= 2)
      expect(upstreamStats(lb, 'a')).toMatchObject({ state: 'up', check: { failed: 0 } })
    } finally {
      await lb.close()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('slow start through real HTTP: a recovered upstream\'s share ramps', () => {
  const open = []
  afterEach(async () => {
    for (const x of open.splice(0)) await x.close()
  })

  test.each(['round-robin', 'chash-bounded', 'wasp'])('with %s, the share of the recovered upstream grows window by window', async (algo) => {
    const a = await checkedUpstream('a')
    const b = await checkedUpstream('b', { status: 500, delayMs: 0 })
    open.push(a, b)
    const slowStartMs = 1500
    const lb = await startBalancer({
      backends: [{ url: a.url, id: 'a' }, { url: b.url, id: 'b' }],
      algo,
      port: 0,
      slowStartMs,
      healthCheck: { path: '/health', intervalMs: 10, timeoutMs: 500, rise: 1, fall: 1 }
    })
    open.push(lb)
    await waitFor(() => upstreamStats(lb, 'b').state === 'down')
    b.state.status = 200
    await waitFor(() => upstreamStats(lb, 'b').state === 'up', { stepMs: 1 })
    const t0 = performance.now()
    const windows = [0, 0, 0, 0].map(() => ({ b: 0, all: 0 }))
    const agent = new http.Agent({ keepAlive: true })
    // at most 300 requests a window, spread over it (its k-th not before its start + k * gapMs; a window
    // that falls behind catches up at full speed within itself): a fast machine samples the ramp as
    // evenly as a slow one, without burning the whole window in a busy loop
    const windowMs = slowStartMs / 3
    const gapMs = windowMs / 300
    let i = 0
    for (;;) {
      const now = performance.now() - t0
      const early = Math.floor(now / windowMs) * windowMs + windows[Math.min(Math.floor(now / windowMs), windows.length - 1)].all * gapMs - now
      if (early > 0) await sleep(early)
      const w = Math.floor((performance.now() - t0) / windowMs)
      if (w >= windows.length) break
      const res = await request(`${lb.url}/page${(i++ % 25) + 1}.html`, { agent })
      windows[w].all++
      if (res.headers['x-server'] === 'b') windows[w].b++
    }
    agent.destroy()
    const shares = windows.map((x) => x.b / x.all)
    if (process.env.POLISTES_SHOW_RAMP) console.log(algo, windows.map((x) => `${x.b}/${x.all}`).join(' '), shares.map((s) => s.toFixed(2)).join(' '))
    for (const x of windows) expect(x.all).toBeGreaterThan(20)
    // the ramp averages 1/6, 1/2, 5/6 over the three windows of the ramp, then 1: b is offered on at
    // most that fraction of picks, and takes its policy's share of those
    expect(shares[0]).toBeLessThan(1 / 3)
    expect(shares[0]).toBeLessThan(shares[3])
    if (algo !== 'wasp') { // wasp's own re-entry (idleness) is slower than the ramp: its share still grows, more slowly
      expect(shares[0]).toBeLessThan(shares[1])
      expect(shares[1]).toBeLessThan(shares[3])
      expect(shares[0]).toBeLessThan(0.6 * shares[3])
    }
  })
})
