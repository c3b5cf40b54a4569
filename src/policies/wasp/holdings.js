'use strict'

/**
 * Holdings: which upstreams hold (are the specialists of) each routing key, and the dominance
 * contests that keep the holdings even and replicate a key too hot for one upstream.
 *
 * A response-threshold colony left to itself divides the keys by chance: whoever answers a new key
 * first learns it, so one upstream ends up with far more keys than another, and a backend that
 * comes back cold is left with the few keys its idleness wins (the others keep what they took while
 * it was away). Its cache holds what it is asked for, so an uneven division is a cache that thrashes
 * next to one that idles. Polistes colonies settle who does what through dominance contests
 * (Theraulaz, Bonabeau & Deneubourg 1995, "Self-organization of hierarchies in animal societies";
 * Cicirello & Smith's routing wasps hold contests too), and here the contest is about holdings:
 *
 * - Each key's holders are counted per upstream and per **popularity band**, floor(log2) of the
 *   key's mean gap between requests (in picks; an EWMA), cumulatively: `held[b]` is the number of
 *   keys an upstream holds that are at least as popular as band b. Keys of like popularity are worth
 *   alike to a cache, so even counts at every band fill every cache with an even share of every
 *   popularity, whatever the cache size (the snake order of a static placement, learnt online).
 * - A key with fewer holders than it needs (a new key, a key whose holder left) is taken by the
 *   listed upstream that holds the fewest keys of its band: that upstream's threshold falls to
 *   thetaMin, so it answers first.
 * - A holder that holds at least `shareGap` more keys of the band than the least-held listed
 *   non-holder, and at least SHARE_RATIO more in proportion, loses the contest: the two swap their
 *   thresholds for the key, and the key moves. So a re-added (cold) upstream takes its share of
 *   every band back, the hottest first, and the others let those keys go at once instead of
 *   forgetting them slowly. The proportional floor matters where each upstream holds hundreds of
 *   keys: there a gap of 3 is the noise of the colder bands' popularity estimates, and every swap
 *   costs a miss at the new holder. While the backends queue, both gaps are doubled (QUEUED_GAP), and
   a key moves only to an upstream with about a free worker and no more in flight than the holder it
   leaves (`busy`): a backend that comes back cold then takes its share as fast as its workers serve
   the misses, not all of it at once (its queue read 0.8-0.9 s of p99 for a second in the model).
 * - Replication (`replicate` R > 0): a key whose share of the requests exceeds R × 1/n (n listed
 *   upstreams: one upstream's fair share) gets another holder, up to ceil(share × n / R); one with
 *   a holder to spare (its share under 3/4 of what one fewer could carry) loses the newest.
 *   A key's share is read after 1 / GAP_ALPHA requests (16), when its estimate has settled.
 *   The holders then share it by the load-weighted dominance contest of ./index.js.
 * - A holder not listed for more than ABSENT_PICKS picks (it left, or is unhealthy) gives its keys up.
 * - Capacity (`observeCache`): counts alone cannot see a small cache. An upstream whose warm held
 *   keys hit (X-Cache) less than FULL of the time is full, its capacity its holdings × that ratio:
 *   it takes no key of a band where it holds its capacity (unless nobody has room), and sheds a key
 *   of a band where it holds more, to one with room (so its coldest go first), except while the
 *   backends queue (./queueing.js). Without cache results nothing changes.
 *
 * Everything is O(upstreams × holders) per pick, with no sweep over keys.
 */

const { BANDS } = require('./memory')
const admission = require('./admission')
const { perWorker, waitOf, serviceOf } = require('./queueing')

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { clz32, floor, log2, min, max, ceil } = Math
const INFINITY = Infinity

/** Weight of the newest gap in a key's gap EWMA: popularity is read from about the last 16 requests. */
const GAP_ALPHA = 1 / 16
/** Weight of the newest cache result in an upstream's hit ratio of its warm held keys. */
const HIT_ALPHA = 1 / 32
/** An upstream whose held keys hit less often than this is full: its capacity is its holdings × hit ratio. */
const FULL = 0.7
/** A full upstream's capacity estimate grows by this per warm cache result at or above FULL, so it
 * tries one more key now and then (and is unbounded again once it exceeds its holdings by 2). */
const CAP_GROW = 1 / 256
/** A holder sheds a key whose band holds more than its capacity plus this. */
const SHED_MARGIN = 0.5

