'use strict'

// Bytes an upstream sends beyond its answer (issue 25, "No client can touch another's response"):
// a second, unasked-for response, late (after a pause, while the connection waits in the pool) or
// in the same write as the answer. They must reach no client: the next request gets its own
// answer, and the connection they came on is closed, never handed to another request. A raw
// node:net upstream writes the bytes; clients on raw sockets; every engine, both fronts.

const net = require('node:net')
const { startBalancer } = require('../src/balancer')
const { ENGINES, engineTakesFront } = require('../src/proxy/proxy-engine')
const { RawConnection, waitFor, sleep } = require('./helper')

const POISON = 'HTTP/1.1 200 OK\r\nX-Id: poison\r\nContent-Length: 6\r\n\r\npoison'
/**
 * A second message cut in two: its start in the same write as an answer, the rest after a pause.
 * `/partial-head`: the poison's head cut; `/partial-interim`: a 100 Continue cut before its last
 * CRLF, whose rest (the CRLF, then the poison) reads as a whole response to a parser that starts there.
 */
const PARTIAL = {
  '/partial-head': [POISON.slice(0, 20), POISON.slice(20)],
  '/partial-interim': ['HTTP/1.1 100 Continue\r\n', '\r\n' + POISON]
}

/**
 * A raw upstream answering each request with `X-Id: <its path>`; after `/late` it sends POISON
 * 50 ms later, after `/extra` in the same write; it closes a connection that carried a request
 * already when `/drop-reused...` comes on it, unanswered, and 400 ms after reading `/read-then-close`. Records per connection the paths it
 * answered, those it dropped, and whether the balancer closed it.
 */
