'use strict'

// polistes/http-proxy-middleware: wasp as the `router` of http-proxy-middleware (v3), in front of
// the embedded fleet (7 cache backends). Run: node examples/http-proxy-middleware-wasp.js
// prints: hit rate of the last 500 of 1,500 requests: … (about 0.99: each backend keeps the pages it is sent)
// (http-proxy-middleware 3 calls the deprecated url.parse(), which Node 20 reports only with --pending-deprecation)
const http = require('node:http')
const { createProxyMiddleware } = require('http-proxy-middleware')
const { policyRouting } = require('polistes/http-proxy-middleware')
const { startFleet } = require('polistes/fleet')
const { hitRateThrough } = require('./example-load')

async function main () {
  const fleet = await startFleet({ count: 7, cachePages: 4, missMs: 2, basePort: 0 })
  const middleware = createProxyMiddleware({
    ...policyRouting(fleet.backends.map((b) => b.url)),
    agent: new http.Agent({ keepAlive: true })
  })
  const server = http.createServer((req, res) => middleware(req, res, () => { res.writeHead(404); res.end() }))
    .listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  console.log(await hitRateThrough(`http://127.0.0.1:${server.address().port}`))
  server.closeAllConnections()
  server.close()
  await fleet.close()
}

main()
