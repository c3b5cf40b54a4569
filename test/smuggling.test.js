'use strict'

/**
 * Issue 25, "No client can touch another's response": request framing and validation over real
 * sockets, on every engine and both fronts. A raw node:net client talks to polistes, which talks to
 * one keep-alive upstream (node:http behind a TCP tap, test/helper.js startRecordingUpstream) that
 * answers each request with its own method, target and body: a desync between what polistes and
 * the upstream think a request is shows as one client receiving another's answer.
 */

const { startBalancer } = require('../src/balancer')
const { startRecordingUpstream, RawConnection, closedPort, startUpstream } = require('./helper')

/** Every engine, with each front it can run behind (http-proxy streams into node:http's response only). */
const SETUPS = [
  ['direct', 'fast'], ['direct', 'node'],
  ['node-http', 'fast'], ['node-http', 'node'],
  ['undici', 'fast'], ['undici', 'node'],
  ['http-proxy', 'node']
]

/** What the upstream answers: the request as it understood it. */
const echo = (req, res, record) => {
  req.on('end', () => res.end(`${req.method} ${req.url} [${record.body}]`))
}

/** Send `bytes` on a new connection and read `count` responses (bounded). */
async function exchange (base, bytes, { count = 1, methods } = {}) {
  const conn = new RawConnection(base)
  try {
    await conn.send(bytes)
    const { responses } = await conn.read(count, { methods, timeoutMs: 2000 })
    return responses
  } finally {
    conn.destroy()
  }
}

/**
 * A chunked body went up framed: chunked, or with its exact length (undici sends a stream body that
 * has ended by the time it writes the head with a Content-Length).
 */
function expectFramed (record, length) {
  const { headers } = record
  if (headers['transfer-encoding'] !== undefined) expect(headers['transfer-encoding']).toBe('chunked')
  else expect(headers['content-length']).toBe(String(length))
}

const SMUGGLED = 'GET /SMUGGLED HTTP/1.1\r\nHost: x\r\n\r\n'

