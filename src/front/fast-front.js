'use strict'

const { EventEmitter } = require('node:events')
const { STATUS_CODES } = require('node:http')
const { HeaderNames } = require('../common/header-names')

/**
 * The fast front: plain-HTTP client connections start here instead of in node:http's server. A
 * request that is simple, as nearly every request to a page balancer is (GET or HEAD, HTTP/1.1,
 * origin-form target, a whole head in hand, no body, no Upgrade or Expect, no header twice, not
 * the admin prefix), is parsed here and given to the server's 'request' listeners as a light
 * request/response pair; the response is written straight to the socket, head and first body
 * chunk in one write. Anything else hands the connection to node:http for the rest of its life,
 * with the bytes not yet parsed, through the server's own connection listener (as a user who emits
 * 'connection' to inject a socket does), so every rule node:http enforces (400, 408, 413, 431,
 * 100-continue, upgrades, request bodies, HTTP/1.0) keeps its one implementation.
 *
 * Public APIs only: net sockets, EventEmitter, the http.Server's listeners.
 */

/**
 * The header lines this front takes, at `lastIndex`: each a token name, a colon, and a value of
 * visible ASCII, spaces and tabs (optional whitespace around it is trimmed), ending in CRLF or at
 * the end of the text; one regex run checks every line of a head.
 */
const HEADER_LINES = /(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t\x20-\x7e]*(?:\r\n|$))*$/y
/** The request line this front takes: GET or HEAD of an origin-form target, HTTP/1.1. */
const REQUEST_LINE = /^(GET|HEAD) (\/[\x21-\x7e]*) HTTP\/1\.1$/
/** Request headers that make a request not simple: a body, an upgrade, an expectation. */
const NOT_SIMPLE = new Set(['content-length', 'transfer-encoding', 'upgrade', 'expect', 'http2-settings'])
/** The end of a head. */
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1')
/** A character node:http's writeHead refuses in a reason phrase (all but HTAB, SP, VCHAR, obs-text). */
const BAD_REASON = /[^\t\x20-\x7e\x80-\xff]/

const HANDOFF = null

/**
 * Parse one request head at `start` of `buf` if it is simple.
 * @param {Buffer} buf
 * @param {number} start
 * @param {number} maxHeaderSize
 * @param {HeaderNames} [names] the connection's header names so far (src/common/header-names.js)
 * @returns {{ method: string, url: string, headers: Record<string, string>, close: boolean, next: number } | 'partial'
 *   | null} 'partial': no whole head yet; null: not simple (hand the connection to node:http)
 */
function parseSimpleRequest (buf, start, maxHeaderSize, names = new HeaderNames()) {
  const stop = buf.indexOf(HEAD_END, start)
  if (stop === -1) return buf.length - start > maxHeaderSize ? HANDOFF : 'partial'
  if (stop + 4 - start > maxHeaderSize) return HANDOFF
  const text = buf.toString('latin1', start, stop)
  let lineEnd = text.indexOf('\r\n')
  if (lineEnd === -1) lineEnd = text.length
  const line = REQUEST_LINE.exec(text.slice(0, lineEnd))
  if (line === null) return HANDOFF
  let from = lineEnd + 2
  if (from < text.length) {
    HEADER_LINES.lastIndex = from
    if (!HEADER_LINES.test(text)) return HANDOFF
  }
  const headers = {}
  let close = false
  let host = false
  let at = 0
  while (from < text.length) {
    let to = text.indexOf('\r\n', from)
    if (to === -1) to = text.length
    const colon = text.indexOf(':', from)
    const name = names.lowerAt(text.slice(from, colon), at++)
    if (headers[name] !== undefined || NOT_SIMPLE.has(name)) return HANDOFF
    let v = colon + 1
    let w = to
    while (v < w && (text.charCodeAt(v) === 32 || text.charCodeAt(v) === 9)) v++
    while (w > v && (text.charCodeAt(w - 1) === 32 || text.charCodeAt(w - 1) === 9)) w--
    const value = text.slice(v, w)
    if (name === 'host') host = true
    else if (name === 'connection') {
      const lower = value.toLowerCase()
      if (lower === 'close') close = true
      else if (lower !== 'keep-alive') return HANDOFF
    }
    headers[name] = value
    from = to + 2
  }
  if (!host) return HANDOFF
  return { method: line[1], url: line[2], headers, close, next: stop + 4 }
}

/** `Date:` as node:http sends it, made at most once a second. */
let dateCache = ''
let dateSecond = -1
function httpDate () {
  const now = Date.now()
  const second = Math.floor(now / 1000)
  if (second !== dateSecond) {
    dateSecond = second
    dateCache = new Date(now).toUTCString()
  }
  return dateCache
}

