'use strict'

// A minimal wasp balancer with node's http and http-proxy (the library moves bytes, wasp picks):
//   node examples/wasp-proxy.js http://127.0.0.1:9101 http://127.0.0.1:9102   # listens on :8080
// Backends are expected to answer X-Cache: HIT|MISS (polistes' servers/ do; PORT=8000 to listen elsewhere).
// prints: wasp balancer on :… -> http://127.0.0.1:…, http://127.0.0.1:…

const http = require('node:http')
// node-http-proxy's API, maintained (http-proxy 1.18 calls util._extend, deprecated since Node 22)
const httpProxy = require('http-proxy-3')
const { createWasp } = require('polistes/wasp')

const targets = process.argv.slice(2)
if (targets.length === 0) targets.push('http://127.0.0.1:9101', 'http://127.0.0.1:9102')
const upstreams = targets.map((url) => ({ id: url, url, inflight: 0 }))
const wasp = createWasp({ feedback: { cache: true } })
const proxy = httpProxy.createProxyServer({ agent: new http.Agent({ keepAlive: true }) })

const server = http.createServer((req, res) => {
  const ctx = { key: new URL(req.url, 'http://x').pathname, method: req.method }
  const upstream = wasp.pick(upstreams, ctx)
  if (!upstream) {
    res.writeHead(503).end('no backend\n')
    return
  }
  const start = performance.now()
  upstream.inflight++
  let done = false
  const end = (outcome) => {
    if (done) return
    done = true
    upstream.inflight--
    wasp.onEnd(upstream, ctx, { latencyMs: performance.now() - start, ...outcome })
  }
  res.on('finish', () => end({ statusCode: res.statusCode, cache: res.getHeader('x-cache') }))
  res.on('close', () => end({ error: 'aborted' }))
  // always pass a callback: http-proxy throws when nobody listens for 'error'
  proxy.web(req, res, { target: upstream.url }, (err) => {
    end({ error: err })
    if (!res.headersSent) res.writeHead(502)
    res.end('bad gateway\n')
  })
})

if (require.main === module) {
  server.listen(process.env.PORT ? Number(process.env.PORT) : 8080, () => { // PORT=0: any free port
    console.log(`wasp balancer on :${server.address().port} -> ${targets.join(', ')}`)
  })
}

module.exports = { server, wasp, upstreams }
