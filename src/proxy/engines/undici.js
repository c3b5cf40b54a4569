'use strict'

const { Transform } = require('node:stream')
const { requireOptional } = require('../../common/optional-package')
const { requestHeaders, responseHead, sendableReason } = require('./headers')
const { hasBody } = require('../body-limit')
const { dropInterimHeads } = require('./interim-responses')

/**
 * The undici engine: one undici Pool per upstream, driven through `dispatch()` with a handler that
 * writes the response head and body straight into the client's `res` (back-pressure: a full `res`
 * pauses the upstream socket until 'drain'). undici parses the response itself (llhttp) and hands
 * over raw header buffers, so no IncomingMessage or header object is built per response.
 *
 * @param {object} options
 * @param {boolean} options.keepAlive reuse upstream connections; false sends `Connection: close`
 *   (undici then closes the connection after the response)
 * @param {number} options.timeoutMs upstream inactivity timeout: connect, headers, and between body chunks
 * @param {Function} [options.lookup] net.connect's `lookup` (default node:dns)
 * @returns {import('../proxy-engine').ProxyEngine}
 */
function createUndiciEngine ({ keepAlive, timeoutMs, lookup }) {
  const { Pool, buildConnector } = requireOptional('undici', 'the undici engine (--engine undici)')
  // undici's own connector, with the interim heads an upstream sends unasked cut off each
  // connection (undici destroys it on a `100 Continue`: src/proxy/engines/interim-responses.js)
  const connector = buildConnector(lookup ? { timeout: timeoutMs, lookup } : { timeout: timeoutMs })
  const connect = (options, callback) =>
    connector(options, (err, socket) => callback(err, err ? socket : dropInterimHeads(socket)))
  /** @type {Map<string, Pool>} by origin */
  const pools = new Map()
  /** @type {WeakMap<object, Pool>} */
  const byUpstream = new WeakMap()

  function pool (upstream) {
    let p = byUpstream.get(upstream)
    if (p === undefined || p.closed) {
      const origin = upstream.target.origin
      p = pools.get(origin)
      if (p === undefined || p.closed) {
        p = new Pool(origin, {
          pipelining: 1,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          connect
        })
        pools.set(origin, p)
      }
      byUpstream.set(upstream, p)
    }
    return p
  }

  /**
   * @param {import('http').IncomingMessage} req
   * @param {import('http').ServerResponse} res
   * @param {{ target: URL }} upstream
   * @param {import('../proxy-engine').AttemptHandlers} handlers
   * @param {{ replay?: boolean, hold?: Set<number>, noStore?: boolean, trusted?: boolean }} [options] `hold`: response
   *   statuses offered to `handlers.discard` before anything reaches the client; `noStore`: send `Cache-Control:
   *   no-store`;
   *   `trusted`: the client's peer is a trusted proxy (its forwarding headers are kept)
   * @returns {{ abort: () => void }}
   */
  function forward (req, res, upstream, handlers, { replay = false, hold, noStore = false, trusted = false } = {}) {
    const attempt = new Attempt(res, handlers, hold && hold.size > 0 ? hold : null)
    const dispatch = (body) => {
      if (attempt.ended) return // the client left before its body began
      pool(upstream).dispatch({
        method: req.method,
        path: req.url,
        headers: requestHeaders(req, { keepTransferEncoding: false, close: !keepAlive, noStore, trusted }),
        body
      }, attempt)
    }
    if (replay || !hasBody(req)) dispatch(null)
    else bodyOnceStarted(req, dispatch)
    return attempt
  }

  function close () {
    for (const p of pools.values()) p.destroy().catch(() => {})
    pools.clear()
  }

  /** Close the pool of `upstream`'s origin once its requests in flight end; new ones get a new pool. */
  function retire (upstream) {
    const origin = upstream.target.origin
    const p = pools.get(origin)
    if (p === undefined) return
    pools.delete(origin)
    p.close().catch(() => {})
  }

  return { forward, close, retire }
}

