'use strict'

const http = require('node:http')
const net = require('node:net')
const { once } = require('node:events')
const { createLifecycle } = require('../src/front/http-lifecycle')
const https = require('node:https')
const fs = require('node:fs')
const { request, waitFor, makeCertificates } = require('./helper')

/** A server whose handler the test scripts, under a lifecycle. */
function serve (handler) {
  const server = http.createServer(handler)
  return { server, lifecycle: createLifecycle(server, { name: 'test server' }) }
}

describe('listen', () => {
  test('resolves with the bound port and URL', async () => {
    const { server, lifecycle } = serve((req, res) => res.end('ok'))
    try {
      const { port, host, url } = await lifecycle.listen(0, '127.0.0.1')
      expect(port).toBe(server.address().port)
      expect(host).toBe('127.0.0.1')
      expect(url).toBe(`http://127.0.0.1:${port}`)
      expect((await request(`${url}/`)).body).toBe('ok')
    } finally {
      await lifecycle.close()
    }
  })

  test('a taken port is ERR_POLISTES_PORT_IN_USE, named after the server', async () => {
    const first = serve(() => {})
    const { port } = await first.lifecycle.listen(0, '127.0.0.1')
    const second = serve(() => {})
    try {
      await expect(second.lifecycle.listen(port, '127.0.0.1')).rejects.toMatchObject({
        code: 'ERR_POLISTES_PORT_IN_USE', message: `test server: 127.0.0.1:${port} is already in use`
      })
      expect(second.server.listening).toBe(false)
    } finally {
      await first.lifecycle.close()
    }
  })

  test('an address this machine does not have is ERR_POLISTES_BAD_OPTION with the system code', async () => {
    const { lifecycle } = serve(() => {})
    // 192.0.2.0/24 is TEST-NET-1: never assigned to a local interface, so bind fails (nothing is sent)
    await expect(lifecycle.listen(0, '192.0.2.1')).rejects.toMatchObject({
      code: 'ERR_POLISTES_BAD_OPTION', message: 'test server: cannot listen on 192.0.2.1:0: EADDRNOTAVAIL'
    })
  })
})

describe('backlog', () => {
  const somaxconn = (() => {
    try { return Number(fs.readFileSync('/proc/sys/net/core/somaxconn', 'utf8')) } catch { return 0 }
  })()
  const BURST = 800

  /**
   * Open BURST connections while this process cannot accept (its event loop is held), then count
   * those whose handshake completed within 500 ms: a full listen queue drops a SYN, which the
   * client sends again only after 1 s.
   */
  async function burst (backlog) {
    const server = http.createServer((req, res) => res.end())
    const lifecycle = createLifecycle(server, { name: 'test server', backlog })
    const { port } = await lifecycle.listen(0, '127.0.0.1')
    try {
      return await burstOn(port)
    } finally {
      await lifecycle.close({ graceMs: 100 })
    }
  }

  async function burstOn (port) {
    const sockets = []
    let timer
    try {
      const connected = []
      const started = performance.now()
      for (let i = 0; i < BURST; i++) {
        const socket = net.connect(port, '127.0.0.1')
        socket.on('error', () => {})
        connected.push(once(socket, 'connect').then(() => performance.now() - started))
        sockets.push(socket)
      }
      const until = performance.now() + 100
      // hold the event loop: the loopback handshakes complete (or are dropped) meanwhile, none accepted
      while (performance.now() < until) Math.sqrt(until)
      const times = await Promise.race([Promise.all(connected), new Promise((resolve) => { timer = setTimeout(() => resolve(null), 700) })])
      return times === null ? 'some waited for a SYN retransmit' : 'all within 700 ms'
    } finally {
      clearTimeout(timer)
      for (const s of sockets) s.destroy()
    }
  }

  const ifRoom = somaxconn >= BURST ? test : test.skip
  ifRoom(`a burst of ${BURST} connections fits a backlog of ${BURST + 200}; Node's default 511 leaves some to SYN retransmits`, async () => {
    expect(await burst(BURST + 200)).toBe('all within 700 ms')
    expect(await burst(undefined)).toBe('some waited for a SYN retransmit')
  })

  ifRoom('the balancer listens with a backlog of maxConnections (as HAProxy): the same burst gets in at once', async () => {
    const { startBalancer } = require('../src/balancer')
    const lb = await startBalancer({ backends: ['http://127.0.0.1:9'], port: 0 })
    try {
      expect(await burstOn(lb.port)).toBe('all within 700 ms')
    } finally {
      await lb.close({ graceMs: 100 })
    }
  })
})

