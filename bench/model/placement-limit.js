'use strict'

/**
 * The placement limit of a fleet whose backends are the bottleneck (issue 28): an upper bound on
 * the throughput of ANY static placement, for any fleet shape (workers and cache size per backend),
 * beside the physical limit of open-loop.js (a perfectly balanced fleet at the best static hit rate),
 * which assumes that load can be spread in proportion to workers whatever the caches hold.
 *
 * A static placement caches each page p (probability q_p) on any set of backends, each backend b
 * holding at most C_b pages, and splits p's requests among the backends in any fractions; a request
 * sent where its page is cached holds a worker `hitMs`, elsewhere `missMs`. The rate λ (req/ms) is
 * feasible if every backend's work fits its w_b workers: λ Σ_p q_p (hitMs h_pb + missMs m_pb) ≤ w_b,
 * where h_pb is the fraction of p's requests served as hits on b and m_pb as misses.
 *
 * The bound, a fractional relaxation and its dual:
 * - Misses need no cache, so their work can go anywhere: λ is feasible iff some hits h fit each
 *   backend, λ hitMs A_b ≤ w_b with A_b = Σ_p q_p h_pb (the share of requests that hit on b), and the
 *   whole fleet's work fits, λ (hitMs H + missMs (1 - H)) ≤ W = Σ_b w_b, with H = Σ_b A_b. With
 *   hitMs ≤ missMs the second only gets easier as H grows, so λ is feasible iff it holds at the
 *   largest H whose hits fit: H*(λ).
 * - In an integral placement h_pb ≤ 1 where p is cached on b and 0 elsewhere, so h_pb ∈ [0, 1],
 *   Σ_b h_pb ≤ 1 and Σ_p h_pb ≤ C_b (a backend's hits are of pages it holds). Relaxing those to
 *   fractions can only raise H*.
 * - For every set S of backends, H ≤ Σ_{b∈S} cap_b + M(Σ_{b∉S} C_b), where cap_b = w_b / (λ hitMs)
 *   and M(k) is the share of the k hottest pages (fractional in k): the hits on S are at most their
 *   caps, and the hits elsewhere are at most the share of pages given Σ_{b∉S} C_b units of cache,
 *   each page at most one unit in all. (S = ∅ is the best static hit rate of physicalLimit.) The
 *   least of these over S is an upper bound on H*(λ): weak duality, no solver needed.
 * - Hence λ is an upper bound on any static placement's throughput if λ (missMs - (missMs - hitMs)
 *   Hbound(λ)) ≤ W fails for every larger λ. The left side grows with λ (Hbound falls as the caps
 *   shrink), so a bisection finds the bound. With equal workers and caches it is the physical limit
 *   unless even the hottest pages cannot all be hits somewhere (a cap below M's slope).
 *
 * Beside the bound, `achieved` is the throughput of one integral placement built greedily at the
 * bound (hottest page first, on the backend with cache room and the most hit capacity left; a page
 * too hot for it split evenly over the fewest such backends that can each take their part: its
 * replicas), with the misses spread over the workers left: a lower bound on the best static
 * placement. When the two meet, the bound is the fleet's real limit.
 *
 * Pure: no I/O.
 */

const { DEFAULTS } = require('./open-loop')
const { pageShares, perBackend, upstreamIds } = require('./model-setup')

/** The most backends placementLimit takes: it tries every subset of them. */
const MAX_UPSTREAMS = 20

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { min, max } = Math

/**
 * @param {object} fleet { upstreams, workers, cacheSize, keys, popularity, hitMs, missMs } as in
 *   createOpenLoop (workers and cacheSize a number or one per backend); defaults the model's
 * @returns {{ rate: number, hitRate: number, achieved: number, achievedHitRate: number, homes: number[][] }}
 *   rate: the bound (req/s) and hitRate its Hbound; achieved (req/s) and achievedHitRate: the greedy
 *   placement's, and homes its backends (indexes) for each page, hottest first (pages past the end are
 *   cached nowhere)
 */