/**
 * Pipe the client's body into a stream of its own (undici destroys a stream body once sent, and the
 * client's socket is still needed for the response) and call `start` with it once its first bytes
 * (or its end) are here. undici takes a pooled connection and parses what arrives on it as this
 * request's answer from the moment it is dispatched, but writes the head only with the first body
 * chunk: dispatched earlier, bytes an upstream sent late on that connection, before any of this
 * request went out, would be taken for its answer. Dispatched here, they arrive on an idle
 * connection, which undici closes.
 * @param {import('http').IncomingMessage} req
 * @param {(body: import('stream').Readable) => void} start
 */
function bodyOnceStarted (req, start) {
  let started = false
  const go = () => {
    if (started) return
    started = true
    start(body)
  }
  const body = new Transform({
    transform (chunk, encoding, callback) {
      callback(null, chunk)
      go()
    },
    flush (callback) {
      callback()
      go()
    }
  })
  req.pipe(body)
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'])

/** One attempt, as undici's dispatch handler (the callback interface: onConnect, onHeaders, ...). */
class Attempt {
  constructor (res, handlers, hold) {
    this.res = res
    this.handlers = handlers
    this.hold = hold
    /** a held response being read and dropped (the connection stays usable) */
    this.dropping = false
    this.ended = false
    this.responded = false
    this.abortUpstream = null
    this.resume = null
    this.onDrain = null
    /** the head relayed is a 204's or a 304's */
    this.bodiless = false
  }

  /** The client went away: drop the upstream request. */
  abort () {
    if (this.ended) return
    this.ended = true
    if (this.abortUpstream) this.abortUpstream(new Error('client aborted'))
  }

  onConnect (abort) {
    if (this.ended) abort(new Error('client aborted'))
    else this.abortUpstream = abort
  }

  onHeaders (statusCode, rawHeaders, resume, statusText) {
    if (statusCode < 200) return true // 1xx: informational, the final head follows
    if (this.ended) return false
    this.responded = true
    this.resume = resume
    const raw = new Array(rawHeaders.length)
    for (let i = 0; i < rawHeaders.length; i++) {
      const v = rawHeaders[i]
      raw[i] = Array.isArray(v) ? v.map(String) : v.toString('latin1')
    }
    const head = responseHead(raw)
    if (this.hold !== null && this.hold.has(statusCode) && this.handlers.discard(statusCode, head.headers)) {
      this.ended = true
      this.dropping = true
      return true
    }
    this.handlers.onResponse(statusCode, head.headers)
    if (this.ended) return false
    try {
      this.res.writeHead(statusCode, sendableReason(statusCode, statusText), head.raw)
    } catch (err) {
      // a head node:http refuses to send: an invalid response; aborting closes its connection
      this.res.statusMessage = '' // writeHead kept it: the 502 gets its own
      this.ended = true
      if (this.abortUpstream) this.abortUpstream(err)
      this.handlers.onFailure(err, 'connect')
      return false
    }
    this.bodiless = statusCode === 204 || statusCode === 304
    return true
  }

  onData (chunk) {
    if (this.dropping) return true
    if (this.ended) return false
    // write() says false for any chunk above the high-water mark even when the socket took it
    // all at once; only pause the upstream when something is actually left queued.
    if (this.res.write(chunk) || this.res.writableLength === 0) return true
    if (this.onDrain === null) this.onDrain = () => this.resume()
    this.res.once('drain', this.onDrain)
    return false
  }

  onComplete () {
    if (this.ended) return
    this.ended = true
    this.res.end()
  }

  onError (err) {
    if (this.ended) return
    this.ended = true
    if (this.bodiless && err.code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') {
      // undici counts a 204's or 304's Content-Length (a 304 may carry the representation's)
      // against a body these never have, and closes the connection: the response is whole
      this.res.end()
      return
    }
    const kind = TIMEOUT_CODES.has(err.code) ? 'timeout' : this.responded ? 'stream' : 'connect'
    this.handlers.onFailure(err, kind)
  }
}

module.exports = { createUndiciEngine }
