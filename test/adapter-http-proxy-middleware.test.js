'use strict'

const path = require('node:path')
const { spawn } = require('node:child_process')
const { hitRates, expectSpecialized, sharedFleet } = require('./adapter-helper')
const { closedPort, request } = require('./helper')

/**
 * http-proxy-middleware routed by a policy, in a child process (test/fixtures/hpm-proxy.js says why),
 * with deprecations warning instead of throwing there.
 */
function startProxy (policy, seed, upstreams) {
  const options = (process.env.NODE_OPTIONS || '').split(/\s+/).filter((o) => o && o !== '--throw-deprecation').join(' ')
  const child = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'hpm-proxy.js'), policy, String(seed), ...upstreams], {
    stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, NODE_OPTIONS: options, NODE_NO_WARNINGS: '1' }
  })
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`proxy exited ${code}`)))
    child.stdout.once('data', (d) => resolve({
      url: String(d).trim(),
      close: () => new Promise((resolve) => { child.removeAllListeners('exit'); child.once('exit', resolve); child.kill() })
    }))
  })
}

describe('polistes/http-proxy-middleware: a policy as the router of http-proxy-middleware', () => {
  const fleet = sharedFleet()

  test('wasp specializes the pages through the real library: median hit rate of 3 runs >= 0.95 after warm-up', async () => {
    const rates = await hitRates((k) => startProxy('wasp', 7 + k, fleet.backends.map((b) => b.url)))
    expectSpecialized(rates)
  }, 120000)

  test('a refused upstream is a 502, reported to the policy; the options spread without a policyRouter key', async () => {
    const port = await closedPort()
    const proxy = await startProxy('round-robin', 1, [`http://127.0.0.1:${port}`])
    try {
      const res = await request(`${proxy.url}/page1.html`)
      expect(res.status).toBe(502)
      const state = JSON.parse((await request(`${proxy.url}/__state`)).body)
      expect(state.keys).toEqual(['on', 'router', 'target'])
      expect(state.members[0].inflight).toBe(0)
    } finally {
      await proxy.close()
    }
  })
})
