'use strict'

const http = require('node:http')
const { once } = require('node:events')
const httpProxy = require('http-proxy-3')
const { withPolicy } = require('../src/adapters/http-proxy')
const { createPolicy } = require('../src/policies')
const { mulberry32 } = require('../src/common/prng')
const { hitRates, expectSpecialized, sharedFleet } = require('./adapter-helper')
const { closedPort, request } = require('./helper')

/**
 * node-http-proxy with a policy, on a port of its own. Its agent drops a pooled connection idle for
 * 4 s: the backends close theirs at 5 s, and Node 20's agent ignores their Keep-Alive hint, so a
 * connection reused as the backend closes it would be a 502 (one seen under load).
 */
async function startProxy (upstreams, options) {
  const proxy = httpProxy.createProxyServer({ agent: new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 4000 }) })
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
  const fleet = sharedFleet()

  test('wasp specializes the pages through the real library: median hit rate of 3 runs >= 0.95 after warm-up', async () => {
    const rates = await hitRates((k) => startProxy(fleet.backends.map((b) => b.url), { random: mulberry32(7 + k) }))
    expectSpecialized(rates)
  }, 120000)

  test('the policy hears each request end with its status and X-Cache; a GET to a refused upstream goes to another, which then serves alone', async () => {
    const port = await closedPort()
    const policy = createPolicy('round-robin', {}, {})
    const ends = []
    policy.onEnd = (u, ctx, outcome) => ends.push({ id: u.id, key: ctx.key, ...outcome })
    const live = new URL(fleet.backends[0].url).origin
    const proxy = await startProxy([live, `http://127.0.0.1:${port}`], { policy })
    try {
      const ok = await request(`${proxy.url}/page2.html?x=1`)
      expect(ok.status).toBe(200)
      const retried = await request(`${proxy.url}/page2.html`) // round-robin's turn of the refusing one
      expect(retried.status).toBe(200)
      expect(ends[0]).toMatchObject({ id: live, key: '/page2.html', statusCode: 200, error: undefined })
      expect(['HIT', 'MISS']).toContain(ends[0].cache) // the fleet is shared with the test before
      expect(ends[1].error).toMatch(/ECONNREFUSED/)
      expect(ends[2]).toMatchObject({ id: live, statusCode: 200 })
      for (let i = 0; i < 3; i++) expect((await request(`${proxy.url}/page3.html`)).status).toBe(200)
      expect(ends.slice(3).map((e) => e.id)).toEqual([live, live, live]) // left out for failTimeoutMs
      expect(proxy.routed.router.members.every((m) => m.inflight === 0)).toBe(true)
    } finally {
      await proxy.close()
    }
  })

  test('what cannot be retried is a 502 and an error: a POST with a body, or no other upstream', async () => {
    const port = await closedPort()
    const policy = createPolicy('round-robin', {}, {})
    const ends = []
    policy.onEnd = (u, ctx, outcome) => ends.push(outcome)
    const alone = await startProxy([`http://127.0.0.1:${port}`], { policy })
    const pair = await startProxy([`http://127.0.0.1:${port}`, fleet.backends[0].url], { policy: 'round-robin' })
    try {
      expect((await request(`${alone.url}/page1.html`)).status).toBe(502)
      expect(ends[0].error).toMatch(/ECONNREFUSED/)
      const post = await request(`${pair.url}/page1.html`, { method: 'POST', body: 'x=1', headers: { 'content-type': 'text/plain' } })
      expect(post.status).toBe(502)
      expect(() => withPolicy(httpProxy.createProxyServer({}), [fleet.backends[0].url], { retries: 1.5 })).toThrow(/retries must be an integer/)
    } finally {
      await alone.close()
      await pair.close()
    }
  })
})
