'use strict'

/**
 * A tiny real bench: fleet, balancer and autocannon in child processes, 2 algorithms x 1 trial,
 * 1 s learning + 2 s measured, then the JSON, CSV and HTML it writes.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { parseOptions } = require('../bench/options')
const { bench } = require('../bench/run')

jest.setTimeout(40000)

const sink = { isTTY: false, write: () => true }

describe('bench end to end', () => {
  let dir
  let result
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-bench-test-'))
    const settings = parseOptions(['--algos', 'round-robin,wasp', '--peers', 'none', '--trials', '1', '--warmup', '1', '--duration', '2',
      '--jit-warmup', '0', '--connections', '8', '--results-dir', dir, '--out', path.join(dir, 'out.json'), '--quiet'])
    result = await bench(settings, { stdout: sink, stderr: sink })
  })
  afterAll(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }) })

  test('writes JSON with one run per algorithm in the documented schema', () => {
    const doc = JSON.parse(fs.readFileSync(path.join(dir, 'out.json'), 'utf8'))
    expect(doc.scenario).toBe('cache')
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
      expect(run.timeline.map((p) => p.t)).toEqual([1, 2, 3])
      expect(run.timeline[0].phase).toBe('learning')
      expect(run.timeline[2]).toMatchObject({ phase: 'measured' })
      expect(run.learning.requests).toBeGreaterThan(0)
      const { failures, noUpstream } = run.balancer
      expect(run.balancer.requests).toBeGreaterThan(0)
      expect(run.balancer.errors).toBe(failures.connect + failures.timeout + failures.stream + noUpstream)
    }
    for (const algo of ['round-robin', 'wasp']) {
      expect(doc.summary[algo]).toEqual(expect.objectContaining({ rps: expect.any(Number), p99: expect.any(Number), hitRate: expect.any(Number) }))
    }
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
