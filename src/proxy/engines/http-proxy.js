'use strict'

const { PassThrough, Readable } = require('node:stream')
const { via, contentLength, forwardingHeaders, sendableReason, FRAMING } = require('./headers')
const { CLIENT_FORWARDING } = require('../forwarded')
const { withNoStore } = require('../cache-control')
const { hasBody } = require('../body-limit')
const { requireOptional } = require('../../common/optional-package')
const { sentSinceReuse, staleConnection, resendable, watchAnswer } = require('../upstream-agents')
const { ReplayBody } = require('./replay-body')

/** The library's npm name: node-http-proxy's API, maintained (http-proxy 1.18 calls util._extend, DEP0060). */
const LIBRARY = 'http-proxy-3'

/**
 * The http-proxy engine: http-proxy-3 (the maintained successor of http-proxy 1.18, with its API)
 * moves the bytes; this module adds what the library lacks (hop-by-hop stripping both ways, the
 * forwarding headers of the other engines instead of the library's `xfwd`, which trusts every
 * client's, an inactivity timeout, failure kinds, mid-body breaks). The only module that requires
 * the library, and only when the engine is created: it is an optional peer dependency of polistes.
 *
 * @param {object} options
 * @param {boolean} options.keepAlive reuse upstream connections; false opens one per request
 *   and sends `Connection: close`
 * @param {number} options.timeoutMs upstream inactivity timeout (connect, headers or body)
 * @param {{ agentFor: (target: URL) => import('http').Agent | false, close: () => void }} options.agents
 *   upstream agents (src/proxy/upstream-agents.js): http or https by the target's scheme
 * @returns {import('../proxy-engine').ProxyEngine}
 * @throws {import('../../common/errors').PolistesError} ERR_POLISTES_MISSING_PACKAGE when http-proxy-3 is not installed
 */
