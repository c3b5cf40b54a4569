'use strict'

/**
 * What a wasp policy remembers: a response threshold θ[u][k] per upstream and routing key, with
 * forgetting applied lazily, and a record per upstream. Both tables are bounded: keys by an LRU cap
 * (`maxKeys`), upstreams by forgetting those absent from every list for FORGET_AFTER picks.
 * Pure bookkeeping; the decisions are in `./index.js`.
 */

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const INFINITY = Infinity

/** Picks after which an upstream absent from every list is forgotten (amortized sweep). */
const FORGET_AFTER = 4096
/** Admission sizes remembered for forgotten upstreams (a backend that comes back has the same cache). */
const PAST_SIZES = 1024

const { fnv1a32, hash32 } = require('../shared')
const { createAdmission } = require('./admission')
const { createQueueing } = require('./queueing')

/**
 * @typedef {object} UpstreamRecord
 * @property {string} id
 * @property {number} hash `hash32(id)`, for the packing (./packing.js)
 * @property {number} weight its `weight` the last time it was listed; when none, its `queueWeight`
 *   (1 with `capacityWeights` off), or its learnt worker count once the backends have queued
 *   (./index.js `learntWeights`)
 * @property {number} queueWeight its weight from its queue against the others' (./capacity.js), 1 at first
 * @property {number} waitDiff its smoothed mean wait less the fleet's, relative (./capacity.js)
 * @property {number} workers its learnt worker count (./queueing.js), 1 before any is known: the
 *   in-flight counts of upstreams are compared per worker
 * @property {number} loadScale the mean upstream's workers over its own (1 before any is known): its
 *   in-flight count times this is its load in the response rounds (./index.js `loadOf`)
 * @property {number} joined the pick at which it (re)joined
 * @property {number} seen the last pick that listed it
 * @property {number} latency latency EWMA in ms, 0 before the first sample
 * @property {number} idle picks since it last served anything, absences included
 * @property {number} g its idle discount in the current pick (1 = none)
 * @property {Int32Array} held keys it holds (see KeyRecord `holders`) at least as popular as each band
 * @property {number} heldTotal keys it holds, all bands
 * @property {number} hits EWMA of the cache results (HIT 1, MISS 0) of the keys it holds, warm ones
 *   only (see ./holdings.js `observeCache`); 1 before any
 * @property {number} cap its capacity estimate in keys (Infinity: none seen, or none needed)
 * @property {{ tree: Int32Array, size: number }} admission the keys it holds by fine popularity, and
 *   its admission size (see ./admission.js)
 * @property {object} q what its
 *   latencies say about its queue: service times and the wait table (see ./queueing.js)
 */

/**
 * @typedef {object} KeyRecord
 * @property {number} step picks of this key
 * @property {number} born the pick at which the key was first seen
 * @property {number} hash FNV-1a of the key, mixed with an upstream's hash for their rendezvous score
 *   (see `./packing.js`)
 * @property {string} [owner] with `balanced`: the key's upstream in the packing of version `packed`
 * @property {number} [packed]
 * @property {ThresholdEntry[]} entries θ of each upstream that served, held or contested the key
 *   (a few: a small array scanned by record identity is a third of the memory of a Map per key)
 * @property {number} last the pick of its latest request
 * @property {number} gap EWMA of the picks between its requests (1 / its share of the requests)
 * @property {number} slowGap the same, averaged over more requests (for its replicas)
 * @property {number} band its popularity band, floor(log2(gap)), where its holders count it
 * @property {number} fine its popularity on the admission's fine scale, where its holders count it
 * @property {UpstreamRecord[]} holders its specialists (with `shareGap`): one, or a few replicas
 * @property {number[]} warm for each holder (same order), the cache results it has reported for the
 *   key since it took it (or, with admission, since it was last told to keep it; -1 while told not
 *   to): the first is the cold miss every new holder pays, not a sign of capacity
 * @property {boolean} missed its latest cache result from a holder was a MISS it was told not to
 *   keep (so that holder will miss it again: see ./spill.js, `freeMiss`)
 */

/**
 * @typedef {object} ThresholdEntry
 * @property {UpstreamRecord} u the upstream record it belongs to: a record created anew (the
 *   upstream re-joined) is another object, so an older record's entries are ignored, and dropped
 *   when the key is next adjusted
 * @property {number} theta θ[u][k] as of the key's step `at`
 * @property {number} at
 */

/** Popularity bands (log2 of a key's mean gap between requests, in picks): 2^31 picks is plenty. */
const BANDS = 32

/** The entry of upstream record `urec` in a key's entries, or undefined. */
function entryOf (entries, urec) {
  for (let i = 0; i < entries.length; i++) if (entries[i].u === urec) return entries[i]
  return undefined
}

/**
 * Create the memory of one wasp policy.
 * @param {{ thetaMin: number, thetaMax: number, thetaStart: number, phi: number, maxKeys: number }} o
 */
