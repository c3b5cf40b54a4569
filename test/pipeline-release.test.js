'use strict'

/**
 * Issue 25, the fuzzer's `[leak]` class: a request pipelined behind one whose answer closes the
 * client connection (or behind one still in flight when the client leaves) is picked and forwarded,
 * but node:http keeps its response in a queue without a socket, and that response never emits
 * 'close'. The balancer must still end it: the upstream released (nothing in flight), the policy
 * told, no upstream request left open. Raw sockets, every engine, both fronts.
 */

const { startBalancer } = require('../src/balancer')
const { startUpstream, RawConnection, waitFor } = require('./helper')

const SETUPS = [
  ['direct', 'fast'], ['direct', 'node'],
  ['node-http', 'fast'], ['node-http', 'node'],
  ['undici', 'fast'], ['undici', 'node'],
  ['http-proxy', 'fast'], ['http-proxy', 'node']
]

/** Send `bytes` on a new connection, wait for the balancer to close it or for `leaveMs`, then leave. */
async function pipeline (base, bytes, { leaveMs = 1000 } = {}) {
  const conn = new RawConnection(base)
  try {
    await conn.send(bytes)
    await conn.waitClosed(leaveMs) // clears its timer when the balancer closes first
    return conn.received.toString('latin1')
  } finally {
    conn.destroy()
  }
}

describe.each(SETUPS)('engine %s, front %s: a pipelined request whose response never gets its turn', (engine, front) => {
  let upstream
  let lb
  /** requests the upstream has open (its response not closed yet) */
  let open = 0
  beforeAll(async () => {
    // no Content-Length: an HTTP/1.0 client's answer is delimited by the close of its connection;
    // /slow answers after 150 ms
    upstream = await startUpstream((req, res) => {
      open++
      res.on('close', () => open--)
      req.resume()
      const answer = () => {
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.end(`${req.method} ${req.url}\n`)
      }
      req.on('end', () => (req.url === '/slow' ? setTimeout(answer, 150) : answer()))
    })
    lb = await startBalancer({ backends: [upstream.url], port: 0, engine, front, admin: false })
  })
  afterAll(async () => {
    await lb.close({ graceMs: 0 })
    await upstream.close()
  })

  const released = () => waitFor(() => lb.pool.inflight() === 0 && open === 0, { timeoutMs: 1000 })

  test('behind an HTTP/1.0 HEAD whose answer closes the connection', async () => {
    const got = await pipeline(lb.url, 'HEAD /a HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n')
    expect(got).toMatch(/^HTTP\/1\.1 200 /)
    await released()
    expect(lb.stats().inflight).toBe(0)
  })

  test('behind an HTTP/1.0 PUT whose answer is delimited by the close', async () => {
    const got = await pipeline(lb.url, 'PUT /a HTTP/1.0\r\nHost: x\r\nConnection: Keep-Alive\r\nContent-Length: 3\r\n\r\nabc' +
      'DELETE /b HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n')
    expect(got).toMatch(/^HTTP\/1\.1 200 /)
    await released()
  })

  test('behind a slow request when the client leaves', async () => {
    const got = await pipeline(lb.url, 'GET /slow HTTP/1.1\r\nHost: x\r\nX-Pad: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' +
      'GET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n', { leaveMs: 50 })
    expect(got).toBe('') // left before /slow was answered
    await released()
    expect(lb.counters.clientAborts).toBeGreaterThanOrEqual(1)
  })
})
