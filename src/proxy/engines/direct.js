'use strict'

const { Origin } = require('./upstream-connections')
const { requestHeaders, responseHead } = require('./headers')
const { hasBody } = require('../body-limit')
const { IDEMPOTENT } = require('../retry-rules')

/**
 * The direct engine: polistes' own HTTP/1.1 client, with no ClientRequest, IncomingMessage or Agent
 * per request, and only public Node APIs (net, tls). Each upstream origin keeps a stack of
 * keep-alive connections, each with a strict response parser (src/proxy/engines/response-parser.js); a
 * request's head goes out as one write, and the response's body chunks go straight from the parser
 * to the client's ServerResponse, with back-pressure.
 *
 * Behaviour is the node-http engine's (same header rules, src/proxy/engines/headers.js), plus one thing
 * Node's Agent does not do: a bodiless idempotent request that meets a pooled connection the
 * upstream had just closed (nothing received) is sent again once on a new connection to the same
 * upstream, instead of failing over to another upstream and counting a failure.
 *
 * @param {object} options
 * @param {boolean} options.keepAlive reuse upstream connections; false opens one per request
 *   and sends `Connection: close`
 * @param {number} options.timeoutMs upstream inactivity timeout (connect, headers or body)
 * @param {Buffer | null} [options.ca] CA certificates (PEM) https upstreams are verified against
 * @param {number} [options.idleTimeoutMs=4000] close a pooled connection idle this long (under
 *   Node's 5 s server keep-alive timeout, so that we close first rather than race the upstream)
 * @param {number} [options.maxIdle=256] pooled connections kept per upstream
 * @param {Function} [options.lookup] net.connect's `lookup` (default node:dns)
 * @returns {import('../proxy-engine').ProxyEngine}
 */
function createDirectEngine ({ keepAlive, timeoutMs, ca = null, idleTimeoutMs = 4000, maxIdle = 256, lookup }) {
  /** @type {WeakMap<object, Origin>} */
  const origins = new WeakMap()
  /** @type {Set<Origin>} */
  const all = new Set()

  function originFor (upstream) {
    let origin = origins.get(upstream)
    if (origin === undefined) {
      const url = upstream.target
      const secure = url.protocol === 'https:'
      origin = new Origin({
        authority: url.host,
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: Number(url.port) || (secure ? 443 : 80),
        secure,
        ca,
        keepAlive,
        timeoutMs,
        idleTimeoutMs,
        maxIdle,
        lookup
      })
      origins.set(upstream, origin)
      all.add(origin)
    }
    return origin
  }

  /**
   * @param {import('http').IncomingMessage} req
   * @param {import('http').ServerResponse} res
   * @param {{ target: URL }} upstream
   * @param {import('../proxy-engine').AttemptHandlers} handlers
   * @param {{ replay?: boolean, hold?: Set<number>, noStore?: boolean, trusted?: boolean }} [options] `trusted`: the
   *   client's peer is a trusted proxy (its forwarding headers are kept, src/proxy/forwarded.js)
   * @returns {{ abort: () => void }}
   */
  function forward (req, res, upstream, handlers, options) {
    const replay = options !== undefined && options.replay === true
    const hold = options !== undefined && options.hold !== undefined && options.hold.size > 0 ? options.hold : null
    const noStore = options !== undefined && options.noStore === true
    const trusted = options !== undefined && options.trusted === true
    const exchange = new Exchange(
      req, res, originFor(upstream), handlers, replay, hold, keepAlive, timeoutMs, noStore, trusted
    )
    exchange.start()
    return exchange
  }

  function close () {
    for (const origin of all) origin.close()
    all.clear()
  }

  /** Close the pooled connections to `upstream` (those in use after their request); new ones follow. */
  function retire (upstream) {
    const origin = origins.get(upstream)
    if (origin === undefined) return
    origins.delete(upstream)
    all.delete(origin)
    origin.close()
  }

  return { forward, close, retire }
}

/**
 * One attempt of one request on one upstream: writes the request, relays the response.
 * Implements the connection's ConnectionUser contract.
 */