function createHttpProxyEngine ({ keepAlive, timeoutMs, agents }) {
  const { createProxyServer } = requireOptional(LIBRARY, 'the http-proxy engine (--engine http-proxy)')
  // the passes that turn an upstream response into the client's head (status, headers), without
  // setConnection: it copies the client's Connection header text onto the response (`keep-alive`
  // to an HTTP/1.0 client), and node:http then calls the connection kept while it close-delimits a
  // body without a length, or while its parser has already judged the connection closing (llhttp
  // takes no `Keep-Alive` followed by HTAB or SP as keep-alive): a request pipelined behind went
  // unanswered (fuzz cases 593, 631, 633). node:http writes its own, as for the other engines.
  const outgoing = Object.entries(require(`${LIBRARY}/dist/lib/http-proxy/passes/web-outgoing`).OUTGOING_PASSES)
    .filter(([name]) => name !== 'setConnection').map(([, pass]) => pass)
  // toProxy: the request target goes out verbatim (the front server admits origin-form only);
  // otherwise the library runs it through url.parse(), which throws, uncaught, on `//%zz@x`.
  const proxy = createProxyServer({ toProxy: true })
  const kAttempt = Symbol('polistes.attempt')

  // The library emits 'proxyReq' once the upstream socket is assigned: arm the timeout there, and
  // honour an abort that came first.
  proxy.on('proxyReq', (proxyReq, req) => {
    const attempt = req[kAttempt]
    if (!attempt) return
    attempt.proxyReq = proxyReq
    attempt.writtenAt = null
    if (keepAlive) watchAnswer(proxyReq) // bytes past the answer: its connection is closed, not pooled again
    // the body sent on a pooled connection is kept until the answer begins, for a resend; read from
    // here, as the library's pipe does (a 'data' listener added with the pipe would start the
    // body flowing before this event, and with it the request's head)
    if (attempt.withBody && attempt.sends === 1 && proxyReq.reusedSocket) attempt.kept = new ReplayBody(req)
    proxyReq.once('finish', () => { if (attempt.proxyReq === proxyReq) attempt.writtenAt = performance.now() })
    if (attempt.aborted) {
      proxyReq.destroy()
      return
    }
    stripHopByHop(proxyReq, req)
    setFraming(proxyReq, attempt.framing)
    if (!keepAlive) proxyReq.setHeader('connection', 'close')
    proxyReq.setHeader('via', via(req.headers.via))
    if (attempt.noStore) proxyReq.setHeader('cache-control', withNoStore(proxyReq.getHeader('cache-control')))
    if (!attempt.trusted) for (const name of CLIENT_FORWARDING) proxyReq.removeHeader(name)
    const forwarding = forwardingHeaders(req, attempt.trusted)
    for (let i = 0; i < forwarding.length; i += 2) proxyReq.setHeader(forwarding[i], forwarding[i + 1])
    if (attempt.startBody !== null) {
      attempt.startBody()
      attempt.startBody = null
    }
    proxyReq.setTimeout(timeoutMs, () => {
      attempt.timedOut = true
      proxyReq.destroy(new Error(`upstream timed out after ${timeoutMs} ms`))
    })
    // A 101 nothing asked for: with nobody listening, Node's client destroys the socket and reports
    // neither an error nor a response, which would leave the attempt to the timeout.
    proxyReq.on('upgrade', (_res, socket) => {
      socket.destroy()
      attempt.fail(new Error('upstream switched protocols unasked (101)'), 'connect')
    })
    proxyReq.on('close', () => {
      if (attempt.proxyReq !== proxyReq || attempt.responded || attempt.resend()) return
      attempt.fail(new Error('upstream closed the connection before responding'), 'connect')
    })
  })

  proxy.on('proxyRes', (proxyRes, req) => {
    const attempt = req[kAttempt]
    if (!attempt || attempt.ended) return
    attempt.proxyRes = proxyRes
    // bytes that came before any of the request went out (its head waits for the body) answer
    // nothing we sent: the end of an earlier exchange on this pooled connection, out of step
    if (attempt.proxyReq !== null && !sentSinceReuse(attempt.proxyReq.socket)) {
      return attempt.invalid(new Error('upstream answered before the request was sent'))
    }
    attempt.responded = true
    if (attempt.kept !== null) attempt.kept.release()
    // a 101 without Upgrade comes here as a final response: nothing a client may be sent
    if (proxyRes.statusCode < 200) {
      return attempt.invalid(new Error(`upstream sent status ${proxyRes.statusCode} as a final response`))
    }
    stripHopByHopResponse(proxyRes.headers)
    if (attempt.hold && attempt.hold.has(proxyRes.statusCode) &&
      attempt.handlers.discard(proxyRes.statusCode, proxyRes.headers)) {
      attempt.ended = true
      proxyRes.resume() // read and drop the body: the upstream connection stays usable
      return
    }
    // An upstream that breaks off mid-body: without this the client would wait forever on a
    // response that never ends, because the library just unpipes.
    proxyRes.on('close', () => {
      if (!proxyRes.complete) attempt.fail(new Error('upstream closed the response early'), 'stream')
    })
    attempt.handlers.onResponse(proxyRes.statusCode, proxyRes.headers)
    if (attempt.ended) return
    // The library leaves every response to us (selfHandleResponse): its own head passes, then the
    // body. The head is written here at once, not by the first write of a pipe: node:http throws
    // on a head it cannot send (status 099, a control character in the reason phrase, ...), and
    // thrown from a pipe's 'data' listener that would end the process.
    const res = attempt.res
    try {
      for (const pass of outgoing) pass(req, res, proxyRes, {})
      res.writeHead(res.statusCode, sendableReason(res.statusCode, res.statusMessage))
    } catch (err) {
      // nothing went to the client, and the 502 (or the retry's response) must carry nothing of it
      for (const name of res.getHeaderNames()) res.removeHeader(name)
      res.statusMessage = ''
      return attempt.invalid(err)
    }
    proxyRes.pipe(res)
  })

  // Every web() call passes a callback; this listener only guards against a library path that
  // would emit instead (an unhandled 'error' event would crash the balancer).
  proxy.on('error', () => {})

  /**
   * Forward one attempt of `req` to `upstream`. Bodiless retries pass `replay: true`: the original
   * request stream has already been consumed, so an empty body is sent instead.
   *
   * @param {import('http').IncomingMessage} req
   * @param {import('http').ServerResponse} res
   * @param {{ target: URL }} upstream
   * @param {import('../proxy-engine').AttemptHandlers} handlers
   * @param {{ replay?: boolean, hold?: Set<number>, noStore?: boolean, trusted?: boolean }} [options] `hold`: response
   *   statuses offered to `handlers.discard` before anything reaches the client (retry on 503); `noStore`: send
   *   `Cache-Control: no-store` (appended to the client's Cache-Control); `trusted`: the client's peer
   *   is a trusted proxy (its forwarding headers are kept)
   * @returns {{ abort: () => void }} abort the upstream request (client went away)
   */
  function forward (req, res, upstream, handlers, { replay = false, hold, noStore = false, trusted = false } = {}) {
    const attempt = {
      handlers,
      res,
      hold: hold && hold.size > 0 ? hold : null,
      noStore,
      trusted,
      proxyReq: null,
      /** @type {import('http').IncomingMessage | null} */
      proxyRes: null,
      aborted: false,
      timedOut: false,
      responded: false,
      ended: false,
      // the client's framing as the front read it, taken before the library's passes run: its
      // deleteLength pass rewrites a DELETE's or OPTIONS's `Transfer-Encoding: chunked` into
      // `Content-Length: 0` in req.headers, yet still pipes the body upstream, where it was
      // parsed as the next request (issue 25)
      framing: { transferEncoding: req.headers['transfer-encoding'], contentLength: req.headers['content-length'] },
      /** performance.now() when the current upstream request was written whole; null: not yet */
      writtenAt: null,
      /** the body kept for a resend on a new connection (null: no body, or no pooled connections) */
      kept: null,
      resent: false,
      withBody: !replay && hasBody(req),
      /** @type {(() => void) | null} starts the body of a resend, once its headers are set */
      startBody: null,
      /** web() calls made for this attempt: a callback of an earlier one is stale */
      sends: 0,
      fail (err, kind) {
        if (attempt.ended) return
        attempt.ended = true
        if (attempt.kept !== null) attempt.kept.release()
        handlers.onFailure(err, kind)
      },
      abort () {
        attempt.aborted = true
        attempt.ended = true
        if (attempt.kept !== null) attempt.kept.release()
        if (attempt.proxyReq) attempt.proxyReq.destroy()
      },
      /**
       * The keep-alive race (RFC 9112 §9.3.1): a pooled connection the upstream closed as the
       * request went out on it, nothing read. Sent once more, on a new connection, whatever the
       * method, when its body is kept whole (src/proxy/upstream-agents.js, resendable).
       * @returns {boolean} whether it was sent again
       */
      resend () {
        const sent = attempt.proxyReq
        if (attempt.resent || attempt.ended || attempt.responded || attempt.timedOut || sent === null) return false
        if (withBody && (attempt.kept === null || !attempt.kept.kept)) return false
        if (!resendable(sent, attempt.writtenAt, performance.now())) return false
        attempt.resent = true
        attempt.proxyReq = null
        sent.removeAllListeners('response')
        sent.on('error', () => {})
        sent.destroy()
        let body = Readable.from([])
        if (withBody) {
          // the body flows once the library's 'proxyReq' has set the request's headers (it comes
          // with the new connection's socket): a write before would send them as they are
          body = new PassThrough()
          attempt.startBody = () => attempt.kept.replay(body)
        }
        send(agents.freshAgentFor(upstream.target), body)
        return true
      },
      /** An invalid response (what Node's client let through and its server will not send): its connection is closed,
       * not pooled. */
      invalid (err) {
        if (attempt.proxyReq) attempt.proxyReq.destroy()
        if (attempt.proxyRes) attempt.proxyRes.destroy()
        attempt.fail(err, 'connect')
      }
    }
    req[kAttempt] = attempt
    // Node's ClientRequest throws, uncaught, when a `Trailer` header goes out on a message that is
    // not chunked: one `GET` with `Trailer: x` killed the process. The library forwards no
    // request trailers anyway, so the announcement is dropped before the request is built.
    delete req.headers.trailer
    // The front server has already answered `Expect: 100-continue` (Node sends 100 itself), and
    // the library skips its 'proxyReq' event for requests that carry Expect: no timeout, no
    // hop-by-hop stripping. nginx drops Expect too.
    delete req.headers.expect
    const withBody = attempt.withBody
    const agent = agents.agentFor(upstream.target)
    /**
     * One web() call: the request on a connection of `agent`, the body from `buffer` (the client's
     * request when none).
     * @param {import('http').Agent | false} agent
     * @param {import('stream').Readable | undefined} buffer
     */
    const send = (agent, buffer) => {
      const sends = ++attempt.sends
      const options = { target: upstream.target, agent }
      if (buffer !== undefined) options.buffer = buffer
      options.selfHandleResponse = true // the 'proxyRes' listener writes the response
      proxy.web(req, res, options, (err) => {
        if (req[kAttempt] !== attempt || attempt.sends !== sends) return // a stale attempt's (or send's) listener
        // a response read whole, then bytes that are not (a body after a 204 or a HEAD answer): the
        // pipe completes the client's response, Node closes the connection
        if (attempt.proxyRes !== null && attempt.proxyRes.complete && !attempt.timedOut) return
        const kind = attempt.timedOut ? 'timeout' : attempt.responded ? 'stream' : 'connect'
        if (kind === 'connect' && attempt.resend()) return
        if (kind === 'connect' && attempt.proxyReq !== null && staleConnection(attempt.proxyReq)) {
          err.staleConnection = true
        }
        attempt.fail(err, kind)
      })
    }
    send(agent, replay ? Readable.from([]) : undefined)
    return attempt
  }

  function close () {
    agents.close()
    proxy.close && proxy.close()
  }

  return { forward, close }
}

