'use strict'

const net = require('node:net')
const tls = require('node:tls')
const { ResponseParser } = require('./response-parser')
const { HeaderNames } = require('../../common/header-names')

/** Bytes of one read from an upstream socket (Node's own default read size). */
const READ_SIZE = 65536

/**
 * What a connection hands the request that currently owns it (src/proxy/engines/direct.js).
 * @typedef {object} ConnectionUser
 * @property {(statusCode: number, statusMessage: string, rawHeaders: string[], keepAlive: boolean) => number | boolean}
 *   onHead a final (non-1xx) response head; returns a truthy value when the response has no body to read (HEAD)
 * @property {(chunk: Buffer) => void} onBody a piece of the response body (framing removed)
 * @property {() => void} onComplete the response ended (the connection is closed first when bytes
 *   followed it)
 * @property {(err: Error | null, timedOut: boolean) => void} onClose the connection closed before the response ended
 * @property {boolean} sent whether any of the request went out on the connection
 */

/**
 * One keep-alive connection to an upstream with its response parser. It belongs to one request
 * at a time (`attach`/`detach`); between requests it waits in its origin's idle stack, where any
 * byte or close from the upstream simply retires it.
 */
class UpstreamConnection {
  /**
   * @param {Origin} origin
   * @param {(onread: { buffer: () => Buffer, callback: (n: number, buf: Buffer) => void }) => import('net').Socket}
   *   open opens the socket; a plain TCP socket takes `onread` (reads land in one reused buffer), a TLS
   *   socket ignores it and emits 'data'
   */
  constructor (origin, open) {
    this.origin = origin
    /** @type {Buffer | null} where the next read lands; null: a new one (the last is still referenced) */
    this.readBuffer = null
    /** @type {ConnectionUser | null} */
    this.user = null
    /** requests this connection has carried before the current one */
    this.served = 0
    this.closed = false
    this.timedOut = false
    /** @type {Error | null} */
    this.error = null
    /** whether any byte arrived since the current request took the connection */
    this.answered = false
    /** the origin's sweep tick when the connection went idle */
    this.idleTick = 0
    this.parser = new ResponseParser(this)

    const parser = this.parser
    const receive = (data) => {
      // on an idle connection any byte, even the first of a response, retires it (kept, it would be
      // parsed in front of the next request's response)
      if (this.user === null) return this.broken(new Error('unsolicited bytes from upstream'))
      // nor can bytes that come before any of the request went out (its head waits for the body)
      // answer it: they are the end of an earlier exchange, and the connection is out of step
      if (!this.user.sent) return this.broken(new Error('unsolicited bytes from upstream'))
      this.answered = true
      let err
      try {
        err = parser.execute(data)
      } catch (thrown) {
        // nothing an upstream sends may throw out of a socket callback (it would end the process):
        // whatever threw on the way to the client, the connection is closed and its request fails
        err = thrown
      }
      if (err !== null) this.broken(err)
    }
    // Reads into one reused buffer instead of a new 64 KB one per read (less allocation and GC):
    // safe because every body chunk is written on at once, and whoever queues a chunk instead of
    // writing it through calls retainRead(), after which reads go to a fresh buffer.
    const socket = open({
      buffer: () => this.readBuffer || (this.readBuffer = Buffer.allocUnsafeSlow(READ_SIZE)),
      callback: (n, buf) => { receive(buf.subarray(0, n)) }
    })
    this.socket = socket
    if (origin.secure) socket.on('data', receive) // TLS sockets emit 'data' (onread is for TCP)
    socket.setNoDelay(true)
    socket.on('end', () => {
      // a response delimited by the connection's end completes here
      let err
      try {
        err = parser.finish()
      } catch (thrown) {
        err = thrown // as in receive()
      }
      if (err !== null) this.broken(err)
    })
    socket.on('timeout', () => {
      if (this.user === null) return // idle: the origin's sweep decides
      this.timedOut = true
      socket.destroy()
    })
    socket.on('error', (err) => { this.error = err })
    socket.on('close', () => {
      this.closed = true
      origin.forget(this)
      const user = this.user
      this.user = null
      if (user !== null) user.onClose(this.error, this.timedOut)
    })
  }

  /**
   * Give the connection to a request. The socket's inactivity timeout (`timeoutMs`, set once at
   * connect) runs all along: every read and write re-arms it, and while the connection is idle a
   * 'timeout' is ignored (the origin's sweep closes idle connections), so no timer is touched per
   * request.
   * @param {ConnectionUser & { headed: boolean }} user
   */
  attach (user) {
    this.user = user
    this.timedOut = false
    this.answered = false
    this.parser.reset()
  }

  /** The last body chunk is still referenced (queued behind a slow client): read into a new buffer. */
  retainRead () {
    this.readBuffer = null
  }

  /** The request is done with the connection (it may be pooled or destroyed next). */
  detach () {
    this.user = null
    this.served++
  }

  /** A protocol error or an unsolicited response: the connection cannot be trusted any more. */
  broken (err) {
    this.error = err
    this.socket.destroy()
  }

  // --- ResponseParserHandlers, relayed to the request that owns the connection ---

  onHead (statusCode, statusMessage, rawHeaders, keepAlive) {
    return this.user.onHead(statusCode, statusMessage, rawHeaders, keepAlive)
  }

  onBody (chunk) {
    if (this.user !== null) this.user.onBody(chunk)
  }

