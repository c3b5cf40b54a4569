'use strict'

/**
 * The static optimum of a cache workload: the hit rate of the best fixed placement, where the whole
 * fleet's cache holds the pages worth most and never changes. It is the reference line a routing
 * policy is measured against (issue 18): no policy that sends each page to a cache that holds it can
 * beat it on a stationary workload, and one that reaches it has learnt a perfect division of labour.
 *
 * - Caches bounded in pages: the hottest `capacity` pages (the sum of their probabilities).
 * - Caches bounded in bytes: the pages by probability per byte, greedily, as long as they fit (the
 *   fractional knapsack's order; for equal sizes, the hottest pages again).
 * - Churn (a backend down part of the time): the time-weighted mean of the optimum of each phase.
 *
 * It ignores that a page must fit in one backend's cache (it pools the capacity) and that a page too
 * hot for one backend must be replicated: it is an upper bound, which is what a reference line needs.
 * Pure functions, no I/O.
 */

const { FLEET_SIZE } = require('./model-setup')

/**
 * @param {number[]} probabilities request probability of each page (summing to 1)
 * @param {{ pages: number } | { bytes: number, sizes: number[] }} capacity the whole fleet's cache:
 *   a number of pages, or bytes with each page's size
 * @returns {number} the static-optimum hit rate in [0, 1]
 */
function staticOptimum (probabilities, capacity) {
  if ('pages' in capacity) {
    const sorted = [...probabilities].sort((a, b) => b - a)
    let hit = 0
    for (let i = 0; i < Math.min(capacity.pages, sorted.length); i++) hit += sorted[i]
    return Math.min(1, hit)
  }
  const { bytes, sizes } = capacity
  if (sizes.length !== probabilities.length) throw new TypeError('staticOptimum: one size per page is needed')
  const order = probabilities.map((p, i) => i).sort((a, b) => probabilities[b] / sizes[b] - probabilities[a] / sizes[a])
  let left = bytes
  let hit = 0
  for (const i of order) {
    if (sizes[i] <= left) {
      left -= sizes[i]
      hit += probabilities[i]
    }
  }
  return Math.min(1, hit)
}

/**
 * The time-weighted mean of the optimum over phases, e.g. churn: 7 backends two thirds of the time,
 * 6 one third.
 * @param {number[]} probabilities
 * @param {Array<{ fraction: number, capacity: { pages: number } | { bytes: number, sizes: number[] } }>} phases
 *   fractions summing to 1
 * @returns {number}
 */
function timeAveragedOptimum (probabilities, phases) {
  const total = phases.reduce((a, p) => a + p.fraction, 0)
  if (!(Math.abs(total - 1) < 1e-9)) {
    throw new TypeError(`timeAveragedOptimum: phase fractions must sum to 1, got ${total}`)
  }
  return phases.reduce((a, p) => a + p.fraction * staticOptimum(probabilities, p.capacity), 0)
}

/**
 * Each backend's cache capacity from the bench's fleet options (servers/fleet.js): `cacheBytes`
 * (when > 0) or `cachePages`, each a scalar or one value per backend, `perBackend[i]` overriding.
 * @param {{ count?: number, cachePages?: number | number[], cacheBytes?: number | number[], perBackend?: object[] }}
 *   fleet
 * @returns {Array<{ pages: number } | { bytes: number }>}
 */
function fleetCapacities (fleet) {
  const count = fleet.count ?? FLEET_SIZE
  const nth = (v, i) => (Array.isArray(v) ? (v.length === 1 ? v[0] : v[i]) : v)
  const out = []
  for (let i = 0; i < count; i++) {
    const o = (fleet.perBackend && fleet.perBackend[i]) || {}
    const bytes = o.cacheBytes ?? nth(fleet.cacheBytes, i) ?? 0
    out.push(bytes > 0 ? { bytes } : { pages: o.cachePages ?? nth(fleet.cachePages, i) ?? 4 })
  }
  return out
}

/**
 * The static optimum of a bench run: the fleet's pooled cache over the run's page probabilities,
 * time-averaged over churn (one backend, `down.index`, out for `down.fraction` of the window).
 * @param {number[]} probabilities of each page
 * @param {Array<{ pages: number } | { bytes: number }>} capacities one per backend (fleetCapacities)
 * @param {number[]} pageBytes bytes of each page (used when the caches are bounded in bytes)
 * @param {{ index: number, fraction: number }} [down]
 * @returns {number} NaN when the caches mix pages and bytes
 */
function runOptimum (probabilities, capacities, pageBytes, down) {
  const kind = 'bytes' in capacities[0] ? 'bytes' : 'pages'
  if (capacities.some((c) => !(kind in c))) return NaN
  const pooled = (list) => {
    const total = list.reduce((a, c) => a + c[kind], 0)
    return kind === 'bytes' ? { bytes: total, sizes: pageBytes } : { pages: total }
  }
  if (!down || !(down.fraction > 0)) return staticOptimum(probabilities, pooled(capacities))
  const fraction = Math.min(1, down.fraction)
  return timeAveragedOptimum(probabilities, [
    { fraction: 1 - fraction, capacity: pooled(capacities) },
    { fraction, capacity: pooled(capacities.filter((_, i) => i !== down.index)) }
  ])
}

module.exports = { staticOptimum, timeAveragedOptimum, fleetCapacities, runOptimum }
