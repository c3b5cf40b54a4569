'use strict'

const http = require('node:http')
const { once } = require('node:events')
const httpProxy = require('http-proxy')
const { startFleet } = require('../servers/fleet')
const { withPolicy } = require('../src/adapters/http-proxy')
const { createPolicy } = require('../src/policies')
const { mulberry32 } = require('../src/prng')
const { hitRates, expectSpecialized } = require('./adapter-helper')
const { closedPort, request } = require('./helper')

/** node-http-proxy with a policy, on a port of its own. */
async function startProxy (upstreams, options) {
  const proxy = httpProxy.createProxyServer({ agent: new http.Agent({ keepAlive: true, maxSockets: 64 }) })
  const routed = withPolicy(proxy, upstreams, options)
  const server = http.createServer((req, res) => routed.web(req, res))
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    routed,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); proxy.close() })
  }
}

describe('polistes/http-proxy: a policy in front of node-http-proxy', () => {
  let fleet
  beforeAll(async () => { fleet = await startFleet({ count: 7, cachePages: 4, missMs: 2, basePort: 0, host: '127.0.0.1' }) })
  afterAll(() => fleet.close())

  test('wasp specializes the pages through the real library: mean hit rate of 3 runs >= 0.95 after warm-up', async () => {
    const rates = await hitRates((k) => startProxy(fleet.backends.map((b) => b.url), { random: mulberry32(7 + k) }))
    expectSpecialized(rates)
  }, 120000)

  test('the policy hears each request end with its status and X-Cache; a refused upstream is a 502 and an error', async () => {
    const port = await closedPort()
    const policy = createPolicy('round-robin', {}, {})
    const ends = []
    policy.onEnd = (u, ctx, outcome) => ends.push({ id: u.id, key: ctx.key, ...outcome })
    const proxy = await startProxy([fleet.backends[0].url, `http://127.0.0.1:${port}`], { policy })
    try {
      const ok = await request(`${proxy.url}/page2.html?x=1`)
      expect(ok.status).toBe(200)
      const refused = await request(`${proxy.url}/page2.html`)
      expect(refused.status).toBe(502)
      expect(ends[0]).toMatchObject({ key: '/page2.html', statusCode: 200, error: undefined })
      expect(['HIT', 'MISS']).toContain(ends[0].cache) // the fleet is shared with the test before
      expect(ends[1].error).toMatch(/ECONNREFUSED/)
      expect(proxy.routed.router.members.every((m) => m.inflight === 0)).toBe(true)
    } finally {
      await proxy.close()
    }
  })
})