/** The request as the balancer reads it: no body, so no stream. */
class FastRequest extends EventEmitter {
  constructor (socket, method, url, headers) {
    super()
    this.socket = socket
    this.method = method
    this.url = url
    this.headers = headers
    this.httpVersion = '1.1'
    this.complete = true
  }

  pause () { return this }
  resume () { return this }
}

/**
 * The response, written straight to the client's socket: what the balancer and the direct engine
 * use of node:http's ServerResponse (writeHead with a flat raw array or an object, write with
 * back-pressure, end, destroy, 'drain' and 'close').
 */
class FastResponse extends EventEmitter {
  /**
   * @param {FastConnection} conn
   * @param {FastRequest} req
   * @param {boolean} keepAlive the client asked to keep the connection
   */
  constructor (conn, req, keepAlive) {
    super()
    this.conn = conn
    this.req = req
    this.socket = conn.socket
    this.shouldKeepAlive = keepAlive
    this.statusCode = 200
    this.statusMessage = ''
    /** writeHead was called (as node:http's flag: the head may not be on the wire yet) */
    this.headersSent = false
    /** the head is on the wire */
    this.flushed = false
    this.writableEnded = false
    this.writableFinished = false
    this.destroyed = false
    this.head = null
    this.chunked = false
    this.noBody = req.method === 'HEAD'
    this.closed = false
  }

  get writableLength () {
    return this.socket.writableLength
  }

  /**
   * @param {number} statusCode
   * @param {string | string[] | Record<string, string | number | string[]>} [message] reason phrase, or headers
   * @param {string[] | Record<string, string | number | string[]>} [headers] flat `[name, value, ...]` or an object
   * @returns {this}
   */
  writeHead (statusCode, message, headers) {
    if (this.head !== null) throw new Error('writeHead called twice')
    if (typeof message !== 'string') {
      headers = message
      message = undefined
    }
    let head = ''
    let length = false
    let date = false
    const add = (name, value) => {
      const lower = name.length === 14 || name.length === 4 || name.length === 17 ? name.toLowerCase() : ''
      if (lower === 'content-length') length = true
      else if (lower === 'date') date = true
      else if (lower === 'transfer-encoding') return // framing is ours
      if (Array.isArray(value)) {
        for (const v of value) head += name + ': ' + v + '\r\n'
      } else {
        head += name + ': ' + value + '\r\n'
      }
    }
    if (Array.isArray(headers)) {
      for (let i = 0; i < headers.length; i += 2) add(headers[i], headers[i + 1])
    } else if (headers) {
      for (const name in headers) add(name, headers[name])
    }
    return this.setHead(statusCode, message, head, length, date)
  }

  /**
   * writeHead for a relayed upstream head whose headers are known already (the direct engine):
   * `raw` is sent as it is, so it must hold no Transfer-Encoding and only string values.
   * @param {number} statusCode
   * @param {string} message reason phrase ('' for the default)
   * @param {string[]} raw flat `[name, value, ...]`
   * @param {Record<string, string | string[]>} headers the same by lower-case name
   * @returns {this}
   */
  writeRelayedHead (statusCode, message, raw, headers) {
    if (this.head !== null) throw new Error('writeHead called twice')
    let head = ''
    for (let i = 0; i < raw.length; i += 2) head += raw[i] + ': ' + raw[i + 1] + '\r\n'
    return this.setHead(statusCode, message, head, headers['content-length'] !== undefined, headers.date !== undefined)
  }

  /** The head: status line, `fields` (CRLF-ended lines), then Date, framing and Connection as needed. */
  setHead (statusCode, message, fields, length, date) {
    // what node:http's writeHead refuses is refused here too (the engines answer 502 for it)
    if (!Number.isInteger(statusCode) || statusCode < 100 || statusCode > 999) {
      throw invalidHead('ERR_HTTP_INVALID_STATUS_CODE', `Invalid status code: ${statusCode}`)
    }
    if (message && BAD_REASON.test(message)) throw invalidHead('ERR_INVALID_CHAR', 'Invalid character in statusMessage')
    this.headersSent = true
    this.statusCode = statusCode
    this.statusMessage = message || STATUS_CODES[statusCode] || 'unknown'
    let head = 'HTTP/1.1 ' + statusCode + ' ' + this.statusMessage + '\r\n' + fields
    if (statusCode === 204 || statusCode === 304) this.noBody = true
    if (!date) head += 'Date: ' + httpDate() + '\r\n'
    if (!length && !this.noBody) {
      this.chunked = true
      head += 'Transfer-Encoding: chunked\r\n'
    }
    const front = this.conn.front
    if (this.shouldKeepAlive && !front.closing()) {
      head += 'Connection: keep-alive\r\n' + front.keepAliveHeader
    } else {
      head += 'Connection: close\r\n'
      this.shouldKeepAlive = false
    }
    this.head = head + '\r\n'
    return this
  }

