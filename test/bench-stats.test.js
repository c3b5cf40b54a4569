'use strict'

const { percentile, mean, stdev, median, summarize, round, ratio } = require('../bench/reports/stats')

describe('bench stats', () => {
  test('percentiles use the nearest rank and keep sub-millisecond values', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => (i + 1) / 10) // 0.1 .. 10.0
    expect(percentile(sorted, 50)).toBeCloseTo(5.0)
    expect(percentile(sorted, 90)).toBeCloseTo(9.0)
    expect(percentile(sorted, 99)).toBeCloseTo(9.9)
    expect(percentile(sorted, 100)).toBeCloseTo(10.0)
    expect(percentile(sorted, 0)).toBeCloseTo(0.1)
    expect(percentile([1.25], 99)).toBe(1.25)
    expect(percentile([], 50)).toBeNaN()
  })

  test('p99 of a small sample is its largest value, not an interpolation', () => {
    expect(percentile([0.5, 0.6, 0.7, 40.25], 99)).toBe(40.25)
    expect(percentile([0.5, 0.6, 0.7, 40.25], 50)).toBe(0.6)
  })

  test('summarize sorts a copy and reports mean, percentiles, max and population stdev', () => {
    const samples = [3.5, 1.5, 2.5, 4.5, 0.5]
    const s = summarize(samples)
    expect(samples).toEqual([3.5, 1.5, 2.5, 4.5, 0.5])
    expect(s).toMatchObject({ count: 5, mean: 2.5, p50: 2.5, p99: 4.5, max: 4.5, min: 0.5 })
    expect(s.stdev).toBeCloseTo(Math.sqrt(2))
    expect(summarize([]).count).toBe(0)
    expect(summarize([]).p99).toBeNaN()
  })

  test('median of an even count averages the middle pair and ignores NaN', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([5, NaN, 1, 3])).toBe(3)
    expect(median([])).toBeNaN()
  })

  test('mean, stdev, round and ratio', () => {
    expect(mean([1, 2, 3])).toBe(2)
    expect(stdev([2, 2, 2])).toBe(0)
    expect(round(1.23456, 2)).toBe(1.23)
    expect(round(NaN, 2)).toBeNaN()
    expect(ratio(3, 2)).toBe(1.5)
    expect(ratio(3, 0)).toBeNaN()
  })
})