/**
 * Connection headers are hop-by-hop (RFC 9110 §7.6.1): the client's `Connection: close` concerns
 * its own connection to us, but the library copies it upstream, which silently closes every pooled
 * upstream connection after one request. Remove it and the headers it names, so the agent's
 * keep-alive holds whatever the client does.
 * @param {import('http').ClientRequest} proxyReq
 * @param {import('http').IncomingMessage} req
 */
function stripHopByHop (proxyReq, req) {
  const connection = req.headers.connection
  if (connection) {
    for (const name of connection.split(',')) {
      const header = name.trim().toLowerCase()
      if (header && !FRAMING.has(header)) proxyReq.removeHeader(header)
    }
  }
  proxyReq.removeHeader('connection')
  // a request that reaches an engine is no upgrade (those are tunnelled, src/proxy/upgrade.js): an
  // Upgrade header left on it (h2c) would offer the upstream a switch the balancer cannot follow,
  // and the other engines drop it too
  proxyReq.removeHeader('upgrade')
  proxyReq.removeHeader('keep-alive')
  proxyReq.removeHeader('proxy-connection')
  proxyReq.removeHeader('te')
}

/**
 * The request's framing, written by the proxy rather than copied from the client (the library
 * copies every header): `Transfer-Encoding: chunked` (node:http then chunk-encodes the body) or
 * the Content-Length Node's parser held the body to, and nothing for a request without either.
 * @param {import('http').ClientRequest} proxyReq
 * @param {{ transferEncoding?: string, contentLength?: string }} framing the client's framing headers,
 *   as they were before the library's passes ran
 */
