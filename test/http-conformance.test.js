'use strict'

/**
 * HTTP/1.1 conformance through the real CLI process (issue 9): one recording upstream, raw bytes
 * from the client side where an ordinary client would not send them. Runs once per proxy engine.
 */

const http = require('node:http')
const net = require('node:net')
const crypto = require('node:crypto')
const { once } = require('node:events')
const { startCli, startRecordingUpstream, RawConnection, rawRequest, parseResponses, waitFor, sleep } = require('./helper')

/** The engines every conformance test runs over; `default` passes no `--engine` flag. */
const ENGINES = ['default', 'http-proxy', 'node-http', 'undici']
const engineArgs = (engine) => (engine === 'default' ? [] : ['--engine', engine])

describe.each(ENGINES)('HTTP conformance through the CLI (engine %s)', (engine) => {
  let upstream
  let cli
  let base
  let host

  beforeAll(async () => {
    upstream = await startRecordingUpstream()
    cli = startCli(['--port', '0', '--backends', upstream.url, '--algo', 'round-robin', ...engineArgs(engine)])
    base = (await cli.ready).url
    host = new URL(base).host
  })
  afterAll(async () => {
    cli.child.kill('SIGKILL')
    await cli.exited
    await upstream.close()
  })
  beforeEach(() => upstream.reset())
  afterEach(() => {
    expect(cli.child.exitCode).toBeNull() // the process is alive after every test
  })

  /** A GET on a fresh connection that must be answered 200 (the proxy still works). */
  const expectAlive = async () => {
    const res = await rawRequest(base, '/alive')
    expect(res.status).toBe(200)
  }

  describe('methods and conditional requests', () => {
    test('HEAD is answered without a body and the connection stays usable', async () => {
      upstream.handler = (req, res) => {
        res.setHeader('content-type', 'text/plain')
        res.setHeader('content-length', '11')
        res.end(req.method === 'HEAD' ? undefined : 'hello world')
      }
      const conn = new RawConnection(base)
      try {
        await conn.send(`HEAD /h HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
        const head = await conn.read(1, { methods: ['HEAD'] })
        expect(head.responses.map((r) => r.status)).toEqual([200])
        expect(head.responses[0].headers['content-length']).toBe('11')
        await sleep(100)
        expect(conn.unread().length).toBe(0) // not one body byte after the HEAD response
        await conn.send(`GET /h HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
        const get = await conn.read(1)
        expect(get.closed).toBe(false)
        expect(get.responses[0].status).toBe(200)
        expect(get.responses[0].body.toString()).toBe('hello world')
        expect(upstream.records.map((r) => r.method)).toEqual(['HEAD', 'GET'])
      } finally {
        conn.destroy()
      }
    })

    test('Range reaches the upstream and its 206 with Content-Range comes back', async () => {
      const content = Buffer.from('0123456789abcdef')
      upstream.handler = (req, res) => {
        const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range || '')
        if (!m) return res.end(content)
        const [from, to] = [Number(m[1]), Number(m[2])]
        res.writeHead(206, { 'content-range': `bytes ${from}-${to}/${content.length}`, 'accept-ranges': 'bytes' })
        res.end(content.subarray(from, to + 1))
      }
      const res = await rawRequest(base, '/r', { headers: { range: 'bytes=2-5' } })
      expect(res.status).toBe(206)
      expect(res.headers['content-range']).toBe('bytes 2-5/16')
      expect(res.body.toString()).toBe('2345')
      expect(upstream.records[0].headers.range).toBe('bytes=2-5')
    })

    test('If-None-Match reaches the upstream and its 304 comes back without a body', async () => {
      upstream.handler = (req, res) => {
        if (req.headers['if-none-match'] === '"v1"') {
          res.writeHead(304, { etag: '"v1"' })
          return res.end()
        }
        res.writeHead(200, { etag: '"v1"' })
        res.end('fresh body')
      }
      const conn = new RawConnection(base)
      try {
        await conn.send(`GET /c HTTP/1.1\r\nHost: ${host}\r\nIf-None-Match: "v1"\r\n\r\n`)
        const first = await conn.read(1)
        expect(first.responses[0].status).toBe(304)
        expect(first.responses[0].headers.etag).toBe('"v1"')
        await sleep(100)
        expect(conn.unread().length).toBe(0)
        await conn.send(`GET /c HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
        const second = await conn.read(1)
        expect(second.responses[0].status).toBe(200)
        expect(second.responses[0].body.toString()).toBe('fresh body')
        expect(upstream.records[0].headers['if-none-match']).toBe('"v1"')
      } finally {
        conn.destroy()
      }
    })
  })

  describe('forwarding headers', () => {
    test('the client\'s X-Forwarded-For is replaced by its address (no trusted proxies); X-Forwarded-Host and -Proto are set', async () => {
      await rawRequest(base, '/xff', { headers: { host: 'shop.example:8443', 'x-forwarded-for': '203.0.113.7' } })
      const { headers } = upstream.records[0]
      expect(headers['x-forwarded-for']).toBe('127.0.0.1')
      expect(headers['x-forwarded-host']).toBe('shop.example:8443')
      expect(headers['x-forwarded-proto']).toBe('http')
      expect(headers.host).toBe('shop.example:8443') // the client's Host is kept, as nginx's proxy_set_header Host $host
    })

    test('an HTTP/1.0 request without Host goes upstream with the upstream\'s Host and no X-Forwarded-Host', async () => {
      const conn = new RawConnection(base)
      try {
        await conn.send('GET /no-host HTTP/1.0\r\n\r\n')
        const { responses } = await conn.read(1)
        expect(responses.map((r) => r.status)).toEqual([200])
      } finally {
        conn.destroy()
      }
      const { headers } = upstream.records[0]
      expect(headers.host).toBe(new URL(upstream.url).host)
      expect(headers).not.toHaveProperty('x-forwarded-host')
    })

    test('without X-Forwarded-For from the client, the client address alone is sent', async () => {
      await rawRequest(base, '/xff')
      expect(upstream.records[0].headers['x-forwarded-for']).toBe('127.0.0.1')
    })
  })

  describe('hop-by-hop headers', () => {
    test('the client\'s hop-by-hop headers and those its Connection names never reach the upstream', async () => {
      const conn = new RawConnection(base)
      try {
        await conn.send([
          'GET /hop HTTP/1.1', `Host: ${host}`, 'Connection: keep-alive, X-Client-Hop', 'X-Client-Hop: secret',
          'Keep-Alive: timeout=99', 'Proxy-Connection: keep-alive', 'X-End-To-End: kept', '', ''
        ].join('\r\n'))
        const { responses } = await conn.read(1)
        expect(responses[0].status).toBe(200)
      } finally {
        conn.destroy()
      }
      const { headers } = upstream.records[0]
      expect(headers['x-client-hop']).toBeUndefined()
      expect(headers['keep-alive']).toBeUndefined()
      expect(headers['proxy-connection']).toBeUndefined()
      expect(headers.connection || '').not.toMatch(/x-client-hop/i)
      expect(headers['x-end-to-end']).toBe('kept')
    })

    test('the upstream\'s hop-by-hop headers and those its Connection names never reach the client', async () => {
      upstream.handler = (req, res) => {
        res.setHeader('connection', 'keep-alive, X-Upstream-Hop')
        res.setHeader('x-upstream-hop', 'internal')
        res.setHeader('keep-alive', 'timeout=77, max=9')
        res.setHeader('proxy-connection', 'keep-alive')
        res.setHeader('x-end-to-end', 'kept')
        res.end('ok')
      }
      const conn = new RawConnection(base)
      try {
        await conn.send(`GET /hop HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
        const { responses } = await conn.read(1)
        const { headers } = responses[0]
        expect(responses[0].status).toBe(200)
        expect(headers['x-upstream-hop']).toBeUndefined()
        expect(headers['keep-alive'] || '').not.toMatch(/77/) // the proxy may announce its own keep-alive
        expect(headers['proxy-connection']).toBeUndefined()
        expect(headers.connection || '').not.toMatch(/x-upstream-hop/i)
        expect(headers['x-end-to-end']).toBe('kept')
      } finally {
        conn.destroy()
      }
    })
  })

  describe('request bodies', () => {
    const MiB = crypto.randomBytes(1024 * 1024)
    const digest = crypto.createHash('sha256').update(MiB).digest('hex')
    const echoDigest = (req, res, record) => req.on('end', () => res.end(record.sha256))

    test('a 1 MiB POST with Content-Length arrives byte for byte', async () => {
      upstream.handler = echoDigest
      const res = await rawRequest(base, '/upload', { method: 'POST', headers: { 'content-length': MiB.length }, body: MiB, timeoutMs: 10000 })
      expect(res.status).toBe(200)
      expect(res.body.toString()).toBe(digest)
      expect(upstream.records[0].body.length).toBe(MiB.length)
      expect(upstream.records[0].sha256).toBe(digest)
    })

    test('a 1 MiB chunked POST arrives byte for byte', async () => {
      upstream.handler = echoDigest
      const { port, hostname } = new URL(base)
      const res = await new Promise((resolve, reject) => {
        const req = http.request({ host: hostname, port, method: 'POST', path: '/upload', agent: false }, (r) => {
          const chunks = []
          r.on('data', (c) => chunks.push(c))
          r.on('end', () => resolve({ status: r.statusCode, body: Buffer.concat(chunks).toString() }))
        })
        req.setTimeout(10000, () => req.destroy(new Error('timeout')))
        req.on('error', reject)
        for (let i = 0; i < MiB.length; i += 64 * 1024) req.write(MiB.subarray(i, i + 64 * 1024))
        req.end()
      })
      expect(res.status).toBe(200)
      expect(res.body).toBe(digest)
      expect(upstream.records[0].sha256).toBe(digest)
      expect(upstream.records[0].body.length).toBe(MiB.length)
    })

    test.each([
      ['a GET', 'GET /t HTTP/1.1\r\nHost: x\r\nTrailer: X-Checksum\r\n\r\n', ''],
      ['a POST with Content-Length', 'POST /t HTTP/1.1\r\nHost: x\r\nTrailer: X-Checksum\r\nContent-Length: 3\r\n\r\nabc', 'abc'],
      ['a POST with Expect', 'POST /t HTTP/1.1\r\nHost: x\r\nTrailer: X-Checksum\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc', 'abc'],
      ['a chunked POST with the trailer', 'POST /t HTTP/1.1\r\nHost: x\r\nTrailer: X-Checksum\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Checksum: 1\r\n\r\n', 'abc']
    ])('%s announcing a Trailer is forwarded and the process lives on', async (_name, bytes, sent) => {
      upstream.handler = (req, res, record) => req.on('end', () => res.end(record.body))
      const conn = new RawConnection(base)
      try {
        await conn.send(bytes)
        const { responses } = await conn.read(1)
        const final = responses.filter((r) => !r.interim)
        expect(final.map((r) => r.status)).toEqual([200])
        expect(final[0].body.toString()).toBe(sent)
      } finally {
        conn.destroy()
      }
      await expectAlive()
    })

    test('Expect: 100-continue gets 100 Continue before the body is sent, then the final answer; Expect and hop-by-hop headers stay here', async () => {
      upstream.handler = echoDigest
      const body = Buffer.from('the body after 100')
      const conn = new RawConnection(base)
      try {
        await conn.send(`POST /expect HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: X-Client-Hop\r\nX-Client-Hop: 1\r\n\r\n`)
        await waitFor(() => parseResponses(conn.unread()).responses.length > 0) // the body is held back until then
        expect(parseResponses(conn.unread()).responses.map((r) => r.status)).toEqual([100])
        await conn.send(body)
        const { responses } = await conn.read(1)
        expect(responses.map((r) => r.status)).toEqual([100, 200])
        expect(responses[1].body.toString()).toBe(crypto.createHash('sha256').update(body).digest('hex'))
        expect(upstream.records[0].body.toString()).toBe(body.toString())
        expect(upstream.records[0].headers.expect).toBeUndefined() // answered here, as nginx does
        expect(upstream.records[0].headers['x-client-hop']).toBeUndefined()
      } finally {
        conn.destroy()
      }
    })
  })

  describe('connection handling', () => {
    test.each([
      ['userinfo-like with a bad escape', '//%zz@x/a'],
      ['userinfo-like with bad UTF-8', '//%E0@x/a'],
      ['backslashes', '/a\\b/..\\c']
    ])('an origin-form target (%s) reaches the upstream unparsed and verbatim, and the process lives on', async (_name, target) => {
      const conn = new RawConnection(base)
      try {
        await conn.send(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
        const { responses } = await conn.read(1)
        expect(responses.map((r) => r.status)).toEqual([200])
      } finally {
        conn.destroy()
      }
      // every engine sends it verbatim (http-proxy 1.18, before 0.2, merged runs of slashes)
      expect(upstream.records[0].url).toBe(target)
      await expectAlive()
    })

    test('pipelined requests are answered in order even when the first is the slowest', async () => {
      const delays = { '/p1': 150, '/p2': 0, '/p3': 50 }
      upstream.handler = (req, res) => setTimeout(() => res.end(`answer ${req.url}`), delays[req.url] ?? 0)
      const conn = new RawConnection(base)
      try {
        await conn.send(Object.keys(delays).map((p) => `GET ${p} HTTP/1.1\r\nHost: ${host}\r\n\r\n`).join(''))
        const { responses } = await conn.read(3)
        expect(responses.map((r) => r.body.toString())).toEqual(['answer /p1', 'answer /p2', 'answer /p3'])
      } finally {
        conn.destroy()
      }
    })

    test.each([
      ['Content-Length with Transfer-Encoding', 'Content-Length: 4\r\nTransfer-Encoding: chunked'],
      ['Transfer-Encoding with Content-Length', 'Transfer-Encoding: chunked\r\nContent-Length: 4'],
      ['two different Content-Lengths', 'Content-Length: 4\r\nContent-Length: 40'],
      ['a Content-Length list', 'Content-Length: 4, 40'],
      ['an obfuscated Transfer-Encoding', 'Transfer-Encoding : chunked'],
      ['a Transfer-Encoding that does not end in chunked', 'Transfer-Encoding: chunked, identity']
    ])('smuggling attempt with %s is refused with 400 and nothing is forwarded', async (_name, framing) => {
      const conn = new RawConnection(base)
      try {
        await conn.send(`POST /front HTTP/1.1\r\nHost: ${host}\r\n${framing}\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
        const { responses } = await conn.read(2, { timeoutMs: 1500 })
        expect(responses.map((r) => r.status)).toEqual([400])
        expect(await conn.waitClosed()).toBe(true)
      } finally {
        conn.destroy()
      }
      await expectAlive()
      expect(upstream.requestLines()).toEqual(['GET /alive HTTP/1.1']) // neither the front request nor the smuggled one
    })

    test.each([
      ['garbage', 'HELLO\r\n\r\n'],
      ['a space in the target', 'GET /a b HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['an unknown version', 'GET / HTTP/7.3\r\nHost: x\r\n\r\n'],
      ['a header without a colon', 'GET / HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n'],
      ['a bad chunk size', 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n'],
      ['no Host in HTTP/1.1', 'GET / HTTP/1.1\r\nAccept: */*\r\n\r\n'],
      ['headers over 16 KiB', `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`, 431]
    ])('a malformed request (%s) is answered 400 (or its own 4xx) and the process lives on', async (_name, bytes, status = 400) => {
      const conn = new RawConnection(base)
      try {
        await conn.send(bytes)
        const { responses } = await conn.read(1)
        expect(responses.map((r) => r.status)).toEqual([status])
        expect(await conn.waitClosed()).toBe(true)
      } finally {
        conn.destroy()
      }
      await expectAlive()
      expect(upstream.requestLines()).toEqual(['GET /alive HTTP/1.1'])
    })

    test.each([
      ['an absolute-form target', 'GET http://other.example/abs HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['an absolute-form target on an upgrade', 'GET http://other.example/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'],
      ['an asterisk-form target', 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['CONNECT (authority-form)', 'CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n']
    ])('%s is answered 400, nothing is forwarded and the process lives on', async (_name, bytes) => {
      const conn = new RawConnection(base)
      try {
        await conn.send(bytes)
        const { responses } = await conn.read(1)
        expect(responses.map((r) => r.status)).toEqual([400])
      } finally {
        conn.destroy()
      }
      await expectAlive()
      expect(upstream.requestLines()).toEqual(['GET /alive HTTP/1.1'])
    })
  })

  describe('upgrades', () => {
    test('a WebSocket upgrade is tunnelled to the upstream, bytes both ways', async () => {
      const upgraded = []
      const onUpgrade = (req, socket, head) => {
        upgraded.push({ url: req.url, headers: req.headers })
        const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64')
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
        socket.write('server-hello;')
        if (head.length) socket.write(Buffer.concat([Buffer.from('echo:'), head]))
        socket.on('data', (d) => socket.write(Buffer.concat([Buffer.from('echo:'), d])))
        socket.on('end', () => socket.end())
      }
      upstream.server.on('upgrade', onUpgrade)
      const conn = new RawConnection(base)
      try {
        await conn.send(`GET /ws HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`)
        const { responses } = await conn.read(1)
        expect(responses.map((r) => r.status)).toEqual([101])
        expect(responses[0].headers['sec-websocket-accept']).toBe('s3pPLMBiTxaQ9kYGzzhZRbK+xOo=')
        await conn.send('client-bytes')
        const end = Date.now() + 3000
        while (!conn.unread().toString().includes('echo:client-bytes') && Date.now() < end) await sleep(10)
        expect(conn.unread().toString()).toBe('server-hello;echo:client-bytes')
        expect(upgraded.map((u) => u.url)).toEqual(['/ws'])
        expect(upgraded[0].headers.upgrade).toBe('websocket')
      } finally {
        conn.destroy()
        upstream.server.off('upgrade', onUpgrade)
      }
    })
  })

  // TE is hop-by-hop (RFC 9110 §10.1.4), hop-by-hop stripping holds with --no-keep-alive too, and
  // Via names polistes on the requests it forwards (RFC 9110 §7.6.3).
  describe('hop-by-hop without keep-alive, TE and Via', () => {
    let plain
    let plainBase
    beforeAll(async () => {
      plain = startCli(['--port', '0', '--backends', upstream.url, '--algo', 'round-robin', '--no-keep-alive', ...engineArgs(engine)])
      plainBase = (await plain.ready).url
    })
    afterAll(async () => {
      plain.child.kill('SIGKILL')
      await plain.exited
    })

    // stripHopByHop() does not remove TE (hop-by-hop, RFC 9110 §7.6.1 and §10.1.4; nginx clears it)
    test('TE never reaches the upstream', async () => {
      await rawRequest(base, '/te', { headers: { te: 'trailers' } })
      expect(upstream.records[0].headers.te).toBeUndefined()
    })

    // with --no-keep-alive stripHopByHop() is not called at all (`if (agent)` in the proxyReq listener)
    test('with --no-keep-alive the client\'s hop-by-hop headers never reach the upstream either', async () => {
      await rawRequest(plainBase, '/hop', { headers: { connection: 'keep-alive, X-Client-Hop', 'x-client-hop': 'secret', 'keep-alive': 'timeout=99', 'proxy-connection': 'keep-alive' } })
      const { headers } = upstream.records[0]
      expect(headers['x-client-hop']).toBeUndefined()
      expect(headers['keep-alive']).toBeUndefined()
      expect(headers['proxy-connection']).toBeUndefined()
      expect(headers.connection).toBe('close')
    })

    // RFC 9110 §7.6.3: a gateway MUST send Via on the requests it forwards (nginx and HAProxy only
    // with explicit configuration); it also lets polistes see a request that loops back to itself
    test('Via: 1.1 polistes is appended to the requests forwarded upstream, never added to responses', async () => {
      const res = await rawRequest(base, '/via', { headers: { via: '1.0 fred' } })
      expect(upstream.records[0].headers.via).toBe('1.0 fred, 1.1 polistes')
      expect(res.headers.via).toBeUndefined()
      await rawRequest(base, '/via')
      expect(upstream.records[1].headers.via).toBe('1.1 polistes')
    })
  })

  test('the recording upstream counts raw request lines (the smuggling tests rely on it)', async () => {
    const socket = net.connect(Number(new URL(upstream.url).port), '127.0.0.1')
    socket.end('GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    socket.resume()
    await once(socket, 'close')
    expect(upstream.requestLines()).toEqual(['GET /one HTTP/1.1', 'GET /two HTTP/1.1'])
  })
})
