'use strict'

const http = require('node:http')
const net = require('node:net')
const { once } = require('node:events')
const { startBalancer } = require('../../src/balancer')
const { readResponses, readRequest, idOf } = require('./wire')
const { checkForwarded, checkRequestConnection, checkResponseConnection, hash, show } = require('./check')
const { connectionBytes } = require('./requests')

/**
 * The I/O of the differential fuzzer (issue 25): an upstream on 127.0.0.1 port 0 (node:http, which
 * records every request it parses, for the request direction; a raw node:net one that writes
 * generated answers, for the response direction), polistes assembled in this process in front of
 * it with a tap on its request handler (what the front took: method, target, the body bytes the
 * engine read), and the clients, many connections at once so that a desync on a pooled upstream
 * connection would hand one client another's answer. The invariants are in check.js.
 */

/** How long a connection of dirty requests may sit silent before the client ends its side. */
const DIRTY_GRACE_MS = 150
/** The same for a connection that must be answered. */
const CLEAN_GRACE_MS = 8000
/** After the client ended its side, the most it waits for the connection to close. */
const CLOSE_MS = 5000
/** The most a batch waits for every connection and request to be over (default). */
const SETTLE_MS = 3000

/**
 * @typedef {object} Harness
 * @property {(cases: object[], options?: { window?: number }) => Promise<import('./check').Failure[]>} runBatch
 * @property {() => { cases: number, requests: number }} counts
 * @property {() => Promise<void>} close
 */

/**
 * Start an upstream and polistes in front of it.
 * @param {{ engine: string, front: 'fast' | 'node', direction: 'request' | 'response', timeoutMs?: number, settleMs?: number }} options
 *   `timeoutMs`: polistes' upstream timeout; `settleMs`: the most a batch waits for everything to be over
 *   before the leak check fails
 * @returns {Promise<Harness>}
 */
