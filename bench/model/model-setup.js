'use strict'

/**
 * What the closed-loop and open-loop models set up alike: the upstream ids, the page names, Zipf
 * popularity as a cumulative distribution, the draw of a popularity rank and jittered service
 * times. Pure: every random draw comes from the `random` the caller passes.
 */

const { DEFAULTS: BALANCER_DEFAULTS } = require('../../src/config/defaults')

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { pow, floor } = Math

/** Upstreams of a model when not given: as many as the default fleet (`polistes --fleet-size`). */
const FLEET_SIZE = BALANCER_DEFAULTS.fleet.count

/**
 * The upstream ids: `u0` .. `u{n-1}` for a number, the array itself otherwise.
 * @param {number | string[]} upstreams
 * @returns {string[]}
 */
function upstreamIds (upstreams) {
  return typeof upstreams === 'number' ? Array.from({ length: upstreams }, (_, i) => `u${i}`) : upstreams
}

/**
 * The page names `/page1` .. `/page{keys}`, in rank order.
 * @param {number} keys
 * @returns {string[]}
 */
function pageNames (keys) {
  return Array.from({ length: keys }, (_, i) => `/page${i + 1}`)
}

/**
 * The cumulative distribution of Zipf(s) over `count` ranks (the last entry is 1, up to rounding).
 * @param {number} count
 * @param {number} s the exponent
 * @returns {number[]}
 */
function zipfCumulative (count, s) {
  let sum = 0
  const cumulative = Array.from({ length: count }, (_, rank) => (sum += 1 / pow(rank + 1, s)))
  for (let i = 0; i < cumulative.length; i++) cumulative[i] /= sum
  return cumulative
}

/**
 * Each page's share of the requests, hottest first: 1 / (rank + 1)^s for Zipf(s), equal for uniform.
 * @param {number} keys
 * @param {'uniform' | { zipf: number }} popularity
 * @returns {number[]} summing to 1
 */
function pageShares (keys, popularity) {
  const weight = (r) => (popularity === 'uniform' ? 1 : 1 / pow(r + 1, popularity.zipf))
  const probs = Array.from({ length: keys }, (_, r) => weight(r))
  const total = probs.reduce((a, b) => a + b, 0)
  return probs.map((p) => p / total)
}

/**
 * The popularity rank a uniform draw `r` in [0, 1) falls on.
 * @param {number} r
 * @param {number[] | null} cumulative from zipfCumulative, or null for uniform popularity
 * @param {number} count ranks (used when uniform)
 * @returns {number} 0-based rank
 */
function rankOf (r, cumulative, count) {
  if (cumulative === null) return floor(r * count)
  let lo = 0
  let hi = cumulative.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (cumulative[mid] > r) hi = mid
    else lo = mid + 1
  }
  return lo
}

/**
 * A service time: `base` times a uniform factor in [1 - jitter, 1 + jitter] (one draw of `random`).
 * @param {number} base ms
 * @param {number} jitter
 * @param {() => number} random
 * @returns {number} ms
 */
function jittered (base, jitter, random) {
  return base * (1 - jitter + 2 * jitter * random())
}

/**
 * A per-backend option as one value per backend: an array as given, a number the same for all `n`.
 * @param {number | number[]} value
 * @param {number} n
 * @returns {number[]}
 */
function perBackend (value, n) {
  return Array.from({ length: n }, (_, i) => (Array.isArray(value) ? value[i] : value))
}

module.exports = { FLEET_SIZE, upstreamIds, pageNames, zipfCumulative, pageShares, rankOf, jittered, perBackend }
