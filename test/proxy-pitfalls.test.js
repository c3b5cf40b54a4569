'use strict'

const net = require('node:net')
const { startBalancer } = require('../src/balancer')
const { ENGINES } = require('../src/proxy/proxy-engine')
const { request, startUpstream, closedPort, waitFor, logSink } = require('./helper')

// Every engine runs the same pitfalls: the choice in docs/proxy-behaviour.md rests on these results.
describe.each(ENGINES)('proxy pitfalls with the %s engine', (engine) => {
  const open = []
  const start = async (options) => {
    const lb = await startBalancer({ algo: 'round-robin', port: 0, engine, ...options })
    open.push(lb)
    return lb
  }
  const upstream = async (handler) => {
    const u = await startUpstream(handler)
    open.push(u)
    return u
  }
  afterEach(async () => {
    await Promise.all(open.splice(0).map((x) => x.close()))
  })

  test('a refused upstream is answered with 502 and the balancer keeps running', async () => {
    const lb = await start({ backends: [`http://127.0.0.1:${await closedPort()}`] })
    const res = await request(`${lb.url}/a`)
    expect(res.status).toBe(502)
    expect(res.headers['x-polistes-error']).toBe('connect')
    const again = await request(`${lb.url}/a`)
    expect(again.status).toBe(502)
    expect(lb.stats().failures.connect).toBe(2)
  })

  test('a GET refused by one upstream is retried on another and answered 200', async () => {
    const good = await upstream((req, res) => res.end('good'))
    const lb = await start({ backends: [`http://127.0.0.1:${await closedPort()}`, good.url] })
    const res = await request(`${lb.url}/a`) // round-robin sends the first to the dead one
    expect(res.status).toBe(200)
    expect(res.body).toBe('good')
    expect(lb.stats().retries).toBe(1)
  })

  test('an upstream that resets before any byte gets a GET retried elsewhere', async () => {
    const resetting = await upstream((req) => req.socket.destroy())
    const good = await upstream((req, res) => res.end('good'))
    const lb = await start({ backends: [resetting.url, good.url] })
    const res = await request(`${lb.url}/x`)
    expect(res.status).toBe(200)
    expect(resetting.requests).toBe(1)
    expect(good.requests).toBe(1)
  })

  test('a POST with a body is not retried after a reset: 502, sent once', async () => {
    const resetting = await upstream((req) => req.socket.destroy())
    const good = await upstream((req, res) => res.end('good'))
    const lb = await start({ backends: [resetting.url, good.url] })
    const res = await request(`${lb.url}/x`, { method: 'POST', body: 'payload', headers: { 'content-type': 'text/plain' } })
    expect(res.status).toBe(502)
    expect(resetting.requests).toBe(1)
    expect(good.requests).toBe(0)
  })

  test('an upstream timeout gives 504, told apart from a reset (502)', async () => {
    const hanging = await upstream(() => {})
    const lb = await start({ backends: [hanging.url], timeoutMs: 200 })
    const t0 = Date.now()
    const res = await request(`${lb.url}/slow`)
    expect(res.status).toBe(504)
    expect(res.headers['x-polistes-error']).toBe('timeout')
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190)
    expect(lb.stats().failures).toMatchObject({ timeout: 1, connect: 0 })

    const resetting = await upstream((req) => req.socket.destroy())
    const lb2 = await start({ backends: [resetting.url], timeoutMs: 200 })
    const reset = await request(`${lb2.url}/x`)
    expect(reset.status).toBe(502)
    expect(reset.headers['x-polistes-error']).toBe('connect')
  })

  test('an upstream that breaks off mid-body: the client sees a broken response, no second writeHead', async () => {
    const breaking = await upstream((req, res) => {
      res.writeHead(200, { 'content-length': '1000' })
      res.write('x'.repeat(100))
      setTimeout(() => req.socket.destroy(), 20)
    })
    const { logger, lines } = logSink()
    const lb = await start({ backends: [breaking.url], logger })
    await expect(request(`${lb.url}/x`)).rejects.toThrow()
    await waitFor(() => lines.some((l) => l.msg === 'upstream failed'))
    expect(lines.find((l) => l.msg === 'upstream failed')).toMatchObject({ kind: 'stream' })
    expect(lines.some((l) => /ERR_HTTP_HEADERS_SENT/.test(JSON.stringify(l)))).toBe(false)
    // still serving
    const good = await upstream((req, res) => res.end('ok'))
    const lb2 = await start({ backends: [good.url], logger })
    expect((await request(`${lb2.url}/y`)).status).toBe(200)
    expect(lb.stats().inflight).toBe(0)
  })

  test('a client that disconnects aborts the upstream request', async () => {
    let upstreamClosed = false
    const hanging = await upstream((req, res) => {
      res.on('close', () => { upstreamClosed = true })
    })
    const lb = await start({ backends: [hanging.url] })
    const socket = net.connect(lb.port, '127.0.0.1')
    socket.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n')
    await waitFor(() => hanging.requests === 1)
    expect(lb.stats().inflight).toBe(1)
    socket.destroy()
    await waitFor(() => upstreamClosed)
    await waitFor(() => lb.stats().inflight === 0)
    expect(lb.stats().clientAborts).toBe(1)
  })

  test('keep-alive reuses one upstream connection; --no-keep-alive opens one per request', async () => {
    const seen = []
    const u = await upstream((req, res) => { seen.push(req.headers.connection); res.end('ok') })
    const lb = await start({ backends: [u.url] })
    for (let i = 0; i < 5; i++) expect((await request(`${lb.url}/k`)).status).toBe(200)
    expect(u.connections).toBe(1)

    const v = await upstream((req, res) => { seen.push(req.headers.connection); res.end('ok') })
    const lb2 = await start({ backends: [v.url], keepAlive: false })
    seen.length = 0
    for (let i = 0; i < 5; i++) expect((await request(`${lb2.url}/k`)).status).toBe(200)
    expect(v.connections).toBe(5)
    expect(seen).toEqual(['close', 'close', 'close', 'close', 'close'])
  })

  test("the upstream's Connection: close is not passed on: a keep-alive client keeps its connection", async () => {
    const http = require('node:http')
    const u = await upstream((req, res) => res.end('ok'))
    const lb = await start({ backends: [u.url], keepAlive: false })
    const clientSockets = new Set()
    lb.server.on('connection', (s) => clientSockets.add(s))
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    try {
      for (let i = 0; i < 5; i++) {
        const res = await request(`${lb.url}/k`, { agent })
        expect(res.status).toBe(200)
        expect(res.headers.connection).toBe('keep-alive')
      }
      expect(clientSockets.size).toBe(1)
      expect(u.connections).toBe(5) // upstream side still one connection per request
    } finally {
      agent.destroy()
    }
  })
  test('an untrusted client\'s X-Forwarded-For/-Host/-Proto are replaced by ours: the address, Host and our scheme', async () => {
    let seen
    const u = await upstream((req, res) => { seen = req.headers; res.end('ok') })
    const lb = await start({ backends: [u.url] })
    await request(`${lb.url}/x`, { headers: { host: 'example.test:8443', 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' } })
    expect(seen['x-forwarded-for']).toBe('127.0.0.1')
    expect(seen['x-forwarded-proto']).toBe('http')
    expect(seen['x-forwarded-port']).toBe('8443')
    expect(seen['x-forwarded-host']).toBe('example.test:8443')
    expect(seen.host).toBe('example.test:8443')
    await request(`${lb.url}/x`, { headers: { 'x-forwarded-host': 'front.test' } })
    expect(seen['x-forwarded-for']).toBe('127.0.0.1')
    expect(seen['x-forwarded-host']).toBe(new URL(lb.url).host)
  })

  test('hop-by-hop request headers, and those the Connection header names, stay on the client hop', async () => {
    let seen
    const u = await upstream((req, res) => { seen = req.headers; res.end('ok') })
    const lb = await start({ backends: [u.url] })
    const res = await request(`${lb.url}/x`, { headers: { connection: 'keep-alive, X-Secret', 'x-secret': 's', 'keep-alive': 'timeout=9', 'proxy-connection': 'keep-alive', 'x-kept': 'k' } })
    expect(res.status).toBe(200)
    expect(seen['x-secret']).toBeUndefined()
    expect(seen['keep-alive']).toBeUndefined()
    expect(seen['proxy-connection']).toBeUndefined()
    expect(seen['x-kept']).toBe('k')
  })

  test('hop-by-hop response headers, and those the upstream Connection header names, are not passed back', async () => {
    const u = await upstream((req, res) => {
      res.writeHead(200, { connection: 'x-internal', 'x-internal': 'i', 'proxy-connection': 'p', 'keep-alive': 'timeout=1', 'x-kept': 'k', 'content-length': '2' })
      res.end('ok')
    })
    const lb = await start({ backends: [u.url] })
    const res = await request(`${lb.url}/x`)
    expect(res.status).toBe(200)
    expect(res.body).toBe('ok')
    expect(res.headers['x-internal']).toBeUndefined()
    expect(res.headers['proxy-connection']).toBeUndefined()
    expect(res.headers['keep-alive']).not.toBe('timeout=1')
    expect(res.headers['x-kept']).toBe('k')
  })

  test('HEAD gets the upstream head (status, Content-Length) and no body', async () => {
    const u = await upstream((req, res) => {
      res.writeHead(200, { 'content-length': '5', 'x-cache': 'HIT' })
      res.end(req.method === 'HEAD' ? undefined : 'hello')
    })
    const lb = await start({ backends: [u.url] })
    const res = await request(`${lb.url}/x`, { method: 'HEAD' })
    expect(res.status).toBe(200)
    expect(res.headers['content-length']).toBe('5')
    expect(res.headers['x-cache']).toBe('HIT')
    expect(res.body).toBe('')
    expect((await request(`${lb.url}/x`)).body).toBe('hello')
  })

  test('request bodies reach the upstream intact, with Content-Length and chunked', async () => {
    const u = await upstream((req, res) => {
      const chunks = []
      req.on('data', (c) => chunks.push(c))
      req.on('end', () => res.end(`${req.headers['content-length'] || '-'} ${req.headers['transfer-encoding'] || '-'} ${Buffer.concat(chunks)}`))
    })
    const lb = await start({ backends: [u.url] })
    const fixed = await request(`${lb.url}/p`, { method: 'POST', body: 'a'.repeat(100000), headers: { 'content-length': '100000' } })
    expect(fixed.body).toBe(`100000 - ${'a'.repeat(100000)}`)
    const chunked = await request(`${lb.url}/p`, { method: 'POST', body: 'b'.repeat(70000), headers: { 'transfer-encoding': 'chunked' } })
    expect(chunked.body).toBe(`- chunked ${'b'.repeat(70000)}`)
  })

  test('a large response body streams through whole', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 'z')
    const u = await upstream((req, res) => res.end(big))
    const lb = await start({ backends: [u.url] })
    const res = await request(`${lb.url}/big`)
    expect(res.status).toBe(200)
    expect(res.body.length).toBe(big.length)
  })
})
