'use strict'

const net = require('node:net')
const { once } = require('node:events')
const { startBalancer } = require('../src/balancer')
const { parseSimpleRequest } = require('../src/front/fast-front')
const { startUpstream, sleep } = require('./helper')

const parse = (text, max = 16384) => parseSimpleRequest(Buffer.from(text, 'latin1'), 0, max)

describe('parseSimpleRequest', () => {
  test('a GET: method, target, headers by lower-case name with trimmed values, where the next request starts', () => {
    const text = 'GET /page1.html?x=1 HTTP/1.1\r\nHost: a:8080\r\nX-Thing: \t two words \r\n\r\nGET /'
    expect(parse(text)).toEqual({ method: 'GET', url: '/page1.html?x=1', headers: { host: 'a:8080', 'x-thing': 'two words' }, close: false, next: text.length - 5 })
  })

  test('Connection: close is noted; HEAD is simple too', () => {
    expect(parse('HEAD / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n')).toMatchObject({ method: 'HEAD', close: true })
  })

  test('one connection\'s name cache: names that change case, order or number between requests still parse as without it', () => {
    const { HeaderNames } = require('../src/common/header-names')
    const names = new HeaderNames()
    const heads = [
      'GET /a HTTP/1.1\r\nHost: a\r\nX-One: 1\r\n\r\n',
      'GET /b HTTP/1.1\r\nHOST: b\r\nx-one: 2\r\nX-Two: 3\r\n\r\n',
      'GET /c HTTP/1.1\r\nX-Two: 4\r\nHost: c\r\n\r\n',
      'GET /d HTTP/1.1\r\nHost: d\r\nHOST: e\r\n\r\n',
      'GET /e HTTP/1.1\r\nhost: f\r\nConnection: close\r\n\r\n'
    ]
    for (let round = 0; round < 2; round++) {
      for (const text of heads) expect(parseSimpleRequest(Buffer.from(text, 'latin1'), 0, 16384, names)).toEqual(parse(text))
    }
    expect(parse(heads[3])).toBeNull()
    expect(parse(heads[1]).headers).toEqual({ host: 'b', 'x-one': '2', 'x-two': '3' })
  })

  test('a head not whole yet is partial, unless it is already larger than maxHeaderSize', () => {
    expect(parse('GET / HTTP/1.1\r\nHost: a\r\n')).toBe('partial')
    expect(parse('GET / HTTP/1.1\r\nHost: ' + 'a'.repeat(2000), 1024)).toBeNull()
    expect(parse('GET / HTTP/1.1\r\nHost: ' + 'a'.repeat(2000) + '\r\n\r\n', 1024)).toBeNull()
  })

  test.each([
    ['POST', 'POST / HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['HTTP/1.0', 'GET / HTTP/1.0\r\nHost: a\r\n\r\n'],
    ['absolute-form', 'GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['no Host', 'GET / HTTP/1.1\r\nAccept: */*\r\n\r\n'],
    ['Host twice', 'GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'],
    ['any header twice', 'GET / HTTP/1.1\r\nHost: a\r\nCookie: a=1\r\ncookie: b=2\r\n\r\n'],
    ['a body (Content-Length)', 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n'],
    ['a body (Transfer-Encoding)', 'GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['an upgrade', 'GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'],
    ['an expectation', 'GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n'],
    ['Connection naming other headers', 'GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, x-a\r\n\r\n'],
    ['whitespace before a colon', 'GET / HTTP/1.1\r\nHost : a\r\n\r\n'],
    ['obsolete line folding', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n 2\r\n\r\n'],
    ['a control character in a value', 'GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n'],
    ['a byte above 0x7e in a value', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: caf\xe9\r\n\r\n'],
    ['a space in the target', 'GET /a b HTTP/1.1\r\nHost: a\r\n\r\n'],
    ['a bare LF', 'GET / HTTP/1.1\nHost: a\r\n\r\n']
  ])('not simple: %s (node:http takes it)', (title, text) => {
    expect(parse(text)).toBeNull()
  })
})

/** Send `bytes` on a new connection, read until `done(text)` or the socket ends; text and whether it closed. */
async function exchange (port, writes, { done = () => false, timeoutMs = 3000, keepOpen = false } = {}) {
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let text = ''
  let closed = false
  const finished = new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs)
    socket.on('data', (d) => {
      text += d.toString('latin1')
      if (done(text)) { clearTimeout(timer); resolve() }
    })
    socket.on('close', () => { closed = true; clearTimeout(timer); resolve() })
    socket.on('error', () => {})
  })
  for (const w of writes) {
    if (typeof w === 'number') await sleep(w)
    else socket.write(w)
  }
  await finished
  if (!keepOpen) socket.destroy()
  return { text, closed, socket }
}

const count = (text, what) => text.split(what).length - 1

describe('the fast front in front of a real upstream', () => {
  let upstream
  let chunked
  const balancers = []
  const start = async (options = {}) => {
    const lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, ...options })
    balancers.push(lb)
    return lb
  }
  beforeAll(async () => {
    // answers with the request it saw: method, target and the headers that matter here
    upstream = await startUpstream((req, res) => {
      let body = ''
      req.on('data', (d) => { body += d })
      req.on('end', () => {
        const text = JSON.stringify({ method: req.method, url: req.url, host: req.headers.host, xff: req.headers['x-forwarded-for'], via: req.headers.via, connection: req.headers.connection, body })
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'X-Cache': 'HIT' })
        res.end(req.method === 'HEAD' ? undefined : text)
      })
    })
    // a body without Content-Length: chunked on the wire
    chunked = await startUpstream((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      res.write('part one, ')
      setTimeout(() => res.end('part two'), 5)
    })
  })
  afterAll(async () => {
    await Promise.all(balancers.map((lb) => lb.close({ graceMs: 100 })))
    await upstream.close()
    await chunked.close()
  })

  test('keep-alive: two requests on one connection, each answered with Date, Connection: keep-alive and Keep-Alive', async () => {
    const lb = await start()
    const get = (path) => `GET ${path} HTTP/1.1\r\nHost: example.test\r\n\r\n`
    const { text, closed } = await exchange(lb.port, [get('/one'), 50, get('/two')], { done: (t) => count(t, '"method"') === 2 })
    expect(closed).toBe(false)
    expect(count(text, 'HTTP/1.1 200 OK\r\n')).toBe(2)
    expect(text).toMatch(/\r\nDate: \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT\r\n/)
    expect(text).toContain('\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n')
    expect(text).toContain('"url":"/one","host":"example.test","xff":"127.0.0.1","via":"1.1 polistes"')
    expect(text).toContain('"url":"/two"')
    expect(lb.stats()).toMatchObject({ requests: 2, responses: 2 })
  })

  test('pipelined requests in one write are answered in order', async () => {
    const lb = await start()
    const two = 'GET /first HTTP/1.1\r\nHost: a\r\n\r\nGET /second HTTP/1.1\r\nHost: a\r\n\r\n'
    const { text } = await exchange(lb.port, [two], { done: (t) => count(t, '"method"') === 2 })
    expect(text.indexOf('/first')).toBeGreaterThan(-1)
    expect(text.indexOf('/first')).toBeLessThan(text.indexOf('/second'))
  })

  test('a POST with a body after a simple GET on the same connection: node:http takes over, both answered in order', async () => {
    const lb = await start()
    const get = 'GET /plain HTTP/1.1\r\nHost: a\r\n\r\n'
    const post = 'POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello'
    const { text } = await exchange(lb.port, [get, 50, post], { done: (t) => count(t, '"method"') === 2 })
    expect(text).toContain('"method":"GET","url":"/plain"')
    expect(text).toContain('"method":"POST","url":"/form"')
    expect(text).toContain('"body":"hello"')
    expect(text.indexOf('/plain')).toBeLessThan(text.indexOf('/form'))
  })

  test('a head that arrives in pieces is served (by node:http)', async () => {
    const lb = await start()
    const { text } = await exchange(lb.port, ['GET /sl', 30, 'ow HTTP/1.1\r\nHo', 30, 'st: a\r\n\r\n'], { done: (t) => t.includes('"method"') })
    expect(text).toContain('"url":"/slow"')
  })

  test('Connection: close is answered with Connection: close and the connection is closed', async () => {
    const lb = await start()
    const { text, closed } = await exchange(lb.port, ['GET /bye HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'])
    expect(text).toContain('\r\nConnection: close\r\n')
    expect(text).toContain('"url":"/bye"')
    expect(closed).toBe(true)
  })

  test('HEAD: the head with the upstream\'s Content-Length and no body; the connection serves on', async () => {
    const lb = await start()
    const { text } = await exchange(lb.port, ['HEAD /h HTTP/1.1\r\nHost: a\r\n\r\n', 100, 'GET /after HTTP/1.1\r\nHost: a\r\n\r\n'], { done: (t) => t.includes('"url":"/after"') })
    const [headResponse, rest] = text.split('\r\n\r\n')
    expect(headResponse).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    expect(headResponse).toMatch(/\r\nContent-Length: \d+/)
    expect(rest).toMatch(/^HTTP\/1\.1 200 OK\r\n/) // the next response follows at once: no body in between
  })

  test('an upstream body without Content-Length reaches the client chunked and whole', async () => {
    const lb = await startBalancer({ backends: [chunked.url], algo: 'round-robin', port: 0 })
    balancers.push(lb)
    const { text } = await exchange(lb.port, ['GET /c HTTP/1.1\r\nHost: a\r\n\r\n'], { done: (t) => t.endsWith('0\r\n\r\n') })
    expect(text).toContain('\r\nTransfer-Encoding: chunked\r\n')
    const body = text.slice(text.indexOf('\r\n\r\n') + 4)
    expect(body).toBe('a\r\npart one, \r\n8\r\npart two\r\n0\r\n\r\n')
  })

  test('the admin prefix goes to node:http and is answered there', async () => {
    const lb = await start()
    const { text } = await exchange(lb.port, ['GET /_polistes/stats HTTP/1.1\r\nHost: a\r\n\r\n'], { done: (t) => t.includes('"upstreams"') })
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
  })

  test('an idle connection after a response is closed after keepAliveTimeoutMs', async () => {
    const lb = await start({ keepAliveTimeoutMs: 300 })
    const started = performance.now()
    const { text, closed } = await exchange(lb.port, ['GET /x HTTP/1.1\r\nHost: a\r\n\r\n'], { timeoutMs: 3000 })
    expect(text).toContain('"url":"/x"')
    expect(closed).toBe(true)
    expect(performance.now() - started).toBeLessThan(2000)
  })

  test('a connection that sends nothing gets 408 after headersTimeoutMs', async () => {
    const lb = await start({ headersTimeoutMs: 300, requestTimeoutMs: 1000 })
    const { text, closed } = await exchange(lb.port, [], { timeoutMs: 3000 })
    expect(closed).toBe(true)
    expect(text).toMatch(/^HTTP\/1\.1 408 /)
  })

  test('front "node" answers the same requests through node:http alone', async () => {
    const fast = await start()
    const node = await start({ front: 'node' })
    const req = 'GET /same HTTP/1.1\r\nHost: a\r\n\r\n'
    const a = await exchange(fast.port, [req], { done: (t) => t.includes('"method"') })
    const b = await exchange(node.port, [req], { done: (t) => t.includes('"method"') })
    const body = (t) => t.slice(t.indexOf('\r\n\r\n') + 4)
    expect(body(a.text)).toBe(body(b.text))
    const names = (t) => t.slice(0, t.indexOf('\r\n\r\n')).split('\r\n').slice(1).map((l) => l.split(':')[0].toLowerCase()).sort()
    expect(names(a.text)).toEqual(names(b.text))
  })

  test('an invalid front option is refused', async () => {
    await expect(startBalancer({ backends: [upstream.url], port: 0, front: 'turbo' })).rejects.toThrow(/front must be "fast" or "node"/)
  })
})
