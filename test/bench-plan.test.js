'use strict'

const { parseOptions } = require('../bench/runners/options')
const {
  DEFAULT_OVERHEAD_SECONDS, runLoadSeconds, expectedRunSeconds, remainingSeconds, planSeconds, formatDuration, formatPlan
} = require('../bench/runners/plan')

describe('bench plan and ETA', () => {
  test.each([
    [0, '0s'], [0.4, '0s'], [7, '7s'], [59.4, '59s'], [59.6, '1m00s'], [70, '1m10s'], [125, '2m05s'],
    [628, '10m28s'], [3599, '59m59s'], [3600, '1h00m'], [3725, '1h02m'],
    [NaN, '?'], [Infinity, '?'], [-1, '?']
  ])('formatDuration(%p) is %p', (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text)
  })

  test('a run\'s load is its learning phase and window; a count of requests has no set length', () => {
    expect(runLoadSeconds({ warmup: 5, duration: 7 })).toBe(12)
    expect(runLoadSeconds({ warmup: 5, duration: 20, requests: 100000 })).toBeNaN()
  })

  test('a run is expected to last its load plus the mean overhead measured so far (the default before any)', () => {
    expect(expectedRunSeconds(12)).toBe(12 + DEFAULT_OVERHEAD_SECONDS)
    // the warm-up (3 s planned, 3.4 s wall) and two runs (12 s planned, 12.8 and 13.0 s wall): overheads 0.4, 0.8, 1.0
    const done = [{ wall: 3.4, planned: 3 }, { wall: 12.8, planned: 12 }, { wall: 13, planned: 12 }]
    expect(expectedRunSeconds(12, done)).toBeCloseTo(12 + (0.4 + 0.8 + 1.0) / 3, 9)
    // a run that ended early (an overhead below zero) counts as none
    expect(expectedRunSeconds(12, [{ wall: 11, planned: 12 }])).toBe(12)
    // with a count of requests: the mean wall time of the runs done, unknown before the first
    expect(expectedRunSeconds(NaN, [{ wall: 3.4, planned: 3 }])).toBeNaN()
    expect(expectedRunSeconds(NaN, [{ wall: 3.4, planned: 3 }, { wall: 20, planned: NaN }, { wall: 30, planned: NaN }])).toBe(25)
  })

  test('the ETA: what is left of the run going on plus the runs after it', () => {
    const done = [{ wall: 13, planned: 12 }] // 1 s overhead: 13 s a run
    expect(remainingSeconds({ left: 0, planned: 12, done })).toBe(0)
    expect(remainingSeconds({ left: 8, planned: 12, done })).toBe(8 * 13) // between runs
    expect(remainingSeconds({ left: 8, planned: 12, done, elapsed: 5 })).toBe(8 + 7 * 13) // 5 s into run 2 of 9
    expect(remainingSeconds({ left: 1, planned: 12, done, elapsed: 20 })).toBe(0) // a run over its time: never below zero
    // a run whose start took long still has its load to do: 3 s into 12, after 11 s of wall time
    expect(remainingSeconds({ left: 2, planned: 12, done, elapsed: 11, second: 3 })).toBe(9 + 13)
    expect(remainingSeconds({ left: 1, planned: 12, done, elapsed: 8, second: 3 })).toBe(9)
    expect(formatDuration(remainingSeconds({ left: 6, planned: 12, done, elapsed: 4 }))).toBe('1m14s')
    expect(remainingSeconds({ left: 3, planned: NaN, done })).toBeNaN()
  })

  test('the plan line of the quick default and of --full, with the expected total', () => {
    const quick = parseOptions(['--peers', 'none'])
    expect(planSeconds({ runs: 6, planned: 12, jitWarmup: 3 })).toBe(3 + DEFAULT_OVERHEAD_SECONDS + 6 * (12 + DEFAULT_OVERHEAD_SECONDS))
    expect(formatPlan(quick)).toBe('plan (quick; --full runs the whole matrix): round-robin, wasp x 3 trials = 6 runs of 5 s learning + 7 s measured, after a 3 s warm-up: about 1m22s')
    const withPeer = { ...quick, arms: [...quick.arms, { label: 'nginx-uri' }] }
    expect(formatPlan(withPeer)).toMatch(/round-robin, wasp, nginx-uri x 3 trials = 9 runs .*: about 2m01s$/)
    const full = parseOptions(['--full', '--peers', 'none', '--jit-warmup', '0'])
    expect(formatPlan(full)).toBe('plan: round-robin, chash-bounded, wasp x 3 trials = 9 runs of 5 s learning + 20 s measured: about 3m54s')
    const counted = parseOptions(['--scenario', 'many-clients', '--algos', 'wasp', '--trials', '1'])
    expect(formatPlan(counted)).toMatch(/1 run of 5 s learning \+ 100000 requests measured, after a 3 s warm-up: length unknown until a run has measured its requests$/)
  })
})
