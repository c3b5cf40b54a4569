'use strict'

const http = require('node:http')
const net = require('node:net')
const crypto = require('node:crypto')
const { once } = require('node:events')
const { startBalancer } = require('../src/balancer')
const { createPolicy } = require('../src/policies')
const { createDirectEngine } = require('../src/proxy/engines/direct')
const { request, startUpstream, startRecordingUpstream, RawConnection, parseResponses, sleep, waitFor } = require('./helper')

/**
 * A raw TCP upstream: it splits what arrives into request heads (bodies are not parsed: the tests
 * that send bodies use startRecordingUpstream) and lets the test answer each with exact bytes.
 * @param {(socket: net.Socket, req: { method: string, url: string, head: string, conn: number, index: number }) => void} onRequest
 */
async function rawUpstream (onRequest) {
  const u = { url: '', connections: 0, requests: [], sockets: new Set() }
  const server = net.createServer((socket) => {
    const conn = u.connections++
    let served = 0
    let buffer = Buffer.alloc(0)
    u.sockets.add(socket)
    socket.on('close', () => u.sockets.delete(socket))
    socket.on('error', () => {})
    socket.on('data', (d) => {
      buffer = Buffer.concat([buffer, d])
      let end
      while ((end = buffer.indexOf('\r\n\r\n')) !== -1) {
        const head = buffer.subarray(0, end).toString('latin1')
        buffer = buffer.subarray(end + 4)
        const [method, url] = head.split(' ')
        const req = { method, url, head, conn, index: served++ }
        u.requests.push(req)
        onRequest(socket, req)
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  u.url = `http://127.0.0.1:${server.address().port}`
  u.close = () => new Promise((resolve) => {
    for (const s of u.sockets) s.destroy()
    server.close(() => resolve())
  })
  return u
}

/** A Content-Length response. */
const ok = (body, extra = '') => `HTTP/1.1 200 OK\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`

/** Write `bytes` in pieces of `size`, `gapMs` apart. */
async function trickle (socket, bytes, size, gapMs = 1) {
  const buf = Buffer.from(bytes, 'latin1')
  for (let i = 0; i < buf.length && !socket.destroyed; i += size) {
    socket.write(buf.subarray(i, i + size))
    await sleep(gapMs)
  }
}

describe('the direct engine at the edges of HTTP/1.1', () => {
  const open = []
  const track = (x) => { open.push(x); return x }
  /** A balancer on the direct engine whose policy records each attempt's outcome. */
  const start = async (backends, options = {}) => {
    const policy = createPolicy('round-robin', {}, { random: Math.random, now: () => performance.now() })
    const outcomes = []
    const onEnd = policy.onEnd
    policy.onEnd = (u, ctx, outcome) => {
      outcomes.push(outcome)
      if (onEnd) onEnd.call(policy, u, ctx, outcome)
    }
    const lb = track(await startBalancer({ backends: backends.map((b) => b.url), policy, port: 0, engine: 'direct', maxFails: 100, ...options }))
    lb.outcomes = outcomes
    return lb
  }
  const noFailures = (lb) => {
    const stats = lb.stats()
    expect(stats.failures).toEqual({ connect: 0, timeout: 0, stream: 0 })
    expect(stats.retries).toBe(0)
    expect(stats.upstreams.every((u) => u.failures === 0)).toBe(true)
    expect(lb.outcomes.filter((o) => o.error !== undefined)).toEqual([])
  }
  afterEach(async () => {
    await Promise.all(open.splice(0).map((x) => x.close()))
  })

  describe('a pooled connection the upstream has closed', () => {
    test('a GET that meets it is sent again on a new connection to the same upstream: 200, no failure counted', async () => {
      // the upstream closes a connection when its second request arrives: its close crossed the request
      const u = track(await rawUpstream((socket, req) => {
        if (req.index > 0) return socket.destroy()
        socket.write(ok(`conn ${req.conn}`))
      }))
      const lb = await start([u])
      expect((await request(`${lb.url}/a`)).body).toBe('conn 0')
      const res = await request(`${lb.url}/b`)
      expect(res.status).toBe(200)
      expect(res.body).toBe('conn 1')
      expect(u.connections).toBe(2)
      expect(u.requests.map((r) => r.url)).toEqual(['/a', '/b', '/b'])
      noFailures(lb)
    })

    test('an upstream that ends every connection after answering: each GET gets 200, none fails', async () => {
      const u = track(await rawUpstream((socket, req) => socket.end(ok(`r${req.conn}`))))
      const lb = await start([u])
      for (let i = 0; i < 5; i++) {
        const res = await request(`${lb.url}/x${i}`)
        expect(res.status).toBe(200)
        expect(res.body).toBe(`r${i}`)
      }
      expect(u.connections).toBe(5)
      noFailures(lb)
    })

    test('a POST with a body that meets it is not sent again: 502, the upstream saw it once', async () => {
      const u = track(await rawUpstream((socket, req) => {
        if (req.index > 0) return socket.destroy()
        socket.write(ok('first'))
      }))
      const lb = await start([u])
      expect((await request(`${lb.url}/a`)).status).toBe(200)
      const res = await request(`${lb.url}/p`, { method: 'POST', body: 'payload', headers: { 'content-type': 'text/plain' } })
      expect(res.status).toBe(502)
      await sleep(50)
      expect(u.requests.filter((r) => r.method === 'POST')).toHaveLength(1)
      expect(u.connections).toBe(1)
      expect(lb.stats().failures.connect).toBe(1)
    })
  })

  test('1xx responses (100 Continue, 103 Early Hints) are skipped; the final response arrives whole', async () => {
    const u = track(await rawUpstream((socket) => {
      socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n')
      setTimeout(() => socket.write(ok('hello', 'X-Final: yes\r\n')), 20)
    }))
    const lb = await start([u])
    const client = track(new RawConnection(lb.url))
    client.close = async () => client.destroy()
    const responses = []
    for (const path of ['/one', '/two']) { // one after the other: Node's front serves pipelined requests at once
      await client.send(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`)
      responses.push(...(await client.read(1)).responses)
    }
    expect(responses.map((r) => [r.status, r.interim, r.body.toString()])).toEqual([[200, false, 'hello'], [200, false, 'hello']])
    expect(responses[0].headers['x-final']).toBe('yes')
    expect(responses[0].headers.link).toBeUndefined()
    expect(u.connections).toBe(1)
    noFailures(lb)
  })

  test('a head that arrives a few bytes at a time, with 40 header lines, and a body in 20 writes', async () => {
    const names = Array.from({ length: 40 }, (_, i) => `X-Line-${i}`)
    const body = crypto.randomBytes(2000).toString('hex') // 4000 bytes
    const u = track(await rawUpstream(async (socket) => {
      const head = `HTTP/1.1 200 OK\r\n${names.map((n, i) => `${n}: value ${i}\r\n`).join('')}Content-Length: ${body.length}\r\n\r\n`
      await trickle(socket, head.slice(0, 20), 1) // the status line byte by byte
      await trickle(socket, head.slice(20), 17)
      await trickle(socket, body, 200, 2)
    }))
    const lb = await start([u])
    for (let i = 0; i < 2; i++) {
      const res = await request(`${lb.url}/split`)
      expect(res.status).toBe(200)
      for (let j = 0; j < names.length; j++) expect(res.headers[names[j].toLowerCase()]).toBe(`value ${j}`)
      expect(res.body).toBe(body)
    }
    expect(u.connections).toBe(1)
  })

  describe.each([
    ['a whole unsolicited response', ok('bogus')],
    ['the start of one', 'HTTP/1.1 2']
  ])('bytes from the upstream on an idle pooled connection (%s)', (_, unsolicited) => {
    test('retire that connection: the next request is served correctly on another one', async () => {
      const u = track(await rawUpstream((socket, req) => {
        socket.write(ok(`ok ${req.url}`))
        if (req.conn === 0) setTimeout(() => socket.write(unsolicited), 30)
      }))
      const lb = await start([u])
      expect((await request(`${lb.url}/1`)).body).toBe('ok /1')
      await sleep(150)
      const res = await request(`${lb.url}/2`)
      expect(res.status).toBe(200)
      expect(res.body).toBe('ok /2')
      expect(u.connections).toBe(2)
      expect(u.requests.map((r) => [r.conn, r.url])).toEqual([[0, '/1'], [1, '/2']])
      noFailures(lb)
    })
  })

  test('a response delimited by the connection closing arrives whole; the connection is not reused', async () => {
    const body = 'c'.repeat(50000)
    const u = track(await rawUpstream(async (socket, req) => {
      if (req.url === '/close') {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n')
        await trickle(socket, body, 10000, 5)
        socket.end()
      } else {
        socket.write(ok('next'))
      }
    }))
    const lb = await start([u])
    const res = await request(`${lb.url}/close`)
    expect(res.status).toBe(200)
    expect(res.body).toBe(body)
    expect((await request(`${lb.url}/next`)).body).toBe('next')
    expect(u.requests.map((r) => [r.conn, r.url])).toEqual([[0, '/close'], [1, '/next']])
    noFailures(lb)
  })

  test('HEAD: a head with Content-Length and no body completes at once, and the connection serves the next request', async () => {
    const u = track(await rawUpstream((socket, req) => {
      if (req.method === 'HEAD') socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n')
      else socket.write(ok('x'.repeat(1000)))
    }))
    const lb = await start([u], { timeoutMs: 5000 })
    const head = await request(`${lb.url}/h`, { method: 'HEAD', timeoutMs: 1000 })
    expect(head.status).toBe(200)
    expect(head.headers['content-length']).toBe('1000')
    expect(head.body).toBe('')
    const get = await request(`${lb.url}/h`)
    expect(get.body).toBe('x'.repeat(1000))
    expect(u.connections).toBe(1)
    noFailures(lb)
  })

  test('keep-alive: sequential requests share one upstream connection; keepAlive false opens one each with Connection: close', async () => {
    const u = track(await rawUpstream((socket, req) => socket.write(ok(req.url))))
    const lb = await start([u])
    for (let i = 0; i < 10; i++) expect((await request(`${lb.url}/k${i}`)).body).toBe(`/k${i}`)
    expect(u.connections).toBe(1)
    expect(u.requests.some((r) => /\r\nconnection: close/i.test(r.head))).toBe(false)

    const v = track(await rawUpstream((socket, req) => socket.write(ok(req.url))))
    const lb2 = await start([v], { keepAlive: false })
    for (let i = 0; i < 5; i++) expect((await request(`${lb2.url}/k${i}`)).body).toBe(`/k${i}`)
    expect(v.connections).toBe(5)
    expect(v.requests.every((r) => /\r\nconnection: close\r?$/im.test(r.head))).toBe(true)
    await waitFor(() => v.sockets.size === 0) // the engine closes each one after its response
  })

  test('a slow client on a 5 MB response: the balancer does not queue it, the body arrives intact, the connection is reused', async () => {
    const size = 5 * 1024 * 1024
    const body = crypto.randomBytes(size)
    const digest = crypto.createHash('sha256').update(body).digest('hex')
    let written = 0
    const u = track(await startUpstream((req, res) => {
      if (req.url === '/small') return res.end('small')
      res.writeHead(200, { 'content-length': String(size) })
      let pos = 0
      const pump = () => {
        while (pos < size) {
          const piece = body.subarray(pos, pos + 65536)
          pos += piece.length
          const more = res.write(piece, () => { written += piece.length })
          if (!more) return res.once('drain', pump)
        }
        res.end()
      }
      pump()
    }))
    const lb = await start([u])
    let front = null // the balancer's response to the client: what it holds in its own memory
    lb.server.on('request', (req, res) => { if (req.url === '/big') front = res })
    const client = net.connect(lb.port, '127.0.0.1')
    client.on('error', () => {})
    client.pause()
    await once(client, 'connect')
    client.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n')
    // the upstream writes until every buffer on the way is full, then stalls
    let last = -1
    await waitFor(async () => {
      const now = written
      const still = now === last && now > 0
      last = now
      return still
    }, { timeoutMs: 5000, stepMs: 200 })
    // loopback's kernel buffers (tcp_rmem up to 32 MB) can take all 5 MB from the upstream, so what
    // shows the pause is the balancer's own queue: ~50 KB with it, > 1 MB without
    expect(front.writableLength).toBeLessThan(512 * 1024)
    // the client reads now: everything arrives
    const chunks = []
    client.on('data', (d) => chunks.push(d))
    client.resume()
    let parsed
    await waitFor(() => {
      parsed = parseResponses(Buffer.concat(chunks)).responses
      return parsed.length === 1
    }, { timeoutMs: 10000 })
    expect(parsed[0].status).toBe(200)
    expect(crypto.createHash('sha256').update(parsed[0].body).digest('hex')).toBe(digest)
    client.destroy()
    expect((await request(`${lb.url}/small`)).body).toBe('small')
    expect(u.connections).toBe(1)
    noFailures(lb)
  }, 20000)

  describe('used directly', () => {
    /** A front server forwarding everything to `target` through `engine`. */
    const front = async (engine, target) => {
      const server = http.createServer((req, res) => {
        engine.forward(req, res, { target: new URL(target) }, {
          onResponse () {},
          onFailure (err) { if (!res.headersSent) { res.writeHead(502); res.end(err.message) } else res.destroy() }
        })
      })
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      const url = `http://127.0.0.1:${server.address().port}`
      track({ close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve) }) })
      return url
    }

    test('an idle pooled connection is closed after idleTimeoutMs', async () => {
      const u = track(await rawUpstream((socket) => socket.write(ok('ok'))))
      const engine = createDirectEngine({ keepAlive: true, timeoutMs: 5000, idleTimeoutMs: 200 })
      track({ close: async () => engine.close() })
      const url = await front(engine, u.url)
      expect((await request(`${url}/a`)).body).toBe('ok')
      const t0 = Date.now()
      expect(u.sockets.size).toBe(1)
      await waitFor(() => u.sockets.size === 0, { timeoutMs: 3000 })
      expect(Date.now() - t0).toBeGreaterThanOrEqual(100)
      expect((await request(`${url}/b`)).body).toBe('ok')
      expect(u.connections).toBe(2)
    })

    test('close() destroys the idle connections', async () => {
      const u = track(await rawUpstream((socket) => socket.write(ok('ok'))))
      const engine = createDirectEngine({ keepAlive: true, timeoutMs: 5000, idleTimeoutMs: 60000 })
      const url = await front(engine, u.url)
      expect((await request(`${url}/a`)).body).toBe('ok')
      await sleep(50)
      expect(u.sockets.size).toBe(1)
      engine.close()
      await waitFor(() => u.sockets.size === 0, { timeoutMs: 1000 })
    })
  })

  test('a malformed response (two different Content-Length) is a 502, and the balancer serves on', async () => {
    const u = track(await rawUpstream((socket, req) => {
      if (req.url === '/bad') socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!')
      else socket.write(ok('good'))
    }))
    const lb = await start([u])
    expect((await request(`${lb.url}/good`)).body).toBe('good') // the next one goes out on a pooled connection
    const bad = await request(`${lb.url}/bad`)
    expect(bad.status).toBe(502)
    expect(u.requests.filter((r) => r.url === '/bad')).toHaveLength(1) // an answer, even a bad one, is not a closed connection
    const res = await request(`${lb.url}/good`)
    expect(res.status).toBe(200)
    expect(res.body).toBe('good')
  })

  describe('request bodies', () => {
    test('a Content-Length body and a chunked body reach the upstream byte-exact (chunks re-framed)', async () => {
      const u = track(await startRecordingUpstream((req, res) => req.on('end', () => res.end('got it')).resume()))
      const lb = await start([u])
      const body = crypto.randomBytes(100000)
      const fixed = await request(`${lb.url}/fixed`, { method: 'POST', body, headers: { 'content-length': String(body.length) } })
      expect(fixed.status).toBe(200)
      expect(u.records[0].sha256).toBe(crypto.createHash('sha256').update(body).digest('hex'))
      expect(u.records[0].headers['content-length']).toBe('100000')

      const client = track(new RawConnection(lb.url))
      client.close = async () => client.destroy()
      await client.send('POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n')
      await sleep(30)
      await client.send('A\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n')
      // (the recording upstream answers once the body is in: an early answer would end the exchange)
      const { responses } = await client.read(1)
      expect(responses[0].status).toBe(200)
      expect(u.records[1].body.toString()).toBe('helloabc0123456789')
      expect(u.records[1].headers['transfer-encoding']).toBe('chunked')
      const raw = u.raw().toString('latin1')
      const sent = raw.slice(raw.indexOf('POST /chunked'))
      expect(sent.slice(sent.indexOf('\r\n\r\n') + 4)).toMatch(/^([0-9a-f]+\r\n[^]*?\r\n)+0\r\n\r\n$/)
    })

    test('an upstream that answers before the body ends: the client gets the answer, the connection is not reused mid-body', async () => {
      const u = track(await rawUpstream((socket, req) => {
        if (req.method === 'POST') socket.write(ok('early'))
        else socket.write(ok(`get ${req.url}`))
      }))
      const lb = await start([u])
      const client = track(new RawConnection(lb.url))
      client.close = async () => client.destroy()
      await client.send('POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n' + 'a'.repeat(5000))
      const first = await client.read(1)
      expect(first.responses[0].body.toString()).toBe('early')
      await client.send('a'.repeat(15000)) // the rest of the body
      await client.send('GET /after HTTP/1.1\r\nHost: x\r\n\r\n')
      const second = await client.read(1)
      expect(second.responses[0].status).toBe(200)
      expect(second.responses[0].body.toString()).toBe('get /after')
      // the GET went out on a fresh connection whose first bytes were its own head
      expect(u.requests.map((r) => [r.conn, r.index, r.method])).toEqual([[0, 0, 'POST'], [1, 0, 'GET']])
    })
  })
})
