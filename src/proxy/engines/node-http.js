'use strict'

const http = require('node:http')
const https = require('node:https')
const { PassThrough } = require('node:stream')
const { requestHeaders, responseHead, sendableReason } = require('./headers')
const { hasBody } = require('../body-limit')
const { sentSinceReuse, staleConnection, resendable, watchAnswer } = require('../upstream-agents')
const { ReplayBody } = require('./replay-body')

/**
 * The node-http engine: one `http.request` (`https.request` for an https upstream) per attempt
 * through the upstream agents (keep-alive; https verified against the backend URL's name), headers
 * as flat arrays both ways (no header objects built for the outgoing request or the response),
 * the response body written chunk by chunk with back-pressure. No proxy library.
 *
 * @param {object} options
 * @param {boolean} options.keepAlive reuse upstream connections (the agents carry it)
 * @param {number} options.timeoutMs upstream inactivity timeout (connect, headers or body)
 * @param {{ agentFor: (target: URL) => import('http').Agent | false, freshAgentFor: (target: URL) =>
 *   import('http').Agent, close: () => void }} options.agents upstream agents (src/proxy/upstream-agents.js)
 * @returns {import('../proxy-engine').ProxyEngine}
 */
function createNodeHttpEngine ({ timeoutMs, agents }) {
  /** @type {WeakMap<object, { host: string, port: number, request: typeof http.request, agent: import('http').Agent |
   * false }>} */
  const targets = new WeakMap()

  function target (upstream) {
    let t = targets.get(upstream)
    if (t === undefined) {
      const url = upstream.target
      const secure = url.protocol === 'https:'
      t = {
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: Number(url.port) || (secure ? 443 : 80),
        request: secure ? https.request : http.request,
        agent: agents.agentFor(url)
      }
      targets.set(upstream, t)
    }
    return t
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
    const t = target(upstream)
    let ended = false
    let responded = false
    let timedOut = false
    const withBody = !replay && hasBody(req)
    // a request that failed on a stale pooled connection goes once more, on a new one (resend):
    // the body it sent there is kept until its answer begins
    /** @type {ReplayBody | null} */
    let kept = null
    let resent = false
    const headers = requestHeaders(req, {
      keepTransferEncoding: true,
      close: false,
      authority: upstream.target.host,
      noStore,
      trusted
    })

    const fail = (err, kind) => {
      if (ended) return
      ended = true
      if (kept !== null) kept.release()
      handlers.onFailure(err, kind)
    }

    /** @type {import('http').ClientRequest} */
    let proxyReq
    /** @type {import('http').IncomingMessage | null} */
    let proxyRes = null

    /**
     * Send the request on a connection of `agent`, the body from `body` (null: none).
     * @param {import('http').Agent | false} agent
     * @param {import('stream').Readable | null} body
     */
    const send = (agent, body) => {
      const current = t.request({ host: t.host, port: t.port, method: req.method, path: req.url, headers, agent })
      proxyReq = current
      /** performance.now() when the request was written whole */
      let writtenAt = null
      current.once('finish', () => { writtenAt = performance.now() })
      // bytes past the answer on a pooled connection: it is closed, not pooled again
      if (agent) current.once('socket', () => watchAnswer(current))
      current.setTimeout(timeoutMs, () => {
        timedOut = true
        current.destroy(new Error(`upstream timed out after ${timeoutMs} ms`))
      })
      // The keep-alive race (RFC 9112 §9.3.1): a pooled connection the upstream closed as the
      // request went out on it, nothing read. Sent once more, on a new connection, whatever the
      // method, when its body is kept whole (src/proxy/upstream-agents.js, resendable).
      const resend = () => {
        if (resent || ended || responded || timedOut || (withBody && (kept === null || !kept.kept))) return false
        if (!resendable(current, writtenAt, performance.now())) return false
        resent = true
        current.removeAllListeners('response')
        current.on('error', () => {})
        current.destroy()
        let body = null
        if (withBody) {
          body = new PassThrough()
          kept.replay(body)
        }
        send(agents.freshAgentFor(upstream.target), body)
        return true
      }
      current.on('error', (err) => {
        if (current !== proxyReq) return
        // a response read whole, then bytes that are not (a body after a 204 or a HEAD answer): the
        // client's response completes on 'end', the connection is closed by Node
        if (proxyRes !== null && proxyRes.complete && !timedOut) return
        if (resend()) return
        if (!responded && !timedOut && staleConnection(current)) err.staleConnection = true
        fail(err, timedOut ? 'timeout' : responded ? 'stream' : 'connect')
      })
      // A 101 to a request that asked for no upgrade: Node's client destroys the socket without an
      // error or a response when nobody listens, which would leave the attempt to the timeout.
      current.on('upgrade', (_res, socket) => {
        socket.destroy()
        invalid(new Error('upstream switched protocols unasked (101)'))
      })
      current.on('close', () => {
        if (current !== proxyReq || responded) return
        if (resend()) return
        fail(new Error('upstream closed the connection before responding'), 'connect')
      })
      current.on('response', onResponse)
      if (body === req && current.reusedSocket) kept = new ReplayBody(req)
      if (body === null) current.end()
      else body.pipe(current)
    }

    const invalid = (err) => {
      // an invalid response (what node:http's client let through and its server will not send):
      // its connection is closed, not pooled; nothing went to the client yet
      proxyReq.destroy()
      if (proxyRes !== null) proxyRes.destroy()
      fail(err, 'connect')
    }

    const onResponse = (message) => {
      proxyRes = message
      if (ended) {
        proxyRes.destroy()
        return
      }
      // bytes that came before any of the request went out (its head waits for the body) answer
      // nothing we sent: the end of an earlier exchange on this pooled connection, out of step
      if (!sentSinceReuse(proxyReq.socket)) return invalid(new Error('upstream answered before the request was sent'))
      responded = true
      if (kept !== null) kept.release()
      // a 101 without Upgrade comes here as a final response: nothing a client may be sent
      if (proxyRes.statusCode < 200) {
        return invalid(new Error(`upstream sent status ${proxyRes.statusCode} as a final response`))
      }
      const head = responseHead(proxyRes.rawHeaders)
      if (hold && hold.has(proxyRes.statusCode) && handlers.discard(proxyRes.statusCode, head.headers)) {
        ended = true
        proxyRes.resume() // read and drop the body: the upstream connection stays usable
        return
      }
      handlers.onResponse(proxyRes.statusCode, head.headers)
      if (ended) return // the handler gave up on it
      try {
        res.writeHead(proxyRes.statusCode, sendableReason(proxyRes.statusCode, proxyRes.statusMessage), head.raw)
      } catch (err) {
        // a head node:http refuses to send (Node's client parser lets through what its server
        // will not write, e.g. status 099)
        res.statusMessage = '' // writeHead kept it: the 502 gets its own
        return invalid(err)
      }
      const upstreamRes = proxyRes
      upstreamRes.on('data', (chunk) => {
        // write() says false for any chunk above the high-water mark even when the socket took
        // it all at once; only pause when something is actually left queued.
        if (!res.write(chunk) && res.writableLength !== 0) {
          upstreamRes.pause()
          res.once('drain', () => upstreamRes.resume())
        }
      })
      upstreamRes.on('end', () => {
        ended = true
        res.end()
      })
      // An upstream that breaks off mid-body: the client must see a broken response.
      upstreamRes.on('error', () => {})
      upstreamRes.on('close', () => {
        if (!upstreamRes.complete) {
          fail(
            new Error(timedOut ? `upstream timed out after ${timeoutMs} ms` : 'upstream closed the response early'),
            timedOut ? 'timeout' : 'stream'
          )
        }
      })
    }

    send(t.agent, withBody ? req : null)

    return {
      abort () {
        ended = true
        if (kept !== null) kept.release()
        proxyReq.destroy()
      }
    }
  }

  function close () {
    agents.close()
  }

  return { forward, close }
}

module.exports = { createNodeHttpEngine }
