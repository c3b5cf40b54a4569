'use strict'

/**
 * Issue 25 review of the merged fixes: what an attacker with raw sockets still got through, each
 * found over real sockets and kept here as its regression test (engines and fronts where they
 * differ). The upstream is test/helper.js startRecordingUpstream: every request line that reached
 * it is visible, so a smuggled request shows as a line nobody forwarded on purpose.
 */

const net = require('node:net')
const { once } = require('node:events')
const { startBalancer } = require('../src/balancer')
const { startRecordingUpstream, RawConnection, sleep, waitFor } = require('./helper')

const UPGRADE = 'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'
/** A request no check of the balancer ever saw: a Host it refuses, a forged client address. */
const SMUGGLED = 'GET /SMUGGLED HTTP/1.1\r\nHost: a b\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n'

/** Upgrades go through node:http on either front; the engine does not carry them. */
const SETUPS = [['direct', 'fast'], ['direct', 'node'], ['http-proxy', 'node']]

describe.each(SETUPS)('upgrades (engine %s, front %s)', (engine, front) => {
  let upstream
  let lb
  beforeAll(async () => {
    // declines every upgrade (without an 'upgrade' listener node:http answers it as a request): its
    // connection stays in HTTP, keep-alive
    upstream = await startRecordingUpstream((req, res) => req.on('end', () => { res.writeHead(426); res.end('no') }))
    lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, engine, front })
  })
  afterAll(async () => {
    await lb.close({ graceMs: 0 })
    await upstream.close()
  })
  beforeEach(() => {
    upstream.reset()
    upstream.server.removeAllListeners('upgrade')
  })

  test('bytes after a declined upgrade\'s head never reach the upstream as a request of their own', async () => {
    const conn = new RawConnection(lb.url)
    try {
      // before the fix the two went up together and the upstream answered /SMUGGLED on the same connection
      await conn.send(UPGRADE + SMUGGLED)
      const { responses, closed } = await conn.read(2, { timeoutMs: 1000 })
      expect(responses.map((r) => r.status)).toEqual([426])
      expect(closed).toBe(true)
      await sleep(50)
      expect(upstream.requestLines()).toEqual(['GET /ws HTTP/1.1'])
    } finally {
      conn.destroy()
    }
  })

  test('bytes after an accepted upgrade\'s head go through the tunnel, after the 101', async () => {
    upstream.server.on('upgrade', (req, socket, head) => {
      socket.on('error', () => {})
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n')
      if (head.length > 0) socket.write(head) // sent with the handshake (as before the fix)
      socket.on('data', (d) => socket.write(d))
    })
    const conn = new RawConnection(lb.url)
    try {
      await conn.send(UPGRADE + 'early frame')
      await waitFor(() => conn.received.toString('latin1').includes('early frame'), { timeoutMs: 2000 })
      const text = conn.received.toString('latin1')
      expect(text.startsWith('HTTP/1.1 101 ')).toBe(true)
      expect(text.indexOf('early frame')).toBeGreaterThan(text.indexOf('\r\n\r\n'))
    } finally {
      conn.destroy()
    }
  })

  test('an upgrade pipelined behind a refused request is not tunnelled', async () => {
    const conn = new RawConnection(lb.url)
    try {
      await conn.send('GET /a HTTP/1.1\r\nHost: a b\r\n\r\n' + UPGRADE)
      const { responses, closed } = await conn.read(2, { timeoutMs: 1000 })
      expect(responses.map((r) => r.status)).toEqual([400])
      expect(closed).toBe(true)
      await sleep(50)
      expect(upstream.requestLines()).toEqual([])
    } finally {
      conn.destroy()
    }
  })
})

describe.each([['direct', 'fast'], ['direct', 'node'], ['undici', 'fast']])('after Connection: close (engine %s, front %s)', (engine, front) => {
  let upstream
  let lb
  beforeAll(async () => {
    upstream = await startRecordingUpstream()
    lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, engine, front })
  })
  afterAll(async () => {
    await lb.close({ graceMs: 0 })
    await upstream.close()
  })
  beforeEach(() => upstream.reset())

  test('a request sent on the half-closed connection is not forwarded (node:http stops reading too)', async () => {
    const socket = net.connect({ port: lb.port, host: '127.0.0.1', allowHalfOpen: true })
    socket.on('error', () => {})
    let received = ''
    socket.on('data', (d) => { received += d })
    try {
      await once(socket, 'connect')
      socket.write('GET /first HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
      await waitFor(() => received.includes('GET /first'), { timeoutMs: 2000 })
      socket.write('GET /after-close HTTP/1.1\r\nHost: x\r\n\r\n')
      await sleep(150)
      expect(upstream.requestLines()).toEqual(['GET /first HTTP/1.1'])
      expect(received).not.toContain('/after-close')
    } finally {
      socket.destroy()
    }
  })
})

