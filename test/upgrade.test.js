'use strict'

const { startBalancer } = require('../src/balancer')
const { startUpstream, closedPort, RawConnection, waitFor } = require('./helper')

const UPGRADE = 'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'

describe('upgrade tunnel', () => {
  const open = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((x) => x.close()))
  })
  const start = async (backends) => {
    const lb = await startBalancer({ algo: 'round-robin', port: 0, backends })
    open.push(lb)
    return lb
  }

  test('an upstream that declines the upgrade has its answer relayed, then the connection closes', async () => {
    const upstream = await startUpstream((req, res) => { res.writeHead(426, { 'content-type': 'text/plain' }); res.end('no websockets here') })
    open.push(upstream)
    const lb = await start([upstream.url])
    const conn = new RawConnection(lb.url)
    try {
      await conn.send(UPGRADE)
      const { responses, closed } = await conn.read(1)
      expect(closed).toBe(true)
      expect(responses[0].status).toBe(426)
      expect(responses[0].body.toString()).toBe('no websockets here')
    } finally {
      conn.destroy()
    }
  })

  test('an HTTP/1.0 upgrade request without Host reaches the upstream without X-Forwarded-Host (it crashed the process)', async () => {
    const upstream = await startUpstream((req, res) => { res.writeHead(426, { 'x-saw-forwarded-host': String('x-forwarded-host' in req.headers) }); res.end() })
    open.push(upstream)
    const lb = await start([upstream.url])
    const conn = new RawConnection(lb.url)
    try {
      await conn.send(UPGRADE.replace('HTTP/1.1\r\nHost: x\r\n', 'HTTP/1.0\r\n'))
      const { responses } = await conn.read(1)
      expect(responses[0].status).toBe(426)
      expect(responses[0].headers['x-saw-forwarded-host']).toBe('false')
    } finally {
      conn.destroy()
    }
    const again = new RawConnection(lb.url)
    try {
      await again.send(UPGRADE)
      expect((await again.read(1)).responses[0].status).toBe(426)
    } finally {
      again.destroy()
    }
  })

  test('a refused upstream is answered 502 and counted as a connect failure', async () => {
    const lb = await start([`http://127.0.0.1:${await closedPort()}`])
    const conn = new RawConnection(lb.url)
    try {
      await conn.send(UPGRADE)
      const { responses } = await conn.read(1)
      expect(responses.map((r) => r.status)).toEqual([502])
      expect(lb.stats().failures.connect).toBe(1)
    } finally {
      conn.destroy()
    }
  })

  test('an open tunnel is in flight on its upstream until the client closes it', async () => {
    const upstream = await startUpstream(() => {})
    open.push(upstream)
    upstream.server.on('upgrade', (req, socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n')
      socket.on('error', () => {})
      socket.on('end', () => socket.end()) // as a WebSocket server does
    })
    const lb = await start([upstream.url])
    const conn = new RawConnection(lb.url)
    await conn.send(UPGRADE)
    const { responses } = await conn.read(1)
    expect(responses.map((r) => r.status)).toEqual([101])
    expect(lb.stats().upstreams[0].inflight).toBe(1)
    conn.destroy()
    await waitFor(() => lb.stats().upstreams[0].inflight === 0)
  })
})
