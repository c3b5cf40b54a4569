'use strict'

const Fastify = require('fastify')
const { policyProxyOptions } = require('../src/adapters/fastify-http-proxy')
const { createPolicy } = require('../src/policies')
const { mulberry32 } = require('../src/common/prng')
const { hitRates, expectSpecialized, sharedFleet } = require('./adapter-helper')
const { closedPort, request } = require('./helper')

/** Fastify with @fastify/http-proxy, its upstream picked by a policy. */
async function startProxy (upstreams, options) {
  const app = Fastify()
  const proxyOptions = policyProxyOptions(upstreams, options)
  await app.register(require('@fastify/http-proxy'), { ...proxyOptions, prefix: '/' })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { url, proxyOptions, close: () => app.close() }
}

describe('polistes/fastify-http-proxy: a policy picks the upstream of @fastify/http-proxy', () => {
  const fleet = sharedFleet()

  test('wasp specializes the pages through the real library: median hit rate of 3 runs >= 0.95 after warm-up', async () => {
    const rates = await hitRates((k) => startProxy(fleet.backends.map((b) => b.url), { random: mulberry32(7 + k) }))
    expectSpecialized(rates)
  }, 120000)

  test('the policy hears each request end with status and X-Cache; a refused upstream is an error answered 5xx', async () => {
    const port = await closedPort()
    const policy = createPolicy('round-robin', {}, {})
    const ends = []
    policy.onEnd = (u, ctx, outcome) => ends.push({ key: ctx.key, ...outcome })
    const proxy = await startProxy([fleet.backends[1].url, `http://127.0.0.1:${port}`], { policy })
    try {
      const ok = await request(`${proxy.url}/page4.html?q=1`)
      expect(ok.status).toBe(200)
      const refused = await request(`${proxy.url}/page4.html`)
      expect(refused.status).toBeGreaterThanOrEqual(500)
      expect(ends[0]).toMatchObject({ key: '/page4.html', statusCode: 200 })
      expect(['HIT', 'MISS']).toContain(ends[0].cache) // the fleet is shared with the test before
      expect(ends[1].error).toBeDefined()
      expect(proxy.proxyOptions.policyRouter.members.every((m) => m.inflight === 0)).toBe(true)
    } finally {
      await proxy.close()
    }
  })
})