class Exchange {
  constructor (req, res, origin, handlers, replay, hold, keepAlive, timeoutMs, noStore, trusted) {
    this.req = req
    this.res = res
    this.origin = origin
    this.handlers = handlers
    this.hold = hold
    this.timeoutMs = timeoutMs
    this.sendBody = !replay && hasBody(req)
    this.head = requestHead(req, !keepAlive, origin.authority, noStore, trusted)
    /** @type {import('./upstream-connections').UpstreamConnection | null} */
    this.conn = null
    this.headed = false // a final response head arrived
    this.ended = false // nothing more goes to the client from this attempt
    this.discarding = false // the response is read and dropped (held status, or given up)
    this.requestDone = false // the request was written whole
    this.sent = false // some of the request was written on the current connection
    this.keepAlive = false // the upstream allows another request on this connection
    this.skipBody = req.method === 'HEAD' ? 1 : 0
    this.replayed = false
    /** @type {(() => void) | null} made when a slow client first pauses the upstream */
    this.onDrain = null
  }

  start () {
    let conn = this.origin.take()
    if (conn === null) conn = this.origin.connect()
    this.send(conn)
  }

  /** Write the request on `conn`, which now belongs to this exchange. */
  send (conn) {
    this.conn = conn
    this.sent = false
    conn.attach(this)
    const socket = conn.socket
    if (!this.sendBody) {
      this.sent = true
      socket.write(this.head, 'latin1')
      this.requestDone = true
      return
    }
    // The head waits for the first piece of the body (or its end), so a request whose body turns
    // out malformed at the front never reaches the upstream at all, and head and body share a write.
    let headSent = false
    const writeHead = () => {
      if (headSent) return
      headSent = true
      this.sent = true
      socket.write(this.head, 'latin1')
    }
    const chunked = this.req.headers['transfer-encoding'] !== undefined
    const req = this.req
    const onData = (chunk) => {
      if (this.conn !== conn || conn.closed) return
      socket.cork()
      writeHead()
      let flushed
      if (chunked) {
        socket.write(chunk.length.toString(16) + '\r\n', 'latin1')
        socket.write(chunk)
        flushed = socket.write('\r\n', 'latin1')
      } else {
        flushed = socket.write(chunk)
      }
      socket.uncork()
      if (!flushed) {
        req.pause()
        socket.once('drain', () => req.resume())
      }
    }
    const onEnd = () => {
      if (this.conn !== conn || conn.closed) return
      socket.cork()
      writeHead()
      if (chunked) socket.write('0\r\n\r\n', 'latin1') // request trailers are not forwarded
      socket.uncork()
      this.requestDone = true
    }
    req.on('data', onData)
    req.on('end', onEnd)
  }

  // --- ConnectionUser ---

  onHead (statusCode, statusMessage, rawHeaders, keepAlive) {
    this.headed = true
    this.keepAlive = keepAlive
    const head = responseHead(rawHeaders, this.origin.names)
    if (this.hold !== null && this.hold.has(statusCode) && this.handlers.discard(statusCode, head.headers)) {
      this.ended = true
      this.discarding = true // read and drop the body: the connection stays usable
      return this.skipBody
    }
    this.handlers.onResponse(statusCode, head.headers)
    if (this.ended) { // the handler gave up on it
      this.discarding = true
      return this.skipBody
    }
    try {
      // the fast front takes the head as it is, without checking each name for framing again
      if (this.res.writeRelayedHead !== undefined) {
        this.res.writeRelayedHead(statusCode, statusMessage, head.raw, head.headers)
      } else this.res.writeHead(statusCode, statusMessage, head.raw)
    } catch (err) {
      // a head the client's response refuses (node:http's writeHead throws on what it cannot send):
      // an invalid response, as one the parser refused
      this.res.statusMessage = '' // writeHead kept it: the 502 gets its own
      this.unrelayable(err)
    }
    return this.skipBody
  }