describe.each(SETUPS)('request framing (engine %s, front %s)', (engine, front) => {
  let upstream
  let lb
  let base

  beforeAll(async () => {
    upstream = await startRecordingUpstream(echo)
    lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, engine, front })
    base = lb.url
  })
  afterAll(async () => {
    await lb.close({ graceMs: 0 })
    await upstream.close()
  })
  beforeEach(() => upstream.reset())

  /** The requests the upstream parsed, as `METHOD target`. */
  const seen = () => upstream.records.map((r) => `${r.method} ${r.url}`)

  describe('no Connection token removes the framing', () => {
    test.each([
      ['Connection: content-length', 'content-length'],
      ['Connection: close, content-length', 'close, content-length'],
      ['Connection: Content-Length, keep-alive', 'Content-Length, keep-alive']
    ])('%s: the body stays the POST\'s, and the next client gets its own answer', async (_name, connection) => {
      expect(SMUGGLED.length).toBe(35)
      const [first] = await exchange(base, `POST /a HTTP/1.1\r\nHost: x\r\nConnection: ${connection}\r\nContent-Length: 35\r\n\r\n${SMUGGLED}`)
      expect(first.status).toBe(200)
      expect(first.body.toString()).toBe(`POST /a [${SMUGGLED}]`)
      // another client, on the same pooled upstream connection
      const [victim] = await exchange(base, 'GET /victim HTTP/1.1\r\nHost: x\r\n\r\n')
      expect(victim.status).toBe(200)
      expect(victim.body.toString()).toBe('GET /victim []')
      expect(seen()).toEqual(['POST /a', 'GET /victim'])
      expect(upstream.records[0].headers['content-length']).toBe('35')
    })

    test('Connection: transfer-encoding: the chunked body goes up framed (chunked), and the next client gets its own answer', async () => {
      const body = `${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`
      const [first] = await exchange(base, `POST /a HTTP/1.1\r\nHost: x\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n${body}`)
      expect(first.status).toBe(200)
      expect(first.body.toString()).toBe(`POST /a [${SMUGGLED}]`)
      const [victim] = await exchange(base, 'GET /victim HTTP/1.1\r\nHost: x\r\n\r\n')
      expect(victim.body.toString()).toBe('GET /victim []')
      expect(seen()).toEqual(['POST /a', 'GET /victim'])
      expectFramed(upstream.records[0], SMUGGLED.length)
    })

    test('a GET with a body and Connection: content-length: the body is framed too', async () => {
      const [first] = await exchange(base, `GET /g HTTP/1.1\r\nHost: x\r\nConnection: content-length\r\nContent-Length: 35\r\n\r\n${SMUGGLED}`)
      expect(first.body.toString()).toBe(`GET /g [${SMUGGLED}]`)
      const [victim] = await exchange(base, 'GET /victim HTTP/1.1\r\nHost: x\r\n\r\n')
      expect(victim.body.toString()).toBe('GET /victim []')
      expect(seen()).toEqual(['GET /g', 'GET /victim'])
    })

    test('Connection: host does not strip Host; a header it names otherwise is still dropped', async () => {
      const [res] = await exchange(base, 'GET /h HTTP/1.1\r\nHost: shop.example\r\nConnection: host, x-hop\r\nX-Hop: 1\r\n\r\n')
      expect(res.status).toBe(200)
      expect(upstream.records[0].headers.host).toBe('shop.example')
      expect(upstream.records[0].headers['x-hop']).toBeUndefined()
    })

    test('the forwarded Content-Length is the parsed length, not the client\'s text', async () => {
      const [res] = await exchange(base, 'POST /z HTTP/1.1\r\nHost: x\r\nContent-Length: 0003\r\n\r\nabc')
      expect(res.body.toString()).toBe('POST /z [abc]')
      expect(upstream.records[0].headers['content-length']).toBe('3')
    })
  })

  // issue 25, fuzz case 593: llhttp refuses bytes after a request that ends the connection
  // (HPE_CLOSED_CONNECTION), and the front answered that with a 400 sent before, and instead of,
  // the answer to the request itself. RFC 9112 §9.6: those bytes are not processed; the answer
  // is due, then the close. (llhttp does not take `Keep-Alive` followed by HTAB or SP as the
  // keep-alive token: such an HTTP/1.0 request ends its connection too.)
  describe('a request that ends the connection gets its answer, whatever follows it', () => {
    test.each([
      ['HTTP/1.0', 'GET /a HTTP/1.0\r\nHost: x\r\n\r\n'],
      ['HTTP/1.0 with Keep-Alive and a trailing HTAB', 'GET /a HTTP/1.0\r\nHost: x\r\nConnection: Keep-Alive\t\r\n\r\n'],
      ['Connection: close', 'GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']
    ])('%s, then a pipelined request', async (name, head) => {
      const responses = await exchange(base, `${head}GET /b HTTP/1.1\r\nHost: x\r\n\r\n`, { count: 2 })
      expect(responses[0].status).toBe(200)
      expect(responses[0].body.toString()).toBe('GET /a []')
      // Node 20's llhttp does not take `Keep-Alive<HTAB>` as keep-alive, Node 22's and later do
      // (HTAB is optional whitespace, RFC 9110 §5.6.3): either way each request gets its own answer
      if (name.includes('HTAB') && responses[0].headers.connection !== 'close') {
        expect(responses.map((r) => [r.status, r.body.toString()])).toEqual([[200, 'GET /a []'], [200, 'GET /b []']])
        expect(seen()).toEqual(['GET /a', 'GET /b'])
        return
      }
      expect(responses.map((r) => r.status)).toEqual([200])
      expect(responses[0].headers.connection).toBe('close')
      expect(seen()).toEqual(['GET /a'])
    })
  })

  describe('one valid Host (RFC 9112 §3.2)', () => {
    test.each([
      ['two Host lines', 'Host: a\r\nHost: b'],
      ['two identical Host lines', 'Host: a\r\nHost: a'],
      ['a space', 'Host: a b'],
      ['userinfo', 'Host: user@a'],
      ['a path', 'Host: a/b'],
      ['a backslash', 'Host: a\\b'],
      ['a bad port', 'Host: a:xyz'],
      ['a port above 65535', 'Host: a:65536'],
      ['an empty value', 'Host: '],
      ['a bad IPv6 literal', 'Host: [zz::1]'],
      ['no Host in HTTP/1.1', 'Accept: */*']
    ])('%s is answered 400 and nothing is forwarded', async (_name, lines) => {
      const responses = await exchange(base, `GET /h HTTP/1.1\r\n${lines}\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n`, { count: 2 })
      expect(responses.map((r) => r.status)).toEqual([400]) // and the connection is closed
      expect(seen()).toEqual([])
    })

    test.each([
      ['a name and port', 'shop.example:8443'],
      ['an IPv4 address', '127.0.0.1'],
      ['an IPv6 literal with a port', '[::1]:8080'],
      ['sub-delims and escapes', "a-b_c~d!$&'()*+,;=%41"],
      ['an empty port', 'a:']
    ])('%s is forwarded', async (_name, host) => {
      const [res] = await exchange(base, `GET /h HTTP/1.1\r\nHost: ${host}\r\n\r\n`)
      expect(res.status).toBe(200)
      expect(upstream.records[0].headers.host).toBe(host)
    })

    test('an HTTP/1.0 request without Host is still forwarded', async () => {
      const [res] = await exchange(base, 'GET /old HTTP/1.0\r\n\r\n')
      expect(res.status).toBe(200)
      expect(seen()).toEqual(['GET /old'])
    })
  })

  describe('Transfer-Encoding', () => {
    test.each([
      ['gzip, chunked', 'Transfer-Encoding: gzip, chunked', 501],
      ['identity, chunked', 'Transfer-Encoding: identity, chunked', 501],
      ['two lines, gzip then chunked', 'Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked', 501],
      ['chunked with Content-Length', 'Transfer-Encoding: chunked\r\nContent-Length: 3', 400],
      ['chunked, not last', 'Transfer-Encoding: chunked, gzip', 400]
    ])('%s is refused (%#) and nothing is forwarded', async (_name, lines, status) => {
      const responses = await exchange(base, `POST /t HTTP/1.1\r\nHost: x\r\n${lines}\r\n\r\n3\r\nabc\r\n0\r\n\r\n`, { count: 2 })
      expect(responses.map((r) => r.status)).toEqual([status])
      expect(seen()).toEqual([])
    })

    test('Transfer-Encoding in an HTTP/1.0 request is refused with 400', async () => {
      const responses = await exchange(base, 'POST /t HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n')
      expect(responses.map((r) => r.status)).toEqual([400])
      expect(seen()).toEqual([])
    })

    // issue 25, fuzz case 610: http-proxy-3's deleteLength pass rewrote the framing of a DELETE or
    // OPTIONS without Content-Length to `Content-Length: 0` yet still sent the body, which the
    // upstream parsed as the next request
    test.each(['DELETE', 'OPTIONS'])('a chunked %s body goes up framed, and what it holds is no request', async (method) => {
      const body = `${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`
      const [first] = await exchange(base, `${method} /d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${body}`)
      expect(first.status).toBe(200)
      expect(first.body.toString()).toBe(`${method} /d [${SMUGGLED}]`)
      const [victim] = await exchange(base, 'GET /victim HTTP/1.1\r\nHost: x\r\n\r\n')
      expect(victim.body.toString()).toBe('GET /victim []')
      expect(seen()).toEqual([`${method} /d`, 'GET /victim'])
      expectFramed(upstream.records[0], SMUGGLED.length)
    })

    test('chunked in any case is forwarded as chunked', async () => {
      const [res] = await exchange(base, 'POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n')
      expect(res.body.toString()).toBe('POST /t [abc]')
      expectFramed(upstream.records[0], 3)
    })
  })
})

