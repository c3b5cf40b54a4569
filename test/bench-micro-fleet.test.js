'use strict'

/**
 * bench:micro's fleet table (bench/runners/micro-fleet.js): the timing wrapper must leave every
 * decision as it was (the same requests, the same picks, the same hit rate as the model without
 * it), count each request once, and reject a bad eviction size with a one-line error. Nothing here
 * asserts a duration: the figures are bench:micro's to print, not a test's to judge.
 */

const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { measureInFleet } = require('../bench/runners/micro-fleet')
const { runAt, contenders } = require('../bench/model/open-loop')
const { REFERENCES } = require('../bench/model/reference-learners')

const MICRO = path.join(__dirname, '..', 'bench', 'runners', 'micro.js')
const RUN = { warmup: 1500, measure: 1500 }

jest.setTimeout(30000)

describe('bench:micro in the fleet', () => {
  test.each([0, 64])('timed (%i KB evicted between calls), wasp decides as it does untimed', (evictKB) => {
    const timed = measureInFleet(contenders().wasp, { ...RUN, evictKB })
    const untimed = runAt(contenders().wasp, { rate: 2000 }, RUN)
    expect(timed.hitRate).toBe(untimed.hitRate)
    expect(timed.hitRate).toBeGreaterThan(0.3) // the fleet's caches warmed: wasp learnt in the warm-up
    // the picks of the timed span: the measured requests, less the few that arrived while the warm-up drained
    expect(timed.decisions).toBeGreaterThan(0.95 * RUN.measure)
    expect(timed.decisions).toBeLessThanOrEqual(RUN.measure)
    expect(timed.ns).toBeGreaterThan(0)
    expect(Number.isFinite(timed.ns)).toBe(true)
  })

  test('a policy with onStart (p2c-peak-ewma) and a reference told the fleet are timed alike', () => {
    const p2c = measureInFleet(contenders()['p2c-peak-ewma'], RUN)
    expect(p2c.hitRate).toBe(runAt(contenders()['p2c-peak-ewma'], { rate: 2000 }, RUN).hitRate)
    const told = measureInFleet(REFERENCES.clairvoyant, RUN)
    expect(told.hitRate).toBe(runAt(REFERENCES.clairvoyant, { rate: 2000 }, RUN).hitRate)
    expect(told.decisions).toBeGreaterThan(0.95 * RUN.measure)
  })

  test.each([-1, 1.5, NaN])('evictKB %p is refused', (evictKB) => {
    expect(() => measureInFleet(contenders().wasp, { ...RUN, evictKB })).toThrow(/evictKB must be an integer >= 0/)
  })

  test.each([
    [['--evict', '-1'], /--evict must be an integer >= 0 \(KB\), got "-1"/],
    [['--evict', 'lots'], /--evict must be an integer >= 0 \(KB\), got "lots"/],
    [['--evict'], /Not enough arguments following: evict/],
    [['--evcit', '10'], /Unknown argument/]
  ])('npm run bench:micro -- %p: one line, exit 2, before measuring anything', (argv, message) => {
    const r = spawnSync(process.execPath, [MICRO, ...argv], { encoding: 'utf8', timeout: 20000 })
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(message)
    expect(r.stderr).not.toMatch(/\n\s+at /) // no stack trace
    expect(r.stdout).toBe('')
  })
})