  /**
   * The upstream's head cannot be written to the client (nothing went out): the connection is
   * closed, never pooled (the rest of the response is not read), and the attempt fails as an
   * invalid response does (502, or a retry elsewhere).
   * @param {Error} err
   */
  unrelayable (err) {
    const conn = this.conn
    this.conn = null
    this.ended = true
    this.discarding = true
    conn.detach() // what the parser still reports of this response goes nowhere
    conn.broken(err)
    this.handlers.onFailure(err, 'connect')
  }

  onBody (chunk) {
    if (this.discarding) return
    const res = this.res
    // write() says false for any chunk above the high-water mark even when the socket took it all
    // at once; only pause when something is actually left queued.
    if (!res.write(chunk) && res.writableLength !== 0) {
      this.conn.socket.pause()
      if (this.onDrain === null) {
        this.onDrain = () => {
          if (this.conn !== null) this.conn.socket.resume()
        }
      }
      res.once('drain', this.onDrain)
    }
    // queued, not written through: the chunk's bytes must outlive the connection's read buffer
    if (res.writableLength !== 0) this.conn.retainRead()
  }

  onComplete () {
    const conn = this.conn
    this.conn = null
    const relay = !this.discarding
    this.ended = true
    this.origin.release(conn, this.keepAlive && this.requestDone)
    if (!this.requestDone) this.req.resume() // the upstream answered before the body ended: drain the rest
    if (relay) this.res.end()
  }

  onClose (err, timedOut) {
    const conn = this.conn
    this.conn = null
    if (this.ended) return
    // A pooled connection the upstream had closed meanwhile (or that was retired for bytes it sent
    // unasked) before any of the request went out: the request goes, whole, once, on a new
    // connection to the same upstream, whatever its method (its client had sent no byte of a body
    // yet, so none was read; an upstream's keep-alive timeout running out while a client is slow to
    // start its body is no failure of the upstream). So does a bodiless idempotent request whose
    // connection closed with nothing received (a malformed answer is an answer, not a closed
    // connection).
    const unsent = !this.sent
    const unanswered = !this.headed && !conn?.answered && !this.sendBody && IDEMPOTENT.has(this.req.method)
    if (!timedOut && conn !== null && conn.served > 0 && !this.replayed && (unsent || unanswered)) {
      this.replayed = true
      this.send(this.origin.connect())
      return
    }
    this.ended = true
    if (timedOut) return this.handlers.onFailure(new Error(`upstream timed out after ${this.timeoutMs} ms`), 'timeout')
    if (this.headed) return this.handlers.onFailure(err || new Error('upstream closed the response early'), 'stream')
    this.handlers.onFailure(err || new Error('upstream closed the connection before responding'), 'connect')
  }

  /** The client went away (or the balancer gave up): drop the upstream exchange. */
  abort () {
    this.ended = true
    this.discarding = true
    const conn = this.conn
    this.conn = null
    if (conn !== null) conn.socket.destroy()
  }
}

/**
 * The request head sent upstream, as one latin1 string (the front server parsed the client's
 * bytes as latin1, so they go out unchanged).
 * @param {import('http').IncomingMessage} req
 * @param {boolean} close add `Connection: close`
 * @param {string} authority the upstream's host[:port], sent as Host when the client sent none
 * @param {boolean} noStore send `Cache-Control: no-store` (the policy's admission hint)
 * @param {boolean} trusted the client's peer is a trusted proxy
 * @returns {string}
 */
function requestHead (req, close, authority, noStore, trusted) {
  const headers = requestHeaders(req, { keepTransferEncoding: true, close, authority, noStore, trusted })
  let head = req.method + ' ' + req.url + ' HTTP/1.1\r\n'
  for (let i = 0; i < headers.length; i += 2) {
    const value = headers[i + 1]
    if (Array.isArray(value)) {
      for (const v of value) head += headers[i] + ': ' + v + '\r\n'
    } else {
      head += headers[i] + ': ' + value + '\r\n'
    }
  }
  return head + '\r\n'
}

module.exports = { createDirectEngine }
