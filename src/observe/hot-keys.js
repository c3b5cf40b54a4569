'use strict'

const { fnv1a32, FNV_OFFSET, FNV_PRIME } = require('../common/hash')

/**
 * The hottest routing keys by decayed request count, in a fixed number of rows: the heat map's
 * pages. Memory is O(rows) whatever the number of distinct keys (no per-key map beyond the rows).
 *
 * Filtered space-saving (Homem and Carvalho 2010, after Metwally, Agrawal and El Abbadi 2005):
 * - a tracked key adds 1 to its row's weight;
 * - while there is room, a new key takes a new row;
 * - once the rows are full, a key not tracked adds 1 to a small admission counter picked by a hash
 *   of the key (`BUCKETS_PER_ROW` counters per row, shared by the keys that hash alike, so each one
 *   over-estimates its keys' weight), and goes to `(other)`. When that estimate beats the lightest
 *   row's weight by `ADMIT_FACTOR`, the key takes that row over with the estimate as its weight
 *   (space-saving's inherited count); the evicted key's weight goes to its own admission counter,
 *   so it comes back as fast if it is still requested.
 * The margin keeps two keys of about the same heat from swapping rows on every request, and the
 * admission counters keep a long tail of keys seen once from evicting each other row after row.
 * Weights and counters decay together (`decay`), so a key that cooled down is the first to go and
 * a key that became hot later gets a row within a few of its requests.
 *
 * Cost per key: a Map lookup and a sift-down of a min-heap of the rows (a hot key sits near the
 * leaves, so it usually stops at once); for a key not tracked, a hash of at most 96 of its
 * characters; replacing a row,
 * a Map delete and set and O(log rows) heap steps, plus whatever `onReplace` does.
 */

/** A candidate takes the lightest row when its estimate exceeds that row's weight times this. */
const ADMIT_FACTOR = 1.25
/** Admission counters per row (the table has the next power of two at or above rows × this). */
const BUCKETS_PER_ROW = 8

class HotKeys {
  /**
   * @param {number} rows keys tracked one by one (a positive integer)
   * @param {(row: number, evictedKey: string) => void} [onReplace] called after row `row` was
   *   given to another key (the caller moves what it kept for the evicted key, e.g. to `(other)`)
   */
  constructor (rows, onReplace = () => {}) {
    if (!(Number.isInteger(rows) && rows >= 1)) {
      throw new TypeError(`hot keys: rows must be a positive integer, got ${rows}`)
    }
    this.rows = rows
    /** the row number meaning "not tracked" (`(other)`) */
    this.other = rows
    this.onReplace = onReplace
    /** @type {Map<string, number>} key -> row (at most `rows` entries) */
    this.byKey = new Map()
    /** @type {string[]} row -> key */
    this.names = []
    /** decayed requests per row, inherited estimate included (an upper bound of the key's own) */
    this.weight = new Float64Array(rows)
    /** rows as a min-heap on weight; `place[row]` is the row's index in it */
    this.heap = new Int32Array(rows)
    this.place = new Int32Array(rows)
    let size = 1
    while (size < rows * BUCKETS_PER_ROW) size *= 2
    /** decayed requests of keys not tracked, by hash (a key may share its counter) */
    this.candidates = new Float64Array(size)
    this.mask = size - 1
    /** rows given to another key since start */
    this.replacements = 0
  }

  /**
   * Count one request for `key` and return its row, or `other` when it is not tracked.
   * @param {string} key
   * @returns {number}
   */
  touch (key) {
    const row = this.byKey.get(key)
    if (row !== undefined) {
      this.weight[row]++
      this.down(this.place[row])
      return row
    }
    return this.admit(key)
  }

  /** A key not tracked: a new row while there is room, else its admission counter or the lightest row. */
  admit (key) {
    const n = this.names.length
    if (n < this.rows) {
      this.names.push(key)
      this.byKey.set(key, n)
      this.weight[n] = 1
      this.heap[n] = n
      this.place[n] = n
      this.up(n)
      return n
    }
    const bucket = hash(key) & this.mask
    const estimate = this.candidates[bucket] + 1
    const row = this.heap[0]
    const least = this.weight[row]
    if (!(estimate > least * ADMIT_FACTOR)) {
      this.candidates[bucket] = estimate
      return this.other
    }
    const evicted = this.names[row]
    this.byKey.delete(evicted)
    this.candidates[bucket] = 0
    const back = hash(evicted) & this.mask
    if (this.candidates[back] < least) this.candidates[back] = least
    this.names[row] = key
    this.byKey.set(key, row)
    this.weight[row] = estimate
    this.down(0)
    this.replacements++
    this.onReplace(row, evicted)
    return row
  }

  /**
   * Multiply every weight and admission counter by `factor` (in (0, 1]): the same factor for all
   * keeps the heap in order.
   * @param {number} factor
   */
  decay (factor) {
    const w = this.weight
    for (let i = 0; i < w.length; i++) w[i] *= factor
    const c = this.candidates
    for (let i = 0; i < c.length; i++) c[i] *= factor
  }

  /** Move the heap entry at index i towards the root while it is lighter than its parent. */
  up (i) {
    const { heap, place, weight } = this
    const row = heap[i]
    const w = weight[row]
    while (i > 0) {
      const p = (i - 1) >> 1
      if (weight[heap[p]] <= w) break
      heap[i] = heap[p]
      place[heap[i]] = i
      i = p
    }
    heap[i] = row
    place[row] = i
  }

  /** Move the heap entry at index i towards the leaves while a child is lighter. */
  down (i) {
    const { heap, place, weight } = this
    const n = this.names.length
    const row = heap[i]
    const w = weight[row]
    for (;;) {
      let c = 2 * i + 1
      if (c >= n) break
      if (c + 1 < n && weight[heap[c + 1]] < weight[heap[c]]) c++
      if (weight[heap[c]] >= w) break
      heap[i] = heap[c]
      place[heap[i]] = i
      i = c
    }
    heap[i] = row
    place[row] = i
  }
}

/** Characters hashed at most from each end of a long key (so a long URL costs no more). */
const HASH_ENDS = 48

/**
 * FNV-1a of a string (32 bits, unsigned): of all of it up to 2 × HASH_ENDS characters, else of its
 * first and last HASH_ENDS and its length. A collision only makes two keys share an admission counter.
 */
function hash (s) {
  const n = s.length
  if (n <= 2 * HASH_ENDS) return fnv1a32(s)
  const h = fnv1a32(s, fnv1a32(s, FNV_OFFSET, 0, HASH_ENDS), n - HASH_ENDS, n) // no slices: this runs per request
  return Math.imul(h ^ n, FNV_PRIME) >>> 0
}

module.exports = { HotKeys }