// issue 25, fuzz case 633: an answer of unknown length cannot be kept alive to an HTTP/1.0 client
// (no chunked coding there), so node:http closes after it. The http-proxy engine's library copied
// the client's `Connection: Keep-Alive` onto that answer: the client was told keep-alive, waited,
// and what it had pipelined behind went unanswered.
describe.each(SETUPS)('an HTTP/1.0 keep-alive client and an answer of unknown length (engine %s, front %s)', (engine, front) => {
  let upstream
  let lb
  beforeAll(async () => {
    upstream = await startRecordingUpstream((req, res) => {
      req.resume()
      req.on('end', () => {
        res.write(`${req.method} `)
        res.end(req.url) // chunked to polistes
      })
    })
    lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, engine, front })
  })
  afterAll(async () => {
    await lb.close({ graceMs: 0 })
    await upstream.close()
  })

  test.each(['Keep-Alive', '\tKeep-Alive', 'Keep-Alive\t'])('Connection: %j: the answer says close, and the connection closes', async (value) => {
    const conn = new RawConnection(lb.url)
    try {
      await conn.send(`GET /a HTTP/1.0\r\nHost: x\r\nConnection: ${value}\r\n\r\nGET /b HTTP/1.0\r\nHost: x\r\nConnection: Keep-Alive\r\n\r\n`)
      const { responses, closed } = await conn.read(2, { timeoutMs: 2000 })
      expect(responses[0].status).toBe(200)
      expect(responses[0].body.toString()).toBe('GET /a')
      expect(responses[0].headers['transfer-encoding']).toBeUndefined()
      expect(responses[0].headers.connection).toMatch(/^close$/i)
      expect(responses.length).toBe(1)
      expect(closed).toBe(true)
    } finally {
      conn.destroy()
    }
  })
})