  onComplete (extra) {
    // bytes after the answer in the same read: the connection is out of step; it is closed before
    // its request is done with it, so it is never pooled, whatever runs as the request completes
    if (extra) this.broken(new Error('unsolicited bytes from upstream'))
    if (this.user !== null) this.user.onComplete()
  }

  /** Whether the connection can carry another request. */
  get usable () {
    // an upstream that ended its side (FIN read, the 'close' not yet here) takes no more requests:
    // one written now would be lost (EPIPE) with its body
    return !this.closed && !this.socket.destroyed && !this.socket.readableEnded && this.user === null
  }
}

/**
 * The connections to one upstream origin: a LIFO stack of idle keep-alive connections (the most
 * recently used one is the warmest, and the ones at the bottom time out first), at most
 * `maxIdle` of them, each dropped after `idleTimeoutMs` without a request.
 */
class Origin {
  /**
   * @param {object} options
   * @param {string} options.authority host[:port] as in the backend URL (a default Host header)
   * @param {string} options.host host name or IP address (no brackets)
   * @param {number} options.port
   * @param {boolean} options.secure TLS (https upstream), verified against `host`
   * @param {Buffer | null} options.ca trusted CA certificates (PEM) instead of Node's bundled roots
   * @param {boolean} options.keepAlive pool connections between requests
   * @param {number} options.timeoutMs inactivity timeout of a connection carrying a request
   * @param {number} options.idleTimeoutMs
   * @param {number} options.maxIdle
   * @param {Function} [options.lookup] net.connect's `lookup` (default node:dns)
   */
  constructor ({ authority, host, port, secure, ca, keepAlive, timeoutMs, idleTimeoutMs, maxIdle, lookup }) {
    this.authority = authority
    this.host = host
    this.port = port
    this.secure = secure
    this.ca = ca
    this.keepAlive = keepAlive
    this.timeoutMs = timeoutMs
    this.idleTimeoutMs = idleTimeoutMs
    this.maxIdle = maxIdle
    /** net.connect's `lookup` option, spread into connect options (nothing when none is given) */
    this.resolve = lookup ? { lookup } : null
    /** @type {UpstreamConnection[]} oldest first */
    this.idle = []
    /** the lower-case header names of this upstream's responses (src/proxy/engines/headers.js) */
    this.names = new HeaderNames()
    this.closed = false
    // idle connections are closed by a sweep every `sweepMs` (a quarter of the idle timeout, at
    // most a second), which counts ticks instead of reading a clock per request
    this.sweepMs = Math.max(5, Math.min(1000, Math.floor(idleTimeoutMs / 4)))
    this.tick = 0
    /** @type {NodeJS.Timeout | null} */
    this.sweeper = null
  }

  /** @returns {UpstreamConnection | null} an idle connection, most recently used first */
  take () {
    while (this.idle.length > 0) {
      const conn = this.idle.pop()
      if (conn.usable) return conn
    }
    return null
  }

  /** @returns {UpstreamConnection} a new connection (the request may be written before it is up) */
  connect () {
    return new UpstreamConnection(this, (onread) => {
      const socket = this.secure
        ? tls.connect({
          host: this.host,
          port: this.port,
          // verified like a browser would, against the name in the backend URL (SNI cannot carry an IP)
          servername: net.isIP(this.host) ? undefined : this.host,
          rejectUnauthorized: true,
          ...(this.ca ? { ca: this.ca } : {}),
          ...this.resolve
        })
        : net.connect(this.resolve === null
          ? { host: this.host, port: this.port, onread }
          : { host: this.host, port: this.port, onread, ...this.resolve })
      socket.setTimeout(this.timeoutMs)
      return socket
    })
  }

  /**
   * A request is done with `conn`: keep it for the next one, or close it.
   * @param {UpstreamConnection} conn
   * @param {boolean} reusable the exchange ended cleanly and both sides allow keep-alive
   */
  release (conn, reusable) {
    conn.detach()
    if (!reusable || !this.keepAlive || this.closed || !conn.usable || this.idle.length >= this.maxIdle) {
      conn.socket.destroy()
      return
    }
    if (conn.socket.isPaused()) conn.socket.resume() // paused for a slow client whose response is now all buffered
    conn.idleTick = this.tick
    this.idle.push(conn)
    if (this.sweeper === null) {
      this.sweeper = setInterval(() => this.sweep(), this.sweepMs)
      this.sweeper.unref()
    }
  }

  /** Close the connections idle for `idleTimeoutMs` or more; stop sweeping when none is left. */
  sweep () {
    this.tick++
    const ticks = Math.ceil(this.idleTimeoutMs / this.sweepMs)
    let old = 0
    while (old < this.idle.length && this.tick - this.idle[old].idleTick >= ticks) old++
    if (old > 0) for (const conn of this.idle.splice(0, old)) conn.socket.destroy()
    if (this.idle.length === 0) this.stopSweep()
  }

  stopSweep () {
    if (this.sweeper !== null) clearInterval(this.sweeper)
    this.sweeper = null
  }

  /** @param {UpstreamConnection} conn a connection that closed */
  forget (conn) {
    const i = this.idle.indexOf(conn)
    if (i !== -1) this.idle.splice(i, 1)
  }

  /** Close the idle connections; connections in use close when their request ends. */
  close () {
    this.closed = true
    this.stopSweep()
    for (const conn of this.idle.splice(0)) conn.socket.destroy()
  }
}

module.exports = { Origin, UpstreamConnection }