async function startHarness ({ engine, front, direction, timeoutMs = 2000, settleMs = SETTLE_MS }) {
  const upstream = direction === 'request' ? await startRecordingUpstream() : await startScriptedUpstream()
  const balancer = await startBalancer({
    backends: [upstream.url],
    algo: 'round-robin',
    port: 0,
    engine,
    front,
    timeoutMs,
    maxFails: 1000,
    failTimeoutMs: 1,
    admin: false
  })
  const port = balancer.port
  /** @type {Map<string, object[]>} what the front took, by target */
  const taken = new Map()
  const tap = (req, kind) => {
    const record = { method: req.method, url: req.url, kind, chunks: [], complete: false, get body () { return Buffer.concat(this.chunks) } }
    const list = taken.get(req.url)
    if (list) list.push(record)
    else taken.set(req.url, [record])
    if (kind === 'upgrade') return
    // the body as the engine reads it, without adding a reader of our own (which would change the flow)
    const emit = req.emit
    req.emit = function (event, chunk) {
      if (event === 'data') record.chunks.push(Buffer.from(chunk))
      else if (event === 'end') record.complete = true
      return emit.apply(this, arguments)
    }
  }
  balancer.server.prependListener('request', (req) => tap(req, 'request'))
  balancer.server.prependListener('upgrade', (req) => tap(req, 'upgrade'))
  let cases = 0
  let requests = 0

  /**
   * Wait until nothing is in flight: no client connection at the front, no request in polistes'
   * pool or at the upstream, and no TCP handle in this process beyond both ends of the upstream
   * connections polistes keeps.
   * @returns {Promise<import('./check').Failure[]>}
   */
  async function settle () {
    const end = Date.now() + settleMs
    let state
    for (;;) {
      const frontConnections = await new Promise((resolve) => balancer.server.getConnections((err, n) => resolve(err ? -1 : n)))
      const tcp = process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length
      state = { frontConnections, inflight: balancer.pool.inflight(), upstreamActive: upstream.active, upstreamSockets: upstream.sockets.size, tcp }
      if (frontConnections === 0 && state.inflight === 0 && upstream.active === 0 && tcp <= 2 * upstream.sockets.size) return []
      if (Date.now() > end) break
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return [{ kind: 'leak', detail: `${settleMs} ms after the last client left: ${JSON.stringify(state)} (want no front connection, nothing in flight, TCP handles <= 2 x upstream sockets)` }]
  }

  /**
   * Run the cases, `window` at a time, then check every invariant over the whole batch.
   * @param {object[]} batch request or response cases
   * @param {{ window?: number }} [options]
   * @returns {Promise<Array<import('./check').Failure & { case?: number }>>}
   */
  async function runBatch (batch, { window = 64 } = {}) {
    const seen = new Map()
    let next = 0
    const worker = async () => {
      while (next < batch.length) {
        const c = batch[next++]
        if (direction === 'response') for (const conn of c.connections) for (const q of conn.requests) upstream.specs.set(q.id, q.response)
        const results = await Promise.all(c.connections.map((conn) => runConnection(port, conn)))
        seen.set(c, results)
        cases++
        for (const conn of c.connections) requests += conn.requests.length
      }
    }
    await Promise.all(Array.from({ length: Math.min(window, batch.length) }, worker))
    const failures = await settle()
    const byUrl = new Map()
    for (const u of upstream.records) {
      const list = byUrl.get(u.url)
      if (list) list.push(u)
      else byUrl.set(u.url, [u])
    }
    const caseOf = (id) => (id ? Number(id.split('.')[0]) : undefined)
    for (const f of checkForwarded(taken, upstream.records)) failures.push({ ...f, case: caseOf(f.id) })
    for (const e of upstream.parseErrors) {
      const m = /\/id\/(\d+)\./.exec(e.raw.toString('latin1'))
      failures.push({ kind: 'upstream-could-not-parse', case: m ? Number(m[1]) : undefined, detail: `the upstream could not parse what polistes sent (${e.code} ${e.reason || ''}): ${show(e.raw, 400)}` })
    }
    const raced = direction === 'response' ? upstream.raced : null
    // requests no upstream read, in a batch where late bytes raced: see checkResponseConnection
    const unread = direction === 'response' && upstream.poisoned > 0 ? new Set() : null
    if (unread !== null) {
      const read = new Set(upstream.records.map((r) => idOf(r.url)))
      for (const [c] of seen) for (const conn of c.connections) for (const q of conn.requests) if (!read.has(q.id)) unread.add(q.id)
    }
    for (const [c, results] of seen) {
      c.connections.forEach((conn, i) => {
        const found = direction === 'request'
          ? checkRequestConnection(c, conn, results[i], { front: taken, upstream: byUrl })
          : checkResponseConnection(c, conn, results[i], raced, upstream.closeRaced, unread)
        for (const f of found) failures.push({ ...f, case: c.index })
      })
    }
    // a request the front took near the end of this batch may reach the upstream only in the next
    // one (a pipelined request polistes forwards after its client's side has ended): what the
    // upstream has not received yet is kept for one more batch, never longer
    const reached = new Map()
    for (const u of upstream.records) reached.set(u.url, (reached.get(u.url) || 0) + 1)
    const carried = []
    for (const [url, list] of taken) {
      const waiting = list.slice(reached.get(url) || 0).filter((r) => !r.carried)
      if (waiting.length > 0) carried.push([url, waiting])
    }
    taken.clear()
    for (const [url, list] of carried) {
      for (const r of list) r.carried = true
      taken.set(url, list)
    }
    upstream.reset()
    if (upstream.raced) upstream.raced.clear()
    upstream.poisoned = 0
    return failures
  }

  async function close () {
    await balancer.close({ graceMs: 0 })
    await upstream.close()
  }

  return { runBatch, close, counts: () => ({ cases, requests }), port }
}

/**
 * One client connection: send its bytes (in pieces at its split points), read until every
 * request got an answer, the connection closed, or it sat silent for the grace time; then end our
 * side and wait for the close.
 * @param {number} port
 * @param {{ requests: Array<{ method: string, closeAfter: boolean, clean?: boolean }>, splits: number[], clean?: boolean }} conn
 * @returns {Promise<{ received: Buffer, closed: boolean, hung: boolean }>}
 */
function runConnection (port, conn) {
  const bytes = connectionBytes(conn)
  let expected = 0
  for (const q of conn.requests) {
    expected++
    if (q.closeAfter) break
  }
  const clean = conn.clean !== false
  const grace = clean ? CLEAN_GRACE_MS : DIRTY_GRACE_MS
  const isHead = (i) => conn.requests[i] !== undefined && conn.requests[i].method === 'HEAD'
  return new Promise((resolve) => {
    const chunks = []
    let received = Buffer.alloc(0)
    let settled = false
    let ending = false
    let timer = null
    const socket = net.connect({ port, host: '127.0.0.1', noDelay: true })
    const finish = (closed, hung) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ received, closed, hung })
    }
    const idle = () => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        if (ending) return finish(false, true)
        ending = true
        socket.end()
        idle()
      }, ending ? CLOSE_MS : grace)
    }
    socket.on('error', () => {})
    socket.on('close', () => finish(true, false))
    socket.on('data', (d) => {
      chunks.push(d)
      received = chunks.length === 1 ? d : Buffer.concat(chunks)
      if (chunks.length > 1) chunks.splice(0, chunks.length, received)
      const { responses, error } = readResponses(received, isHead, false)
      let finals = 0
      for (const r of responses) if (!r.interim) finals++
      if (finals >= expected || error !== null) return finish(false, false)
      if (!ending) idle()
    })
    socket.once('connect', () => {
      let at = 0
      const pieces = []
      for (const s of conn.splits) {
        pieces.push(bytes.subarray(at, s))
        at = s
      }
      pieces.push(bytes.subarray(at))
      const send = () => {
        if (settled || socket.destroyed) return
        socket.write(pieces.shift())
        if (pieces.length > 0) setImmediate(send)
        else idle()
      }
      send()
    })
  })
}

