'use strict'

/**
 * A tiny real capacity sweep (issue 28): the fleet of finite backends, 2 contenders at one
 * low offered rate, 1 s measured per cell, in child processes; then what it wrote. Latencies are not
 * checked (the machine is shared): the cells, the service times the backends measured and the
 * physical limit computed from them are.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { runBench } = require('./bench-helper')

jest.setTimeout(60000)

describe('bench end to end: the capacity scenario', () => {
  let dir
  let doc
  let out = ''
  beforeAll(async () => {
    ;({ dir, doc, stdout: out } = await runBench('polistes-bench-capacity-test-', ['--scenario', 'capacity', '--algos',
      'wasp,chash-bounded', '--peers', 'none', '--rates', '100', '--pages', '200', '--warmup', '0', '--duration', '1',
      '--jit-warmup', '0', '--connections', '16', '--profile', '--quiet',
      // a gate no host fails (the steal is at most every CPU), a probe of 1 s: each cell runs the real probe
      ...(fs.existsSync('/proc/stat') ? ['--steal-gate', `${os.cpus().length}:1`] : [])]))
  })
  afterAll(() => { if (dir) fs.rmSync(dir, { recursive: true, force: true }) })

  test('a cell per contender at the offered rate, every request answered, on the finite backends', () => {
    expect(doc.scenario).toBe('capacity')
    expect(doc.settings.sweep).toEqual({ rates: [100], sloMs: 40, sloDefault: true, stopAfter: 2 })
    expect(doc.runs.map((r) => [r.algo, r.offered]).sort()).toEqual([['chash-bounded', 100], ['wasp', 100]])
    // what wasp learnt of each upstream at the trial's end: its weight (no backend was given one), queue, keys
    const wasp = doc.runs.find((r) => r.algo === 'wasp').policyUpstreams
    expect(wasp.map((u) => u.id).sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g'])
    for (const u of wasp) {
      expect(u.weight).toBeGreaterThan(0)
      expect(typeof u.queued).toBe('boolean')
      expect(u.held).toBeGreaterThanOrEqual(0)
    }
    expect(wasp.reduce((a, u) => a + u.held, 0)).toBeGreaterThan(0)
    for (const run of doc.runs) {
      expect(run).toMatchObject({ errors: 0, non2xx: 0, requests: 100 })
      expect(run.perBackend).toHaveLength(7)
      expect(run.servedRps).toBeGreaterThan(0) // the backends' count in the window: about the rate, far below it
      expect(run.servedRps).toBeLessThan(200) //   if the fleet saturated
      expect(run.load.generator).toBe('open-loop')
      expect(typeof run.load.lag.p99).toBe('number')
      // the backends measured their service times: not below the timers (5 and 20 ms), but for the up to
      // a millisecond a timer may fire early on performance.now()'s clock
      // the responses finished between the window's two snapshots (on a loaded machine some end after it)
      expect(run.service.hits + run.service.misses).toBeGreaterThan(0)
      expect(run.service.hits + run.service.misses).toBeLessThanOrEqual(run.requests + 16)
      expect(run.service.misses).toBeGreaterThan(0) // cold caches
      expect(run.service.missMs).toBeGreaterThanOrEqual(19)
      if (run.service.hits) expect(run.service.hitMs).toBeGreaterThanOrEqual(4)
      // the host's CPU over the window, from /proc/stat (Linux): every process of the machine, and the
      // hypervisor's steal; in cores of the machine's
      if (fs.existsSync('/proc/stat')) {
        expect(run.cpuShare.host).toBeGreaterThan(0)
        expect(run.cpuShare.host).toBeLessThanOrEqual(doc.machine.cpus + 0.01)
        expect(run.cpuShare.steal).toBeGreaterThanOrEqual(0)
        expect(run.timeline.every((s) => s.cpu === null || Number.isFinite(s.cpu.steal))).toBe(true)
        // its worst second, which the STEAL flag reads (the window's seconds only)
        const cell = doc.capacity.cells.find((c) => c.algo === run.algo)
        expect(cell.stealPeak).toBeGreaterThanOrEqual(0)
        expect(cell.stealPeak).toBeLessThanOrEqual(doc.machine.cpus)
        expect(cell.stolen).toBe(cell.stealPeak > doc.capacity.stealLimit)
        // --steal-gate: each cell passed the gate after one real probe of every CPU
        expect(doc.settings.stealGate).toEqual({ limit: doc.machine.cpus, probeS: 1 })
        expect(run.stealGate).toMatchObject({ probes: 1, timedOut: false })
        expect(run.stealGate.steal).toBeGreaterThanOrEqual(0)
        expect(run.stealGate.steal).toBeLessThanOrEqual(doc.machine.cpus)
        expect(run.stealGate.waitedS).toBeGreaterThanOrEqual(0.9)
      }
    }
    // each cell's service over nominal: not below the timers, so not much under 0
    for (const c of doc.capacity.cells) expect(c.slowdown).toBeGreaterThan(-0.05)
    expect(doc.capacity.cells.map((c) => [c.algo, c.rate, c.trials])).toEqual([['wasp', 100, 1], ['chash-bounded', 100, 1]])
    expect(doc.summary).toBeUndefined() // medians per algorithm would mix the rates
  })

  test('the physical limit from the measured service times (about the nominal one, or below); a capacity per contender', () => {
    const { limit } = doc.capacity
    expect(limit.basis).toBe('measured')
    expect(limit.measured.rate).toBeLessThan(limit.nominal.rate * 1.25)
    expect(limit.service.missMs).toBeGreaterThanOrEqual(19)
    expect(doc.capacity.contenders.map((c) => c.algo)).toEqual(['wasp', 'chash-bounded'])
    for (const c of doc.capacity.contenders) expect([0, 100]).toContain(c.capacity)
    expect(out).toContain('capacity at SLO: the highest offered rate before the first whose p99 is over 40 ms')
    // 200 pages (few, so that the test writes them fast) fit the 7 x 100 pages of the caches: h = 1
    expect(limit.measured.hitRate).toBeCloseTo(1, 9)
    expect(out).toMatch(/fleet physical limit: 7 x 4 workers x 1000 \/ \(h x hit \+ \(1 - h\) x miss\) = 28000 \/ \(1\.0000 x \d/)
  })

  test('--profile: a V8 CPU profile of each polistes balancer child, as in the other scenarios', () => {
    const files = fs.readdirSync(path.join(dir, 'profiles')).sort()
    expect(files.map((f) => f.replace(/-t1-.*$/, ''))).toEqual(['balancer-chash_bounded', 'balancer-wasp'])
    for (const f of files) expect(JSON.parse(fs.readFileSync(path.join(dir, 'profiles', f), 'utf8')).nodes.length).toBeGreaterThan(0)
    expect(out).toContain('CPU profiles of the balancer in')
  })

  test('the CSV and the HTML beside the JSON', () => {
    const [csv] = fs.readdirSync(dir).filter((f) => f.endsWith('-capacity.csv'))
    const lines = fs.readFileSync(path.join(dir, csv), 'utf8').trim().split('\n')
    expect(lines).toHaveLength(3)
    expect(lines[0].split(',')).toEqual(expect.arrayContaining(['offered', 'busiestShare', 'hitServiceMs', 'missServiceMs',
      'serviceOver', 'steal']))
    const [html] = fs.readdirSync(dir).filter((f) => f.endsWith('-capacity.html'))
    const text = fs.readFileSync(path.join(dir, html), 'utf8')
    expect(text).toContain('p99 latency against the offered rate')
    expect(text).toContain('Capacity at SLO (req/s)')
  })
})
