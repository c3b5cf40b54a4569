'use strict'

/**
 * The wrk load generator: its result line parsed into the load child's phase shape, and a real
 * wrk run through the load child against a server of known latency (skipped, saying so, when wrk
 * is not installed), with wrk's CPU counted in the load child's.
 */

const path = require('node:path')
const { spawn } = require('node:child_process')
const { parseWrkResult, wrkEnv, SCRIPT } = require('../bench/load/load-wrk')
const { findBinary } = require('../bench/peers/peers')
const { probabilities } = require('../bench/workloads/popularity')
const { procCpu } = require('../bench/peers/peers')
const { Child } = require('../bench/children/child')
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

  test('uniform popularity sets only what it always did; zipf and a shift add theirs', () => {
    expect(wrkEnv({ pages: 25, popularity: { kind: 'uniform' }, shift: { seconds: 5, step: 2 }, seed: 3, t0: 9 })).toEqual({ BENCH_PAGES: '25', BENCH_SEED: '3' })
    expect(wrkEnv({ pages: 200, popularity: { kind: 'zipf', s: 1 }, shift: null, seed: 3, t0: 9 })).toEqual({ BENCH_PAGES: '200', BENCH_SEED: '3', BENCH_ZIPF: '1' })
    expect(wrkEnv({ pages: 200, popularity: { kind: 'zipf', s: 0.8 }, shift: { seconds: 5, step: 20 }, seed: 3, t0: 9 }))
      .toEqual({ BENCH_PAGES: '200', BENCH_SEED: '3', BENCH_ZIPF: '0.8', BENCH_SHIFT_SECONDS: '5', BENCH_SHIFT_STEP: '20', BENCH_T0: '9' })
  })

  describeIfInstalled(['wrk'], 'wrk\'s Zipf draws (bench/load/wrk-pages.lua)', () => {
    /**
     * Run wrk with one connection for `seconds` against a server recording the paths in order; after `limit`
     * requests the server answers no more (wrk's one connection waits to the end of its run, idle).
     */
    async function record (env, seconds = 1, limit = Infinity) {
      const paths = []
      const upstream = await startUpstream((req, res) => {
        if (paths.length >= limit) return
        paths.push(req.url)
        res.end('ok')
      })
      try {
        await new Promise((resolve, reject) => {
          const child = spawn(findBinary('wrk'), ['-t1', '-c1', `-d${seconds}s`, '-s', SCRIPT, upstream.url], { stdio: 'ignore', env: { ...process.env, ...env } })
          child.once('error', reject)
          child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`wrk exited ${code}`))))
        })
      } finally {
        await upstream.close()
      }
      return paths
    }
    const shares = (paths, pages) => {
      const counts = new Array(pages).fill(0)
      for (const p of paths) counts[Number(/^\/page(\d+)\.html$/.exec(p)[1]) - 1]++
      return counts.map((c) => c / paths.length)
    }

    test('Zipf(1) over 20 pages: each page near its probability, the same sequence for a seed, another for another seed', async () => {
      const env = wrkEnv({ pages: 20, popularity: { kind: 'zipf', s: 1 }, seed: 7, t0: 0 })
      // the shares need 2,000 draws: a loaded machine gets them from a longer run of the same sequence
      let one = await record(env)
      if (one.length <= 2000) one = await record(env, 4)
      // the sequences compared over their first 2,000 draws (a second of wrk makes several times that)
      const [two, other] = [await record(env, 1, 2000), await record({ ...env, BENCH_SEED: '8' }, 1, 2000)]
      expect(one.length).toBeGreaterThan(2000)
      const n = Math.min(one.length, two.length, other.length)
      expect(two.slice(0, n)).toEqual(one.slice(0, n)) // one connection: requests in draw order
      expect(other.slice(0, n)).not.toEqual(one.slice(0, n))
      const p = probabilities({ kind: 'zipf', s: 1 }, 20)
      const got = shares(one, 20)
      for (let i = 0; i < 20; i++) expect(Math.abs(got[i] - p[i])).toBeLessThan(0.03)
      expect(got[0]).toBeGreaterThan(got[1] + 0.05) // 0.28 against 0.14
    })

    test('a shift rotates the ranking: one epoch in, page 1 + step is the hottest and page 1 among the coldest', async () => {
      const now = Math.floor(Date.now() / 1000)
      // epoch 1 for the whole run: the shift is 1000 s and started 1000 s ago
      const env = wrkEnv({ pages: 20, popularity: { kind: 'zipf', s: 1 }, shift: { seconds: 1000, step: 5 }, seed: 7, t0: now - 1000 })
      const got = shares(await record(env), 20)
      const p = probabilities({ kind: 'zipf', s: 1 }, 20)
      for (let rank = 0; rank < 20; rank++) expect(Math.abs(got[(rank + 5) % 20] - p[rank])).toBeLessThan(0.03)
    })
  })

  describeIfInstalled(['wrk'], 'a real wrk run', () => {
    test('two runs (learning, window) with latencies near the server\'s delay, and wrk\'s CPU in the load child\'s', async () => {
      const pages = new Set()
      const body = 'x'.repeat(60000) // a page's size: reading it costs wrk measurable CPU
      const upstream = await startUpstream((req, res) => { pages.add(req.url); setTimeout(() => res.end(body), 10) })
      const child = new Child(path.join(__dirname, '..', 'bench', 'load', 'load-child.js'), { name: 'load child' })
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