describe.each(SETUPS)('error responses name no upstream (engine %s, front %s)', (engine, front) => {
  test('502 and 504 keep X-Polistes-Error and show no address', async () => {
    const port = await closedPort()
    const silent = await startUpstream(() => {}) // never answers
    const lb = await startBalancer({ backends: [`http://127.0.0.1:${port}`], algo: 'round-robin', port: 0, engine, front, retries: 0 })
    const slow = await startBalancer({ backends: [silent.url], algo: 'round-robin', port: 0, engine, front, timeoutMs: 200 })
    try {
      const [bad] = await exchange(lb.url, 'GET /x HTTP/1.1\r\nHost: x\r\n\r\n')
      expect(bad.status).toBe(502)
      expect(bad.headers['x-polistes-error']).toBe('connect')
      expect(bad.body.toString()).not.toMatch(/127\.0\.0\.1|:\d{2,5}\b/)
      const [late] = await exchange(slow.url, 'GET /x HTTP/1.1\r\nHost: x\r\n\r\n')
      expect(late.status).toBe(504)
      expect(late.headers['x-polistes-error']).toBe('timeout')
      expect(late.body.toString()).not.toMatch(/127\.0\.0\.1|:\d{2,5}\b/)
    } finally {
      await lb.close({ graceMs: 0 })
      await slow.close({ graceMs: 0 })
      await silent.close()
    }
  })
})

describe('WebSocket upgrade framing', () => {
  let upstream
  let lb
  beforeAll(async () => {
    // declines every upgrade, with the request as it understood it
    upstream = await startRecordingUpstream((req, res, record) => {
      req.on('end', () => {
        res.writeHead(426, { 'x-host': req.headers.host || '-' })
        res.end(`${req.method} ${req.url} [${record.body}]`)
      })
    })
    lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0 })
  })
  afterAll(async () => {
    await lb.close({ graceMs: 0 })
    await upstream.close()
  })
  beforeEach(() => upstream.reset())

  const UPGRADE = 'GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n'

  test('Connection: upgrade, host keeps the client\'s Host', async () => {
    const [res] = await exchange(lb.url, `${UPGRADE}Host: shop.example\r\nConnection: upgrade, host\r\n\r\n`)
    expect(res.status).toBe(426)
    expect(res.headers['x-host']).toBe('shop.example')
  })

  test.each([
    ['a Content-Length body', 'Connection: upgrade, content-length\r\nContent-Length: 35\r\n\r\n' + SMUGGLED],
    ['a chunked body', 'Connection: upgrade, transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'],
    ['two Host lines', 'Host: y\r\nConnection: upgrade\r\n\r\n']
  ])('an upgrade with %s is refused with 400 and nothing is forwarded', async (_name, rest) => {
    const responses = await exchange(lb.url, `${UPGRADE}Host: x\r\n${rest}`)
    expect(responses.map((r) => r.status)).toEqual([400])
    expect(upstream.records).toEqual([])
  })
})