async function startUpstream () {
  const connections = []
  const sockets = new Set()
  const server = net.createServer((socket) => {
    const conn = { paths: [], dropped: [], closed: false }
    connections.push(conn)
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => {
      conn.closed = true
      sockets.delete(socket)
    })
    let buffered = ''
    socket.on('data', (data) => {
      buffered += data.toString('latin1')
      let end
      while ((end = buffered.indexOf('\r\n\r\n')) !== -1) {
        const head = buffered.slice(0, end)
        const path = head.split(' ')[1]
        const length = Number((/\r\ncontent-length: *(\d+)/i.exec(head) || [0, 0])[1])
        if (path.startsWith('/drop-head') && conn.paths.length > 0) { // as /drop-reused, at the head
          conn.dropped.push(path)
          socket.destroy()
          return
        }
        if (buffered.length < end + 4 + length) break // the body is still to come
        buffered = buffered.slice(end + 4 + length)
        if (path.startsWith('/drop-reused') && conn.paths.length > 0) {
          // the keep-alive race, made certain: a connection that carried a request already is
          // closed as the next one arrives, unanswered and unprocessed
          conn.dropped.push(path)
          socket.destroy()
          return
        }
        conn.paths.push(path)
        if (path.startsWith('/read-then-close')) { // read, worked on, then the connection closed unanswered
          setTimeout(() => socket.destroy(), 400)
          return
        }
        const answer = `HTTP/1.1 200 OK\r\nX-Id: ${path}\r\nContent-Length: 2\r\n\r\nok`
        if (path === '/extra') {
          socket.write(answer + POISON, 'latin1')
        } else if (PARTIAL[path] !== undefined) {
          // the start of a second message in the answer's write, the rest 50 ms later
          const [start, rest] = PARTIAL[path]
          socket.write(answer + start, 'latin1')
          setTimeout(() => { if (!socket.destroyed) socket.write(rest, 'latin1') }, 50)
        } else if (path.startsWith('/slow')) {
          setTimeout(() => { if (!socket.destroyed) socket.write(answer, 'latin1') }, 150)
        } else if (path === '/close-after') {
          socket.end(answer, 'latin1') // closes an idle keep-alive connection at once, unannounced
        } else {
          socket.write(answer, 'latin1')
          if (path === '/late') setTimeout(() => { if (!socket.destroyed) socket.write(POISON, 'latin1') }, 50)
        }
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    connections,
    close: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy()
      server.close(resolve)
    })
  }
}

/** One GET on a new raw client connection: the bytes it got and its one response. */
async function get (url, path) {
  const c = new RawConnection(url)
  await c.send(`GET ${path} HTTP/1.1\r\nHost: t\r\n\r\n`)
  const { responses } = await c.read(1, { timeoutMs: 2000 })
  c.destroy()
  return { response: responses[0], raw: c.received.toString('latin1') }
}

const SETUPS = ENGINES.flatMap((engine) => ['fast', 'node'].map((front) => [engine, front]))

describe.each(SETUPS)('bytes beyond an upstream\'s answer, %s engine, %s front', (engine, front) => {
  let upstream
  let lb
  beforeAll(async () => {
    upstream = await startUpstream()
    lb = await startBalancer({ backends: [upstream.url], port: 0, engine, front, algo: 'round-robin', maxFails: 1000, timeoutMs: 3000 })
  })
  afterAll(async () => {
    await lb.close({ graceMs: 0 })
    await upstream.close()
  })

  test.each(['/late', '/extra'])('after %s the next client gets its own answer, and that upstream connection is closed', async (path) => {
    const first = await get(lb.url, path)
    expect(first.response.status).toBe(200)
    expect(first.response.headers['x-id']).toBe(path)
    await sleep(100) // the late poison arrived while the connection waited in the pool
    const carrier = upstream.connections.find((c) => c.paths.includes(path))
    await waitFor(() => carrier.closed, { timeoutMs: 1000 })
    const next = await get(lb.url, `/next${path}`)
    expect(next.raw).not.toMatch(/poison/)
    expect(next.response.status).toBe(200)
    expect(next.response.headers['x-id']).toBe(`/next${path}`)
    expect(upstream.connections.find((c) => c.paths.includes(`/next${path}`))).not.toBe(carrier)
  })

  // The start of a second message in the answer's read, its rest later: node:http's client dropped
  // that start and pooled the connection; the next request sent there read the rest as its answer
  // (a 502, or the poison). The connection must be closed, the next request answered on another.
  test.each(Object.keys(PARTIAL))('after %s the next request, in flight when the rest comes, gets its own answer', async (path) => {
    const first = await get(lb.url, path)
    expect(first.response.status).toBe(200)
    expect(first.response.headers['x-id']).toBe(path)
    const next = await get(lb.url, `/slow-next${path}`) // answered after 150 ms: the rest comes meanwhile
    expect(next.raw).not.toMatch(/poison/)
    expect(next.response.status).toBe(200)
    expect(next.response.headers['x-id']).toBe(`/slow-next${path}`)
    const carrier = upstream.connections.find((c) => c.paths.includes(path))
    expect(carrier.paths).not.toContain(`/slow-next${path}`)
    await waitFor(() => carrier.closed, { timeoutMs: 1000 })
  })

  // The answer's end, and the bytes after it in the same read: the request that follows at once
  // (pipelined behind it, taken up as its answer ends) must not get the connection, nor those bytes.
  test('a request pipelined behind an answer with bytes after it gets its own answer', async () => {
    const c = new RawConnection(lb.url)
    await c.send('GET /extra HTTP/1.1\r\nHost: t\r\n\r\nGET /behind-extra HTTP/1.1\r\nHost: t\r\n\r\n')
    const { responses } = await c.read(2, { timeoutMs: 2000 })
    c.destroy()
    expect(c.received.toString('latin1')).not.toMatch(/poison/)
    expect(responses.map((r) => [r.status, r.headers['x-id']])).toEqual([[200, '/extra'], [200, '/behind-extra']])
  })

  // RFC 9112 §9.3.1: an upstream may close an idle keep-alive connection at any moment, so a
  // request may go out on a pooled connection as it closes. Nothing came back on it: a bodiless
  // idempotent request goes again, once, on another connection, even with one upstream, and the
  // upstream is not charged a failure.
  test('a GET sent on a pooled connection its upstream closed unannounced is sent again and answered', async () => {
    const before = lb.stats().failures.connect
    const c = new RawConnection(lb.url)
    await c.send('GET /close-after HTTP/1.1\r\nHost: t\r\n\r\nGET /after-close HTTP/1.1\r\nHost: t\r\n\r\n')
    const { responses } = await c.read(2, { timeoutMs: 2000 })
    c.destroy()
    expect(responses.map((r) => [r.status, r.headers['x-id']])).toEqual([[200, '/close-after'], [200, '/after-close']])
    expect(lb.stats().failures.connect - before).toBeLessThanOrEqual(1) // the race, when it happened, counted once
    expect(lb.stats().upstreams[0].healthy).toBe(true)
  })

  // The direct engine, and undici (dispatched only once the body's first bytes are here), see the
  // bytes on an idle connection, retire it and send the request on a new one; node-http and
  // http-proxy (node:http's client parses what arrives on the connection it took) refuse the
  // answer: a 502, never the poison (or its own answer, when the bytes came before the upload took
  // the connection, which was then closed).
  test('a request whose body comes after the late bytes gets its own answer', async () => {
    // the upload takes the pooled connection at once and sends its head with the body's first
    // bytes: the poison arrives in between, before any of the request went out
    const first = await get(lb.url, '/late')
    expect(first.response.headers['x-id']).toBe('/late')
    const c = new RawConnection(lb.url)
    await c.send('POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n')
    await sleep(100)
    await c.send('hello')
    const { responses } = await c.read(1, { timeoutMs: 2000 })
    c.destroy()
    expect(c.received.toString('latin1')).not.toMatch(/poison/)
    if (engine === 'direct' || engine === 'undici') {
      expect(responses[0].status).toBe(200)
      expect(responses[0].headers['x-id']).toBe('/upload')
    } else if (responses[0].status !== 502) { // the connection was closed for the bytes before the upload took it
      expect(responses[0].status).toBe(200)
      expect(responses[0].headers['x-id']).toBe('/upload')
    }
  })
})

// RFC 9112 §9.3.1 again, for the requests the balancer cannot send to another upstream (a body, a
// method that is not idempotent) and for a second pooled connection as stale as the first: a
// request that failed on a reused connection before any byte of its answer came back is sent once
// more on a new connection to the same upstream, its body kept for that, and answered.
const RESEND = ['node-http', 'http-proxy'].flatMap((engine) => ['fast', 'node'].filter((front) => engineTakesFront(engine, front))
  .map((front) => [engine, front]))

describe.each(RESEND)('a request on a pooled connection the upstream closes as it arrives, %s engine, %s front', (engine, front) => {
  let upstream
  let lb
  beforeEach(async () => {
    upstream = await startUpstream()
    lb = await startBalancer({ backends: [upstream.url], port: 0, engine, front, algo: 'round-robin', maxFails: 1000, timeoutMs: 3000 })
  })
  afterEach(async () => {
    await lb.close({ graceMs: 0 })
    await upstream.close()
  })

  /** Two pooled connections to the upstream, each having carried one request. */
  async function prime () {
    await Promise.all([get(lb.url, '/prime-1'), get(lb.url, '/prime-2')])
    expect(upstream.connections.filter((c) => !c.closed)).toHaveLength(2)
  }

  // (the fast front hands a request with a body to node:http: those only come by the node front)
  const cases = [['GET', ''], ['PATCH', ''], ['POST', 'hello'], ['DELETE', 'x'.repeat(5000)]]
  test.each(front === 'fast' ? cases.slice(0, 2) : cases)('a %s is sent again on a new connection, read once, and answered', async (method, body) => {
    await prime()
    const c = new RawConnection(lb.url)
    const length = method === 'GET' ? '' : `Content-Length: ${body.length}\r\n`
    await c.send(`${method} /drop-reused-${method} HTTP/1.1\r\nHost: t\r\n${length}\r\n${body}`)
    const { responses } = await c.read(1, { timeoutMs: 2000 })
    c.destroy()
    expect(responses.map((r) => [r.status, r.headers['x-id']])).toEqual([[200, `/drop-reused-${method}`]])
    const answered = upstream.connections.filter((conn) => conn.paths.includes(`/drop-reused-${method}`))
    expect(answered).toHaveLength(1)
    expect(answered[0].paths).toEqual([`/drop-reused-${method}`]) // on a new connection, once
    expect(upstream.connections.flatMap((conn) => conn.dropped)).toEqual([`/drop-reused-${method}`]) // dropped once
    expect(lb.stats().upstreams[0].healthy).toBe(true)
  })

  if (front === 'node') {
    test('an upload whose body is still coming is sent again with all of it', async () => {
      await prime()
      const c = new RawConnection(lb.url)
      await c.send('POST /drop-head HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhello')
      await sleep(100)
      await c.send('world')
      const { responses } = await c.read(1, { timeoutMs: 2000 })
      c.destroy()
      expect(responses.map((r) => [r.status, r.headers['x-id']])).toEqual([[200, '/drop-head']])
      expect(upstream.connections.flatMap((conn) => conn.dropped)).toEqual(['/drop-head'])
    })
  }

  // not an upstream that read the request, worked on it and then closed without an answer: that
  // request is not sent again (it may have been acted on)
  if (front === 'node') {
    test('a POST the upstream read and dropped later is answered 502, and not sent again', async () => {
      await prime()
      const c = new RawConnection(lb.url)
      await c.send('POST /read-then-close HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello')
      const { responses } = await c.read(1, { timeoutMs: 2000 })
      c.destroy()
      expect(responses.map((r) => r.status)).toEqual([502])
      expect(upstream.connections.flatMap((conn) => conn.paths).filter((p) => p === '/read-then-close')).toHaveLength(1)
    })
  }
})