  /**
   * @param {Buffer | string} chunk
   * @returns {boolean} false when the socket's buffer is full ('drain' follows)
   */
  write (chunk) {
    if (this.writableEnded || this.destroyed) return false
    if (this.head === null) this.writeHead(this.statusCode)
    const socket = this.socket
    if (this.noBody) return this.flushHead()
    if (typeof chunk === 'string') chunk = Buffer.from(chunk)
    if (chunk.length === 0) return this.flushHead()
    let flushed
    if (!this.flushed || this.chunked) socket.cork()
    if (!this.flushed) {
      socket.write(this.head, 'latin1')
      this.flushed = true
    }
    if (this.chunked) {
      socket.write(chunk.length.toString(16) + '\r\n', 'latin1')
      socket.write(chunk)
      flushed = socket.write('\r\n', 'latin1')
      socket.uncork()
    } else if (socket.writableCorked) {
      flushed = socket.write(chunk)
      socket.uncork()
    } else {
      flushed = socket.write(chunk)
    }
    return flushed
  }

  flushHead () {
    if (this.flushed) return true
    this.flushed = true
    return this.socket.write(this.head, 'latin1')
  }

  /**
   * @param {Buffer | string} [chunk]
   * @returns {this}
   */
  end (chunk) {
    if (this.writableEnded) return this
    if (this.head === null) {
      const length = chunk === undefined ? 0 : Buffer.byteLength(chunk)
      this.writeHead(this.statusCode, this.noBody ? [] : ['Content-Length', String(length)])
    }
    if (chunk !== undefined && chunk.length > 0) this.write(chunk)
    else this.flushHead()
    if (this.chunked && !this.noBody) this.socket.write('0\r\n\r\n', 'latin1')
    this.writableEnded = true
    if (this.socket.destroyed) return this
    this.writableFinished = true
    this.emit('finish')
    this.conn.done(this)
    return this
  }

  /** Break the response off (the client must not take a cut body for a whole one). */
  destroy () {
    if (this.destroyed) return this
    this.destroyed = true
    this.socket.destroy()
    return this
  }

  /** The exchange is over, finished or not: 'close', once. */
  close () {
    if (this.closed) return
    this.closed = true
    this.emit('close')
  }
}

/** One client connection while the fast front holds it. */
class FastConnection {
  constructor (socket, front) {
    this.socket = socket
    this.front = front
    /** @type {Buffer | null} bytes received and not parsed yet */
    this.pending = null
    /** @type {FastResponse | null} */
    this.current = null
    this.handedOff = false
    /** a response said `Connection: close`: nothing more is read from the client (as node:http) */
    this.closing = false
    /** the bytes in `pending` are to be parsed on the next turn: what arrives first queues behind them */
    this.resuming = false
    /** the client's header names so far: lower-cased once per connection, not per request */
    this.names = new HeaderNames()
    this.onData = (data) => this.receive(data)
    this.onDrain = () => { if (this.current !== null) this.current.emit('drain') }
    this.onClose = () => {
      const res = this.current
      this.current = null
      if (res !== null) res.close()
    }
    this.onTimeout = () => this.timeout()
    // the client ended its side: as node:http (without httpAllowHalfOpen), end ours; a response in
    // flight is then aborted when the socket closes
    this.onEnd = () => { if (this.socket.writable) this.socket.end() }
    socket.on('end', this.onEnd)
    socket.on('data', this.onData)
    socket.on('drain', this.onDrain)
    socket.on('close', this.onClose)
    socket.on('timeout', this.onTimeout)
    socket.on('error', noop)
    // a new connection has headersTimeoutMs for its first request, as node:http gives it
    socket.setTimeout(front.headersTimeoutMs)
    this.fresh = true
  }

  receive (data) {
    if (this.closing) return
    if (this.pending !== null) {
      data = Buffer.concat([this.pending, data])
      this.pending = null
    }
    if (this.current !== null || this.resuming) { // pipelined: kept until the response in flight is out
      this.pending = data
      if (data.length > this.front.maxHeaderSize * 4) this.socket.pause()
      return
    }
    this.parse(data)
  }

  parse (data) {
    let start = 0
    while (start < data.length) {
      const r = parseSimpleRequest(data, start, this.front.maxHeaderSize, this.names)
      if (r === null || r === 'partial' || (this.front.accepts !== null && !this.front.accepts(r.url))) {
        // a head in pieces, or not a simple request: node:http takes the connection, with its bytes
        return this.handOff(start === 0 ? data : data.subarray(start))
      }
      start = r.next
      if (start < data.length) this.pending = data.subarray(start)
      this.serve(r)
      if (this.current !== null || this.handedOff || this.closing) return // pipelined rest waits in `pending`
      if (this.pending === null) return
      data = this.pending
      this.pending = null
      start = 0
    }
  }

