'use strict'

const { createOpenLoop, physicalLimit, runAt, sweep } = require('../bench/model/open-loop')
const { createRoundRobin } = require('../src/policies/round-robin')
const { runNode } = require('./helper')

const CLI = require('node:path').join(__dirname, '..', 'bench', 'runners', 'open-loop-model.js')

/** A policy that sends everything to the first upstream. */
const first = () => ({ pick: (ups) => ups[0] })

describe('open-loop model (finite workers)', () => {
  test('physical limit: 7 x 4 workers, 100 of 2,000 pages cached each, Zipf(1), 5/20 ms: hit rate 0.872, about 4,044 req/s', () => {
    const limit = physicalLimit({ upstreams: 7, workers: 4, cacheSize: 100, keys: 2000, popularity: { zipf: 1 }, hitMs: 5, missMs: 20 })
    expect(limit.hitRate).toBeCloseTo(0.872, 3)
    expect(limit.serviceMs).toBeCloseTo(0.872 * 5 + 0.128 * 20, 1)
    expect(Math.round(limit.rate)).toBe(4044)
    // unequal workers count in full; uniform popularity over 100 pages all cached
    expect(physicalLimit({ upstreams: 2, workers: [1, 3], cacheSize: 50, keys: 100, popularity: 'uniform', hitMs: 5, missMs: 20 }).rate).toBeCloseTo(4 * 1000 / 5, 6)
  })

  test('below capacity, evenly spaced arrivals never wait: every latency is the service time', () => {
    // one backend, one worker, one page that never stays cached (cache of 0): each request is a 20 ms miss
    const model = createOpenLoop({ policy: first(), upstreams: 1, workers: 1, cacheSize: 0, keys: 1, rate: 40, arrivals: 'fixed' })
    const r = model.run(200)
    expect(r.hitRate).toBe(0)
    expect(r.p50).toBe(20)
    expect(r.p999).toBe(20)
    expect(r.utilization).toBeCloseTo(0.8, 2)
  })

  test('above capacity the queue grows, and latency counts from the intended send time (no coordinated omission)', () => {
    // 100 req/s into a worker that serves 50: request i waits 10 ms more than request i - 1
    const model = createOpenLoop({ policy: first(), upstreams: 1, workers: 1, cacheSize: 0, keys: 1, rate: 100, arrivals: 'fixed' })
    const r = model.run(100)
    expect(r.requests).toBe(100)
    expect(r.p50).toBeCloseTo(20 + 10 * 49, 6)
    expect(r.p99).toBeCloseTo(20 + 10 * 98, 6)
  })

  test('the fleet\'s stalls hold every backend at once and delay what falls in them; the keys are those of the run without', () => {
    const fleet = { upstreams: 7, workers: 4, cacheSize: 100, keys: 2000, rate: 1000, seed: 3 }
    const keysOf = (options) => {
      const rr = createRoundRobin()
      const keys = []
      const policy = { pick: (ups, ctx) => { keys.push(ctx.key); return rr.pick(ups, ctx) } }
      return { result: createOpenLoop({ ...fleet, ...options, policy }).run(20000), keys }
    }
    const plain = keysOf({})
    const a = keysOf({ stallEveryMs: 200, stallMs: 30 })
    expect(a.result.requests).toBe(20000) // nothing lost: every request completes
    expect(a.keys).toEqual(plain.keys) // the stalls draw from a stream of their own
    expect(plain.result.p99).toBe(20) // far below capacity, no request waits
    expect(a.result.p99).toBeGreaterThan(30) // a miss that meets a stall ends after it
    expect(a.result.mean).toBeGreaterThan(plain.result.mean + 2) // 30 ms in every 230: about a seventh of the time
    expect(keysOf({ stallEveryMs: 200, stallMs: 30 }).result.p99).toBe(a.result.p99) // seeded: the same stalls
    expect(() => createOpenLoop({ ...fleet, policy: first(), stallEveryMs: -1 })).toThrow(/stallEveryMs and stallMs must be >= 0/)
  })

  test('the ramp: the rate rises from 0 over rampMs, as the HTTP bench\'s warm-up ramps it, then holds', () => {
    const times = []
    const clock = {}
    const policy = { pick: (ups) => { times.push(clock.model.now()); return ups[0] } }
    const fleet = { upstreams: 1, workers: 64, cacheSize: 1, keys: 1, rate: 1000, arrivals: 'fixed' }
    clock.model = createOpenLoop({ ...fleet, rampMs: 1000, policy })
    clock.model.run(1500)
    // 1,000 req/s reached linearly over 1 s: rate × ramp / 2 = 500 arrivals in the first second, then 1 per ms
    const inRamp = times.filter((t) => t < 1000).length
    expect(inRamp).toBeGreaterThan(490)
    expect(inRamp).toBeLessThan(510)
    expect(times[1499] - times[1498]).toBeCloseTo(1, 9)
    expect(times[1] - times[0]).toBeGreaterThan(10) // the first gaps are long: the rate starts near 0
    expect(() => createOpenLoop({ ...fleet, policy, rampMs: -1 })).toThrow('createOpenLoop: rampMs must be >= 0, got -1')
  })

  test('workers serve in parallel, and the policy sees queued requests as in flight', () => {
    let maxSeen = 0
    const policy = { pick (ups) { maxSeen = Math.max(maxSeen, ups[0].inflight); return ups[0] } }
    // 4 workers, 20 ms misses: 200 req/s fits exactly, evenly spaced: 4 in service, none queued
    const model = createOpenLoop({ policy, upstreams: 1, workers: 4, cacheSize: 0, keys: 1, rate: 200, arrivals: 'fixed' })
    const r = model.run(400)
    expect(r.p999).toBe(20)
    expect(maxSeen).toBe(3) // the 4th is being picked
    const over = createOpenLoop({ policy, upstreams: 1, workers: 4, cacheSize: 0, keys: 1, rate: 400, arrivals: 'fixed' })
    over.run(400)
    expect(maxSeen).toBeGreaterThan(100)
  })

  test('same seed, same figures; hits are cheaper; round-robin spreads requests evenly', () => {
    const fleet = { rate: 1500, keys: 200, cacheSize: 30 }
    const a = runAt(() => createRoundRobin(), fleet, { seed: 3, warmup: 3000, measure: 5000 })
    const b = runAt(() => createRoundRobin(), fleet, { seed: 3, warmup: 3000, measure: 5000 })
    expect(a).toEqual(b)
    expect(a.busiest).toBeLessThan(1 / 7 + 0.001)
    expect(a.hitRate).toBeGreaterThan(0.3)
    expect(a.p50).toBeLessThan(20) // the median request is a hit (5 ms) plus a short wait
  })

  test('sweep: the capacity at SLO is the last rate before the first p99 over 4 x hit + miss', () => {
    // one backend, 4 workers, every request a 20 ms miss: 200 req/s is its limit
    const fleet = { upstreams: 1, workers: 4, cacheSize: 0, keys: 1, arrivals: 'fixed' }
    const s = sweep(first, fleet, [100, 150, 190, 250, 300], { warmup: 500, measure: 2000 })
    expect(s.slo).toBe(40)
    expect(s.capacity).toBe(190)
    expect(s.rows.map((r) => r.rate)).toEqual([100, 150, 190, 250, 300])
  })

  test('the command line: the limit, a rate table and a sweep; a bad flag exits 2 with the message, no stack trace', async () => {
    const small = ['--pages', '200', '--cache-pages', '10', '--warmup', '500', '--measure', '500', '--only', 'chash,wasp']
    const ok = await runNode(CLI, [...small, '--rates', '2000', '--sweep', '1000:2000:1000', '--ramp-ms', '200'], { timeoutMs: 20000 })
    expect(ok.stderr).toBe('')
    expect(ok.code).toBe(0)
    expect(ok.stdout).toMatch(/^fleet: 7 backends x 4 workers, LRU 10 of 200 pages, zipf\(1\)/)
    expect(ok.stdout).toMatch(/poisson arrivals, the rate ramped from 0 over 200 ms; seed 1/)
    expect(ok.stdout).toMatch(/physical limit: \d+ req\/s/)
    expect(ok.stdout).toMatch(/capacity at SLO \(sweep 1000:2000:1000; last rate before the first p99 > 40 ms\)/)
    expect(ok.stdout).toMatch(/│ 0\s+│ 'chash'/)
    expect(ok.stdout).toMatch(/│ 1\s+│ 'wasp'/)
    const bad = await runNode(CLI, ['--workers', '1,2'], { timeoutMs: 10000 })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toBe('open-loop: --workers must be one positive integer or 7 of them, got 1,2\n')
  })
})
