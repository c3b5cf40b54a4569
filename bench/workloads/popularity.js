'use strict'

/**
 * Page popularity: which page each bench request asks for. `uniform` gives every page the same
 * chance; `zipf:s` gives page i (1-based) a weight of 1 / i^s (s = 1.0 is the classic web-cache
 * skew, Breslau et al. 1999, "Web caching and Zipf-like distributions"). Sampling is an inverse
 * CDF lookup by binary search, O(log n) per request, driven by an injected `random` so a seed
 * reproduces the request sequence.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../../src/common/errors')

/**
 * @typedef {{ kind: 'uniform' } | { kind: 'zipf', s: number }} Popularity
 */

/**
 * Parse `uniform` or `zipf:<s>` (s > 0; `zipf` alone means s = 1).
 * @param {string} text
 * @returns {Popularity}
 * @throws {import('../../src/common/errors').PolistesError} ERR_POLISTES_BAD_OPTION on anything else
 */
function parsePopularity (text) {
  const value = String(text).trim().toLowerCase()
  if (value === 'uniform') return { kind: 'uniform' }
  const m = /^zipf(?::(\d+(?:\.\d+)?|\.\d+))?$/.exec(value)
  if (m) {
    const s = m[1] === undefined ? 1 : Number(m[1])
    if (s > 0 && Number.isFinite(s)) return { kind: 'zipf', s }
  }
  throw new ERR_POLISTES_BAD_OPTION(
    `--popularity must be "uniform" or "zipf:<s>" with s > 0 (e.g. zipf:1.0), got "${text}"`)
}

/**
 * @param {Popularity} popularity
 * @returns {string} the canonical text form, e.g. `zipf:1`
 */
function formatPopularity (popularity) {
  return popularity.kind === 'zipf' ? `zipf:${popularity.s}` : 'uniform'
}

/**
 * The probability of each of `count` items (index 0 is the most popular under zipf).
 * @param {Popularity} popularity
 * @param {number} count
 * @returns {number[]} probabilities summing to 1
 */
function probabilities (popularity, count) {
  const weights = new Array(count)
  for (let i = 0; i < count; i++) {
    weights[i] = popularity.kind === 'zipf' ? 1 / (i + 1) ** popularity.s : 1
  }
  const total = weights.reduce((a, b) => a + b, 0)
  return weights.map((w) => w / total)
}

/**
 * A sampler of item indices in [0, count).
 * @param {Popularity} popularity
 * @param {number} count number of items (pages), at least 1
 * @param {() => number} random uniform in [0, 1)
 * @returns {() => number} the next index
 */
function createSampler (popularity, count, random) {
  if (popularity.kind === 'uniform') {
    return () => Math.min(count - 1, Math.floor(random() * count))
  }
  const cdf = new Float64Array(count)
  let acc = 0
  probabilities(popularity, count).forEach((p, i) => { acc += p; cdf[i] = acc })
  cdf[count - 1] = 1
  return () => {
    const u = random()
    let lo = 0
    let hi = count - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cdf[mid] > u) hi = mid
      else lo = mid + 1
    }
    return lo
  }
}

/**
 * The page at popularity rank `rank` in shift epoch `epoch` (bench/workloads/workload-options.js, --shift):
 * the ranking rotated by `step` places per epoch, so rank r is page (r + epoch * step) mod count.
 * @param {number} rank 0-based, 0 the hottest
 * @param {number} epoch 0-based: floor(seconds since the load started / shift seconds)
 * @param {{ step: number } | null} shift
 * @param {number} count pages
 * @returns {number} the page index, 0-based
 */
function shiftedPage (rank, epoch, shift, count) {
  if (!shift || epoch <= 0) return rank
  return (rank + (epoch * shift.step) % count) % count
}

/**
 * The path of page index i (0-based), as the backends serve them.
 * @param {number} i
 * @returns {string}
 */
function pagePath (i) {
  return `/page${i + 1}.html`
}

module.exports = { parsePopularity, formatPopularity, probabilities, createSampler, shiftedPage, pagePath }
