'use strict'

const { PolicyRouter, headerValue, withRouter } = require('./policy-router')

/**
 * `polistes/fastify-http-proxy`: the options that put a polistes policy into @fastify/http-proxy
 * (and its @fastify/reply-from): `replyOptions.getUpstream` picks the upstream with the policy,
 * `onResponse` and `onError` report latency, status and the upstream's `X-Cache` back. Spread them
 * into the plugin's options:
 *
 *   fastify.register(require('@fastify/http-proxy'), { ...policyProxyOptions(upstreams), prefix: '/' })
 *
 * `upstream` is left empty so that reply-from sends each request to the origin the policy chose. With
 * no upstream left, getUpstream throws an error with `statusCode` 503, which Fastify answers.
 *
 * @param {Array<string | { url: string, id?: string, weight?: number }>} upstreams origins
 * @param {object} [options] those of src/adapters/policy-router.js (`policy`, default 'wasp', ...)
 * @returns {{ upstream: string, replyOptions: { getUpstream: Function, onResponse: Function, onError: Function },
 * policyRouter: PolicyRouter }}
 */
function policyProxyOptions (upstreams, options) {
  const router = new PolicyRouter(upstreams, options)
  const tickets = new WeakMap()
  return withRouter(router, {
    upstream: '',
    replyOptions: {
      getUpstream (request) {
        const ticket = router.start(request.raw.url, request.method)
        if (ticket === null) {
          const err = new Error('no upstream available')
          err.statusCode = 503
          throw err
        }
        tickets.set(request.raw, ticket)
        return ticket.member.origin
      },
      onResponse (request, reply, res) {
        const ticket = tickets.get(request.raw)
        if (ticket) {
          const status = res.statusCode
          const cache = headerValue(res.headers['x-cache'])
          res.stream.once('end', () => ticket.end(status, cache))
          res.stream.once(
            'close',
            () => ticket.end(status, cache, res.stream.readableEnded ? undefined : 'upstream closed the response early')
          )
        }
        reply.send(res.stream)
      },
      onError (reply, { error }) {
        const ticket = tickets.get(reply.request.raw)
        if (ticket) ticket.end(undefined, undefined, error.message)
        reply.send(error)
      }
    }
  })
}

module.exports = { policyProxyOptions }