/**
 * The request-direction upstream: node:http (llhttp, keep-alive on), recording every request it
 * parses and answering each with its id and the sha1 of the body it read.
 */
async function startRecordingUpstream () {
  const upstream = { records: [], parseErrors: [], active: 0, sockets: new Set() }
  const server = http.createServer({ requireHostHeader: false, keepAliveTimeout: 60000 }, (req, res) => {
    const record = { method: req.method, url: req.url, rawHeaders: req.rawHeaders, chunks: [], complete: false, get body () { return Buffer.concat(this.chunks) } }
    upstream.records.push(record)
    upstream.active++
    res.once('close', () => upstream.active--)
    req.on('data', (c) => record.chunks.push(c))
    req.on('end', () => {
      record.complete = true
      const id = idOf(req.url) || 'none'
      const h = hash(record.body)
      res.writeHead(200, { 'x-fuzz-id': id, 'x-fuzz-hash': h, 'content-type': 'text/plain' })
      res.end(`id ${id} hash ${h}\n`)
    })
  })
  server.on('connection', (socket) => {
    upstream.sockets.add(socket)
    socket.once('close', () => upstream.sockets.delete(socket))
  })
  server.on('clientError', (err, socket) => {
    // HPE_INVALID_EOF_STATE: the connection closed inside a request, which polistes does when it
    // gives a request up (its client left); the record shows such a request as incomplete
    if (String(err.code).startsWith('HPE_') && err.code !== 'HPE_INVALID_EOF_STATE') upstream.parseErrors.push({ code: err.code, reason: err.reason, raw: err.rawPacket || Buffer.alloc(0) })
    socket.destroy()
  })
  server.on('upgrade', (req, socket) => {
    upstream.records.push({ method: req.method, url: req.url, rawHeaders: req.rawHeaders, body: Buffer.alloc(0), complete: true })
    socket.destroy()
  })
  return listen(server, upstream)
}

/**
 * The response-direction upstream: raw node:net, reading each request polistes forwards and
 * writing the generated answer for its id (src: responses.js), byte for byte, then closing the
 * connection if the answer says so.
 */
/** How a poison response (responses.js) begins. */
const POISON_START = 'HTTP/1.1 200 OK\r\nX-Fuzz-Id: poison.'

