'use strict'

/**
 * The load child against a plain server whose latency is known: latencies are floats near the
 * server's delay, also when the server closes every connection (autocannon 9 alone would then
 * measure from stale requests), and each page request is attributed to the X-Server that served it.
 */

const http = require('node:http')
const path = require('node:path')
const { once } = require('node:events')
const { Child } = require('../bench/children/child')

jest.setTimeout(20000)

async function server ({ delayMs, close }) {
  const srv = http.createServer((req, res) => {
    setTimeout(() => {
      const headers = { 'Content-Type': 'text/plain', 'X-Server': req.url === '/page1.html' ? 'one' : 'other', 'X-Cache': 'HIT' }
      if (close) headers.Connection = 'close'
      res.writeHead(200, headers)
      res.end('x'.repeat(1000))
    }, delayMs)
  })
  srv.listen(0, '127.0.0.1')
  await once(srv, 'listening')
  return srv
}

async function load (url, connections) {
  const child = new Child(path.join(__dirname, '..', 'bench', 'load', 'load-child.js'), { name: 'load child' })
  try {
    const done = child.waitFor('done', 15000)
    const ticks = []
    child.on((msg) => { if (msg.type === 'tick') ticks.push(msg.bucket) })
    await child.request('start', { url, connections, warmup: 1, duration: 2, pages: 3, popularity: { kind: 'uniform' }, seed: 1 })
    const { result } = await done
    return { result, ticks }
  } finally {
    await child.close()
  }
}

describe.each([false, true])('bench load child (server closes connections: %s)', (close) => {
  let srv
  let out
  beforeAll(async () => {
    srv = await server({ delayMs: 20, close })
    out = await load(`http://127.0.0.1:${srv.address().port}`, 4)
  })
  afterAll(() => { srv.closeAllConnections(); srv.close() })

  test('latencies are the server delay, in fractional milliseconds, and obey Little\'s law', () => {
    const m = out.result.measured
    expect(m.requests).toBeGreaterThan(100)
    expect(m.errors).toBe(0)
    expect(m.latency.p50).toBeGreaterThanOrEqual(20)
    expect(m.latency.p50).toBeLessThan(45)
    expect(Number.isInteger(m.latency.mean)).toBe(false)
    // closed loop: throughput x mean latency = connections in flight (at most 4)
    expect(m.rps * m.latency.mean / 1000).toBeLessThanOrEqual(4.2)
  })

  test('the learning phase and the window are counted apart, with one tick per second', () => {
    expect(out.result.learning.requests).toBeGreaterThan(0)
    expect(out.ticks.map((t) => [t.second, t.phase])).toEqual([[1, 'learning'], [2, 'measured'], [3, 'measured']])
  })

  test('each key is attributed to the backend named in X-Server', () => {
    const { keys, hits, requests } = out.result.measured
    expect(Object.keys(keys).sort()).toEqual(['/page1.html', '/page2.html', '/page3.html'])
    expect(Object.keys(keys['/page1.html'])).toEqual(['one'])
    expect(Object.keys(keys['/page2.html'])).toEqual(['other'])
    expect(hits).toBe(requests)
  })
})