/** A contest is lost only when the holder holds this fraction more keys of the band than the
 * least-held (besides `shareGap` more): where each upstream holds hundreds of keys, a gap of
 * `shareGap` is the noise of the colder bands' popularity estimates (measured: docs/algorithms.md,
 * "Holdings"). Where each upstream holds a few keys, `shareGap` is the larger and nothing changes. */
const SHARE_RATIO = 0.05

/** While the backends queue (./queueing.js), a holder loses a count contest only at this many times
 * the gap (`shareGap` and SHARE_RATIO): a swap's miss then costs a queue, and the gaps the noise of
 * the popularity estimates opens are what it mostly pays for (docs/algorithms.md, "Finite backends
 * (issue 28)"). A re-added upstream, which holds nothing, still wins its share at once. */
const QUEUED_GAP = 2

/** A key changes band only when log2 of its gap is this far beyond the band's edges. */
const BAND_MARGIN = 0.5
/** The same for the key's share of the requests that decides its replicas: slower, so that a
 * replica does not come and go with the noise of the estimate (each new one starts cold). */
const SLOW_ALPHA = 1 / 64
/** A key gets another replica when its holders would each carry more than JOIN × R fair shares. */
const JOIN = 1.1
/** Picks a holder may go unlisted before its keys are re-homed (as for the packing's members). */
const ABSENT_PICKS = 64
/** A spare replica goes when one fewer could carry the key at this fraction of their fair shares. */
const SPARE = 0.75

/** floor(log2(gap)) in [0, BANDS - 1]. */
function bandOf (gap) {
  if (!(gap >= 1)) return 0
  const b = 31 - clz32(gap >= 2147483647 ? 2147483647 : floor(gap))
  return b < BANDS ? b : BANDS - 1
}

/**
 * A request for the key at pick `picks`: update its gap EWMA (before its second request an unseen
 * key is taken for a cold one, its gap the table's age) and move its holders' counts to its new band.
 * @param {import('./memory').KeyRecord} krec
 * @param {number} picks
 */
function observe (krec, picks) {
  const gap = picks - krec.last
  krec.last = picks
  if (krec.step <= 1) krec.gap = picks > 1 ? picks : 1
  else if (krec.step === 2) krec.gap = gap > 1 ? gap : 1 // the first real gap replaces the guess
  else krec.gap += GAP_ALPHA * (gap - krec.gap)
  // the slow estimate is the mean of the gaps so far until it has 1 / SLOW_ALPHA of them, then an EWMA:
  // an EWMA from the first gap would carry that one sample for a hundred requests. The mean leaves the
  // first gap out (alpha is 1 at the second); with it in, the open-loop model's five workloads moved
  // by at most one step of 100 req/s either way (2026-11-28), so the picks stay as pinned
  const alpha = krec.step - 2 > 1 / SLOW_ALPHA ? SLOW_ALPHA : 1 / (krec.step - 2)
  krec.slowGap = krec.step <= 2 ? krec.gap : krec.slowGap + alpha * (gap - krec.slowGap)
  admission.observe(krec, picks)
  if (krec.step > 1) { // hysteresis: noise around a band's edge must not move the key back and forth
    const lg = log2(krec.gap)
    if (lg >= krec.band - BAND_MARGIN && lg < krec.band + 1 + BAND_MARGIN) return
  }
  const band = bandOf(krec.gap)
  if (band === krec.band) return
  for (const h of krec.holders) {
    // cumulative counts: a key moving to a colder band leaves the bands in between, and back
    if (band > krec.band) for (let x = krec.band; x < band; x++) h.held[x]--
    else for (let x = band; x < krec.band; x++) h.held[x]++
  }
  krec.band = band
}

/** Count (+1) or uncount (-1) a key of band `band` in `urec.held`, which is cumulative. */
function count (urec, band, delta) {
  const held = urec.held
  for (let x = band; x < BANDS; x++) held[x] += delta
  urec.heldTotal += delta
}

/** A new holder. The arrays are replaced by concat, not grown by push: push gives an array 17 slots
 * (V8), and a key has one or two holders, so a table of `maxKeys` keys would carry ~300 idle bytes
 * per key. Holders change rarely (a join, a swap), so the copy costs nothing per pick. */
function addHolder (krec, urec) {
  krec.holders = krec.holders.concat(urec)
  krec.warm = krec.warm.concat(0)
  count(urec, krec.band, 1)
  admission.count(urec, krec, 1)
}