async function startScriptedUpstream () {
  // raced: ids of the requests polistes sent on a connection after the upstream had written late
  // bytes on it (a poison): the race HTTP/1.1 cannot resolve (see the write loop below)
  // closeRaced: ids of the requests that reached a connection after the upstream had ended it (RFC
  // 9112 §9.3.1: an upstream may close an idle keep-alive connection as a request goes out on it)
  const upstream = { records: [], parseErrors: [], active: 0, sockets: new Set(), specs: new Map(), raced: new Set(), poisoned: 0, closeRaced: new Set() }
  const server = net.createServer({ noDelay: true }, (socket) => {
    upstream.sockets.add(socket)
    socket.once('close', () => upstream.sockets.delete(socket))
    socket.on('error', () => {})
    let buffer = Buffer.alloc(0)
    let busy = false
    let over = false // the upstream ended this connection: what comes after is never read
    let poisoned = false // the upstream wrote late bytes on this connection
    const markRaced = () => {
      for (const m of buffer.toString('latin1').matchAll(/^[A-Z]+ (\/id\/\S+) HTTP\//gm)) upstream.raced.add(idOf(m[1]))
    }
    const pump = async () => {
      while (!busy && !over && !socket.destroyed) {
        const r = readRequest(buffer, 0)
        if (r === 'partial') return
        if (r.error) {
          upstream.parseErrors.push({ code: 'RAW', reason: r.error, raw: buffer })
          socket.destroy()
          return
        }
        buffer = buffer.subarray(r.next)
        const q = r.request
        upstream.records.push({ method: q.method, url: q.target, rawHeaders: q.rawHeaders, body: q.body, complete: true })
        if (poisoned) upstream.raced.add(idOf(q.target))
        const spec = upstream.specs.get(idOf(q.target))
        if (spec === undefined) {
          socket.write('HTTP/1.1 404 Not Found\r\nX-Fuzz-Id: unknown\r\nContent-Length: 0\r\n\r\n')
          continue
        }
        upstream.specs.delete(spec.id)
        busy = true
        upstream.active++
        // where the bytes past the answer's own framing begin (responses.js, `surplus`)
        const surplusFrom = spec.writes.reduce((n, w) => n + (w === 'tick' ? 0 : w.length), 0) - (spec.surplus || 0)
        let written = 0
        for (const w of spec.writes) {
          if (socket.destroyed) break
          if (w === 'tick') {
            await new Promise((resolve) => setTimeout(resolve, 1))
            continue
          }
          socket.write(w)
          written += w.length
          // Late bytes (a poison after a pause) race the next request on a pooled connection: once
          // polistes has sent it, before it could read them, nothing in HTTP/1.1 tells them from its
          // answer; that request's own answer then races the request after it, and so on, for as
          // long as polistes finds a request waiting each time it has read an answer there. So
          // every request carried on this connection from here on is raced: any answer may reach it
          // (the poison, an earlier request's answer, an error), and the checks hold it to none.
          // Bytes past a Content-Length shorter than the body are extra bytes just the same, though
          // no poison: late (split off by split-writes), they are read as the start of the next
          // request's answer, which then fails to parse (seed 20261141, case 64581).
          if (w.includes(POISON_START, 0, 'latin1') || (spec.surplus > 0 && written > surplusFrom)) { // late, or in the same write as the answer
            poisoned = true
            upstream.poisoned++
            markRaced()
          }
        }
        upstream.active--
        busy = false
        if (spec.close !== null) over = true
        if (spec.close === 'end') socket.end()
        if (spec.close === 'destroy') socket.destroy()
        if (spec.close !== null) return
      }
    }
    socket.on('data', (d) => {
      if (over) { // never read: the ids of the requests that raced the end, for the checks
        for (const m of d.toString('latin1').matchAll(/^[A-Z]+ (\S+) HTTP\//gm)) {
          upstream.closeRaced.add(idOf(m[1]))
          if (poisoned) upstream.raced.add(idOf(m[1]))
        }
        return
      }
      buffer = buffer.length === 0 ? d : Buffer.concat([buffer, d])
      if (poisoned) markRaced()
      pump()
    })
  })
  return listen(server, upstream)
}

/**
 * Start `server` on 127.0.0.1 port 0 and give `upstream` its url, reset() and close() (which cuts
 * its open sockets).
 * @param {import('net').Server} server
 * @param {{ records: object[], parseErrors: object[], sockets: Set<import('net').Socket> }} upstream
 */
async function listen (server, upstream) {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  upstream.url = `http://127.0.0.1:${server.address().port}`
  upstream.reset = () => {
    upstream.records = []
    upstream.parseErrors = []
  }
  upstream.close = () => new Promise((resolve) => {
    for (const s of upstream.sockets) s.destroy()
    server.close(() => resolve())
  })
  return upstream
}

module.exports = { startHarness, runConnection }
