'use strict'

// polistes/http-proxy: wasp picks the target of a plain node-http-proxy server, in front of the
// embedded fleet (7 cache backends). Run: node examples/http-proxy-wasp.js
// prints: hit rate of the last 500 of 1,500 requests: … (about 0.99: each backend keeps the pages it is sent)
const http = require('node:http')
// node-http-proxy's API, maintained (http-proxy 1.18 calls util._extend, deprecated since Node 22)
const httpProxy = require('http-proxy-3')
const { withPolicy } = require('polistes/http-proxy')
const { startFleet } = require('polistes/fleet')
const { hitRateThrough } = require('./example-load')

async function main () {
  const fleet = await startFleet({ count: 7, cachePages: 4, missMs: 2, basePort: 0 })
  const proxy = httpProxy.createProxyServer({ agent: new http.Agent({ keepAlive: true }) })
  const routed = withPolicy(proxy, fleet.backends.map((b) => b.url))
  const server = http.createServer((req, res) => routed.web(req, res)).listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  console.log(await hitRateThrough(`http://127.0.0.1:${server.address().port}`))
  server.closeAllConnections()
  server.close()
  proxy.close()
  await fleet.close()
}

main()