  serve ({ method, url, headers, close }) {
    if (this.fresh) {
      // from now on the keep-alive timeout: every read and write re-arms it, and while a request
      // is in flight its 'timeout' is ignored, so no timer is touched per request
      this.fresh = false
      this.socket.setTimeout(this.front.keepAliveTimeoutMs)
    }
    const req = new FastRequest(this.socket, method, url, headers)
    const res = new FastResponse(this, req, !close)
    this.current = res
    this.front.server.emit('request', req, res)
  }

  /** The response `res` was written whole. */
  done (res) {
    if (this.current !== res) return
    this.current = null
    res.close()
    if (!res.shouldKeepAlive) {
      // node:http stops at a response that closes the connection too: a request pipelined behind
      // it, or sent after it, is not served (and not handed to node:http either)
      this.closing = true
      this.pending = null
      this.socket.end()
      return
    }
    if (this.socket.destroyed) return
    if (this.pending !== null) {
      // the rest stays in `pending` until then: bytes read meanwhile join it behind, never go first
      // (they were answered before the requests pipelined ahead of them, or those were lost)
      this.resuming = true
      if (this.socket.isPaused()) this.socket.resume()
      setImmediate(() => {
        this.resuming = false
        const rest = this.pending
        this.pending = null
        if (this.socket.isPaused()) this.socket.resume() // paused for what queued meanwhile
        if (rest !== null && !this.socket.destroyed && this.current === null && !this.closing) this.parse(rest)
      })
    }
  }

  timeout () {
    if (this.current !== null) return
    // node:http answers a head not in within headersTimeout with 408, and ends an idle
    // keep-alive connection silently
    if (this.fresh) this.front.refuse(this.socket, '408 Request Timeout')
    else this.socket.destroy()
  }

  /** Give the connection to node:http, with the bytes it has not parsed yet. */
  handOff (bytes) {
    this.handedOff = true
    const socket = this.socket
    socket.off('data', this.onData)
    socket.off('drain', this.onDrain)
    socket.off('close', this.onClose)
    socket.off('timeout', this.onTimeout)
    socket.off('end', this.onEnd)
    socket.off('error', noop)
    socket.setTimeout(0)
    for (const listener of this.front.nodeListeners) listener.call(this.front.server, socket)
    // node:http reads from the socket from now on; what was read already goes to it first
    if (bytes.length > 0) socket.emit('data', bytes)
  }
}

function noop () {}

/**
 * The error writeHead throws for a head it cannot send, with node:http's code for the same case.
 * @param {string} code
 * @param {string} message
 * @returns {RangeError & { code: string }}
 */
function invalidHead (code, message) {
  const err = new RangeError(message)
  err.code = code
  return err
}

/**
 * Put the fast front in front of an http.Server (plain HTTP, not https): the server's own
 * connection listeners (node:http's) are kept for the connections handed off to them. Call it
 * right after creating the server, before any other 'connection' listener is added.
 *
 * @param {import('node:http').Server} server
 * @param {object} options
 * @param {number} options.keepAliveTimeoutMs idle time after a response before the connection is closed
 * @param {number} options.headersTimeoutMs time for a new connection's first request head
 * @param {number} options.maxHeaderSize bytes of request line and headers
 * @param {((url: string) => boolean) | null} [options.accepts] false: hand this request to node:http
 *   (e.g. the admin prefix)
 * @param {() => boolean} [options.closing] true while the server is closing: responses say
 *   `Connection: close`
 * @param {(socket: import('node:net').Socket, status: string) => void} options.refuse answer and close
 */
function attachFastFront (server, {
  keepAliveTimeoutMs,
  headersTimeoutMs,
  maxHeaderSize,
  accepts = null,
  closing = () => false,
  refuse
}) {
  const nodeListeners = server.listeners('connection')
  server.removeAllListeners('connection')
  const seconds = Math.floor(keepAliveTimeoutMs / 1000)
  const front = {
    server,
    nodeListeners,
    keepAliveTimeoutMs,
    headersTimeoutMs,
    maxHeaderSize,
    accepts,
    closing,
    refuse,
    // node:http's own rule: a keep-alive hint only for a timeout of a second or more
    keepAliveHeader: seconds > 0 ? `Keep-Alive: timeout=${seconds}\r\n` : ''
  }
  server.on('connection', (socket) => {
    // eslint-disable-next-line no-new
    new FastConnection(socket, front)
  })
  return front
}

module.exports = { attachFastFront, parseSimpleRequest }