function createMemory (o, { onEvict } = {}) {
  let { thetaMin, thetaMax, thetaStart, phi, maxKeys } = o
  /** @type {Map<string, KeyRecord>} in LRU order (a Map iterates in insertion order) */
  const keys = new Map()
  /** @type {Map<string, UpstreamRecord>} */
  const ups = new Map()
  /** @type {Map<string, number>} admission sizes of forgotten upstreams (at most PAST_SIZES, oldest out) */
  const past = new Map()
  let picks = 0

  /**
   * θ[u][k] now, with forgetting applied lazily: θ + φ × (steps of k since it was stamped).
   * @param {KeyRecord} krec
   * @param {UpstreamRecord} urec
   * @returns {number}
   */
  function theta (krec, urec) {
    const e = entryOf(krec.entries, urec)
    let t
    if (e !== undefined) {
      t = e.theta + phi * (krec.step - e.at)
    } else if (urec.joined > krec.born) {
      return thetaStart // joined after the key was first seen: a neutral newcomer
    } else {
      t = thetaStart + phi * krec.step // there from the start and never served it: forgets like the rest
    }
    return t > thetaMax ? thetaMax : t
  }

  /**
   * Whether `urec` is the current record of its upstream (not one forgotten since, or replaced by
   * a new record when the upstream re-joined): what a key's entries and holders refer to.
   * @param {UpstreamRecord} urec
   * @returns {boolean}
   */
  function current (urec) {
    return ups.get(urec.id) === urec
  }

  /**
   * Add `delta` to θ[u][k] (negative = learn), clamped to [thetaMin, thetaMax], and stamp it with
   * the key's step.
   * @param {KeyRecord} krec
   * @param {UpstreamRecord} urec
   * @param {number} delta
   */
  function adjust (krec, urec, delta) {
    const t = theta(krec, urec) + delta
    const value = t < thetaMin ? thetaMin : (t > thetaMax ? thetaMax : t)
    const e = entryOf(krec.entries, urec)
    if (e === undefined) {
      const entries = krec.entries
      // entries of records no longer current (a forgotten or re-joined upstream) go first
      for (let i = entries.length - 1; i >= 0; i--) if (!current(entries[i].u)) entries.splice(i, 1)
      // concat: a tight array (push gives 17 slots)
      krec.entries = entries.concat({ u: urec, theta: value, at: krec.step })
    } else {
      e.theta = value
      e.at = krec.step
    }
  }

  /** Drop the least recently used key (and tell `onEvict`, so the holders' counts follow). */
  function evictOldest () {
    const [oldest, krec] = keys.entries().next().value
    keys.delete(oldest)
    if (onEvict) onEvict(krec)
  }

  function sweep () {
    for (const [id, rec] of ups) {
      if (picks - rec.seen <= FORGET_AFTER) continue
      ups.delete(id)
      // the same backend coming back has the same cache: its admission size outlives the record
      if (rec.admission.size !== INFINITY) {
        past.delete(id)
        past.set(id, rec.admission.size)
        if (past.size > PAST_SIZES) past.delete(past.keys().next().value)
      }
    }
  }

  return {
    keys,
    ups,

    /**
     * Take new bounds, forgetting rate and key cap (a reload): thresholds learnt so far are kept,
     * read within the new bounds; beyond the new cap the least recently used keys go.
     * @param {{ thetaMin: number, thetaMax: number, thetaStart: number, phi: number, maxKeys: number }} next
     */
    configure (next) {
      ({ thetaMin, thetaMax, thetaStart, phi, maxKeys } = next)
      while (keys.size > maxKeys) evictOldest()
    },

    /** Decisions taken so far. */
    get picks () { return picks },

    /** Count one more decision (and now and then forget long-absent upstreams); returns the count. */
    tick () {
      picks++
      if ((picks & 1023) === 0) sweep()
      return picks
    },

    /**
     * The record of upstream `id`, created (a new record object) when it is not known.
     * @returns {UpstreamRecord}
     */
    upstream (id) {
      let rec = ups.get(id)
      if (rec === undefined) {
        rec = {
          id,
          hash: hash32(id),
          weight: 1,
          queueWeight: 1,
          waitDiff: 0,
          workers: 1,
          loadScale: 1,
          joined: picks,
          seen: picks,
          latency: 0,
          idle: 0,
          g: 1,
          held: new Int32Array(BANDS),
          heldTotal: 0,
          hits: 1,
          cap: INFINITY,
          admission: createAdmission(),
          q: createQueueing()
        }
        ups.set(id, rec)
        const size = past.get(id)
        if (size !== undefined) {
          rec.admission.size = size
          past.delete(id)
        }
      }
      return rec
    },

    /**
     * The record of routing key `key`, touched as most recently used; created when `create` is set
     * (evicting the least recently used beyond `maxKeys`).
     * @returns {KeyRecord | undefined}
     */
    key (key, create) {
      let rec = keys.get(key)
      if (rec !== undefined) {
        // LRU touch by re-insertion
        keys.delete(key)
        keys.set(key, rec)
        return rec
      }
      if (!create) return undefined
      rec = {
        step: 0,
        born: picks,
        hash: fnv1a32(key),
        entries: [],
        last: picks,
        gap: 0,
        slowGap: 0,
        band: 0,
        fine: 0,
        holders: [],
        warm: [],
        missed: false
      }
      keys.set(key, rec)
      if (keys.size > maxKeys) evictOldest()
      return rec
    },

    theta,
    adjust,
    current
  }
}

module.exports = { createMemory, FORGET_AFTER, BANDS }
