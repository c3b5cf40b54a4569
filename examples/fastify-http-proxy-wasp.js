'use strict'

// polistes/fastify-http-proxy: wasp picks the upstream of @fastify/http-proxy, in front of the
// embedded fleet (7 cache backends). Run: node examples/fastify-http-proxy-wasp.js
// prints: hit rate of the last 500 of 1,500 requests: … (about 0.99: each backend keeps the pages it is sent)
const Fastify = require('fastify')
const { policyProxyOptions } = require('polistes/fastify-http-proxy')
const { startFleet } = require('polistes/fleet')
const { hitRateThrough } = require('./example-load')

async function main () {
  const fleet = await startFleet({ count: 7, cachePages: 4, missMs: 2, basePort: 0 })
  const app = Fastify()
  await app.register(require('@fastify/http-proxy'), {
    ...policyProxyOptions(fleet.backends.map((b) => b.url)),
    prefix: '/'
  })
  console.log(await hitRateThrough(await app.listen({ port: 0, host: '127.0.0.1' })))
  await app.close()
  await fleet.close()
}

main()
