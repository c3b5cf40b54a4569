'use strict'

const { startBalancer } = require('../src/balancer')
const { createTelemetry } = require('../src/observe/telemetry')
const { request, startUpstream, waitFor } = require('./helper')

/** Upstreams a, b, c answering with X-Server; `hold` keeps responses back while set. */
async function three () {
  const gate = { hold: false, waiting: [] }
  const ups = {}
  for (const id of ['a', 'b', 'c', 'd']) {
    ups[id] = await startUpstream((req, res) => {
      const answer = () => { res.writeHead(req.url === '/health' ? 200 : 200, { 'x-server': id }); res.end(`${id}\n`) }
      if (gate.hold && req.url !== '/health') gate.waiting.push(answer)
      else answer()
    })
  }
  return { ups, gate, close: () => Promise.all(Object.values(ups).map((u) => u.close())) }
}

const server = async (lb, path) => (await request(`${lb.url}${path}`)).headers['x-server']

describe('balancer.reconfigure applies a new config to a running balancer', () => {
  let env
  let lb
  beforeEach(async () => { env = await three() })
  afterEach(async () => {
    if (lb) await lb.close()
    await env.close()
    lb = undefined
  })

  const backends = (...ids) => ids.map((id) => ({ id, url: env.ups[id].url }))

  test('wasp keeps what it learnt about the upstreams that stay, through a removal and an option change', async () => {
    lb = await startBalancer({ backends: backends('a', 'b', 'c'), port: 0, random: require('../src/common/prng').mulberry32(3) })
    const policy = lb.policy
    const keys = Array.from({ length: 12 }, (_, i) => `/page${i}.html`)
    for (let round = 0; round < 8; round++) for (const k of keys) await server(lb, k)
    const recent = lb.stats().policy.state.recent
    const before = new Map(recent.map((r) => [r.key, r.specialist]))
    const picks = lb.stats().policy.state.picks
    const result = lb.reconfigure({ backends: backends('a', 'b'), policyOptions: { rounds: 6 } })
    expect(result).toMatchObject({ added: [], removed: ['c'], updated: [], restartNeeded: [] })
    expect(result.changed).toEqual(['policyOptions'])
    expect(lb.policy).toBe(policy)
    expect(lb.stats().policy.state.picks).toBe(picks)
    expect(lb.stats().policy.state.recent).toEqual(recent) // every threshold as it was
    const kept = keys.filter((k) => before.get(k) !== 'c')
    expect(kept.length).toBeGreaterThan(3)
    let same = 0
    for (let round = 0; round < 3; round++) for (const k of kept) if (await server(lb, k) === before.get(k)) same++
    expect(same / (3 * kept.length)).toBeGreaterThan(0.7) // the specialists keep their keys
    for (const k of keys) expect(await server(lb, k)).not.toBe('c')
  })

  test('a removed backend\'s telemetry record (and its metrics series) goes one window later', async () => {
    const clock = { ms: 1e9 }
    const telemetry = createTelemetry({ windowS: 5, now: () => clock.ms })
    lb = await startBalancer({ backends: backends('a', 'b', 'c'), algo: 'round-robin', port: 0, telemetry })
    for (let i = 0; i < 6; i++) await server(lb, `/p${i}`)
    const seen = () => lb.telemetry.upstreams().map((u) => u.id)
    expect(seen()).toEqual(['a', 'b', 'c'])
    lb.reconfigure({ backends: backends('a', 'b', 'd'), algo: 'round-robin' })
    clock.ms += 2000
    expect(seen()).toEqual(['a', 'b', 'c', 'd']) // c's history still shows
    const responses = async () => (await request(`${lb.url}/_polistes/metrics`)).body.split('\n').filter((l) => l.startsWith('polistes_responses_total'))
    expect((await responses()).some((l) => l.includes('upstream="c"'))).toBe(true)
    clock.ms += 4000
    expect(seen()).toEqual(['a', 'b', 'd'])
    for (let i = 0; i < 4; i++) await server(lb, `/p${i}`)
    const lines = await responses()
    expect(lines.some((l) => l.includes('upstream="d"'))).toBe(true)
    expect(lines.some((l) => l.includes('upstream="c"'))).toBe(false)
  })

  test('an invalid config throws and changes nothing', async () => {
    lb = await startBalancer({ backends: backends('a', 'b'), algo: 'round-robin', port: 0 })
    const { policy, engine, settings } = lb
    for (const bad of [
      { backends: backends('a', 'c'), algo: 'nope' },
      { backends: backends('a', 'c'), policyOptions: { rounds: 4 }, algo: 'round-robin' },
      { backends: [...backends('a', 'c'), 'ftp://x:1'], algo: 'round-robin' },
      { backends: backends('a', 'c'), algo: 'round-robin', healthCheck: { path: 'x' } },
      { backends: backends('a', 'c'), algo: 'round-robin', timeoutMs: 0 }
    ]) {
      expect(() => lb.reconfigure(bad)).toThrow(expect.objectContaining({ code: expect.stringMatching(/^ERR_POLISTES_/) }))
      expect(lb.stats().upstreams.map((u) => u.id)).toEqual(['a', 'b'])
      expect([lb.policy, lb.engine, lb.settings]).toEqual([policy, engine, settings])
    }
  })

  test('re-weighting keeps the counters; a new algorithm replaces the policy; restart-only settings are reported', async () => {
    lb = await startBalancer({ backends: backends('a', 'b'), algo: 'round-robin', port: 0 })
    for (let i = 0; i < 4; i++) await server(lb, '/x')
    const [a, b] = backends('a', 'b')
    const result = lb.reconfigure({ backends: [a, { ...b, weight: 3 }], algo: 'weighted-round-robin', port: 1, host: '127.0.0.2' })
    expect(result).toMatchObject({ updated: ['b'], restartNeeded: ['host', 'port'], changed: ['algo', 'policyOptions'] })
    expect(lb.policy.name).toBe('weighted-round-robin')
    expect(lb.stats().upstreams.map((u) => [u.id, u.weight, u.requests])).toEqual([['a', 1, 2], ['b', 3, 2]])
    const served = []
    for (let i = 0; i < 8; i++) served.push(await server(lb, '/x'))
    expect(served.filter((s) => s === 'b')).toHaveLength(6)
  })

  test('retryOn changes live and is reported; the same list is no change', async () => {
    lb = await startBalancer({ backends: backends('a'), algo: 'round-robin', port: 0, retryOn: [503] })
    expect(lb.reconfigure({ backends: backends('a'), algo: 'round-robin', retryOn: [503] }).changed).toEqual([])
    expect(lb.reconfigure({ backends: backends('a'), algo: 'round-robin', retryOn: [502, 503] }).changed).toEqual(['retryOn'])
    expect([...lb.retryOn]).toEqual([502, 503])
    expect(lb.reconfigure({ backends: backends('a'), algo: 'round-robin' }).changed).toEqual(['retryOn'])
    expect(lb.retryOn.size).toBe(0)
  })

  test('a reload that adds "timeout" to retryOn and a tryTimeoutMs makes a stalled GET go to another upstream', async () => {
    const stall = await startUpstream((req, res) => {
      const timer = setTimeout(() => { res.writeHead(200, { 'x-server': 'stall' }); res.end() }, 3000)
      res.on('close', () => clearTimeout(timer))
    })
    const ok = await startUpstream((req, res) => { res.writeHead(200, { 'x-server': 'ok' }); res.end() })
    try {
      const config = { backends: [{ id: 's', url: stall.url }, { id: 'o', url: ok.url }], policy: { name: 'first', pick: (c) => c[0] } }
      lb = await startBalancer({ ...config, port: 0, retryOn: [503], tryTimeoutMs: 150, failTimeoutMs: 1 })
      expect((await request(`${lb.url}/x`)).status).toBe(504)
      const result = lb.reconfigure({ ...config, retryOn: [503, 'timeout'], tryTimeoutMs: 200, failTimeoutMs: 1 })
      expect(result.changed).toEqual(['tryTimeoutMs', 'retryOn'])
      expect([...lb.retryOn]).toEqual([503, 'timeout'])
      await waitFor(() => lb.stats().upstreams[0].healthy)
      const res = await request(`${lb.url}/y`)
      expect(res).toMatchObject({ status: 200, headers: { 'x-server': 'ok' } })
      expect(lb.stats()).toMatchObject({ retries: 1, failures: { timeout: 2 } })
    } finally {
      await lb.close()
      lb = undefined
      await Promise.all([stall.close(), ok.close()])
    }
  })

  test('front settings bound to the listeners are restart-only; maxBodySize applies at once', async () => {
    lb = await startBalancer({ backends: backends('a'), algo: 'round-robin', port: 0, maxBodySize: 10 })
    const result = lb.reconfigure({ backends: backends('a'), algo: 'round-robin', maxBodySize: 100, maxHeaderSize: 8192, headersTimeoutMs: 5000, adminPort: 0, tlsCert: 'c.pem', tlsKey: 'k.pem' })
    expect(result.restartNeeded).toEqual(['headersTimeoutMs', 'maxHeaderSize', 'tlsCert', 'tlsKey', 'adminPort'])
    expect(result.changed).toEqual(['maxBodySize'])
    expect(lb.maxBodySize).toBe(100)
    expect(lb.server.maxHeaderSize).toBe(16384) // untouched until a restart
    expect(() => lb.reconfigure({ backends: backends('a'), maxHeaderSize: 1 })).toThrow(/^maxHeaderSize must be an integer/)
    expect(lb.maxBodySize).toBe(100)
  })

  test('the proxy engine is restart-only; an undici balancer refuses an https backend and changes nothing', async () => {
    lb = await startBalancer({ backends: backends('a'), algo: 'round-robin', port: 0, engine: 'undici' })
    const { engine } = lb
    expect(lb.reconfigure({ backends: backends('a', 'b'), algo: 'round-robin', engine: 'node-http' }).restartNeeded).toEqual(['engine'])
    expect(lb.engine).toBe(engine)
    expect(() => lb.reconfigure({ backends: [...backends('a'), 'https://localhost:9443'], algo: 'round-robin' }))
      .toThrow(/^engine undici does not proxy to https upstreams \(https:\/\/localhost:9443\)/)
    expect(lb.stats().upstreams.map((u) => u.id)).toEqual(['a', 'b'])
    expect(await server(lb, '/x')).toMatch(/^[ab]$/)
  })

  test('a new timeout takes a new proxy engine; a request in flight on the old one completes, then it is closed', async () => {
    lb = await startBalancer({ backends: backends('a'), port: 0 })
    const old = lb.engine
    env.gate.hold = true
    const pending = request(`${lb.url}/slow`)
    await waitFor(() => env.gate.waiting.length === 1)
    expect(lb.reconfigure({ backends: backends('a'), timeoutMs: 1234 }).changed).toEqual(['timeoutMs'])
    expect(lb.engine).not.toBe(old)
    expect(lb.retiredEngines.has(old)).toBe(true)
    env.gate.hold = false
    env.gate.waiting.shift()()
    expect((await pending).status).toBe(200)
    expect(lb.retiredEngines.size).toBe(0)
    expect(await server(lb, '/after')).toBe('a')
  })

  test('health checks start and stop with the config; an added upstream starts its slow start', async () => {
    lb = await startBalancer({ backends: backends('a'), port: 0, slowStartMs: 60000 })
    expect(lb.checker.size).toBe(0)
    lb.reconfigure({ backends: backends('a', 'd'), slowStartMs: 60000, healthCheck: { path: '/health', intervalMs: 10 } })
    expect(lb.checker.size).toBe(2)
    await waitFor(() => lb.stats().upstreams.every((u) => u.check && u.check.passed >= 2))
    const [a, d] = lb.stats().upstreams
    expect(a.ramp).toBe(1)
    expect(d.ramp).toBeLessThan(0.01)
    expect(d.state).toBe('up')
    lb.reconfigure({ backends: backends('a', 'd'), slowStartMs: 60000 })
    expect(lb.checker.size).toBe(0)
    expect(lb.stats().upstreams.map((u) => u.check)).toEqual([null, null])
  })
})
