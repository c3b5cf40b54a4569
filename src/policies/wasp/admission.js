'use strict'

/**
 * Admission: which of the keys an upstream holds it should keep in its cache.
 *
 * Holdings (./holdings.js) give every key a holder, so a fleet whose caches hold fewer pages
 * than there are pages gives each backend more keys than its cache keeps. Its LRU then stores every
 * page it serves, and each request for one of its coldest keys evicts a page that would have hit.
 * The static optimum keeps the hottest pages that fit and never stores the others; this is that,
 * learnt online, per upstream:
 *
 * - Each upstream counts the keys it holds by **popularity** on a fine scale (FINE bins per octave
 *   of the key's mean gap between requests), in a Fenwick tree, so the **rank** of a key among the
 *   keys its holder holds (how many are more popular) costs O(log bins).
 * - Each upstream has an **admission size** A, its cache size in keys as learnt from its `X-Cache`
 *   results: Infinity (keep everything) until a held key it was told to keep, and had kept, misses;
 *   then each such miss takes one off A, and each such hit adds GROW, so A settles where about GROW
 *   of those requests miss: the cache holds A keys. Past its holdings + 2 it is Infinity again.
 * - A pick for key k by upstream u: u keeps k if A is Infinity, or u holds k and k's rank at u is
 *   below A. Otherwise the request carries the `noStore` hint (`Cache-Control: no-store`, RFC 9111
 *   §5.2.1.5): a page that fits nowhere does not evict one that fits, and a stranger serving a key
 *   (the load guard shed it) does not evict its own.
 *
 * Pure bookkeeping, O(log bins) per pick and per holder change.
 */

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { log2, floor } = Math
const INFINITY = Infinity

/** Bins per octave of a key's gap: a bin holds the keys within 2^(1/FINE) of each other's popularity. */
const FINE = 16
/** Octaves covered (gaps up to 2^31 picks). */
const OCTAVES = 32
const BINS = FINE * OCTAVES
/** Steps of A: down by SHRINK per tested miss, up by GROW per tested hit, so that at equilibrium
 * about GROW / SHRINK (0.5 %) of the tested requests miss. Small steps: a cache answers a smaller A
 * only once the pages kept under the larger one have aged out, and a large step drives A of a small
 * cache to 1 (measured: docs/algorithms.md, "Admission"). */
const GROW = 1 / 1600
const SHRINK = 1 / 8

/** Below this admission size everything is kept: among a handful of keys the ranks are noise, and
 * a key in and out of the kept set misses each time it comes back (docs/algorithms.md, "Admission"). */
const MIN_SIZE = 8

/** Marks a pick context whose cache result tests the admission size (see ./index.js `admit`). */
const TEST = Symbol('polistes.wasp.admissionTest')

/** A new admission record for an upstream record. */
function createAdmission () {
  return { tree: new Int32Array(BINS + 1), size: INFINITY }
}

/** Fractional bin of a gap: log2(gap) × FINE, in [0, BINS). */
function position (gap) {
  if (!(gap > 1)) return 0
  const p = log2(gap) * FINE
  return p < BINS ? p : BINS - 1e-9
}

/** Add `delta` to bin `bin` (0-based) of a Fenwick tree. */
function add (tree, bin, delta) {
  for (let i = bin + 1; i <= BINS; i += i & -i) tree[i] += delta
}

/** Sum of bins [0, bin) of a Fenwick tree. */
function below (tree, bin) {
  let s = 0
  for (let i = bin; i > 0; i -= i & -i) s += tree[i]
  return s
}

/**
 * The key's rank among the keys `urec` holds: the holders more popular, plus the key's share of
 * its own bin by its position in it.
 */
function rank (urec, krec) {
  const { tree } = urec.admission
  const p = krec.fine
  const bin = floor(p)
  const before = below(tree, bin)
  const own = below(tree, bin + 1) - before
  return before + own * (p - bin)
}

/** The fast estimate takes over when it is this factor away from the slow one (either way). */
const DRIFT = 1.5
/** Requests for which a key is ranked by the picks so far over its requests (see `gapOf`). Past them
 * its fast estimate, an EWMA from the key's first gap, has settled ((15/16)^64 of that gap is left;
 * the fifth pass waited 32 gaps for it, and read the slow one meanwhile: docs/algorithms.md). */
const YOUNG = 64
/** Requests a young key needs before its fast estimate may overrule that count. */
const YOUNG_FAST = 16

