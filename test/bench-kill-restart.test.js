'use strict'

/**
 * The capacity scenario's kill/restart cell (`--kill AT:DOWN`): its figures from a timeline (pure), and
 * one real short cell (polistes wasp at a low rate, backend a crashed 1 s into a 3 s window and started
 * again 1 s later): the backend went down (the balancer's connections to it were refused), came back (it
 * served again, a new backend on its port), no request failed, and the report holds its numbers.
 */

const fs = require('node:fs')
const { runBench } = require('./bench-helper')
const { killFields, killReport, formatKillTable } = require('../bench/reports/kill-restart')

jest.setTimeout(30000)

/** One second of a run's timeline. */
const second = (t, p99, { churned = 10, errors = 0, non2xx = 0, rps = 100 } = {}) =>
  ({ t, phase: 'measured', rps, errors, non2xx, latency: { p99 }, churned })

describe('kill/restart figures', () => {
  const cell = { kill: { at: 2, down: 2 }, sloMs: 40, warmup: 1, duration: 8 }
  const run = (timeline, extra = {}) => ({
    timeline, errors: 0, non2xx: 0, churn: { backend: 'a', restartMs: 300 }, balancer: { retries: 3 }, ...extra
  })

  test('regain: seconds after the restart from which every second is within the SLO, without a failure', () => {
    // the window: seconds 2-9; killed at the end of second 3, restarted at the end of second 5
    const timeline = [second(1, 90), second(2, 20), second(3, 22), second(4, 80, { churned: 0 }),
      second(5, 30, { churned: 0 }), second(6, 70, { churned: 2 }), second(7, 35, { churned: 4, non2xx: 1 }),
      second(8, 30, { churned: 8 }), second(9, 25)]
    expect(killFields(run(timeline, { non2xx: 1, failures: { 'status 502': 1 } }), cell)).toEqual({
      backend: 'a',
      at: 2,
      down: 2,
      restartMs: 300,
      failed: 1,
      failures: { 'status 502': 1 },
      retries: 3,
      p99Before: 22, // the learning phase's second 1 is not the window's
      worstP99: 80,
      regainS: 2, // seconds 8 and 9 within the SLO; 7 had a failed request
      backendBackS: 3 // second 8: backend a served 8, half its 10 a second before the kill or more
    })
    // within the SLO from the restart on: 0; a last second over it: never
    const calm = timeline.map((p) => ({ ...p, latency: { p99: 10 }, non2xx: 0 }))
    expect(killFields(run(calm), cell).regainS).toBe(0)
    expect(killFields(run([...calm.slice(0, -1), second(9, 41)]), cell).regainS).toBeNull()
    expect(killFields(run(calm.map((p) => (p.t > 5 ? { ...p, churned: 1 } : p))), cell).backendBackS).toBeNull()
  })

  test('per contender: medians over trials (never counts as the longest), failures summed; the table names them', () => {
    const settings = { kill: { at: 2, down: 2 }, sweep: { rates: [2000], sloMs: 40 }, arms: [{ label: 'wasp' }, { label: 'x' }] }
    const fields = (regainS, failures) => ({ backend: 'a', failed: Object.values(failures).reduce((a, b) => a + b, 0), failures, retries: null, p99Before: 20, worstP99: 50, regainS, backendBackS: 1, restartMs: 300 })
    const runs = [
      { algo: 'wasp', kill: fields(1, {}) }, { algo: 'wasp', kill: fields(null, {}) }, { algo: 'wasp', kill: fields(3, {}) },
      { algo: 'x', kill: fields(null, { ECONNRESET: 2 }) }, { algo: 'x', kill: fields(null, { 'status 502': 1 }) }
    ]
    const report = killReport(settings, runs)
    expect(report).toMatchObject({ backend: 'a', at: 2, down: 2, rate: 2000, sloMs: 40 })
    expect(report.contenders).toEqual([
      expect.objectContaining({ algo: 'wasp', trials: 3, failed: 0, regainS: 3, retries: null }),
      expect.objectContaining({ algo: 'x', trials: 2, failed: 3, failures: { ECONNRESET: 2, 'status 502': 1 }, regainS: null })
    ])
    const table = formatKillTable(report)
    expect(table).toMatch(/^kill\/restart at 2000 req\/s: backend a crashed 2 s into the measured window \(listening socket and connections closed\)/)
    expect(table).toMatch(/\nx +3 {2}ECONNRESET: 2, status 502: 1 +- +20\.0 +50\.0 +never +1$/m)
    // a p99 over the SLO before the crash: the cell was not in steady state
    const unsettled = formatKillTable({ ...report, contenders: [{ ...report.contenders[0], p99Before: 41 }] })
    expect(unsettled).toMatch(/\nwasp +0 {2}- +- +41\.0 +50\.0 +3 +1 {2}UNSETTLED$/)
  })
})

describe('a real kill/restart cell', () => {
  let dir
  let doc
  let out = ''
  beforeAll(async () => {
    ;({ dir, doc, stdout: out } = await runBench('polistes-bench-kill-test-', ['--scenario', 'capacity', '--algos', 'wasp',
      '--peers', 'none', '--kill', '1:1', '--rates', '100', '--pages', '200', '--warmup', '0', '--duration', '3',
      '--jit-warmup', '0', '--connections', '16', '--slo', '10000', '--quiet'], {
      // polistes leaves a backend out for 5 s after a refused connection unless its checks (1 s apart)
      // pass again first: 300 ms here, so that the backend can serve again within the short window
      adjust: (settings) => { settings.balancerOptions = { failTimeoutMs: 300 } }
    }))
  })
  afterAll(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }) })

  test('backend a went down (refused connections, retried) and came back (a new backend served on its port)', () => {
    expect(doc.settings.kill).toEqual({ index: 0, at: 1, down: 1 })
    expect(doc.settings.fleet.processes).toBeUndefined() // the sweep's fleet: one process, crashed in it
    const [run] = doc.runs
    expect(run.churn).toMatchObject({ backend: 'a', killedAt: 1, restartedAt: 2 })
    expect(run.churn.restartMs).toBeGreaterThan(0)
    // polistes met the dead backend: connections refused (or reset), each request retried on another one
    expect(run.balancer.failures.connect).toBeGreaterThanOrEqual(1)
    expect(run.balancer.retries).toBe(run.balancer.failures.connect)
    expect(run.errors + run.non2xx).toBe(0)
    // by backend a's own count (its new backend's): nothing while down, requests after the restart
    const at = (t) => run.timeline.find((p) => p.t === t)
    expect(at(2).churned).toBe(0)
    expect(at(3).churned).toBeGreaterThan(0)
  })

  test('the kill figures in the run, per contender in the document, and in the console table', () => {
    const [run] = doc.runs
    for (const f of ['at', 'down', 'restartMs', 'failed', 'retries', 'p99Before', 'worstP99', 'regainS', 'backendBackS']) {
      expect(typeof run.kill[f]).toBe('number')
    }
    expect(run.kill).toMatchObject({ backend: 'a', failed: 0, failures: {}, regainS: 0 })
    expect(doc.kill).toMatchObject({ backend: 'a', at: 1, down: 1, rate: 100, sloMs: 10000 })
    expect(doc.kill.contenders).toEqual([expect.objectContaining({ algo: 'wasp', trials: 1, failed: 0, regainS: 0 })])
    expect(out).toContain('kill/restart at 100 req/s: backend a crashed 1 s into the measured window')
    expect(out).toMatch(/\nwasp +0 {2}- +\d+ /)
  })
})
