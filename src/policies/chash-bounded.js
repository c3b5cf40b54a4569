'use strict'

/**
 * Consistent hashing with bounded loads.
 *
 * Sources: Mirrokni, Thorup & Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA 2018
 * (arXiv:1608.01350, 2016); HAProxy `hash-balance-factor` (`src/lb_chash.c`,
 * `chash_server_is_eligible()`); the ring with virtual nodes is Karger et al., STOC 1997.
 *
 * The routing key (`ctx.key`, the URL path) is hashed onto a ring holding `replicas × weight` virtual
 * nodes per upstream. From the key's point the walk goes clockwise and takes the first upstream that
 * has room: `inflight + 1 <= ceil(c × (totalInflight + 1) × weight / totalWeight)` (with unit weights,
 * `ceil(c × (totalInflight + 1) / n)`), `c = balanceFactor`. So a key sticks to one upstream (its cache
 * stays warm) until that upstream carries more than `c` times its fair share of the in-flight work,
 * and then it spills to the next upstream on the ring, which is again the same for every request of
 * that key. The walk visits at most every distinct upstream once; if none has room (only possible
 * with c < 1) the least loaded (inflight / weight) of them takes the request. With c ≥ 1 some
 * upstream always has room, since the bounds sum to at least totalInflight + 1.
 *
 * The ring is rebuilt lazily, only when the membership signature (ids and weights, in list order)
 * changes; between changes a pick is one binary search plus a short walk, plus O(n) for the signature
 * and the in-flight total. Hash: FNV-1a 32 + murmur3 fmix32 (`./shared.js`): fast, deterministic.
 * A request without a key is routed round-robin.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { checkOptions, createRotation, inflightOf, weightOf, hash32 } = require('./shared')

/** Cap on the ring's size, whatever the weights: points are scaled down to fit. */
const MAX_POINTS = 1 << 16

/**
 * Build a ring: sorted points, and for each point the index (in `upstreams`) of its owner.
 * @param {readonly { id: string, weight?: number }[]} upstreams
 * @param {number} replicas virtual nodes per unit of weight
 * @returns {{ points: Uint32Array, owners: Uint32Array }}
 */
function buildRing (upstreams, replicas) {
  let wanted = 0
  for (const u of upstreams) wanted += replicas * weightOf(u)
  const scale = wanted > MAX_POINTS ? MAX_POINTS / wanted : 1
  const entries = []
  for (let idx = 0; idx < upstreams.length; idx++) {
    const u = upstreams[idx]
    const vnodes = Math.max(1, Math.round(replicas * weightOf(u) * scale))
    for (let v = 0; v < vnodes; v++) entries.push([hash32(`${u.id}#${v}`), idx])
  }
  // ties on a point (rare) go to the smaller id, so the ring does not depend on list order
  entries.sort((x, y) => x[0] - y[0] || (String(upstreams[x[1]].id) < String(upstreams[y[1]].id) ? -1 : 1))
  const points = new Uint32Array(entries.length)
  const owners = new Uint32Array(entries.length)
  for (let k = 0; k < entries.length; k++) {
    points[k] = entries[k][0]
    owners[k] = entries[k][1]
  }
  return { points, owners }
}

/** The first index whose point is >= h, or 0 past the end (the ring wraps). */
function firstAtOrAfter (points, h) {
  let lo = 0
  let hi = points.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (points[mid] < h) lo = mid + 1
    else hi = mid
  }
  return lo === points.length ? 0 : lo
}

/**
 * Create a consistent-hashing-with-bounded-loads policy.
 * @param {object} [options]
 * @param {number} [options.balanceFactor=1.25] `c`: no upstream takes a request that would put it above
 *   `c` times its fair share of in-flight requests (HAProxy's `hash-balance-factor 125`). Must be ≥ 1;
 *   `Infinity` gives plain consistent hashing. Lower spreads hot keys sooner, higher keeps affinity longer.
 * @param {number} [options.replicas=100] virtual nodes per unit of weight (integer ≥ 1); more evens out
 *   the key space (about ±10 % per upstream at 100) at the cost of a bigger ring
 * @returns {import('./types').Policy}
 */
function createChashBounded (options) {
  const { balanceFactor = 1.25, replicas = 100 } = checkOptions('chash-bounded', options, ['balanceFactor', 'replicas'])
  if (!(typeof balanceFactor === 'number' && balanceFactor >= 1)) {
    throw new ERR_POLISTES_BAD_OPTION(`chash-bounded: balanceFactor must be a number >= 1, got ${balanceFactor}`)
  }
  if (!(Number.isInteger(replicas) && replicas >= 1)) {
    throw new ERR_POLISTES_BAD_OPTION(`chash-bounded: replicas must be an integer >= 1, got ${replicas}`)
  }
  const fallback = createRotation()
  let signature
  let ring
  let builds = 0
  let hashed = 0
  let spilled = 0
  let unkeyed = 0

  return {
    name: 'chash-bounded',
    pick (upstreams, ctx) {
      if (!upstreams || upstreams.length === 0) return undefined
      const key = ctx && ctx.key
      if (typeof key !== 'string') {
        unkeyed++
        return fallback.next(upstreams)
      }
      hashed++
      if (upstreams.length === 1) return upstreams[0]

      let sig = ''
      let totalInflight = 0
      let totalWeight = 0
      for (const u of upstreams) {
        sig += `${u.id}\u0000${weightOf(u)}\u0001`
        totalInflight += inflightOf(u)
        totalWeight += weightOf(u)
      }
      if (sig !== signature) {
        ring = buildRing(upstreams, replicas)
        signature = sig
        builds++
      }

      const { points, owners } = ring
      const n = upstreams.length
      const seen = new Uint8Array(n)
      let distinct = 0
      let leastLoaded
      let start = firstAtOrAfter(points, hash32(key))
      for (let step = 0; step < points.length && distinct < n; step++, start++) {
        if (start === points.length) start = 0
        const idx = owners[start]
        if (seen[idx]) continue
        seen[idx] = 1
        distinct++
        const u = upstreams[idx]
        const w = weightOf(u)
        const bound = Math.ceil(balanceFactor * (totalInflight + 1) * w / totalWeight)
        if (inflightOf(u) + 1 <= bound) {
          if (distinct > 1) spilled++
          return u
        }
        if (leastLoaded === undefined || inflightOf(u) / w < inflightOf(leastLoaded) / weightOf(leastLoaded)) {
          leastLoaded = u
        }
      }
      spilled++
      return leastLoaded ?? upstreams[0]
    },
    snapshot () {
      return { balanceFactor, replicas, ringPoints: ring ? ring.points.length : 0, builds, hashed, spilled, unkeyed }
    }
  }
}

module.exports = { createChashBounded }
