'use strict'

/**
 * A tiny real bench: fleet, balancer and autocannon in child processes, 2 algorithms x 1 trial,
 * 1 s learning + 1 s measured, then the JSON, CSV and HTML it writes. Few connections: a closed loop
 * runs as fast as its processes answer, so its CPU grows with the connections in flight (8 took both
 * cores). One for the cache scenario (no assertion needs more than a few requests a second); 4 for
 * the zipf one, whose misses wait 20 ms: about 500 requests in its window (1: about 150), so that
 * page 1 (p = 0.23) leads page 2 (0.12) by over 4 standard deviations.
 */

const fs = require('node:fs')
const path = require('node:path')
const { runBench } = require('./bench-helper')

jest.setTimeout(40000)

describe('bench end to end', () => {
  let dir
  let result
  let progress = ''
  beforeAll(async () => {
    ;({ dir, result, stderr: progress } = await runBench('polistes-bench-test-', ['--algos', 'round-robin,wasp', '--peers', 'none',
      '--trials', '1', '--warmup', '1', '--duration', '1', '--jit-warmup', '0', '--connections', '1']))
  })
  afterAll(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }) })

  test('writes JSON with one run per algorithm in the documented schema', () => {
    const doc = JSON.parse(fs.readFileSync(path.join(dir, 'out.json'), 'utf8'))
    expect(doc.scenario).toBe('cache')
    expect(doc.settings).toMatchObject({ plan: 'quick', trials: 1, warmup: 1, duration: 1 })
    expect(doc.runs.map((r) => r.algo).sort()).toEqual(['round-robin', 'wasp'])
    for (const run of doc.runs) {
      expect(run).toMatchObject({ trial: 1, errors: 0, non2xx: 0 })
      expect(run.rps).toBeGreaterThan(0)
      for (const k of ['mean', 'p50', 'p90', 'p95', 'p99', 'max', 'stdev']) expect(typeof run.latency[k]).toBe('number')
      expect(run.latency.p50).toBeLessThanOrEqual(run.latency.p99)
      expect(run.latency.p99).toBeLessThanOrEqual(run.latency.max)
      expect(run.hitRate).toBeGreaterThanOrEqual(0)
      expect(run.hitRate).toBeLessThanOrEqual(1)
      expect(run.specialization).toBeGreaterThan(0)
      expect(run.cpuPer10k).toBeGreaterThan(0)
      expect(run.perBackend).toHaveLength(7)
      expect(run.perBackend.reduce((a, b) => a + b.requests, 0)).toBeGreaterThan(0)
      expect(run.timeline.map((p) => p.t)).toEqual([1, 2])
      expect(run.timeline[0].phase).toBe('learning')
      expect(run.timeline[1]).toMatchObject({ phase: 'measured' })
      expect(run.learning.requests).toBeGreaterThan(0)
      const { failures, noUpstream } = run.balancer
      expect(run.balancer.requests).toBeGreaterThan(0)
      expect(run.balancer.errors).toBe(failures.connect + failures.timeout + failures.stream + noUpstream)
    }
    for (const algo of ['round-robin', 'wasp']) {
      expect(doc.summary[algo]).toEqual(expect.objectContaining({ rps: expect.any(Number), p99: expect.any(Number), hitRate: expect.any(Number) }))
    }
  })

  test('progress: the plan first, then a line per run with the ETA of the runs left, then the time it took', () => {
    const lines = progress.trim().split('\n')
    expect(lines[0]).toBe('plan (quick; --full runs the whole matrix): round-robin, wasp x 1 trial = 2 runs of 1 s learning + 1 s measured: about 6s')
    expect(lines[1]).toMatch(/^\[1\/2\] round-robin trial 1: [\d.]+ req\/s, .*, errors 0, ETA (\d+)s$/)
    // the run left: its 2 s of load plus the overhead the first run measured (starting and stopping its processes)
    const eta = Number(lines[1].match(/ETA (\d+)s$/)[1])
    expect(eta).toBeGreaterThanOrEqual(2)
    expect(eta).toBeLessThan(20)
    expect(lines[2]).toMatch(/^\[2\/2\] wasp trial 1: .*, errors 0$/)
    expect(lines[3]).toMatch(/^done in \d+s$/)
    expect(lines).toHaveLength(4)
  })

  test('the latencies are not rounded to whole milliseconds', () => {
    const values = result.doc.runs.flatMap((r) => [r.latency.p50, r.latency.p99, r.latency.mean])
    expect(values.some((v) => !Number.isInteger(v))).toBe(true)
  })

  test('writes the CSV and the HTML report beside it', () => {
    expect(fs.readFileSync(result.paths.csv, 'utf8').trim().split('\n')).toHaveLength(3)
    expect(fs.readFileSync(result.paths.html, 'utf8')).toMatch(/<svg /)
  })
})

