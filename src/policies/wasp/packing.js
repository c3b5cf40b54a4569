'use strict'

/**
 * The balanced packing that several wasp colonies agree on without talking (wasp option
 * `balanced`): a deterministic function of the keys a colony holds and of the upstream ids it is
 * given, so that colonies (balancer workers) that have seen the same keys compute the same owner
 * for every key, whatever order the keys came in and whatever their random sources drew.
 *
 * Consistent hashing with bounded loads (Mirrokni, Thorup & Zadimoghaddam 2016) over keys, not
 * requests: the keys, in the order of their hash, each go to their first rendezvous (HRW, Thaler &
 * Ravishankar 1998) choice among the upstreams that may still take one. With K keys and n upstreams
 * of equal weight every upstream holds floor(K/n) or ceil(K/n) keys (exactly K mod n of them hold
 * the larger count); with weights (the pool's `weight`, the same in every process), keys in
 * proportion: give a backend with twice the cache twice the weight. Counting keys, not requests,
 * is what makes the packing a function of what every colony sees alike: request counts differ by
 * noise from colony to colony, the set of keys does not. It is also what fills equal caches evenly,
 * where plain rendezvous hashing does not (docs/algorithms.md, "The balanced packing").
 *
 * A packing is recomputed, never patched (an incremental insertion would depend on the order in
 * which keys arrived, which differs between colonies): when the set of upstreams changes (within
 * WINDOW picks), and when keys came or went (no more often than once per `keys` picks), so that its
 * O(K log K + K × n) cost stays O(n + log K) per pick amortized. A key newer than the last packing
 * goes to its first rendezvous choice until the next. Counted in picks, not time.
 */

const { fmix32 } = require('../shared')

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { floor, max, ceil, round } = Math
const INFINITY = Infinity

/**
 * The rendezvous score of an upstream for a key (highest wins): both hashes mixed into one, so
 * that a packing costs no string hashing per (key, upstream).
 * @param {number} idHash `hash32(id)` of the upstream
 * @param {number} keyHash FNV-1a of the key
 * @returns {number} unsigned 32-bit
 */
function score (idHash, keyHash) {
  return fmix32((idHash ^ keyHash) >>> 0)
}

function compareStrings (a, b) {
  return a < b ? -1 : (a > b ? 1 : 0)
}

/**
 * Pack `keys` onto upstreams. Pure and deterministic: the result depends on the set of (key, hash)
 * pairs and on the set of upstreams (with their weights), not on the order of either.
 * Upstream i has a quota q = keys × weight / total weight and holds floor(q) or ceil(q) keys;
 * with equal weights, floor(K/n) or ceil(K/n).
 * @param {ReadonlyArray<{ key: string, hash: number }>} keys `hash` = FNV-1a of `key`
 * @param {ReadonlyArray<{ id: string, hash: number, weight: number }>} ups distinct upstreams,
 *   non-empty; `hash` = `hash32(id)`, `weight` > 0
 * @returns {Int32Array} for each key (in the order of `keys`), the index in `ups` of its owner
 */
function pack (keys, ups) {
  const n = ups.length
  const order = keys.map((_, i) => i)
  order.sort((a, b) => keys[a].hash - keys[b].hash || compareStrings(keys[a].key, keys[b].key))
  // candidates by id, so that equal scores go the same way whatever the list order
  const byId = ups.map((_, i) => i).sort((a, b) => compareStrings(ups[a].id, ups[b].id))
  let total = 0
  for (const u of ups) total += u.weight
  const low = new Int32Array(n)
  const high = new Int32Array(n)
  let extra = keys.length // keys beyond every floor: that many upstreams may go one above theirs
  for (let i = 0; i < n; i++) {
    const q = keys.length * ups[i].weight / total
    low[i] = floor(q + 1e-9)
    high[i] = max(low[i], ceil(q - 1e-9))
    extra -= low[i]
  }
  let above = 0
  const counts = new Int32Array(n)
  const owners = new Int32Array(keys.length)
  for (const k of order) {
    const h = keys[k].hash
    let best = -1
    let bestScore = -1
    for (const i of byId) {
      if (counts[i] >= low[i] && (counts[i] >= high[i] || above >= extra)) continue
      const s = score(ups[i].hash, h)
      if (s > bestScore) { best = i; bestScore = s }
    }
    if (best < 0) { // only if rounding left no room: the first choice, whatever its count
      for (const i of byId) {
        const s = score(ups[i].hash, h)
        if (s > bestScore) { best = i; bestScore = s }
      }
    } else if (++counts[best] > low[best]) {
      above++
    }
    owners[k] = best
  }
  return owners
}

