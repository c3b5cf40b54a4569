'use strict'

const fs = require('node:fs')
const http = require('node:http')
const https = require('node:https')
const net = require('node:net')
const { execFile } = require('node:child_process')
const { once } = require('node:events')
const { startBalancer } = require('../src/balancer')
const { CHECK_INTERVAL_MS } = require('../src/front/front-server')
const { rawRequest, startUpstream, waitFor, sleep, makeCertificates, RawConnection } = require('./helper')

/** The client side of the balancer: HTTPS, slow clients, header size and connection limits. */

let upstream
let lb
beforeAll(async () => {
  upstream = await startUpstream((req, res) => res.end(`${req.url} proto=${req.headers['x-forwarded-proto']}`))
})
afterAll(() => upstream.close())
afterEach(async () => {
  if (lb) await lb.close({ graceMs: 100 })
  lb = undefined
})

/** GET over https with `ca` trusted; bounded. */
function httpsGet (url, { ca, agent = false } = {}) {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, agent }, (res) => {
      let body = ''
      const socket = res.socket // detached (to the agent's pool) once the response ends
      res.on('data', (d) => { body += d })
      res.on('end', () => resolve({ status: res.statusCode, body, socket }))
    })
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')))
    req.on('error', reject)
  })
}

describe('HTTPS front', () => {
  let certs
  beforeAll(() => { certs = makeCertificates() })
  afterAll(() => certs.remove())

  test('with a certificate and key the balancer speaks HTTPS, and tells upstreams X-Forwarded-Proto: https', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0, tlsCert: certs.cert, tlsKey: certs.key })
    expect(lb.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
    const res = await httpsGet(`${lb.url}/page1.html`, { ca: fs.readFileSync(certs.ca) })
    expect(res).toMatchObject({ status: 200, body: '/page1.html proto=https' })
    await expect(httpsGet(`${lb.url}/page1.html`)).rejects.toThrow(/unable to verify|self.signed/i) // not a public CA
  })

  test('curl gets the page over TLS, verifying the certificate against the test CA', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0, tlsCert: certs.cert, tlsKey: certs.key })
    const { stdout } = await new Promise((resolve, reject) => {
      execFile('curl', ['-sS', '--max-time', '5', '--cacert', certs.ca, '-w', ' %{http_code} %{ssl_verify_result}', `${lb.url}/via-curl`], { timeout: 8000 },
        (err, stdout, stderr) => err ? reject(new Error(`${err.message} ${stderr}`)) : resolve({ stdout }))
    })
    expect(stdout).toBe('/via-curl proto=https 200 0')
  })

  test('keep-alive holds over TLS, and close() ends the idle TLS connection at once', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0, tlsCert: certs.cert, tlsKey: certs.key })
    const agent = new https.Agent({ keepAlive: true, ca: fs.readFileSync(certs.ca) })
    const first = await httpsGet(`${lb.url}/a`, { agent })
    const second = await httpsGet(`${lb.url}/b`, { agent })
    expect(second.socket).toBe(first.socket)
    const closed = once(first.socket, 'close')
    const t0 = performance.now()
    await lb.close({ graceMs: 5000 })
    await closed
    expect(performance.now() - t0).toBeLessThan(2000)
    agent.destroy()
  })
})

describe('slow clients', () => {
  test('200 sockets sending a header byte a second do not delay a normal request; they get 408 and are closed', async () => {
    const headersTimeoutMs = 2000
    lb = await startBalancer({ backends: [upstream.url], port: 0, headersTimeoutMs, requestTimeoutMs: headersTimeoutMs })
    const { port } = new URL(lb.url)
    const slow = 'GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ' + 'x'.repeat(64)
    const sockets = []
    for (let i = 0; i < 200; i++) {
      // allowHalfOpen: a nasty client does not close when the balancer does; the balancer must
      const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true })
      const record = { socket, received: '', closedAt: null }
      socket.on('data', (d) => { record.received += d })
      socket.on('error', () => {})
      socket.on('close', () => { record.closedAt = performance.now() })
      sockets.push(record)
    }
    await Promise.all(sockets.map((s) => once(s.socket, 'connect')))
    const t0 = performance.now()
    let sent = 0
    const drip = () => {
      for (const s of sockets) if (!s.socket.destroyed && s.socket.writable) s.socket.write(slow[sent])
      sent++
    }
    drip()
    const dripping = setInterval(drip, 1000)
    try {
      await sleep(1200) // two bytes each so far: every slow socket is mid-header
      expect(sockets.every((s) => s.closedAt === null)).toBe(true)
      const normal = await rawRequest(lb.url, '/normal', { timeoutMs: 3000 })
      expect(normal.status).toBe(200)
      expect(normal.body.toString()).toBe('/normal proto=http')
      expect(normal.ms).toBeLessThan(1000)

      // closed after the headers timeout, at most a check interval and the linger later
      await waitFor(() => sockets.every((s) => s.closedAt !== null), { timeoutMs: headersTimeoutMs + CHECK_INTERVAL_MS + 1000 + 3000, stepMs: 100 })
    } finally {
      clearInterval(dripping)
      for (const s of sockets) s.socket.destroy()
    }
    const first = Math.min(...sockets.map((s) => s.closedAt - t0))
    expect(first).toBeGreaterThanOrEqual(headersTimeoutMs - 200)
    for (const s of sockets) expect(s.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/)
    expect(sent).toBeLessThan(slow.length) // the header never completed
  })
})

