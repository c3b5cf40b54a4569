'use strict'

const net = require('node:net')
const tls = require('node:tls')
// Node's own HTTP/1.1 parser (llhttp, strict mode): the one node:http's client uses, so upstream
// responses are framed exactly as node:http would frame them (duplicate Content-Length,
// Content-Length with Transfer-Encoding, bad chunk sizes: all refused).
const { HTTPParser } = require('_http_common')

const { kOnHeaders, kOnHeadersComplete, kOnBody, kOnMessageComplete, RESPONSE } = HTTPParser

/**
 * What a connection hands the request that currently owns it (src/engines/direct.js).
 * @typedef {object} ConnectionUser
 * @property {(statusCode: number, statusMessage: string, rawHeaders: string[], keepAlive: boolean) => number} onHead
 *   a final (non-1xx) response head; returns 1 when the response has no body to read (HEAD), else 0
 * @property {(chunk: Buffer) => void} onBody a piece of the response body (framing removed)
 * @property {() => void} onComplete the response ended
 * @property {(err: Error | null, timedOut: boolean) => void} onClose the connection closed before the response ended
 */

/**
 * One keep-alive connection to an upstream with its response parser. It belongs to one request
 * at a time (`attach`/`detach`); between requests it waits in its origin's idle stack, where any
 * byte or close from the upstream simply retires it.
 */
class UpstreamConnection {
  /**
   * @param {import('net').Socket} socket
   * @param {Origin} origin
   */
  constructor (socket, origin) {
    this.socket = socket
    this.origin = origin
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
    /** @type {string[] | null} header pairs of a head that arrived in several reads */
    this.partialHeaders = null
    const parser = new HTTPParser()
    parser.initialize(RESPONSE, this, 0, 0)
    parser[kOnHeaders] = (headers) => {
      this.partialHeaders = this.partialHeaders ? this.partialHeaders.concat(headers) : headers
    }
    parser[kOnHeadersComplete] = (major, minor, headers, method, url, statusCode, statusMessage, upgrade, keepAlive) => {
      if (headers === undefined) headers = this.partialHeaders || []
      this.partialHeaders = null
      const user = this.user
      // 1xx (100 Continue, 103 Early Hints) are hop-by-hop here: skipped, the final response follows.
      // A 101 or anything unsolicited (no request in flight) breaks the connection.
      if (user === null || statusCode === 101) return this.broken(new Error('unexpected response from upstream'))
      if (statusCode < 200) return 1
      return user.onHead(statusCode, statusMessage, headers, keepAlive && major === 1 && minor === 1)
    }
    parser[kOnBody] = (chunk) => {
      if (this.user !== null) this.user.onBody(chunk)
    }
    parser[kOnMessageComplete] = () => {
      if (this.user !== null && this.user.headed) this.user.onComplete()
    }
    this.parser = parser

    socket.setNoDelay(true)
    // execute() and finish() return an Error made in Node's own realm: `instanceof Error` is false
    // for it inside a vm context (jest), so the type is tested instead
    socket.on('data', (data) => {
      // on an idle connection any byte, even the first of a response, retires it (kept, it would be
      // parsed in front of the next request's response)
      if (this.user === null) return this.broken(new Error('unsolicited bytes from upstream'))
      this.answered = true
      const result = parser.execute(data)
      if (typeof result === 'object') this.broken(result)
    })
    socket.on('end', () => {
      // a response delimited by the connection's end completes here
      const result = parser.finish()
      if (typeof result === 'object') this.broken(result)
    })
    socket.on('timeout', () => {
      this.timedOut = this.user !== null
      socket.destroy()
    })
    socket.on('error', (err) => { this.error = err })
    socket.on('close', () => {
      this.closed = true
      origin.forget(this)
      // after 'close' no callback can be running inside execute(): release the native parser
      parser.close()
      const user = this.user
      this.user = null
      if (user !== null) user.onClose(this.error, this.timedOut)
    })
  }

  /**
   * Give the connection to a request.
   * @param {ConnectionUser & { headed: boolean }} user
   * @param {number} timeoutMs inactivity timeout while the request is in flight
   */
  attach (user, timeoutMs) {
    this.user = user
    this.timedOut = false
    this.answered = false
    this.socket.setTimeout(timeoutMs)
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
    return 1
  }

  /** Whether the connection can carry another request. */
  get usable () {
    return !this.closed && !this.socket.destroyed && this.user === null
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
   * @param {number} options.idleTimeoutMs
   * @param {number} options.maxIdle
   */
  constructor ({ authority, host, port, secure, ca, keepAlive, idleTimeoutMs, maxIdle }) {
    this.authority = authority
    this.host = host
    this.port = port
    this.secure = secure
    this.ca = ca
    this.keepAlive = keepAlive
    this.idleTimeoutMs = idleTimeoutMs
    this.maxIdle = maxIdle
    /** @type {UpstreamConnection[]} */
    this.idle = []
    this.closed = false
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
    const socket = this.secure
      ? tls.connect({
        host: this.host,
        port: this.port,
        // verified like a browser would, against the name in the backend URL (SNI cannot carry an IP)
        servername: net.isIP(this.host) ? undefined : this.host,
        rejectUnauthorized: true,
        ...(this.ca ? { ca: this.ca } : {})
      })
      : net.connect({ host: this.host, port: this.port })
    return new UpstreamConnection(socket, this)
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
    conn.socket.setTimeout(this.idleTimeoutMs)
    this.idle.push(conn)
  }

  /** @param {UpstreamConnection} conn a connection that closed */
  forget (conn) {
    const i = this.idle.indexOf(conn)
    if (i !== -1) this.idle.splice(i, 1)
  }

  /** Close the idle connections; connections in use close when their request ends. */
  close () {
    this.closed = true
    for (const conn of this.idle.splice(0)) conn.socket.destroy()
  }
}

module.exports = { Origin, UpstreamConnection }