describe('the pure rules', () => {
  const { checkRequest, validHost } = require('../src/proxy/request-checks')
  const { requestHeaders, responseHead } = require('../src/proxy/engines/headers')

  test.each([
    ['a', true], ['a:', true], ['a:80', true], ['a:65535', true], ['[::1]', true], ['[::1]:80', true],
    ['%41b', true], ["a-b_c~d!$&'()*+,;=", true], ['127.0.0.1:8080', true],
    ['', false], [':80', false], ['a:65536', false], ['a:000080', false], ['a:x', false], ['a b', false],
    ['u@a', false], ['a/b', false], ['a\\b', false], ['a\tb', false], ['a\x7fb', false], ['é', false],
    ['%4', false], ['%zz', false], ['[zz::1]', false], ['[::1', false], ['[v1.x]', false], ['[::1]x', false]
  ])('validHost(%j) is %s, also when asked twice', (value, valid) => {
    expect(validHost(value)).toBe(valid)
    expect(validHost(value)).toBe(valid)
  })

  test('checkRequest: the fast front\'s request (no rawHeaders) and node:http\'s', () => {
    expect(checkRequest({ httpVersion: '1.1', headers: { host: 'a' } })).toBeNull()
    expect(checkRequest({ httpVersion: '1.0', headers: {} })).toBeNull()
    expect(checkRequest({ httpVersion: '1.1', headers: {} })).toMatchObject({ status: 400, reason: 'host' })
    expect(checkRequest({ httpVersion: '1.1', headers: { host: 'a' }, rawHeaders: ['HOST', 'a', 'host', 'a'] })).toMatchObject({ status: 400, reason: 'host' })
    expect(checkRequest({ httpVersion: '1.1', headers: { host: 'a', 'transfer-encoding': 'chunked' }, rawHeaders: ['Host', 'a'] })).toBeNull()
    expect(checkRequest({ httpVersion: '1.1', headers: { host: 'a', 'transfer-encoding': 'x-chunked' } })).toMatchObject({ status: 501, reason: 'transfer-encoding' })
  })

  const req = (headers) => ({ headers, socket: { remoteAddress: '127.0.0.1' } })
  const framing = (out) => out.filter((_, i) => i % 2 === 0 && /^(content-length|transfer-encoding|host)$/.test(out[i])).map((name) => `${name}: ${out[out.indexOf(name) + 1]}`)

  test.each([
    ['a length named by Connection', { host: 'a', connection: 'content-length', 'content-length': '35' }, true, ['host: a', 'content-length: 35']],
    ['chunked named by Connection', { host: 'a', connection: 'transfer-encoding', 'transfer-encoding': 'chunked' }, true, ['host: a', 'transfer-encoding: chunked']],
    ['chunked, announced by the engine itself (undici)', { host: 'a', 'transfer-encoding': 'chunked' }, false, ['host: a']],
    ['Host named by Connection', { host: 'a', connection: 'host, close' }, true, ['host: a']],
    ['a length with leading zeros', { host: 'a', 'content-length': '0035' }, true, ['host: a', 'content-length: 35']],
    ['no body', { host: 'a' }, true, ['host: a']]
  ])('requestHeaders frames %s itself', (_name, headers, keepTransferEncoding, want) => {
    expect(framing(requestHeaders(req(headers), { keepTransferEncoding, close: false }))).toEqual(want)
  })

  test('a response\'s Connection cannot drop its Content-Length either', () => {
    expect(responseHead(['Connection', 'content-length', 'Content-Length', '3']).raw).toEqual(['Content-Length', '3'])
    const out = requestHeaders(req({ host: 'a', connection: 'Host, Content-Length, Transfer-Encoding, X-Hop', 'content-length': '3', 'x-hop': '1' }), { keepTransferEncoding: true, close: false })
    expect(framing(out)).toEqual(['host: a', 'content-length: 3'])
    expect(out).not.toContain('x-hop')
  })
})
