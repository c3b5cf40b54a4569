'use strict'

/**
 * The wrk load generator: its result line parsed into the load child's phase shape, and a real
 * wrk run through the load child against a server of known latency (skipped, saying so, when wrk
 * is not installed), with wrk's CPU counted in the load child's.
 */

const path = require('node:path')
const { parseWrkResult } = require('../bench/load-wrk')
const { procCpu } = require('../bench/peers')
const { Child } = require('../bench/child')
const { startUpstream, describeIfInstalled } = require('./helper')

jest.setTimeout(20000)

describe('bench wrk load', () => {
  test('the script\'s result line becomes counts, rates and latencies in ms', () => {
    const out = 'Running 2s test @ http://127.0.0.1:1\n  1 threads and 8 connections\n' +
      'BENCH_RESULT {"requests":2000,"bytes":4000000,"durationUs":2000000,"connect":0,"read":1,"write":0,"status":3,"timeout":2,' +
      '"mean":1500.5,"stdev":200.25,"max":9000,"min":800,"p50":1400,"p90":1900,"p95":2100,"p99":3000,"p99.9":8000}\n'
    expect(parseWrkResult(out, 2)).toEqual({
      requests: 2000,
      bytes: 4000000,
      errors: 3,
      timeouts: 2,
      non2xx: 3,
      hits: 0,
      misses: 0,
      keys: {},
      servers: {},
      seconds: 2,
      rps: 1000,
      bytesPerSec: 2000000,
      latency: { mean: 1.5005, p50: 1.4, p90: 1.9, p95: 2.1, p99: 3, p999: 8, max: 9, min: 0.8, stdev: 0.20025 }
    })
    expect(() => parseWrkResult('unable to connect\n', 2)).toThrow(/wrk printed no result: unable to connect/)
  })

  describeIfInstalled(['wrk'], 'a real wrk run', () => {
    test('two runs (learning, window) with latencies near the server\'s delay, and wrk\'s CPU in the load child\'s', async () => {
      const pages = new Set()
      const body = 'x'.repeat(60000) // a page's size: reading it costs wrk measurable CPU
      const upstream = await startUpstream((req, res) => { pages.add(req.url); setTimeout(() => res.end(body), 10) })
      const child = new Child(path.join(__dirname, '..', 'bench', 'load-child.js'), { name: 'load child' })
      try {
        const done = child.waitFor('done', 15000)
        const ticks = []
        child.on((msg) => { if (msg.type === 'tick') ticks.push(msg.bucket.second) })
        await child.request('start', { url: upstream.url, connections: 8, load: 'wrk', warmup: 1, duration: 2, pages: 5, popularity: { kind: 'uniform' }, seed: 1 })
        const { result } = await done
        const after = await child.request('cpu')
        const own = procCpu(child.process.pid) // the Node process alone
        expect(result.generator).toBe('wrk')
        expect(ticks).toEqual([1, 2, 3])
        for (const phase of [result.learning, result.measured]) {
          expect(phase.requests).toBeGreaterThan(50)
          expect(phase.errors).toBe(0)
          expect(phase.latency.p50).toBeGreaterThanOrEqual(10)
          expect(phase.latency.p50).toBeLessThan(60)
        }
        // closed loop: 8 connections, ~10 ms each, at most ~800 req/s
        expect(result.measured.rps).toBeLessThan(820)
        expect([...pages].sort()).toEqual(['/page1.html', '/page2.html', '/page3.html', '/page4.html', '/page5.html'])
        const wrkSeconds = (after.user + after.system - own.user - own.system) / 1e6
        // /proc counts in 10 ms ticks: without wrk's CPU the difference would be under 0.02 s
        expect(wrkSeconds).toBeGreaterThan(0.03)
      } finally {
        await child.close()
        await upstream.close()
      }
    })
  })
})