function removeHolder (krec, j) {
  const urec = krec.holders[j]
  krec.holders.splice(j, 1)
  krec.warm.splice(j, 1)
  count(urec, krec.band, -1)
  admission.count(urec, krec, -1)
  return urec
}

/** A key left the table: its holders no longer hold it. */
function release (krec) {
  for (let j = krec.holders.length - 1; j >= 0; j--) removeHolder(krec, j)
}

/** θ[u][k] set to `value` (through the memory, so forgetting restarts from now). */
function setTheta (memory, krec, urec, value) {
  memory.adjust(krec, urec, value - memory.theta(krec, urec))
}

/** A holder gives a key up: it is no longer counted, and its threshold is at least thetaStart. */
function yieldKey (w, krec, j) {
  const urec = removeHolder(krec, j)
  const { memory } = w
  if (memory.current(urec) && memory.theta(krec, urec) < w.o.thetaStart) setTheta(memory, krec, urec, w.o.thetaStart)
  return urec
}

/**
 * Holders the key needs: 1, or with `replicate` R > 0, enough that none carries more than R fair
 * shares, with hysteresis (`have` holders are kept until one fewer could carry it at SPARE × R).
 */
function needed (krec, n, have, replicate) {
  if (replicate <= 0 || n < 2) return 1
  if (krec.step * GAP_ALPHA < 1) return have > 1 ? have : 1 // too few requests to read its share
  const want = n / (krec.slowGap * replicate) // the key's share of the requests, in fair shares of R
  if (want > have * JOIN) return min(n, ceil(want / JOIN))
  if (have > 1 && want <= (have - 1) * SPARE) return max(1, ceil(want / SPARE))
  return have
}

/**
 * Whether an upstream has no worker about free: its expected wait (./queueing.js) over its hit
 * service time. While the backends queue, a key moves (a swap, a miss at its new holder) only to an
 * upstream that is not busy, so a backend that comes back cold takes its share of the keys as fast
 * as its workers serve their misses instead of all at once. An upstream whose wait table cannot be
 * read yet (no entry with enough samples: every wait reads 0) is busy, given `meanF`, while it has
 * more in flight than the listed mean: in a cold start's flood the first upstream to show a queue
 * would otherwise see the last one as free and send it every new key (180 requests in flight
 * there against about 20 elsewhere, 0.1 s in at 2,750 req/s in the open-loop model).
 * @param {object} urec the upstream's record
 * @param {import('../types').Upstream} upstream
 * @param {number} [meanF] the listed upstreams' mean in flight (`w.meanInflight`, ./index.js `register`)
 * @returns {boolean}
 */
function busy (urec, upstream, meanF) {
  const f = upstream.inflight > 0 ? upstream.inflight : 0
  if (!urec.q.known && meanF !== undefined) return f > meanF
  const wait = waitOf(urec.q, f, true)
  return wait > 0 && wait > (serviceOf(urec.q, true) || 1)
}

/** A key counts as hot at its holder above this many times the mean share of the keys it holds. */
const HOT = 2

/**
 * Whether one of a key's holders shows a queue (./queueing.js) and the key is hot there: its share
 * of the requests (in fair shares, n / its gap) over HOT times that of the holder's mean key (a fair
 * share over its held keys). 25 pages evenly requested over 7 holders of about 4 each: none is; a
 * Zipf head over holders of hundreds of keys each: every key above `replicateQueued` is.
 */
function hotAtQueued (krec, n, holders) {
  if (!(krec.slowGap > 0)) return false
  for (const h of holders) {
    if (h.q.queued && (n / krec.slowGap) * h.heldTotal >= HOT) return true
  }
  return false
}

/**
 * The contests for `krec` among the listed candidates (`w.recs[0..n-1]`, registered this pick):
 * absent holders give the key up, a key short of holders gets the least-held candidate of its band,
 * one with a spare holder loses the newest, and a holder that holds `shareGap` (and SHARE_RATIO)
 * more of the band than the least-held non-holder swaps thresholds with it. Changes thresholds only; the response
 * rounds of ./index.js then decide who serves.
 * @returns {void}
 */
