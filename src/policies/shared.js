'use strict'

const { fnv1a32 } = require('../common/hash')

/**
 * What several policies use: checking option names, reading an upstream's load and weight,
 * forgetting departed ids, nginx's smooth weighted round-robin, a following round-robin cursor, a
 * uniform random index, a 32-bit string hash, and the exponentially weighted moving average. Pure
 * functions and small state holders; no policy file requires another policy file, they all require
 * this one.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { min, floor, imul } = Math
const { isFinite: finite } = Number

/**
 * Requests in flight on an upstream: `upstream.inflight` when it is a positive number, else 0.
 * @param {{ inflight?: number }} upstream
 * @returns {number}
 */
function inflightOf (upstream) {
  const n = upstream.inflight
  return typeof n === 'number' && n > 0 ? n : 0
}

/**
 * The weight of an upstream: `upstream.weight` when it is a positive finite number, else 1.
 * (A weight of 0 is not "drained": the pool removes drained members from the eligible list.)
 * @param {{ weight?: number }} upstream
 * @returns {number}
 */
function weightOf (upstream) {
  const w = upstream.weight
  return typeof w === 'number' && finite(w) && w > 0 ? w : 1
}

/**
 * Drop state for ids no longer in the list, once the table has grown well past the list.
 * Amortized O(1) per pick; an upstream that flaps out and back in keeps its state meanwhile.
 * @param {Map<string, unknown>} state
 * @param {readonly { id: string }[]} upstreams
 */
function forgetAbsent (state, upstreams) {
  if (state.size <= 2 * upstreams.length + 16) return
  const present = new Set(upstreams.map((u) => u.id))
  for (const id of state.keys()) if (!present.has(id)) state.delete(id)
}

/**
 * One round of nginx's smooth weighted round-robin over `list` (nginx
 * `src/http/ngx_http_upstream_round_robin.c`, `ngx_http_upstream_get_peer()`): every peer's `current`
 * grows by its effective weight, the largest `current` wins and pays the total back.
 * @template {{ id: string }} U
 * @param {readonly U[]} list candidates, non-empty
 * @param {(u: U) => number} weight configured weight of each candidate (positive)
 * @param {Map<string, { current: number, effective: number }>} state per-id peer state, updated
 * @returns {U} the chosen candidate
 */
function smoothPick (list, weight, state) {
  let total = 0
  let best
  let bestPeer
  for (const u of list) {
    const w = weight(u)
    let peer = state.get(u.id)
    if (peer === undefined) {
      peer = { current: 0, effective: w }
      state.set(u.id, peer)
    }
    if (peer.effective > w) peer.effective = w // the configured weight went down
    peer.current += peer.effective
    total += peer.effective
    if (peer.effective < w) peer.effective = min(w, peer.effective + 1)
    if (bestPeer === undefined || peer.current > bestPeer.current) {
      best = u
      bestPeer = peer
    }
  }
  bestPeer.current -= total
  return best
}

/**
 * A round-robin cursor that follows the id it served last, so members joining or leaving between
 * calls do not make it skip or repeat the others: `next(list)` is the member after the last one
 * served (by id, wherever it now stands), or the one now at its old position when it left.
 * @returns {{ next<U extends { id: string }> (list: readonly U[]): U, follow<U extends { id: string }> (list: readonly
 * U[], upstream: U): void, snapshot (): { cursor: number, last: string | null } }}
 */
function createRotation () {
  let lastId
  let lastIndex = -1
  return {
    /** @param list non-empty */
    next (list) {
      let next = 0
      if (lastIndex >= 0) {
        if (list[lastIndex] !== undefined && list[lastIndex].id === lastId) {
          next = lastIndex + 1
        } else {
          const found = list.findIndex((u) => u.id === lastId)
          next = found >= 0 ? found + 1 : lastIndex
        }
      }
      next %= list.length
      const upstream = list[next]
      lastId = upstream.id
      lastIndex = next
      return upstream
    },
    /**
     * Record a member picked by other means (round-robin's weighted picks), so that the next `next`
     * carries on after it.
     * @param list the list it was picked from
     * @param upstream a member of `list`
     */
    follow (list, upstream) {
      lastId = upstream.id
      lastIndex = list.indexOf(upstream)
    },
    snapshot () {
      return { cursor: lastIndex + 1, last: lastId === undefined ? null : lastId }
    }
  }
}

/**
 * A uniform index in [0, n). Clamped, so that a source returning exactly 1 (out of contract)
 * still yields a member instead of `undefined`.
 * @param {() => number} random
 * @param {number} n
 * @returns {number}
 */
function randomIndex (random, n) {
  const i = floor(random() * n)
  return i >= 0 && i < n ? i : (i >= n ? n - 1 : 0)
}

/**
 * The options object a policy factory was given, checked against the option names it knows: an
 * unknown name (a typo, or another policy's option) is an error naming it and the known ones, never
 * silently ignored.
 * @param {string} policy policy name, for the message
 * @param {unknown} options what the caller passed (undefined: no options)
 * @param {readonly string[]} known the option names the policy reads
 * @returns {object} `options`, or `{}` when none were given
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function checkOptions (policy, options, known) {
  if (options === undefined) return {}
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ERR_POLISTES_BAD_OPTION(`${policy}: options must be an object, got ${JSON.stringify(options)}`)
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      const hint = known.length === 0 ? 'it takes no options' : `known options: ${known.join(', ')}`
      throw new ERR_POLISTES_BAD_OPTION(`${policy}: unknown option ${JSON.stringify(key)}; ${hint}`)
    }
  }
  return options
}

/**
 * murmur3's 32-bit finalizer: full avalanche of a 32-bit value.
 * @param {number} h
 * @returns {number} unsigned 32-bit
 */
function fmix32 (h) {
  h ^= h >>> 16
  h = imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/**
 * A well-mixed 32-bit hash of a string: FNV-1a 32 then `fmix32`, so that similar inputs ("a#1",
 * "a#2") spread over the whole range.
 * @param {string} str
 * @returns {number}
 */
function hash32 (str) {
  return fmix32(fnv1a32(str))
}

/**
 * One step of an exponentially weighted moving average, `alpha × sample + (1 − alpha) × average`
 * (Roberts 1959; TCP's SRTT, RFC 6298, is the same with alpha 1/8); the first sample (`average`
 * undefined) is the average. `keep` is the weight of the old average, 1 − alpha unless the caller
 * already holds it exactly (peak-EWMA's time decay `exp(−Δt / tau)`), which spares a rounding step.
 * @param {number | undefined} average the current average, undefined before the first sample
 * @param {number} sample
 * @param {number} alpha weight of the new sample, in (0, 1]
 * @param {number} [keep] weight of the old average (default 1 − alpha)
 * @returns {number}
 */
function ewma (average, sample, alpha, keep = 1 - alpha) {
  return average === undefined ? sample : alpha * sample + keep * average
}

/**
 * The largest of `estimate(entry)` over a table's entries, undefined when the table is empty.
 * @template E
 * @param {Map<string, E>} table
 * @param {(entry: E) => number} estimate
 * @returns {number | undefined}
 */
function largest (table, estimate) {
  let w
  for (const entry of table.values()) {
    const e = estimate(entry)
    if (w === undefined || e > w) w = e
  }
  return w
}

module.exports = {
  checkOptions,
  inflightOf,
  weightOf,
  forgetAbsent,
  smoothPick,
  createRotation,
  randomIndex,
  fnv1a32,
  fmix32,
  hash32,
  ewma,
  largest
}
