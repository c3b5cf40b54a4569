'use strict'

const http = require('node:http')
const net = require('node:net')
const { Writable } = require('node:stream')
const { once } = require('node:events')
const pino = require('pino')
const { startBalancer } = require('../src/balancer')
const { createAdmin } = require('../src/observe/admin')
const { createTelemetry } = require('../src/observe/telemetry')
const { rawRequest, request, startUpstream, waitFor } = require('./helper')

/**
 * An open event stream: its raw `frame` events (the data line, as sent) as they arrive.
 * @param {string} url
 * @returns {Promise<{ res: http.IncomingMessage, frames: string[], close: () => void }>} once the first frame is in
 */
function openStream (url) {
  return new Promise((resolve, reject) => {
    const frames = []
    const req = http.get(url, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`))
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        buffer += chunk
        let i
        while ((i = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, i)
          buffer = buffer.slice(i + 2)
          const data = /^event: frame\ndata: (.*)$/s.exec(block)
          if (data) frames.push(data[1])
          if (frames.length === 1 && data) resolve({ res, frames, close: () => req.destroy() })
        }
      })
    })
    req.on('error', reject)
  })
}

/** A pino logger whose lines land in `lines` (parsed). */
function capturingLogger () {
  const lines = []
  const sink = new Writable({
    write (chunk, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line))
      done()
    }
  })
  return { logger: pino({ level: 'info' }, sink), lines }
}

describe('maxEventStreams: the cap on dashboard event streams', () => {
  let upstream
  let lb
  afterEach(async () => {
    if (lb) await lb.close({ graceMs: 100 })
    if (upstream) await upstream.close()
    lb = upstream = null
  })

  test('past the cap a stream is refused with 503, Retry-After and a short text; a slot that frees is taken again', async () => {
    upstream = await startUpstream((req, res) => res.end('ok'))
    const { logger, lines } = capturingLogger()
    lb = await startBalancer({ backends: [upstream.url], port: 0, maxEventStreams: 2, logger })
    const a = await openStream(`${lb.url}/_polistes/events`)
    const b = await openStream(`${lb.url}/_polistes/events`)
    for (let i = 0; i < 3; i++) {
      const refused = await rawRequest(lb.url, '/_polistes/events')
      expect(refused.status).toBe(503)
      expect(refused.headers['retry-after']).toBe('10')
      expect(refused.headers['content-type']).toMatch(/^text\/plain/)
      expect(refused.body.toString()).toBe('too many dashboard event streams open (2); try again later\n')
    }
    // the rest of the admin surface and the proxy are not affected
    expect((await request(`${lb.url}/_polistes/stats`)).status).toBe(200)
    expect((await rawRequest(lb.url, '/_polistes/events', { method: 'HEAD' })).status).toBe(200) // holds no slot
    expect((await request(`${lb.url}/page`)).body).toBe('ok')
    expect(lb.admin.streams()).toMatchObject({ open: 2, max: 2, refused: 3 })
    // logged once (then once per 100), not once per refusal
    const warnings = lines.filter((l) => /event streams/.test(l.msg))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatchObject({ level: 40, open: 2, maxEventStreams: 2, refused: 1 })
    a.close()
    await waitFor(() => lb.admin.streams().open === 1)
    const c = await openStream(`${lb.url}/_polistes/events`)
    expect(c.res.statusCode).toBe(200)
    b.close()
    c.close()
  })

  test('the default cap is 16; 0 refuses every stream; a reload changes the cap without a restart', async () => {
    upstream = await startUpstream((req, res) => res.end('ok'))
    lb = await startBalancer({ backends: [upstream.url], port: 0 })
    expect(lb.admin.streams().max).toBe(16)
    const result = lb.reconfigure({ backends: [upstream.url], maxEventStreams: 0 })
    expect(result.changed).toContain('maxEventStreams')
    expect(result.restartNeeded).toEqual([])
    expect((await rawRequest(lb.url, '/_polistes/events')).status).toBe(503)
    lb.reconfigure({ backends: [upstream.url], maxEventStreams: 1 })
    const head = await rawRequest(lb.url, '/_polistes/events', { method: 'HEAD' }) // answered, holds no slot
    expect([head.status, head.headers['content-type']]).toEqual([200, 'text/event-stream; charset=utf-8'])
    expect(lb.admin.streams().open).toBe(0)
    const s = await openStream(`${lb.url}/_polistes/events`)
    expect((await rawRequest(lb.url, '/_polistes/events')).status).toBe(503)
    s.close()
  })

  test('the cap holds on the admin listener too', async () => {
    upstream = await startUpstream((req, res) => res.end('ok'))
    lb = await startBalancer({ backends: [upstream.url], port: 0, adminPort: 0, maxEventStreams: 1 })
    const s = await openStream(`${lb.adminUrl}/_polistes/events`)
    expect((await rawRequest(lb.adminUrl, '/_polistes/events')).status).toBe(503)
    s.close()
  })

  test.each([[-1], [1.5], ['4']])('maxEventStreams %j is refused with a clear error', async (value) => {
    await expect(startBalancer({ backends: ['http://127.0.0.1:9'], port: 0, maxEventStreams: value })).rejects.toThrow(/maxEventStreams must be an integer in \[0, 100000\]/)
  })
})

describe('one frame per tick, shared by every stream', () => {
  let upstream
  let lb
  let server
  let admin
  afterEach(async () => {
    admin.close()
    await new Promise((resolve) => server.close(resolve))
    await lb.close({ graceMs: 100 })
    await upstream.close()
  })

  /** The balancer's admin data served with a short tick on a server of its own. */
  async function mount (options) {
    upstream = await startUpstream((req, res) => res.end('ok'))
    lb = await startBalancer({ backends: [upstream.url], port: 0, admin: false })
    admin = createAdmin({ stats: () => lb.stats(), telemetry: lb.telemetry }, options)
    server = http.createServer((req, res) => { if (!admin.handle(req, res)) res.writeHead(404).end() })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    return `http://127.0.0.1:${server.address().port}/_polistes/events`
  }

  test('every stream gets the same bytes for a tick, and a tick builds one frame whatever the number of streams', async () => {
    const url = await mount({ frameIntervalMs: 40, maxEventStreams: 8 })
    for (let i = 0; i < 4; i++) await request(`${lb.url}/p${i}`)
    const streams = await Promise.all(Array.from({ length: 5 }, () => openStream(url)))
    await waitFor(() => streams.every((s) => s.frames.length >= 6))
    const before = admin.streams()
    for (const s of streams) s.close()
    // tick frames by their timestamp: the same string in every stream that got that tick
    const byTick = new Map()
    for (const s of streams) {
      expect(JSON.parse(s.frames[0]).full).toBe(true)
      for (const text of s.frames.slice(1)) {
        const f = JSON.parse(text)
        expect(f.full).toBeUndefined()
        if (!byTick.has(f.t)) byTick.set(f.t, new Set())
        byTick.get(f.t).add(text)
      }
    }
    for (const texts of byTick.values()) expect(texts.size).toBe(1)
    const shared = [...byTick.keys()].filter((t) => streams.every((s) => s.frames.some((text) => JSON.parse(text).t === t)))
    expect(shared.length).toBeGreaterThanOrEqual(4)
    // one build per tick: five streams that each got k tick frames cost about k builds, not 5k
    expect(before.framesBuilt).toBeLessThanOrEqual(byTick.size + 1)
    expect(before.fullFramesBuilt).toBeLessThanOrEqual(5)
    expect(before.open).toBe(5)
  })

  test('a stream that opens between ticks continues the sequence: no second sent twice or skipped', async () => {
    const url = await mount({ frameIntervalMs: 40 })
    const first = await openStream(url)
    await waitFor(() => first.frames.length >= 3)
    const second = await openStream(url)
    await waitFor(() => second.frames.length >= 3)
    const t0 = Date.now()
    // run past a second boundary (the series count whole seconds), recording some traffic
    while (Date.now() - t0 < 1200) await request(`${lb.url}/q`)
    const n = second.frames.length
    await waitFor(() => second.frames.length > n + 1)
    first.close()
    second.close()
    for (const s of [first, second]) {
      const seconds = s.frames.flatMap((text) => JSON.parse(text).series.t)
      expect(new Set(seconds).size).toBe(seconds.length)
      for (let i = 1; i < seconds.length; i++) expect(seconds[i]).toBe(seconds[i - 1] + 1)
    }
    const last = (s) => s.frames.flatMap((text) => JSON.parse(text).series.t).at(-1)
    expect(last(second)).toBe(last(first))
  })

  test('a client that does not read is dropped once it holds back more than the buffer limit; the others go on', async () => {
    // large frames (many upstreams) so that the kernel's socket buffers fill within a few ticks
    const upstreams = Array.from({ length: 1500 }, (_, i) => ({ id: `upstream-${i}`, url: `http://10.0.${i >> 8}.${i & 255}:8080`, healthy: true, inflight: 0, requests: i, failures: 0 }))
    upstream = await startUpstream((req, res) => res.end('ok'))
    lb = await startBalancer({ backends: [upstream.url], port: 0, admin: false })
    const telemetry = createTelemetry()
    admin = createAdmin({ stats: () => ({ requests: 0, upstreams, policy: { name: 'test', state: undefined } }), telemetry }, { frameIntervalMs: 30, maxStreamBufferBytes: 64 * 1024 })
    server = http.createServer((req, res) => { if (!admin.handle(req, res)) res.writeHead(404).end() })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address()
    const reader = await openStream(`http://127.0.0.1:${port}/_polistes/events`)
    // a raw client that sends its request and never reads a byte
    const stalled = net.connect(port, '127.0.0.1')
    stalled.on('error', () => {})
    await once(stalled, 'connect')
    stalled.write('GET /_polistes/events HTTP/1.1\r\nHost: x\r\n\r\n')
    try {
      await waitFor(() => admin.streams().dropped === 1, { timeoutMs: 10000 })
      expect(admin.streams().open).toBe(1)
      const n = reader.frames.length
      await waitFor(() => reader.frames.length > n + 2) // the reading stream is still served
      expect(admin.streams().dropped).toBe(1)
      expect(JSON.parse(reader.frames.at(-1)).upstreams).toHaveLength(1500)
    } finally {
      stalled.destroy()
      reader.close()
    }
  })
})