function contend (w, upstreams, krec) {
  const { recs, memory } = w
  const n = upstreams.length
  const picks = memory.picks
  const holders = krec.holders // removals splice in place; addHolder (below, last) replaces the array
  for (let j = holders.length - 1; j >= 0; j--) {
    if (picks - holders[j].seen > ABSENT_PICKS || !memory.current(holders[j])) yieldKey(w, krec, j)
  }
  const b = krec.band
  // holdings are compared per unit of weight (an upstream of weight 2 holds twice the keys; the
  // candidates' mean weight is the unit, so equal weights compare plain counts)
  let weights = 0
  for (let i = 0; i < n; i++) weights += recs[i].weight
  const unit = weights > 0 ? n / weights : 1
  // the most-held listed holder and the least-held listed non-holder (ties: the less loaded, then
  // from a start that depends on the key, so that ties do not all go to the first listed)
  // capacity (from the cache results, see observeCache): a non-holder whose capacity has no room
  // for one more key of the band does not take it (unless nobody has room: `any` is the least-held
  // of all), and a holder with more keys of the band than its capacity sheds it to one with room
  let most = -1
  let least = -1
  let any = -1
  let over = -1
  let mostHeld = -INFINITY
  let leastHeld = INFINITY
  let leastAfter = INFINITY
  let anyAfter = INFINITY
  const start = krec.hash % n
  for (let k = 0; k < n; k++) {
    const i = (start + k) % n
    const u = recs[i]
    const h = u.held[b] / (u.weight * unit)
    if (holders.includes(u)) {
      if (h > mostHeld) { most = i; mostHeld = h }
      if (u.held[b] > u.cap + SHED_MARGIN) over = i
    } else {
      // ordered by the count it would hold with the key, per weight (with unequal weights, an
      // upstream of weight 8 takes the first key of a band before one of weight 2; with equal
      // weights the order of the counts themselves)
      const after = (u.held[b] + 1) / (u.weight * unit)
      if (after < anyAfter || (after === anyAfter && upstreams[i].inflight < upstreams[any].inflight)) {
        any = i
        anyAfter = after
      }
      if (u.held[b] + 1 <= u.cap && !(w.queued && busy(u, upstreams[i], w.meanInflight)) &&
        (after < leastAfter || (after === leastAfter && upstreams[i].inflight < upstreams[least].inflight))) {
        least = i
        leastAfter = after
        leastHeld = h
      }
    }
  }
  // replicas for a key hotter than its holder can carry while that holder shows a queue (not every
  // key of the fleet once one upstream does, nor a key no hotter than the holder's others: a replica
  // costs a page of another cache, worth it only for a key hotter than the page it displaces)
  const queuedHot = w.queued && hotAtQueued(krec, n, holders)
  const want = needed(krec, n, holders.length, queuedHot ? w.o.replicateQueued : w.o.replicate)
  // while the backends queue, a count contest needs QUEUED_GAP times the gap: each move is a miss
  // that holds a worker 4 times as long as a hit, and most small gaps are popularity noise
  const gapFactor = w.queued ? QUEUED_GAP : 1
  let roomy
  if (holders.length < want) {
    const to = least >= 0 ? least : any
    if (to >= 0) {
      addHolder(krec, recs[to])
      w.joins++
    }
  } else if (holders.length > want) { // the newest holder goes: the oldest have held it longest
    yieldKey(w, krec, holders.length - 1)
  } else if (w.o.admission && holders.length === 1 && !admission.keeps(krec, holders[0]) &&
    (roomy = roomiest(recs, n, holders[0], w.o.shareGap, w.queued ? upstreams : null)) >= 0) {
    swap(w, krec, holders[0], recs[roomy]) // a free move: the key misses at its holder anyway
  } else if (w.o.admission && least >= 0 && room(recs[least], w.o.shareGap) > 0) {
    // the least-held has room: it fills with keys its peers do not keep (above) before it takes
    // one they keep, whose move costs a miss
  } else if (over >= 0 && least >= 0 && !w.queued) {
    // (not while the backends queue: the move costs a miss that holds a worker 4 times as long as a
    // hit, the hit ratios read during a cold start's backlog are low, and the keys admission leaves
    // out already go where a worker is free, ./spill.js `freeMiss`)
    shed(recs[over])
    swap(w, krec, recs[over], recs[least])
  } else if (most >= 0 && least >= 0 && mostHeld - leastHeld >= w.o.shareGap * gapFactor &&
    mostHeld - leastHeld >= SHARE_RATIO * gapFactor * mostHeld &&
    !(w.queued && perWorker(upstreams[least], recs[least]) > perWorker(upstreams[most], recs[most]))) {
    swap(w, krec, recs[most], recs[least])
  }
  // the holders are the key's specialists: each answers as one, and replicas share it by load
  for (const h of krec.holders) if (memory.theta(krec, h) > w.o.thetaMin) setTheta(memory, krec, h, w.o.thetaMin)
}