/**
 * Picks an upstream stays in the packing after the last pick that listed it. A member offered on
 * some picks only (slow start gates a ramping member pick by pick; a health check flaps) keeps its
 * keys instead of making every pick repack, and a removed one leaves the packing this many picks
 * later (meanwhile its keys have no owner among the candidates: plain wasp).
 */
const WINDOW = 64

/**
 * The packing of one wasp memory: `update` at every pick (repacks when due), then `ownerOf` the
 * pick's key; each key record carries its `owner` id, valid while its `packed` equals `version`.
 * The upstreams packed onto are the memory's records listed within the last WINDOW picks, with
 * the weights they were last listed with.
 */
function createPacking () {
  let signature = -1
  let size = -1
  let packedAt = -INFINITY
  let keysChanged = false
  let version = 0
  /** @type {Array<{ id: string, hash: number, weight: number }>} the upstreams of the last packing */
  let list = []

  return {
    /** Packings computed so far (a new one each time the owners may have changed). */
    get version () { return version },

    /**
     * Repack when the set of upstreams (ids and weights) listed within the last WINDOW picks differs
     * from the last packing's, or when keys came or went; never twice within WINDOW picks, and for
     * keys not within `keys.size` picks either, so that the O(K log K + K × n) cost of a packing stays
     * O(n + log K) per pick amortized.
     * @param {number} picks the memory's pick count
     * @param {Map<string, import('./memory').UpstreamRecord>} ups the memory's upstream records
     * @param {Map<string, import('./memory').KeyRecord>} keys
     */
    update (picks, ups, keys) {
      const since = picks - packedAt
      if (since < WINDOW) return
      let sig = 0
      let count = 0
      for (const rec of ups.values()) {
        if (picks - rec.seen > WINDOW) continue
        sig = (sig + fmix32((rec.hash + round(rec.weight * 1024)) >>> 0)) >>> 0
        count++
      }
      if (sig === signature && count === size && !(keysChanged && since >= keys.size)) return
      signature = sig
      size = count
      packedAt = picks
      keysChanged = false
      version++
      list = []
      for (const rec of ups.values()) {
        if (picks - rec.seen <= WINDOW) list.push({ id: rec.id, hash: rec.hash, weight: rec.weight })
      }
      const entries = []
      const krecs = []
      for (const [key, krec] of keys) {
        entries.push({ key, hash: krec.hash })
        krecs.push(krec)
      }
      const owners = pack(entries, list)
      for (let j = 0; j < krecs.length; j++) {
        krecs[j].owner = list[owners[j]].id
        krecs[j].packed = version
      }
    },

    /**
     * The owner of a key: its upstream in the current packing, or, for a key that packing does not
     * hold (new since), its first rendezvous choice among the packing's upstreams until the next
     * packing, which is then due. Undefined before the first packing.
     * @param {import('./memory').KeyRecord} krec
     * @returns {string | undefined}
     */
    ownerOf (krec) {
      if (krec.packed === version) return krec.owner
      if (list.length === 0) return undefined
      keysChanged = true
      let best = 0
      let bestScore = score(list[0].hash, krec.hash)
      for (let i = 1; i < list.length; i++) {
        const s = score(list[i].hash, krec.hash)
        if (s > bestScore || (s === bestScore && list[i].id < list[best].id)) { best = i; bestScore = s }
      }
      krec.owner = list[best].id
      krec.packed = version
      return krec.owner
    },

    /** A reload shrank the key table: the next packing is due. */
    keysChanged () { keysChanged = true }
  }
}

module.exports = { pack, createPacking, score, WINDOW }