const ENGINES = [['direct', 'node'], ['node-http', 'node'], ['undici', 'node'], ['http-proxy', 'node']]

describe.each(ENGINES)('a client slow to send its body is not the upstream\'s failure (engine %s, front %s)', (engine, front) => {
  let upstream
  beforeAll(async () => {
    upstream = await startRecordingUpstream((req, res, record) => req.on('end', () => res.end(`${req.method} ${req.url} [${record.body}]`)))
  })
  afterAll(() => upstream.close())
  beforeEach(() => upstream.reset())

  // node-http, undici and http-proxy still answer 502 here and count a connect failure (see the
  // review's report): they too write the head with the first piece of the body (so that a body
  // malformed at the front never reaches the upstream, test/http-conformance.test.js), and their
  // clients fail when the pooled socket closes meanwhile
  const onDirect = engine === 'direct' ? test : test.skip
  onDirect('a pooled connection the upstream closes before the body starts: the request goes on a new one', async () => {
    const lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, engine, front })
    const conn = new RawConnection(lb.url)
    try {
      await conn.send('GET /warm HTTP/1.1\r\nHost: x\r\n\r\n')
      expect((await conn.read(1)).responses.map((r) => r.status)).toEqual([200])
      await conn.send('POST /late HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n')
      await sleep(50)
      // the upstream's keep-alive timeout, as it runs out while the client has sent no body yet
      // (the direct engine had taken the pooled connection and sent nothing: 502, the upstream ejected)
      upstream.server.closeIdleConnections()
      await sleep(100)
      await conn.send('abc')
      const { responses } = await conn.read(1, { timeoutMs: 2000 })
      expect(responses.map((r) => r.status)).toEqual([200])
      expect(responses[0].body.toString()).toBe('POST /late [abc]')
      expect(lb.stats().failures.connect).toBe(0)
      expect(lb.stats().upstreams[0].failures).toBe(0)
    } finally {
      conn.destroy()
      await lb.close({ graceMs: 0 })
    }
  })

  test('an upstream timeout while the client\'s body is stalled does not eject the upstream', async () => {
    const lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, engine, front, timeoutMs: 150 })
    const conn = new RawConnection(lb.url)
    try {
      await conn.send('POST /stalled HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab')
      await sleep(400)
      expect(lb.stats().upstreams[0]).toMatchObject({ failures: 0, ejections: 0 })
    } finally {
      conn.destroy()
      await lb.close({ graceMs: 0 })
    }
  })
})

describe.each(ENGINES)('hop-by-hop request headers (engine %s, front %s)', (engine, front) => {
  test('an Upgrade header on a request that is no upgrade (h2c) does not go upstream', async () => {
    const upstream = await startRecordingUpstream()
    const lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, engine, front })
    const conn = new RawConnection(lb.url)
    try {
      await conn.send('GET /u HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nConnection: close\r\n\r\n')
      expect((await conn.read(1)).responses.map((r) => r.status)).toEqual([200])
      expect(upstream.records[0].headers.upgrade).toBeUndefined()
    } finally {
      conn.destroy()
      await lb.close({ graceMs: 0 })
      await upstream.close()
    }
  })
})

describe('the fast front: pipelined requests', () => {
  test('a request that arrives as the one before it is answered queues behind those pipelined earlier', async () => {
    const http = require('node:http')
    let release = null
    const upstream = http.createServer((req, res) => {
      if (req.url === '/a') release = () => res.end('a')
      else res.end(req.url.slice(1))
    })
    upstream.listen(0, '127.0.0.1')
    await once(upstream, 'listening')
    const lb = await startBalancer({ backends: [`http://127.0.0.1:${upstream.address().port}`], algo: 'round-robin', port: 0, front: 'fast' })
    try {
      for (let i = 0; i < 5; i++) {
        const conn = new RawConnection(lb.url)
        try {
          await conn.send('GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n')
          await waitFor(() => release !== null)
          // the upstream's answer to /a and the client's next request arrive together: /c was served
          // before /b (each client got the other's answer), or /b was never served
          release()
          release = null
          conn.socket.write('GET /c HTTP/1.1\r\nHost: x\r\n\r\n')
          const { responses } = await conn.read(3, { timeoutMs: 1000 })
          expect(responses.map((r) => r.body.toString())).toEqual(['a', 'b', 'c'])
        } finally {
          conn.destroy()
        }
      }
    } finally {
      await lb.close({ graceMs: 0 })
      upstream.closeAllConnections()
      upstream.close()
    }
  })
})