function setFraming (proxyReq, { transferEncoding, contentLength: length }) {
  proxyReq.removeHeader('transfer-encoding')
  proxyReq.removeHeader('content-length')
  if (transferEncoding !== undefined) proxyReq.setHeader('transfer-encoding', 'chunked')
  else if (length !== undefined) proxyReq.setHeader('content-length', contentLength(length))
}

/**
 * The same rule on the way back: the upstream's `Connection: close` (always sent when keep-alive
 * to upstreams is off) concerns the upstream hop only. Left in, it would go to the client, and Node
 * would then close the client's connection after every response. Without it, node:http writes the
 * client's Connection itself, from what its parser read. `Trailer` and `Transfer-Encoding`
 * go too, as in the other engines (src/proxy/engines/headers.js): no trailer fields are forwarded, and
 * node:http frames the client's response itself (a Transfer-Encoding other than chunked copied to
 * the client would leave its body without framing).
 * @param {import('http').IncomingHttpHeaders} headers the upstream response's headers, edited in place
 */
function stripHopByHopResponse (headers) {
  const connection = headers.connection
  if (connection) {
    for (const name of connection.split(',')) {
      const header = name.trim().toLowerCase()
      if (header) delete headers[header]
    }
    delete headers.connection
  }
  delete headers['keep-alive']
  delete headers['proxy-connection']
  delete headers.trailer
  delete headers['transfer-encoding']
}

module.exports = { createHttpProxyEngine }
