'use strict'

// Responses an upstream gets wrong (docs/proxy-behaviour.md, "Responses an upstream gets wrong"):
// a raw node:net upstream writes crafted bytes, clients on raw sockets ask through a real balancer
// (the fast front's simple GET, an HTTP/1.0 request and an HTTP/1.1 request with a repeated header,
// both of which node:http serves), on every engine and both fronts. Nothing an upstream sends may
// throw out of a socket callback: each bad answer is a 502 (or a broken connection once the head
// went out), its upstream connection is closed, and the balancer serves the next request.

const net = require('node:net')
const http = require('node:http')
const { once } = require('node:events')
const { startBalancer } = require('../src/balancer')
const { responseHead, sendableReason } = require('../src/proxy/engines/headers')
const { interimHeadLength } = require('../src/proxy/engines/interim-responses')
const { attachFastFront } = require('../src/front/fast-front')
const { ENGINES } = require('../src/proxy/proxy-engine')
const { RawConnection, startCli, waitFor, alive } = require('./helper')

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'

/** What the raw upstream answers, by the request's path (without its query). */
const RESPONSES = {
  '/ok': OK,
  // the crash of issue 25: a chunked response that announces (and sends) a trailer field
  '/trailer-chunked': 'HTTP/1.1 200 OK\r\nTrailer: X-Foo\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Foo: bar\r\n\r\n',
  '/trailer-length': 'HTTP/1.1 200 OK\r\nTrailer: X-Foo\r\nContent-Length: 3\r\n\r\nabc',
  '/trailer-204': 'HTTP/1.1 204 No Content\r\nTrailer: X-Foo\r\n\r\n',
  '/status-099': 'HTTP/1.1 099 Low\r\nContent-Length: 3\r\n\r\nabc',
  '/status-000': 'HTTP/1.1 000 Zero\r\nContent-Length: 3\r\n\r\nabc',
  '/switch-unasked': 'HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: foo\r\n\r\n',
  '/switch-bare': 'HTTP/1.1 101 Switching Protocols\r\n\r\n',
  '/interim-only': 'HTTP/1.1 102 Processing\r\n\r\n', // then the connection ends
  '/length-and-chunked': 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
  '/lengths-differ': 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd',
  '/cr-in-value': 'HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 3\r\n\r\nabc',
  '/nul-in-value': 'HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 3\r\n\r\nabc',
  '/bad-name': 'HTTP/1.1 200 OK\r\nX(A): b\r\nContent-Length: 3\r\n\r\nabc',
  '/reason-control': 'HTTP/1.1 200 O\x01K\r\nContent-Length: 3\r\n\r\nabc',
  '/reason-obs-text': 'HTTP/1.1 200 Tr\xe8s bien\r\nContent-Length: 3\r\n\r\nabc',
  '/body-after-204': 'HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc',
  '/not-modified-length': 'HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\nETag: "e"\r\n\r\n', // valid: the representation's length
  '/gzip-coding': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc', // then the connection ends
  '/bad-chunk': 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n',
  // interim responses nothing asked for before the final one (RFC 9110 §15.2: a client MUST be
  // able to parse them, even unexpected): dropped, the final answer relayed whole
  '/interim-continue': 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nabc',
  '/interim-several': 'HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n' +
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
  '/interim-204': 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n',
  // seed 20261141, case 64581 of the fuzzer (a 502 there: late bytes of another answer, not these)
  '/interim-304': 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Type: text/plain\r\n\r\n',
  // the same cut in pieces, the cuts inside the interim heads (written 10 ms apart)
  '/interim-split': ['HTTP/1.1 1', '00 Continue\r\n', '\r\nHTTP/1.1 102 Processing\r\nX-A: b\r', '\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc']
}
/** Paths after whose response the upstream ends the connection (the body or the wait runs to it). */
const THEN_CLOSE = new Set(['/interim-only', '/gzip-coding'])

/**
 * A raw upstream: reads request heads (no bodies), answers each with the crafted bytes for its
 * path, keeps the connection unless the answer needs its end, and records per connection the
 * paths it carried and whether the balancer closed it.
 */
