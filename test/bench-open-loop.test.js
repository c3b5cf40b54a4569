'use strict'

/**
 * The open-loop generator against a real loopback server: requests leave at their intended
 * times, and a response the server stalls makes the requests scheduled behind it on the same
 * connection late; their latency counts that wait (from the intended send time), where a
 * closed-loop client would report only the one slow response.
 */

const path = require('node:path')
const { runOpenLoop, intendedTime, loopbackSources } = require('../bench/load/open-loop')
const { Child } = require('../bench/children/child')
const { startUpstream } = require('./helper')

jest.setTimeout(20000)

describe('bench open loop', () => {
  test('the schedule spreads the rate evenly over the connections', () => {
    // 100 req/s over 4 connections: the global schedule is every 10 ms, each connection every 40 ms
    expect([0, 1, 2, 3].map((i) => intendedTime(i, 0, 100, 4))).toEqual([0, 10, 20, 30])
    expect([0, 1, 2].map((k) => intendedTime(1, k, 100, 4))).toEqual([10, 50, 90])
  })

  test('a ramp raises the rate linearly from 0 over its length, then holds it, half the ramp later', () => {
    // 1,000 req/s over a 2 s ramp: 1,000 requests in the ramp (the triangle's area), request j at sqrt(4 j) ms
    const at = (j) => intendedTime(j, 0, 1000, 1 << 20, 2000)
    expect(at(0)).toBe(0)
    expect(at(250)).toBeCloseTo(1000, 9) // a quarter of the ramp's requests by its middle
    expect(at(1000)).toBe(2000) // the ramp ends on time, and from there one request per ms
    expect(at(1001) - at(1000)).toBe(1)
    expect(at(5000)).toBe(5000 + 1000)
    const sent = (fromMs, toMs) => {
      let n = 0
      for (let j = 0; j < 10000; j++) if (at(j) >= fromMs && at(j) < toMs) n++
      return n
    }
    expect([sent(0, 500), sent(500, 1000), sent(1000, 1500), sent(1500, 2000)]).toEqual([63, 187, 313, 437])
    expect(sent(2000, 3000)).toBe(1000)
    // strictly increasing, and the lanes share one global schedule
    for (let j = 1; j < 3000; j++) expect(at(j)).toBeGreaterThan(at(j - 1))
    expect(intendedTime(1, 2, 1000, 4, 2000)).toBe(at(9))
  })

  describe('a server that stalls one response 300 ms, at 200 req/s over 2 connections for 1.5 s', () => {
    const STALL_MS = 300
    const STALLED = 20 // the 20th request, at about 100 ms
    let upstream
    let out
    beforeAll(async () => {
      upstream = await startUpstream((req, res) => {
        const answer = () => { res.writeHead(200, { 'X-Server': 'only', 'X-Cache': 'HIT' }); res.end('x'.repeat(2000)) }
        if (upstream.requests === STALLED) setTimeout(answer, STALL_MS)
        else answer()
      })
      const results = []
      const errors = []
      const run = runOpenLoop({
        url: upstream.url,
        rate: 200,
        connections: 2,
        durationMs: 1500,
        nextPath: () => '/page1.html',
        onResponse: (r) => results.push(r),
        onError: (e) => errors.push(e),
        drainMs: 3000
      })
      const counts = await run.done
      out = { results, errors, counts }
    })
    afterAll(() => upstream.close())

    test('every scheduled request is sent and answered, none dropped', () => {
      expect(out.counts).toMatchObject({ scheduled: 300, completed: 300, errors: 0, timeouts: 0, unsent: 0 })
      expect(out.errors).toEqual([])
      expect(upstream.connections).toBe(2)
    })

    test('the generator keeps its schedule: what it alone delays a send by (its lag) stays small', () => {
      const lags = out.results.map((r) => r.lag).sort((a, b) => a - b)
      expect(lags[Math.floor(lags.length / 2)]).toBeLessThan(10)
      // lag leaves out the wait for the connection's previous response
      for (const r of out.results) expect(r.lag).toBeLessThanOrEqual(Math.max(0, r.sent - r.intended) + 1e-9)
    })

    test('no request goes out before its intended time, so no latency is below its own service time', () => {
      for (const r of out.results) {
        expect(r.sent).toBeGreaterThanOrEqual(r.intended)
        expect(r.latency).toBeGreaterThanOrEqual(r.service)
      }
    })

    test('the wait behind the stalled response counts: latency from the intended time, not from the send', () => {
      const stalled = out.results.find((r) => r.service >= STALL_MS - 5)
      expect(stalled).toBeDefined()
      // behind it on its connection (every 10 ms) about 30 requests were due during the stall:
      // none could leave before it was answered, and each one's latency counts that wait
      const behind = out.results.filter((r) => r.connection === stalled.connection &&
        r.intended > stalled.intended && r.intended < stalled.intended + STALL_MS)
      expect(behind.length).toBeGreaterThanOrEqual(25)
      for (const r of behind) {
        expect(r.sent).toBeGreaterThanOrEqual(stalled.done - 1)
        expect(r.latency).toBeGreaterThanOrEqual(stalled.done - r.intended - 1)
        expect(r.latency).toBeCloseTo(r.done - r.intended, 6)
      }
      // the first one behind it was due 10 ms after it and waited nearly the whole stall, which
      // a closed-loop client (latency from the actual send, r.service) would not see
      const first = behind.reduce((a, r) => (r.intended < a.intended ? r : a))
      expect(first.latency).toBeGreaterThan(STALL_MS - 15)
      expect(first.latency - first.service).toBeGreaterThan(STALL_MS - 15)
      const slow = out.results.filter((r) => r.latency >= 100).length
      const slowClosed = out.results.filter((r) => r.service >= 100).length
      expect(slow).toBeGreaterThanOrEqual(slowClosed + 15)
    })
  })

  test('the load child runs it with --rate: achieved rate, p99.9 and the generator\'s lag in the result', async () => {
    const upstream = await startUpstream((req, res) => setTimeout(() => res.end('ok'), 5))
    const child = new Child(path.join(__dirname, '..', 'bench', 'load', 'load-child.js'), { name: 'load child' })
    try {
      const done = child.waitFor('done', 15000)
      await child.request('start', { url: upstream.url, connections: 4, rate: 100, warmup: 1, duration: 2, pages: 3, popularity: { kind: 'uniform' }, seed: 1 })
      const { result } = await done
      expect(result.generator).toBe('open-loop')
      expect(result.openLoop).toMatchObject({ scheduled: 300, completed: 300, errors: 0, timeouts: 0, unsent: 0 })
      expect(result.measured.requests).toBe(200)
      expect(result.measured.rps).toBe(100)
      expect(result.learning.requests).toBe(100)
      // the upstream waits 5 ms; libuv timers run at 1 ms granularity, so a wait can measure a little under 5
      expect(result.measured.latency.p50).toBeGreaterThanOrEqual(4)
      expect(result.measured.latency.p999).toBeGreaterThanOrEqual(result.measured.latency.p99)
      expect(result.measured.latency.max).toBeGreaterThanOrEqual(result.measured.latency.p999)
      expect(result.measured.lag.p50).toBeLessThan(10)
      expect(result.measured.lag.max).toBeGreaterThanOrEqual(result.measured.lag.p99)
    } finally {
      await child.close()
      await upstream.close()
    }
  })

  test('the load child ramps the rate over the learning phase: half its requests there, the window at full rate', async () => {
    const upstream = await startUpstream((req, res) => setTimeout(() => res.end('ok'), 2))
    const child = new Child(path.join(__dirname, '..', 'bench', 'load', 'load-child.js'), { name: 'load child' })
    try {
      const start = { url: upstream.url, connections: 4, rate: 200, warmup: 1, duration: 1, pages: 3, popularity: { kind: 'uniform' }, seed: 1 }
      await expect(child.request('start', { ...start, ramp: 1.5 })).rejects.toThrow(/ramp must be in \[0, warmup 1\] s/)
      const done = child.waitFor('done', 15000)
      await child.request('start', { ...start, ramp: 1 })
      const { result } = await done
      expect(result.openLoop).toMatchObject({ scheduled: 300, completed: 300, errors: 0, unsent: 0 })
      expect(result.learning.requests).toBe(100)
      expect(result.measured.requests).toBe(200)
      expect(upstream.requests).toBe(300)
      expect(() => runOpenLoop({ url: upstream.url, connections: 1, durationMs: 100, rampMs: 50, nextPath: () => '/' })).toThrow(/rampMs must be >= 0, open loop only/)
      expect(() => runOpenLoop({ url: upstream.url, rate: 10, connections: 1, durationMs: 100, rampMs: -1, nextPath: () => '/' })).toThrow(/rampMs must be >= 0/)
    } finally {
      await child.close()
      await upstream.close()
    }
  })

  test('a closed loop with a count of requests sends exactly that many after the learning phase, then ends', async () => {
    const upstream = await startUpstream((req, res) => setTimeout(() => res.end('ok'), 2))
    try {
      const seen = []
      const run = runOpenLoop({ url: upstream.url, connections: 6, durationMs: Infinity, requests: 500, countFromMs: 100, nextPath: () => '/', onResponse: (r) => seen.push(r.intended) })
      const counts = await run.done
      const learning = seen.filter((t) => t < 100).length
      expect(seen.length - learning).toBe(500)
      expect(learning).toBeGreaterThan(0)
      expect(counts).toMatchObject({ completed: 500 + learning, errors: 0, timeouts: 0 })
      expect(upstream.requests).toBe(500 + learning)
      expect(() => runOpenLoop({ url: upstream.url, rate: 10, connections: 1, durationMs: 100, requests: 5, nextPath: () => '/' })).toThrow(/closed loop only/)
    } finally {
      await upstream.close()
    }
  })

  test('the load child with a count of requests measures that many, over the time they took', async () => {
    const upstream = await startUpstream((req, res) => setTimeout(() => res.end('ok'), 2))
    const child = new Child(path.join(__dirname, '..', 'bench', 'load', 'load-child.js'), { name: 'load child' })
    try {
      const done = child.waitFor('done', 15000)
      // 2 connections, not 8: the learning second runs a closed loop against a 2 ms server, ~1,000 requests, not ~4,000
      await child.request('start', { url: upstream.url, connections: 2, load: 'node', requests: 300, warmup: 1, duration: 1, pages: 3, popularity: { kind: 'uniform' }, seed: 1 })
      const { result } = await done
      expect(result).toMatchObject({ generator: 'node', requests: 300 })
      expect(result.measured.requests).toBe(300)
      expect(result.measured.seconds).toBeGreaterThan(0)
      expect(result.measured.rps).toBeCloseTo(300 / result.measured.seconds, 6)
      expect(result.seconds).toBeGreaterThanOrEqual(Math.floor(1 + result.measured.seconds))
      expect(upstream.requests).toBe(result.learning.requests + 300)
    } finally {
      await child.close()
      await upstream.close()
    }
  })

  test('without a rate the lanes run a closed loop, each connection from its own loopback address', async () => {
    expect(loopbackSources(252).slice(248)).toEqual(['127.0.1.249', '127.0.1.250', '127.0.2.1', '127.0.2.2'])
    const seen = new Map()
    const upstream = await startUpstream((req, res) => {
      const from = req.socket.remoteAddress
      seen.set(from, (seen.get(from) || 0) + 1)
      res.end('ok')
    })
    try {
      const run = runOpenLoop({ url: upstream.url, connections: 8, durationMs: 300, nextPath: () => '/', localAddresses: loopbackSources(8) })
      const counts = await run.done
      expect(counts.completed).toBeGreaterThan(8)
      expect(counts.errors + counts.timeouts).toBe(0)
      expect([...seen.keys()].sort()).toEqual(loopbackSources(8).sort())
    } finally {
      await upstream.close()
    }
  })
})