function placementLimit (fleet = {}) {
  const f = { ...DEFAULTS, ...fleet }
  const n = upstreamIds(f.upstreams).length
  const workers = perBackend(f.workers, n)
  const caches = perBackend(f.cacheSize, n).map((c) => min(c, f.keys))
  if (!(f.hitMs > 0 && f.missMs >= f.hitMs)) {
    throw new TypeError(`placementLimit: needs 0 < hitMs <= missMs, got ${f.hitMs} and ${f.missMs}`)
  }
  if (workers.some((w) => !(w > 0)) || caches.some((c) => !(c >= 0))) {
    throw new TypeError('placementLimit: workers must be > 0 and cache sizes >= 0')
  }
  if (n > MAX_UPSTREAMS) {
    throw new TypeError(`placementLimit: at most ${MAX_UPSTREAMS} backends (every subset is tried), got ${n}`)
  }
  const probs = pageShares(f.keys, f.popularity)
  const top = [0]
  for (const q of probs) top.push(top[top.length - 1] + q)
  const M = (k) => { // the share of the k hottest pages, k fractional
    if (k >= probs.length) return top[probs.length]
    const i = Math.floor(k)
    return top[i] + (k - i) * probs[i]
  }
  const W = workers.reduce((a, b) => a + b, 0)
  const hitBound = (lambda) => {
    const caps = workers.map((w) => w / (lambda * f.hitMs))
    let best = Infinity
    for (let s = 0; s < 1 << n; s++) {
      let sum = 0
      let pages = 0
      for (let b = 0; b < n; b++) {
        if (s & (1 << b)) sum += caps[b]
        else pages += caches[b]
      }
      best = min(best, sum + M(pages))
    }
    return min(1, best)
  }
  const feasible = (lambda) => lambda * (f.missMs - (f.missMs - f.hitMs) * hitBound(lambda)) <= W
  let lo = W / f.missMs // every request a miss: always feasible
  let hi = W / f.hitMs // every request a hit: the most any placement can do
  for (let i = 0; i < 100 && hi - lo > 1e-12 * hi; i++) {
    const mid = (lo + hi) / 2
    if (feasible(mid)) lo = mid
    else hi = mid
  }
  const placed = greedyPlacement(probs, workers, caches, f, lo)
  return {
    rate: lo * 1000,
    hitRate: hitBound(lo),
    achieved: placed.rate * 1000,
    achievedHitRate: placed.hitRate,
    homes: placed.homes
  }
}

/**
 * One integral placement built for the rate `lambda` (req/ms), hottest page first (`homes`: each
 * page's backends), and the rate it sustains: the least of the fleet's total work and each backend's
 * hit work (its misses can be sent to whoever has workers left, so only the hits bind a backend).
 */
function greedyPlacement (probs, workers, caches, f, lambda) {
  const n = workers.length
  const caps = workers.map((w) => w / (lambda * f.hitMs))
  const hits = new Array(n).fill(0)
  const room = [...caches]
  const homes = []
  for (const q of probs) {
    // the backends with room and hit capacity left, most left first; the page on the fewest of them
    // whose even split each can take (k replicas of q / k), else on all of them up to what each can take
    const open = hits.map((h, i) => i).filter((i) => room[i] >= 1 && caps[i] - hits[i] > 0)
      .sort((a, b) => (caps[b] - hits[b]) - (caps[a] - hits[a]))
    if (open.length === 0) break // the rest are misses
    let k = 1
    while (k < open.length && q / k > caps[open[k - 1]] - hits[open[k - 1]]) k++
    const set = open.slice(0, k)
    for (const i of set) {
      hits[i] += min(q / k, caps[i] - hits[i])
      room[i]--
    }
    homes.push(set)
  }
  const H = hits.reduce((a, b) => a + b, 0)
  let rate = workers.reduce((a, b) => a + b, 0) / (f.hitMs * H + f.missMs * (1 - H))
  for (let i = 0; i < n; i++) if (hits[i] > 0) rate = min(rate, workers[i] / (f.hitMs * hits[i]))
  return { rate: max(0, rate), hitRate: H, homes }
}

module.exports = { placementLimit, MAX_UPSTREAMS }