async function startRawUpstream () {
  const connections = []
  const sockets = new Set()
  const server = net.createServer((socket) => {
    const conn = { paths: [], closedByPeer: false }
    connections.push(conn)
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    let buffered = ''
    socket.on('error', () => {})
    socket.on('end', () => { conn.closedByPeer = true })
    socket.on('close', () => { conn.closedByPeer = true })
    socket.on('data', (data) => {
      buffered += data.toString('latin1')
      let end
      while ((end = buffered.indexOf('\r\n\r\n')) !== -1) {
        const target = buffered.slice(0, end).split(' ')[1]
        buffered = buffered.slice(end + 4)
        const path = target.split('?')[0]
        conn.paths.push(target)
        const bytes = RESPONSES[path] || OK
        if (Array.isArray(bytes)) bytes.forEach((piece, i) => setTimeout(() => socket.write(piece, 'latin1'), 10 * i))
        else if (THEN_CLOSE.has(path)) socket.end(bytes, 'latin1')
        else socket.write(bytes, 'latin1')
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    /** @param {string} target @returns {{ paths: string[], closedByPeer: boolean } | undefined} */
    connectionOf: (target) => connections.find((c) => c.paths.includes(target)),
    close: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy()
      server.close(resolve)
    })
  }
}

/** The request each client kind sends for `target`. */
const CLIENTS = {
  fast: (target) => `GET ${target} HTTP/1.1\r\nHost: t\r\n\r\n`, // the fast front's simple request
  http10: (target) => `GET ${target} HTTP/1.0\r\n\r\n`,
  repeated: (target) => `GET ${target} HTTP/1.1\r\nHost: t\r\nAccept: a\r\nAccept: b\r\n\r\n`
}

let sequence = 0

/**
 * Send one request of `kind` on a new raw connection.
 * @param {string} url the balancer
 * @param {'fast' | 'http10' | 'repeated'} kind
 * @param {string} path
 * @param {{ method?: string, waitCloseMs?: number }} [options] `waitCloseMs`: how long to wait for
 *   the balancer to close the connection after the response (or instead of one)
 * @returns {Promise<{ target: string, response: object | undefined, closed: boolean, raw: string }>}
 */
async function ask (url, kind, path, { method = 'GET', waitCloseMs = 0 } = {}) {
  const target = `${path}?n=${++sequence}`
  const c = new RawConnection(url)
  await c.send(CLIENTS[kind](target).replace(/^GET /, `${method} `))
  const { responses } = await c.read(1, { methods: [method], timeoutMs: 2000 })
  const closed = c.ended || (waitCloseMs > 0 && await c.waitClosed(waitCloseMs))
  c.destroy()
  return { target, response: responses.find((r) => !r.interim), closed, raw: c.received.toString('latin1') }
}

describe('the response side\'s pure rules', () => {
  test('responseHead drops Trailer with the other hop-by-hop headers', () => {
    const head = responseHead(['Content-Type', 'text/plain', 'Trailer', 'X-Foo', 'trailer', 'X-Bar', 'Transfer-Encoding', 'chunked', 'X-Foo', 'kept'])
    expect(head.raw).toEqual(['Content-Type', 'text/plain', 'X-Foo', 'kept'])
    expect(head.headers).toEqual({ 'content-type': 'text/plain', 'x-foo': 'kept' })
  })

  test('sendableReason keeps what node:http sends and replaces the rest by the standard phrase', () => {
    expect(sendableReason(200, 'Fine')).toBe('Fine')
    expect(sendableReason(200, 'Tr\xe8s\tbien')).toBe('Tr\xe8s\tbien') // HTAB and obs-text
    expect(sendableReason(200, 'O\x01K')).toBe('OK')
    expect(sendableReason(404, 'Not\r\nX: y')).toBe('Not Found')
    expect(sendableReason(200, '\u2713')).toBe('OK') // past latin1
    expect(sendableReason(201, '')).toBe('Created')
    expect(sendableReason(201, undefined)).toBe('Created')
    expect(sendableReason(799, 'x\x00')).toBe('unknown')
  })

  test('interimHeadLength finds a whole 1xx head other than 101, waits on a part of one, and lets the rest through', () => {
    const b = (s) => Buffer.from(s, 'latin1')
    expect(interimHeadLength(b('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n'))).toBe(25)
    expect(interimHeadLength(b('HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nrest'))).toBe(40)
    expect(interimHeadLength(b('HTTP/1.0 102\r\n\r\n'))).toBe(16)
    for (const part of ['', 'H', 'HTTP/1.', 'HTTP/1.1 1', 'HTTP/1.1 10', 'HTTP/1.1 100', 'HTTP/1.1 100 Continue\r\n', 'HTTP/1.1 100 Continue\r\n\r']) {
      expect([part, interimHeadLength(b(part))]).toEqual([part, 0])
    }
    expect(interimHeadLength(b('HTTP/1.1 100 Continue\nX-A: b\n\nHTTP/1.1 200 OK\n'))).toBe(30) // bare LF (RFC 9112 §2.2)
    expect(interimHeadLength(b('HTTP/1.1 100 Continue\nX-A: b\n\r'))).toBe(0)
    for (const other of ['HTTP/1.1 200 OK\r\n\r\n', 'HTTP/1.1 101 Switching Protocols\r\n\r\n', 'X', 'HTTP/2 100\r\n\r\n', 'HTTP/1.1 1000\r\n\r\n', ' HTTP/1.1 100\r\n\r\n']) {
      expect([other, interimHeadLength(b(other))]).toEqual([other, -1])
    }
    expect(interimHeadLength(b('HTTP/1.1 101'))).toBe(-1)
    expect(interimHeadLength(b('HTTP/1.1 100 ' + 'x'.repeat(20000)))).toBe(-1) // past the limit: undici's own
  })

  test('the fast front\'s response refuses the heads node:http\'s writeHead refuses, and can answer after', async () => {
    const server = http.createServer()
    attachFastFront(server, { keepAliveTimeoutMs: 5000, headersTimeoutMs: 5000, maxHeaderSize: 16384, refuse: (socket) => socket.destroy() })
    const refused = []
    server.on('request', (req, res) => {
      for (const [status, message] of [[99, ''], [1000, ''], [200, 'O\rK']]) {
        try {
          res.writeRelayedHead(status, message, [], {})
        } catch (err) {
          refused.push(err.code)
        }
      }
      refused.push(res.headersSent)
      res.writeHead(502, { 'content-type': 'text/plain' })
      res.end('bad gateway\n')
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const conn = new RawConnection(`http://127.0.0.1:${server.address().port}`)
    try {
      await conn.send('GET / HTTP/1.1\r\nHost: a\r\n\r\n')
      const { responses } = await conn.read(1)
      expect(refused).toEqual(['ERR_HTTP_INVALID_STATUS_CODE', 'ERR_HTTP_INVALID_STATUS_CODE', 'ERR_INVALID_CHAR', false])
      expect(responses.map((r) => [r.status, r.body.toString()])).toEqual([[502, 'bad gateway\n']])
    } finally {
      conn.socket.destroy()
      server.close()
    }
  })
})

/** The engines, each with the fronts it runs behind (the http-proxy ones stream into node:http's response only). */
const SETUPS = ENGINES.flatMap((engine) => (engine.startsWith('http-proxy') ? ['node'] : ['fast', 'node']).map((front) => [engine, front]))

describe.each(SETUPS)('upstream responses on the %s engine, %s front', (engine, front) => {
  let upstream
  let lb
  const crashes = []
  const onCrash = (err) => crashes.push(err)

  beforeAll(async () => {
    process.on('uncaughtException', onCrash)
    upstream = await startRawUpstream()
    // maxFails 1000: an invalid response counts against its upstream, and the next request must
    // still find this one (the only one) to show the balancer serving
    lb = await startBalancer({ backends: [upstream.url], port: 0, engine, front, algo: 'round-robin', maxFails: 1000, timeoutMs: 3000 })
  })
  afterAll(async () => {
    process.off('uncaughtException', onCrash)
    await lb.close({ graceMs: 0 })
    await upstream.close()
  })
  afterEach(async () => {
    expect(crashes.map((e) => e.code || e.message)).toEqual([])
    const next = await ask(lb.url, 'fast', '/ok')
    expect(next.response && next.response.status).toBe(200)
    expect(next.response.body.toString()).toBe('ok')
  })

  /** The upstream connection that carried `target` is closed by the balancer (never pooled). */
  const closedUpstream = async (target) => {
    // a close follows the bad answer within a millisecond or two: look every 2 ms, not every 20
    await waitFor(() => upstream.connectionOf(target) && upstream.connectionOf(target).closedByPeer, { timeoutMs: 2000, stepMs: 2 })
  }

  describe.each(Object.keys(CLIENTS))('client %s', (kind) => {
    test('a Trailer header with a chunked body: relayed without the announcement or the trailer field', async () => {
      const r = await ask(lb.url, kind, '/trailer-chunked')
      expect(r.response.status).toBe(200)
      expect(r.response.body.toString()).toBe('abc')
      expect(r.response.headers.trailer).toBeUndefined()
      expect(r.raw).not.toMatch(/x-foo/i)
    })

    test('a Trailer header with a Content-Length, and on a 204: relayed without it', async () => {
      const r = await ask(lb.url, kind, '/trailer-length')
      expect(r.response.status).toBe(200)
      expect(r.response.body.toString()).toBe('abc')
      expect(r.response.headers.trailer).toBeUndefined()
      const none = await ask(lb.url, kind, '/trailer-204')
      expect(none.response.status).toBe(204)
      expect(none.response.headers.trailer).toBeUndefined()
    })

    test.each([
      '/status-099', '/status-000', '/switch-unasked', '/switch-bare', '/interim-only', '/length-and-chunked',
      '/lengths-differ', '/cr-in-value', '/nul-in-value', '/bad-name'
    ])('%s is answered 502 and its upstream connection closed', async (path) => {
      const r = await ask(lb.url, kind, path)
      expect(r.response && r.response.status).toBe(502)
      expect(r.response.body.toString()).not.toMatch(/abc/)
      await closedUpstream(r.target)
    })

    test('a reason phrase node:http cannot send: the standard one instead, or 502 where the parser refuses it', async () => {
      const r = await ask(lb.url, kind, '/reason-control')
      if (engine === 'direct') { // its strict parser refuses a control character in the status line, as llhttp's strict mode
        expect(r.response.status).toBe(502)
      } else {
        expect(r.response.status).toBe(200)
        expect(r.response.reason).toBe('OK')
        expect(r.response.body.toString()).toBe('abc')
      }
    })

    test('a reason phrase in obs-text is relayed (or, where undici decoded it past latin1, replaced)', async () => {
      const r = await ask(lb.url, kind, '/reason-obs-text')
      expect(r.response.status).toBe(200)
      expect(['Tr\xe8s bien', 'OK']).toContain(r.response.reason)
      if (engine !== 'undici') expect(r.response.reason).toBe('Tr\xe8s bien')
    })

    test('a body after a 204: the 204 is relayed, the upstream connection closed', async () => {
      const r = await ask(lb.url, kind, '/body-after-204')
      expect(r.response.status).toBe(204)
      expect(r.response.body.length).toBe(0)
      await closedUpstream(r.target)
    })

    test('a 304 with the Content-Length of the representation it stands for: relayed whole', async () => {
      const r = await ask(lb.url, kind, '/not-modified-length', { waitCloseMs: 50 }) // a close would follow the answer at once
      expect(r.response.status).toBe(304)
      expect(r.response.headers.etag).toBe('"e"')
      if (kind !== 'http10') expect(r.closed).toBe(false) // a whole response: the client's connection stays
    })

    test('Transfer-Encoding other than chunked: the body to the connection end, framed anew for the client', async () => {
      const r = await ask(lb.url, kind, '/gzip-coding')
      expect(r.response.status).toBe(200)
      expect(r.response.body.toString()).toBe('abc')
      expect(r.response.headers['transfer-encoding'] || '').not.toMatch(/gzip/)
    })

    test('a bad chunk after the head went out: the client connection is broken off, never ended as if whole', async () => {
      const r = await ask(lb.url, kind, '/bad-chunk', { waitCloseMs: 2000 })
      expect(r.closed).toBe(true)
      if (r.raw.length > 0) expect(r.raw).toMatch(/^HTTP\/1\.1 200 /)
      // no complete response; to an HTTP/1.0 client the body runs to the connection's end, so a
      // cut one cannot be told from a whole one (any proxy's limit)
      if (kind !== 'http10') expect(r.response).toBeUndefined()
      await closedUpstream(r.target)
    })
  })

  test.each(['/interim-continue', '/interim-several', '/interim-204', '/interim-304', '/interim-split'])('%s: the 1xx are dropped, the final answer arrives whole, the upstream connection kept', async (path) => {
    const expected = { '/interim-continue': [500, 'abc'], '/interim-several': [200, 'abc'], '/interim-204': [204, ''], '/interim-304': [304, ''], '/interim-split': [200, 'abc'] }[path]
    const carried = new Set()
    for (const kind of Object.keys(CLIENTS)) {
      const r = await ask(lb.url, kind, path)
      expect([kind, r.response && r.response.status, r.response && r.response.body.toString()]).toEqual([kind, ...expected])
      expect(r.raw).not.toMatch(/^HTTP\/1\.1 1/) // nginx's policy: no 1xx from an upstream reaches the client
      expect(upstream.connectionOf(r.target).closedByPeer).toBe(false)
      carried.add(upstream.connectionOf(r.target))
    }
    // each next request went on the pooled connection the last answer came on, and got its own answer
    const after = await ask(lb.url, 'fast', '/ok')
    expect(after.response.body.toString()).toBe('ok')
    carried.add(upstream.connectionOf(after.target))
    expect(carried.size).toBe(1)
  })

  test('an HTTP/1.0 keep-alive client\'s answer without a length says Connection: close when it ends the connection', async () => {
    // the body of a chunked answer goes to an HTTP/1.0 client close-delimited: its connection ends
    // after it, and the answer must say so, or a client that pipelined more waits for answers
    // that never come (the http-proxy library wrote the client's own `Connection: keep-alive`)
    const c = new RawConnection(lb.url)
    await c.send('GET /trailer-chunked?n=keep10 HTTP/1.0\r\nHost: t\r\nConnection: keep-alive\r\n\r\nGET /ok?n=after10 HTTP/1.1\r\nHost: t\r\n\r\n')
    const { responses } = await c.read(2, { timeoutMs: 2000 })
    c.destroy()
    const finals = responses.filter((r) => !r.interim)
    expect(finals[0].status).toBe(200)
    expect(finals[0].body.toString()).toBe('abc')
    if (finals.length < 2) expect(finals[0].headers.connection).toMatch(/close/i)
    else expect(finals[1].body.toString()).toBe('ok')
  })

  test('a HEAD answered with a body: the head is relayed, the upstream connection closed', async () => {
    for (const kind of Object.keys(CLIENTS)) {
      const r = await ask(lb.url, kind, '/trailer-length', { method: 'HEAD' }) // Content-Length: 3, then "abc"
      expect(r.response.status).toBe(200)
      expect(r.response.headers.trailer).toBeUndefined()
      expect(r.response.body.length).toBe(0)
      await closedUpstream(r.target)
    }
  })
})

describe.each(ENGINES)('the polistes process on the %s engine', (engine) => {
  let upstream
  beforeAll(async () => { upstream = await startRawUpstream() })
  afterAll(() => upstream.close())

  test('keeps running and serving after the responses that used to end it', async () => {
    const cli = startCli(['--port', '0', '--backends', upstream.url, '--engine', engine, '--max-fails', '1000'])
    try {
      const { url } = await cli.ready
      const expected = {
        '/trailer-chunked': 200,
        '/trailer-length': 200,
        '/trailer-204': 204,
        '/status-099': 502,
        '/switch-unasked': 502,
        '/reason-control': engine === 'direct' ? 502 : 200
      }
      for (const kind of ['http10', 'repeated', 'fast']) {
        for (const [path, status] of Object.entries(expected)) {
          const r = await ask(url, kind, path)
          expect([kind, path, r.response && r.response.status]).toEqual([kind, path, status])
        }
      }
      const next = await ask(url, 'fast', '/ok')
      expect(next.response.status).toBe(200)
      expect(alive(cli.child.pid)).toBe(true)
      expect(cli.child.exitCode).toBeNull()
      expect(cli.stderr()).not.toMatch(/ERR_HTTP|TypeError|RangeError/)
    } finally {
      cli.child.kill('SIGKILL')
      await cli.exited
    }
  })
})