describe('close', () => {
  test('before listen it resolves at once, and it is idempotent', async () => {
    const { lifecycle } = serve(() => {})
    const closing = lifecycle.close()
    expect(lifecycle.closing).toBe(true)
    expect(lifecycle.close()).toBe(closing)
    await closing
  })

  test('idle keep-alive connections are ended at once; a busy one gets its response, then is ended', async () => {
    let release
    const { lifecycle } = serve((req, res) => {
      if (req.url === '/slow') release = () => res.end('slow')
      else res.end('fast')
    })
    const { url } = await lifecycle.listen(0, '127.0.0.1')
    const idleAgent = new http.Agent({ keepAlive: true })
    const busyAgent = new http.Agent({ keepAlive: true })
    try {
      expect((await request(`${url}/`, { agent: idleAgent })).body).toBe('fast')
      const idleSocket = idleAgent.freeSockets[Object.keys(idleAgent.freeSockets)[0]][0]
      const idleClosed = once(idleSocket, 'close')
      const slow = request(`${url}/slow`, { agent: busyAgent })
      await waitFor(() => release)
      const t0 = Date.now()
      const closed = lifecycle.close({ graceMs: 10000 })
      await idleClosed // ended at once, not after the keep-alive timeout
      release()
      const res = await slow
      expect(res.body).toBe('slow')
      await closed
      expect(Date.now() - t0).toBeLessThan(2000) // not the 5 s keep-alive timeout, not the 10 s grace
      await expect(request(`${url}/`, { timeoutMs: 1000 })).rejects.toThrow(/ECONNREFUSED/)
    } finally {
      idleAgent.destroy()
      busyAgent.destroy()
    }
  })

  test('a request that arrives on an open connection while closing is answered with Connection: close', async () => {
    let release
    const { lifecycle } = serve((req, res) => {
      if (req.url === '/hold') release = () => res.end('held')
      else res.end('late')
    })
    const { port } = await lifecycle.listen(0, '127.0.0.1')
    const socket = net.connect(port, '127.0.0.1')
    socket.setEncoding('utf8')
    let received = ''
    socket.on('data', (d) => { received += d })
    const ended = once(socket, 'end')
    await once(socket, 'connect')
    socket.write('GET /hold HTTP/1.1\r\nHost: x\r\n\r\n')
    await waitFor(() => release)
    const closed = lifecycle.close()
    socket.write('GET /late HTTP/1.1\r\nHost: x\r\n\r\n') // pipelined behind the held one
    await new Promise((resolve) => setTimeout(resolve, 50))
    release()
    await ended // the server ends the connection after the late response
    await closed
    socket.destroy()
    const responses = received.split(/(?=HTTP\/1\.1 )/)
    expect(responses).toHaveLength(2)
    expect(responses[0]).toMatch(/held$/)
    expect(responses[1]).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    expect(responses[1]).toMatch(/\r\nConnection: close\r\n/i)
    expect(responses[1]).toMatch(/late$/)
  })

  test('a response that never ends is destroyed after graceMs', async () => {
    const { lifecycle } = serve(() => {}) // never answers
    const { url } = await lifecycle.listen(0, '127.0.0.1')
    const pending = request(`${url}/`, { timeoutMs: 5000 })
    pending.catch(() => {})
    await new Promise((resolve) => setTimeout(resolve, 50))
    const t0 = Date.now()
    await lifecycle.close({ graceMs: 200 })
    const elapsed = Date.now() - t0
    expect(elapsed).toBeGreaterThanOrEqual(150)
    expect(elapsed).toBeLessThan(3000)
    await expect(pending).rejects.toThrow(/socket hang up|ECONNRESET/)
  })
})

describe('https servers', () => {
  let certs
  beforeAll(() => { certs = makeCertificates() })
  afterAll(() => certs.remove())

  test('the URL is https://; a busy TLS connection gets its response, then is ended; a handshake under way is cut after graceMs', async () => {
    let release
    const server = https.createServer({ cert: fs.readFileSync(certs.cert), key: fs.readFileSync(certs.key) }, (req, res) => {
      release = () => res.end('slow over tls')
    })
    const lifecycle = createLifecycle(server, { name: 'tls server' })
    const { url, port } = await lifecycle.listen(0, '127.0.0.1')
    expect(url).toBe(`https://127.0.0.1:${port}`)
    const agent = new https.Agent({ keepAlive: true, ca: fs.readFileSync(certs.ca) })
    const busy = new Promise((resolve, reject) => {
      https.get(`${url}/slow`, { agent }, (res) => {
        let body = ''
        const socket = res.socket
        res.on('data', (d) => { body += d })
        res.on('end', () => resolve({ body, socket }))
      }).on('error', reject)
    })
    const handshaking = net.connect(port, '127.0.0.1') // connects, never says hello
    await once(handshaking, 'connect')
    const handshakeClosed = once(handshaking, 'close')
    await waitFor(() => release)
    const t0 = Date.now()
    const closed = lifecycle.close({ graceMs: 300 })
    release()
    const res = await busy
    expect(res.body).toBe('slow over tls')
    if (!res.socket.destroyed) await once(res.socket, 'close') // ended by the server after its response
    await closed // without cutting the handshake this would wait for its 120 s timeout
    await handshakeClosed
    const elapsed = Date.now() - t0
    expect(elapsed).toBeGreaterThanOrEqual(250)
    expect(elapsed).toBeLessThan(3000)
    agent.destroy()
  })
})