/**
 * The key's popularity for admission. A young key (YOUNG requests or fewer) is ranked by the picks
 * so far over its requests, the table's whole age as its window: the mean of a few gaps ranks a page
 * requested twice close together among a backend's hottest, and the count does not (on 20,000 pages
 * that noise cost 0.03 of hit rate: docs/algorithms.md, "Seventh pass"); from YOUNG_FAST requests the
 * fast estimate overrules the count when it has drifted DRIFT away from it, so a page become hot is
 * kept after 16 requests. An older key reads its slow gap estimate (64 gaps), steady enough to tell
 * the keys at the edge of a cache apart, unless the fast one (16 gaps) has drifted DRIFT away from it,
 * as when the popularity ranking shifts (measured: docs/algorithms.md, "Admission"). `picks`: the
 * pick at which it is read (the key's last request unless `age` reads it later: then the count is that
 * pick's, and the fast estimate at least the picks since the key's last request).
 */
function gapOf (krec, picks = krec.last) {
  const slow = krec.slowGap
  // read later than the key's last request, the fast estimate is at least the silence since
  const silent = picks - krec.last
  const fast = silent > krec.gap ? silent : krec.gap
  if (!(slow > 0)) return fast
  if (krec.step <= YOUNG) {
    const counted = picks / krec.step
    return krec.step >= YOUNG_FAST && drifted(fast, counted) ? fast : counted
  }
  return drifted(fast, slow) ? fast : slow
}

/** Whether the fast estimate is DRIFT or more away from `steady`, either way. */
function drifted (fast, steady) {
  return !(fast < steady * DRIFT && fast * DRIFT > steady)
}

/** Count the key at holder `urec` (delta +1) or uncount it (-1), at its fine bin. */
function count (urec, krec, delta) {
  add(urec.admission.tree, floor(krec.fine), delta)
}

/** The key's popularity changed (a request, or `picks` went on: see `age`): move it between its holders' bins. */
function observe (krec, picks) {
  const p = position(gapOf(krec, picks))
  const from = floor(krec.fine)
  const to = floor(p)
  if (from !== to) {
    for (const h of krec.holders) {
      add(h.admission.tree, from, -1)
      add(h.admission.tree, to, 1)
    }
  }
  krec.fine = p
}

/**
 * Whether upstream `urec`, picked for key `krec`, should keep the page.
 * @returns {boolean}
 */
function keeps (krec, urec) {
  const size = urec.admission.size
  if (size < MIN_SIZE || size === INFINITY) return true
  if (!krec.holders.includes(urec)) return urec.heldTotal + 1 < size // a stranger: only into room to spare
  return rank(urec, krec) < size
}

/**
 * A cache result of a kept request from a holder that had kept the key before (warm): learn the
 * admission size.
 * @param {import('./memory').UpstreamRecord} urec
 * @param {boolean} hit
 */
function learn (urec, hit) {
  const a = urec.admission
  if (hit) {
    // no higher than its holdings can show (the hits of a backend that holds few keys say little)
    if (a.size < urec.heldTotal + 2) a.size += GROW
    return
  }
  if (a.size === INFINITY) a.size = urec.heldTotal
  a.size = a.size > 1 + SHRINK ? a.size - SHRINK : 1
}

/** Young keys whose positions `age` brings up to date per pick: with the default `maxKeys` (10,000) it
 * goes round the whole table every 2,500 picks. 2 per pick gave 0.002 less hit rate on 20,000 pages,
 * 8 no more than 4 (docs/algorithms.md, "Eighth pass"). */
const AGED_PER_PICK = 4

/**
 * Bring the positions of a few young keys up to date, AGED_PER_PICK per pick, going round the key
 * table. A young key is ranked by the picks so far over its requests (`gapOf`), a figure that grows
 * with every pick, but its position in its holders' trees is the one it had at its last request. A
 * page requested once early would keep the gap of that moment (a few hundred picks) and rank above
 * a page requested five times since, until the table dropped it: on 20,000 pages admission refused
 * most of the pages of ranks 300-700 for a warm-up's length (docs/algorithms.md, "Eighth pass").
 * Older keys are ranked by their gap estimates, which only a request moves.
 * @param {{ cursor: Iterator<import('./memory').KeyRecord> | null }} aging the round's place
 * @param {Map<string, import('./memory').KeyRecord>} keys the key table
 * @param {number} picks
 */
function age (aging, keys, picks) {
  for (let i = 0; i < AGED_PER_PICK; i++) {
    let next = aging.cursor === null ? undefined : aging.cursor.next()
    if (next === undefined || next.done) { // a new round (a Map's iterator sees the keys added since it began)
      aging.cursor = keys.values()
      next = aging.cursor.next()
      if (next.done) return
    }
    const krec = next.value
    if (krec.step <= YOUNG) observe(krec, picks)
  }
}

module.exports = { TEST, age, AGED_PER_PICK, createAdmission, observe, count, keeps, learn, rank, position, GROW }
