'use strict'

/**
 * Descriptive statistics for the bench: exact percentiles over float samples (no histogram
 * rounding), medians over trials, mean and standard deviation.
 */

/**
 * The p-th percentile of an ascending array, nearest-rank method (as HdrHistogram and
 * autocannon report it): the smallest sample with at least p % of the samples at or below it.
 * @param {ArrayLike<number>} sorted ascending samples
 * @param {number} p percentile in [0, 100]
 * @returns {number} the sample, or NaN for no samples
 */
function percentile (sorted, p) {
  const n = sorted.length
  if (n === 0) return NaN
  if (p <= 0) return sorted[0]
  if (p >= 100) return sorted[n - 1]
  const rank = Math.ceil((p / 100) * n)
  return sorted[Math.min(n, Math.max(1, rank)) - 1]
}

/**
 * @param {ArrayLike<number>} values
 * @returns {number} arithmetic mean, NaN when empty
 */
function mean (values) {
  const n = values.length
  if (n === 0) return NaN
  let sum = 0
  for (let i = 0; i < n; i++) sum += values[i]
  return sum / n
}

/**
 * Population standard deviation (autocannon and wrk report this one).
 * @param {ArrayLike<number>} values
 * @returns {number} NaN when empty
 */
function stdev (values) {
  const n = values.length
  if (n === 0) return NaN
  const m = mean(values)
  let sq = 0
  for (let i = 0; i < n; i++) sq += (values[i] - m) ** 2
  return Math.sqrt(sq / n)
}

/**
 * Median of unsorted values, ignoring NaN and null; the mean of the two middle values for an even count.
 * @param {Array<number|null|undefined>} values
 * @returns {number} NaN when nothing is left
 */
function median (values) {
  const xs = values.filter((v) => typeof v === 'number' && !Number.isNaN(v)).sort((a, b) => a - b)
  const n = xs.length
  if (n === 0) return NaN
  const mid = n >> 1
  return n % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2
}

/**
 * Summary of latency samples in milliseconds, sub-millisecond resolution.
 * @param {ArrayLike<number>} samples latencies (any order; copied, not mutated)
 * @returns {{ count: number, mean: number, p50: number, p90: number, p95: number, p99: number, max: number, min:
 *   number, stdev: number }}
 */
function summarize (samples) {
  const sorted = Float64Array.from(samples).sort()
  const n = sorted.length
  if (n === 0) {
    return { count: 0, mean: NaN, p50: NaN, p90: NaN, p95: NaN, p99: NaN, max: NaN, min: NaN, stdev: NaN }
  }
  return {
    count: n,
    mean: mean(sorted),
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[n - 1],
    min: sorted[0],
    stdev: stdev(sorted)
  }
}

/**
 * Round to a number of decimals, for JSON and tables (NaN stays NaN, then JSON makes it null).
 * @param {number} x
 * @param {number} [digits]
 * @returns {number}
 */
function round (x, digits = 3) {
  if (typeof x !== 'number' || !Number.isFinite(x)) return x
  const f = 10 ** digits
  return Math.round(x * f) / f
}

/**
 * @param {number} a numerator
 * @param {number} b denominator
 * @returns {number} a / b, or NaN when b is 0 or either is not a number
 */
function ratio (a, b) {
  if (typeof a !== 'number' || typeof b !== 'number' || !b || Number.isNaN(a)) return NaN
  return a / b
}

module.exports = { percentile, mean, stdev, median, summarize, round, ratio }
