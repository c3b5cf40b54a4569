'use strict'

const { PolicyRouter, withRouter } = require('./policy-router')
const { endWith, badGateway } = require('./http-proxy')

/**
 * `polistes/http-proxy-middleware`: the options that put a polistes policy into
 * http-proxy-middleware (v3): its `router` hook picks the target with the policy, and its `on`
 * hooks report latency, status and the upstream's `X-Cache` back when the response ends (and a
 * failed attempt as an error, answered 502). Spread them into `createProxyMiddleware`:
 *
 *   createProxyMiddleware({ ...policyRouting(upstreams), changeOrigin: true })
 *
 * With no upstream left the router throws an error with `statusCode` 503, which the framework's error
 * handler answers.
 *
 * @param {Array<string | { url: string, id?: string, weight?: number }>} upstreams origins
 * @param {object} [options] those of src/adapters/policy-router.js (`policy`, default 'wasp', ...)
 * @returns {{ target: string, router: (req: object) => string, on: { proxyRes: Function, error: Function },
 * policyRouter: PolicyRouter }}
 */
function policyRouting (upstreams, options) {
  const router = new PolicyRouter(upstreams, options)
  const tickets = new WeakMap()
  return withRouter(router, {
    target: router.members[0].origin, // required by the library; every request goes where `router` says
    router (req) {
      const ticket = router.start(req.originalUrl || req.url, req.method)
      if (ticket === null) {
        const err = new Error('no upstream available')
        err.statusCode = 503
        throw err
      }
      tickets.set(req, ticket)
      return ticket.member.origin
    },
    on: {
      proxyRes (proxyRes, req) {
        const ticket = tickets.get(req)
        if (ticket) endWith(ticket, proxyRes)
      },
      error (err, req, res) {
        const ticket = tickets.get(req)
        if (ticket) ticket.end(undefined, undefined, err.message)
        if (typeof res.writeHead === 'function') badGateway(res)
        else res.destroy() // a socket: an upgrade that failed
      }
    }
  })
}

module.exports = { policyRouting }