/**
 * The room an upstream has for more keys it would keep: its admission size less its holdings, when
 * that size is learnt and the room is at least the contest's gap (`shareGap`, and SHARE_RATIO of
 * the size); else 0. A backend that comes back has it (its size outlives its record), one that has
 * not shown its cache size (Infinity) has not.
 */
function room (u, shareGap) {
  const size = u.admission.size
  if (size === INFINITY) return 0
  const r = size - u.heldTotal
  return r >= shareGap && r >= SHARE_RATIO * size ? r : 0
}

/**
 * The candidate other than `holder` with the most room (see `room`), or -1 when none has any. With
 * `upstreams` (while the backends queue) only a candidate that is not busy and has no more in flight
 * than the holder: the move is free for the hit rate, not for the queue it lands in.
 */
function roomiest (recs, n, holder, shareGap, upstreams) {
  let best = -1
  let most = 0
  // with `upstreams` (the backends queue): the holder's in flight per worker, which a taker may not exceed
  let hf = INFINITY
  if (upstreams) for (let i = 0; i < n; i++) if (recs[i] === holder) hf = perWorker(upstreams[i], recs[i])
  for (let i = 0; i < n; i++) {
    if (recs[i] === holder) continue
    if (upstreams && (perWorker(upstreams[i], recs[i]) > hf || busy(recs[i], upstreams[i]))) continue
    const r = room(recs[i], shareGap)
    if (r > most) { most = r; best = i }
  }
  return best
}

/** The dominance contest lost by holder `h` to `u`: they swap thresholds, and `u` holds the key. */
function swap (w, krec, h, u) {
  const { memory } = w
  const { holders } = krec
  const th = memory.theta(krec, h)
  const tu = memory.theta(krec, u)
  removeHolder(krec, holders.indexOf(h))
  addHolder(krec, u)
  setTheta(memory, krec, u, th)
  setTheta(memory, krec, h, tu > w.o.thetaStart ? tu : w.o.thetaStart)
  w.swaps++
}

/**
 * A full upstream gave a key up for its capacity: its hit ratio is read afresh (from FULL), so the
 * capacity estimate follows the smaller holdings instead of shrinking on the old misses.
 */
function shed (urec) {
  urec.hits = 1
}

/**
 * A cache result (`X-Cache` HIT or MISS) from `urec` for the key: if `urec` holds the key and has
 * answered for it since it took it (the first answer of a new holder is the cold miss every cache
 * pays), it feeds the upstream's hit ratio of its held keys. Below FULL the upstream is full, its
 * capacity estimated as its holdings × that ratio (LRU over keys of like popularity: the cache
 * size); at or above, a finite estimate grows by CAP_GROW (it tries one key more now and then),
 * and becomes Infinity once it exceeds the holdings by 2. An upstream that never reports a cache
 * result keeps hit ratio 1 and capacity Infinity: the contest counts keys alone.
 * @param {import('./memory').KeyRecord} krec
 * @param {import('./memory').UpstreamRecord} urec
 * @param {boolean} hit
 */
function observeCache (krec, urec, hit, kept = true, tested = false) {
  const j = krec.holders.indexOf(urec)
  if (j < 0) return
  if (kept) {
    if (krec.warm[j] <= 0) { // the first result since it took (or was told to keep) the key; -1: told not to since
      if (krec.warm[j] === 0) krec.warm[j] = 1
      return
    }
    krec.warm[j]++
    if (tested) admission.learn(urec, hit)
  } // a key it was told not to keep counts as held all the same: a cache too small for its share
  // thrashes less but still misses
  urec.hits += HIT_ALPHA * ((hit ? 1 : 0) - urec.hits)
  if (urec.hits < FULL) urec.cap = urec.heldTotal * urec.hits
  else if (urec.cap !== INFINITY) {
    urec.cap += CAP_GROW
    if (urec.cap > urec.heldTotal + 2) urec.cap = INFINITY
  }
}

/** An error or a 5xx from holder `urec` for the key: it gives the key up (another takes it next). */
function fail (w, krec, urec) {
  const j = krec.holders.indexOf(urec)
  if (j >= 0) yieldKey(w, krec, j)
}

module.exports = { contend, observe, observeCache, release, fail, bandOf, SHARE_RATIO, ABSENT_PICKS }
