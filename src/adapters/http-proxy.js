'use strict'

const { PolicyRouter, nextTry, headerValue } = require('./policy-router')
const { DEFAULTS, validateOptions } = require('../config/defaults')
const { canRetry } = require('../proxy/retry-rules')

/**
 * `polistes/http-proxy`: a polistes policy in front of node-http-proxy (`http-proxy`, or its
 * API-compatible successor `http-proxy-3`). `withPolicy(proxy, upstreams)` returns a `web(req, res)`
 * that picks the target with the policy, proxies, and reports latency, status and the upstream's
 * `X-Cache` back when the response ends. A failed attempt (refused, reset) is reported as an error;
 * an idempotent request without a body is then sent to another upstream (at most `retries` more,
 * never once the response has begun), as the balancer does, and the failing upstream is left out by
 * passive health (`maxFails`, `failTimeoutMs`). What cannot be retried is answered 502, or handed to
 * your callback.
 *
 * @param {{ web: Function, on: Function }} proxy a proxy server of http-proxy's `createProxyServer()`
 * @param {Array<string | { url: string, id?: string, weight?: number }>} upstreams origins
 * @param {object} [options] those of src/adapters/policy-router.js: `policy` (default 'wasp'),
 *   `policyOptions`, `routingKey`, `random`, `now`, `maxFails`, `failTimeoutMs`; and `retries` (default 2)
 * @returns {{ router: PolicyRouter, web: (req: import('http').IncomingMessage, res: import('http').ServerResponse,
 * options?: object, callback?: (err: Error, req: object, res: object) => void) => void }}
 */
function withPolicy (proxy, upstreams, options = {}) {
  const { retries = DEFAULTS.retries, ...routerOptions } = options
  validateOptions({ retries })
  const router = new PolicyRouter(upstreams, routerOptions)
  /** @type {WeakMap<object, { end: Function }>} the request's pick, for the proxy's 'proxyRes' */
  const tickets = new WeakMap()
  proxy.on('proxyRes', (proxyRes, req) => {
    const ticket = tickets.get(req)
    if (ticket) endWith(ticket, proxyRes)
  })

  function web (req, res, webOptions = {}, callback) {
    attempt(req, res, webOptions, callback, undefined)
  }

  function attempt (req, res, webOptions, callback, tried) {
    const ticket = router.start(req.url, req.method, tried)
    if (ticket === null) return unavailable(res)
    tickets.set(req, ticket)
    // the target as a URL object and `toProxy` (the request target goes upstream verbatim): else
    // http-proxy 1.18 runs both through the deprecated url.parse() (DEP0169)
    proxy.web(req, res, { toProxy: true, ...webOptions, target: targetOf(ticket.member) }, (err, ...rest) => {
      ticket.end(undefined, undefined, err.message)
      const failed = !res.headersSent && !res.destroyed && canRetry(req)
        ? nextTry(router, tried, ticket.member, retries)
        : null
      if (failed !== null) return attempt(req, res, webOptions, callback, failed)
      if (callback) return callback(err, ...rest)
      badGateway(res)
    })
  }

  return { router, web }
}

const targets = new WeakMap()
/** The member's origin as a URL, made once. */
function targetOf (member) {
  let url = targets.get(member)
  if (url === undefined) targets.set(member, (url = new URL(member.origin)))
  return url
}

/** End `ticket` when the upstream's response has been read (or broke off). */
function endWith (ticket, upstreamRes) {
  const status = upstreamRes.statusCode
  const cache = headerValue(upstreamRes.headers['x-cache'])
  upstreamRes.once('end', () => ticket.end(status, cache))
  upstreamRes.once(
    'close',
    () => ticket.end(status, cache, upstreamRes.complete ? undefined : 'upstream closed the response early')
  )
}

function unavailable (res) {
  res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' })
  res.end('no upstream available\n')
}

function badGateway (res) {
  if (res.headersSent) return res.destroy()
  res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' })
  res.end('bad gateway\n')
}

module.exports = { withPolicy, endWith, badGateway }
