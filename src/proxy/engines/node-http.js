'use strict'

const http = require('node:http')
const https = require('node:https')
const { requestHeaders, responseHead, sendableReason } = require('./headers')
const { hasBody } = require('../body-limit')
const { sentSinceReuse, staleConnection } = require('../upstream-agents')

/**
 * The node-http engine: one `http.request` (`https.request` for an https upstream) per attempt
 * through the upstream agents (keep-alive; https verified against the backend URL's name), headers
 * as flat arrays both ways (no header objects built for the outgoing request or the response),
 * the response body written chunk by chunk with back-pressure. No proxy library.
 *
 * @param {object} options
 * @param {boolean} options.keepAlive reuse upstream connections (the agents carry it)
 * @param {number} options.timeoutMs upstream inactivity timeout (connect, headers or body)
 * @param {{ agentFor: (target: URL) => import('http').Agent | false, close: () => void }} options.agents
 *   upstream agents (src/proxy/upstream-agents.js)
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
    const { host, port, request, agent } = target(upstream)
    let ended = false
    let responded = false
    let timedOut = false

    const fail = (err, kind) => {
      if (ended) return
      ended = true
      handlers.onFailure(err, kind)
    }

    const proxyReq = request({
      host,
      port,
      method: req.method,
      path: req.url,
      headers: requestHeaders(req, {
        keepTransferEncoding: true,
        close: false,
        authority: upstream.target.host,
        noStore,
        trusted
      }),
      agent
    })
    proxyReq.setTimeout(timeoutMs, () => {
      timedOut = true
      proxyReq.destroy(new Error(`upstream timed out after ${timeoutMs} ms`))
    })
    proxyReq.on('error', (err) => {
      // a response read whole, then bytes that are not (a body after a 204 or a HEAD answer): the
      // client's response completes on 'end', the connection is closed by Node
      if (proxyRes !== null && proxyRes.complete && !timedOut) return
      if (!responded && !timedOut && staleConnection(proxyReq)) err.staleConnection = true
      fail(err, timedOut ? 'timeout' : responded ? 'stream' : 'connect')
    })
    /** @type {import('http').IncomingMessage | null} */
    let proxyRes = null
    const invalid = (err) => {
      // an invalid response (what node:http's client let through and its server will not send):
      // its connection is closed, not pooled; nothing went to the client yet
      proxyReq.destroy()
      if (proxyRes !== null) proxyRes.destroy()
      fail(err, 'connect')
    }
    // A 101 to a request that asked for no upgrade: Node's client destroys the socket without an
    // error or a response when nobody listens, which would leave the attempt to the timeout.
    proxyReq.on('upgrade', (_res, socket) => {
      socket.destroy()
      invalid(new Error('upstream switched protocols unasked (101)'))
    })
    proxyReq.on('close', () => {
      if (!responded) fail(new Error('upstream closed the connection before responding'), 'connect')
    })
    proxyReq.on('response', (message) => {
      proxyRes = message
      if (ended) {
        proxyRes.destroy()
        return
      }
      // bytes that came before any of the request went out (its head waits for the body) answer
      // nothing we sent: the end of an earlier exchange on this pooled connection, out of step
      if (!sentSinceReuse(proxyReq.socket)) return invalid(new Error('upstream answered before the request was sent'))
      responded = true
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
      proxyRes.on('data', (chunk) => {
        // write() says false for any chunk above the high-water mark even when the socket took
        // it all at once; only pause when something is actually left queued.
        if (!res.write(chunk) && res.writableLength !== 0) {
          proxyRes.pause()
          res.once('drain', () => proxyRes.resume())
        }
      })
      proxyRes.on('end', () => {
        ended = true
        res.end()
      })
      // An upstream that breaks off mid-body: the client must see a broken response.
      proxyRes.on('error', () => {})
      proxyRes.on('close', () => {
        if (!proxyRes.complete) {
          fail(
            new Error(timedOut ? `upstream timed out after ${timeoutMs} ms` : 'upstream closed the response early'),
            timedOut ? 'timeout' : 'stream'
          )
        }
      })
    })

    if (replay || !hasBody(req)) proxyReq.end()
    else req.pipe(proxyReq)

    return {
      abort () {
        ended = true
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