describe('bench end to end: the zipf scenario with byte-bounded caches and churn', () => {
  let dir
  let result
  let out = ''
  beforeAll(async () => {
    ;({ dir, result, stdout: out } = await runBench('polistes-bench-zipf-', ['--scenario', 'zipf', '--pages', '40', '--cache-bytes',
      '200k', '--churn', '--algos', 'wasp', '--peers', 'none', '--trials', '1', '--warmup', '0', '--duration', '3', '--jit-warmup', '0',
      '--connections', '4', '--quiet']))
  })
  afterAll(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }) })

  test('backend a is SIGKILLed a third into the window and back a third later; every failed request is counted', () => {
    const [run] = result.doc.runs
    expect(run.churn).toMatchObject({ backend: 'a', killedAt: 1, restartedAt: 2 })
    expect(run.churn.restartMs).toBeGreaterThan(0)
    // the window's counts of backend a span the kill (its counters carried over the restart)
    expect(run.perBackend[0].requests).toBeGreaterThanOrEqual(0)
    expect(run.perBackend.reduce((a, b) => a + b.requests, 0)).toBeGreaterThan(0)
    expect(Number.isInteger(run.errors + run.non2xx)).toBe(true)
    expect(out).toMatch(new RegExp(`churn: failed requests over all trials \\(errors \\+ non-2xx, the kill included\\): wasp ${run.errors + run.non2xx}`))
  })

  test('the static optimum of the run: the pages that fit in 7 x 200 KB (of about 2 MB), time-averaged over a third with 6', () => {
    const { runOptimum } = require('../bench/model/optimum')
    const { probabilities } = require('../bench/workloads/popularity')
    const [run] = result.doc.runs
    const sizes = result.doc.settings.pageSize
    expect(sizes).toBe('uniform:20480,81920')
    const pageBytes = [] // the generated pages are the sizes the options drew
    const { pageSizes, parsePageSizes } = require('../bench/workloads/page-sizes')
    pageBytes.push(...pageSizes(parsePageSizes(sizes), 40, 1))
    const expected = runOptimum(probabilities({ kind: 'zipf', s: 1 }, 40), new Array(7).fill({ bytes: 204800 }), pageBytes, { index: 0, fraction: 1 / 3 })
    expect(run.optimum).toBeCloseTo(expected, 4)
    expect(expected).toBeLessThan(1)
    expect(run.distance).toBeCloseTo(run.optimum - run.hitRate, 3)
    expect(out).toMatch(/static optimum \(the hottest pages that fit in the fleet's pooled cache, time-averaged over the churn\): 0\.\d{3}/)
  })

  test('the hot pages with the backends that served them, in the JSON, CSV and table', () => {
    const [run] = result.doc.runs
    expect(run.hotPages.length).toBeGreaterThan(2)
    expect(run.hotPages[0].page).toBe('/page1.html') // Zipf(1): page 1 is a quarter of the requests
    for (const h of run.hotPages) {
      expect(h.replicas).toBeGreaterThanOrEqual(1)
      expect(Object.values(h.backends).reduce((a, b) => a + b, 0)).toBe(h.requests)
      // counted by the client's X-Server headers, not by a keyed /_stats snapshot of the backends (that
      // snapshot holds the fleet's event loop in the window's first second; only wrk, which cannot count, needs it)
      expect(h.backends).toEqual(run.perKey[h.page])
    }
    expect(result.doc.summary.wasp.hot1Replicas).toBe(run.hotPages[0].replicas)
    const [header, line] = fs.readFileSync(result.paths.csv, 'utf8').trim().split('\n')
    const cols = header.split(',')
    const cells = line.split(',')
    expect(cols.slice(cols.indexOf('optimum'), cols.indexOf('optimum') + 4)).toEqual(['optimum', 'distance', 'hotPages', 'churnBackend'])
    expect(cells[cols.indexOf('hotPages')]).toMatch(/^\/page1\.html:\d;\/page\d+\.html:\d;\/page\d+\.html:\d$/)
    expect(cells[cols.indexOf('churnBackend')]).toBe('a')
    expect(cells[cols.indexOf('offered')]).toBe('') // a column of the capacity sweep
    expect(out).toMatch(/wasp \(trial 1\): \/page1\.html \d+\.\d % on [a-g] \d+%/)
  })
})
