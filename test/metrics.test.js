'use strict'

const { startBalancer } = require('../src')
const { request, startUpstream } = require('./helper')

/** Three upstreams: X-Cache HIT for paths starting with /hit, MISS otherwise; /boom answers 500. */
async function setup (options = {}) {
  const upstreams = await Promise.all([0, 1, 2].map(() => startUpstream((req, res) => {
    const status = req.url === '/boom' ? 500 : 200
    res.writeHead(status, { 'x-cache': req.url.startsWith('/hit') ? 'HIT' : 'MISS', 'content-type': 'text/plain' })
    res.end('x'.repeat(100))
  })))
  const lb = await startBalancer({
    backends: upstreams.map((u, i) => ({ url: u.url, id: `u${i}` })),
    algo: 'round-robin',
    port: 0,
    ...options
  })
  return { lb, upstreams, close: async () => { await lb.close({ graceMs: 500 }); await Promise.all(upstreams.map((u) => u.close())) } }
}

/** Prometheus text -> Map of `name{labels}` -> value. */
function parse (text) {
  const out = new Map()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const i = line.lastIndexOf(' ')
    out.set(line.slice(0, i), Number(line.slice(i + 1)))
  }
  return out
}

describe('GET /_polistes/metrics', () => {
  let env
  afterEach(async () => { if (env) await env.close() })

  test('Prometheus text with requests, responses by status class, hits and misses per upstream', async () => {
    env = await setup()
    for (let i = 0; i < 6; i++) await request(`${env.lb.url}/hit${i}`)
    for (let i = 0; i < 3; i++) await request(`${env.lb.url}/miss${i}`)
    expect((await request(`${env.lb.url}/boom`)).status).toBe(500)
    const res = await request(`${env.lb.url}/_polistes/metrics`)
    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/)
    const m = parse(res.body)
    expect(m.get('polistes_requests_total')).toBe(10)
    const sum = (prefix) => [...m].filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0)
    expect(sum('polistes_upstream_requests_total{')).toBe(10)
    expect(sum('polistes_responses_total{') - sum('polistes_responses_total{upstream="-"')).toBe(10)
    expect(sum('polistes_responses_total{upstream="u0",class="2xx"}') + sum('polistes_responses_total{upstream="u1",class="2xx"}') + sum('polistes_responses_total{upstream="u2",class="2xx"}')).toBe(9)
    expect(sum('polistes_responses_total{') - sum('polistes_responses_total{upstream="u0",class="2xx"}') - sum('polistes_responses_total{upstream="u1",class="2xx"}') - sum('polistes_responses_total{upstream="u2",class="2xx"}')).toBe(1)
    expect(sum('polistes_cache_hits_total{')).toBe(6)
    expect(sum('polistes_cache_misses_total{')).toBe(4)
    for (const id of ['u0', 'u1', 'u2']) {
      expect(m.get(`polistes_upstream_healthy{upstream="${id}"}`)).toBe(1)
      expect(m.get(`polistes_upstream_inflight{upstream="${id}"}`)).toBe(0)
      expect(m.get(`polistes_response_bytes_total{upstream="${id}"}`)).toBeGreaterThan(100)
    }
    expect(m.get('polistes_failures_total{kind="connect"}')).toBe(0)
    expect(m.get('polistes_retries_total')).toBe(0)
    // default process metrics from prom-client
    expect(m.has('process_cpu_user_seconds_total')).toBe(true)
    expect([...m.keys()].some((k) => k.startsWith('nodejs_eventloop_lag'))).toBe(true)
  })

  test('the latency histogram is cumulative per upstream, its count matching the responses', async () => {
    env = await setup()
    for (let i = 0; i < 9; i++) await request(`${env.lb.url}/hit${i}`)
    const m = parse((await request(`${env.lb.url}/_polistes/metrics`)).body)
    for (const id of ['u0', 'u1', 'u2']) {
      const buckets = [...m].filter(([k]) => k.startsWith(`polistes_request_duration_seconds_bucket{upstream="${id}"`))
      expect(buckets.length).toBeGreaterThan(10)
      expect(buckets[0][0]).toContain('le="0.00025"')
      const values = buckets.map(([, v]) => v)
      for (let i = 1; i < values.length; i++) expect(values[i]).toBeGreaterThanOrEqual(values[i - 1])
      expect(buckets.at(-1)[0]).toContain('le="+Inf"')
      expect(values.at(-1)).toBe(3)
      expect(m.get(`polistes_request_duration_seconds_count{upstream="${id}"}`)).toBe(3)
      expect(m.get(`polistes_request_duration_seconds_sum{upstream="${id}"}`)).toBeGreaterThan(0)
    }
  })

  test('failures by kind and the ejected upstream show up; a 503 without upstream is the balancer\'s', async () => {
    env = await setup({ retries: 0 })
    await env.upstreams[0].close()
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await request(`${env.lb.url}/hit${i}`)).status)
    expect(statuses.filter((s) => s === 502)).toHaveLength(1)
    const m = parse((await request(`${env.lb.url}/_polistes/metrics`)).body)
    expect(m.get('polistes_failures_total{kind="connect"}')).toBe(1)
    expect(m.get('polistes_upstream_failures_total{upstream="u0"}')).toBe(1)
    expect(m.get('polistes_upstream_ejections_total{upstream="u0"}')).toBe(1)
    expect(m.get('polistes_upstream_healthy{upstream="u0"}')).toBe(0)
    expect(m.get('polistes_responses_total{upstream="u0",class="5xx"}')).toBe(1)
    for (const id of ['u0', 'u1', 'u2']) env.lb.pool.remove(id)
    expect((await request(`${env.lb.url}/hit9`)).status).toBe(503)
    const after = parse((await request(`${env.lb.url}/_polistes/metrics`)).body)
    expect(after.get('polistes_failures_total{kind="no_upstream"}')).toBe(1)
    expect(after.get('polistes_responses_total{upstream="-",class="5xx"}')).toBe(1)
  })

  test('wasp\'s own gauges: keys owned per upstream, fallbacks, guarded picks', async () => {
    env = await setup({ algo: 'wasp' })
    for (let i = 0; i < 30; i++) await request(`${env.lb.url}/hit${i % 5}`)
    const m = parse((await request(`${env.lb.url}/_polistes/metrics`)).body)
    const owned = [...m].filter(([k]) => k.startsWith('polistes_policy_keys_owned{'))
    expect(owned.map(([k]) => k).sort()).toEqual(['u0', 'u1', 'u2'].map((id) => `polistes_policy_keys_owned{upstream="${id}"}`))
    expect(owned.reduce((a, [, v]) => a + v, 0)).toBe(5)
    expect(m.get('polistes_policy_state{policy="wasp",field="picks"}')).toBe(30)
    expect(m.has('polistes_policy_state{policy="wasp",field="fallbacks"}')).toBe(true)
    expect(m.has('polistes_policy_state{policy="wasp",field="guarded"}')).toBe(true)
  })
})