describe('request header size', () => {
  const bigHeader = (bytes) => ({ 'x-big': 'y'.repeat(bytes) })

  test('headers beyond the default 16 KiB get 431 and never reach an upstream', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0 })
    const before = upstream.requests
    const res = await rawRequest(lb.url, '/big', { headers: bigHeader(20000) })
    expect(res.status).toBe(431)
    expect(upstream.requests).toBe(before)
    expect((await rawRequest(lb.url, '/ok', { headers: bigHeader(15000) })).status).toBe(200)
  })

  test('maxHeaderSize moves the limit both ways', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0, maxHeaderSize: 4096 })
    expect((await rawRequest(lb.url, '/x', { headers: bigHeader(5000) })).status).toBe(431)
    expect((await rawRequest(lb.url, '/x', { headers: bigHeader(3000) })).status).toBe(200)
    await lb.close()
    // an upstream that takes big headers too (Node's own limit is 16 KiB)
    const roomy = http.createServer({ maxHeaderSize: 65536 }, (req, res) => res.end(`${req.headers['x-big'].length}`))
    roomy.listen(0, '127.0.0.1')
    await once(roomy, 'listening')
    try {
      lb = await startBalancer({ backends: [`http://127.0.0.1:${roomy.address().port}`], port: 0, maxHeaderSize: 65536 })
      const res = await rawRequest(lb.url, '/x', { headers: bigHeader(40000) })
      expect(res.status).toBe(200)
      expect(res.body.toString()).toBe('40000')
    } finally {
      await lb.close()
      lb = undefined
      roomy.close()
    }
  })
})

describe('connections', () => {
  test('beyond maxConnections new connections are closed unanswered and counted; a freed slot serves again', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0, maxConnections: 3 })
    const { port } = new URL(lb.url)
    const held = []
    for (let i = 0; i < 3; i++) {
      const socket = net.connect(port, '127.0.0.1')
      await once(socket, 'connect')
      held.push(socket)
    }
    await waitFor(() => lb.server._connections === 3)
    await expect(rawRequest(lb.url, '/refused', { timeoutMs: 2000 })).rejects.toThrow(/ECONNRESET|socket hang up/)
    expect(lb.stats().droppedConnections).toBe(1)
    held.pop().destroy()
    await waitFor(() => lb.server._connections === 2)
    expect((await rawRequest(lb.url, '/served')).status).toBe(200)
    for (const socket of held) socket.destroy()
  })

  test('an idle client connection is closed after keepAliveTimeoutMs', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0, keepAliveTimeoutMs: 300 })
    // a raw client: Node's Agent would obey the `Keep-Alive: timeout=0` Node advertises for a
    // sub-second keepAliveTimeout and close the connection itself
    const conn = new RawConnection(lb.url)
    try {
      await conn.send('GET /idle HTTP/1.1\r\nHost: x\r\n\r\n')
      const { responses, closed } = await conn.read(1)
      expect(responses.map((r) => r.status)).toEqual([200])
      expect(closed).toBe(false)
      const t0 = performance.now()
      await conn.closed
      const idleMs = performance.now() - t0
      expect(idleMs).toBeGreaterThan(200)
      expect(idleMs).toBeLessThan(2000)
    } finally {
      conn.destroy()
    }
  })
})

test('the limits are checked like every option: one line, ERR_POLISTES_BAD_OPTION', () => {
  const start = (o) => startBalancer({ backends: [upstream.url], port: 0, ...o })
  return Promise.all([
    expect(start({ maxConnections: 0 })).rejects.toThrow(/^maxConnections must be an integer in \[1, 10000000\], got 0$/),
    expect(start({ headersTimeoutMs: 90000 })).rejects.toThrow(/^headersTimeoutMs \(90000\) must not exceed requestTimeoutMs \(60000\)$/),
    expect(start({ maxBodySize: -1 })).rejects.toThrow(/^maxBodySize must be an integer/),
    expect(start({ tlsCert: 'cert.pem' })).rejects.toThrow(/^tlsCert and tlsKey go together/)
  ])
})
