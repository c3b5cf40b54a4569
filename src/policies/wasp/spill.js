'use strict'

/**
 * Spill (issue 28): once the backends queue (./queueing.js learnt a knee for one of them), a key's
 * request goes to the holder with the shortest expected wait, and leaves its holders for another
 * upstream only when the wait there is worth a miss: when the best holder's expected wait exceeds
 * `spill` × the miss penalty (its miss less its hit service time), and another upstream would
 * answer sooner even as a miss (its wait + its miss service time < the holder's wait + hit time).
 *
 * And (`freeMiss`) a request that misses wherever it goes, its key kept by none of its holders
 * (./admission.js), goes where the expected wait is shortest: the cold tail that no cache keeps is a
 * large part of the work (a miss holds a worker 4 times as long as a hit), and served by the queues
 * rather than by the holdings, it evens the load without costing a hit. An upstream that has not
 * shown a queue (one back cold, a new one) reads as waiting 0 at any in-flight count, so it takes
 * such a miss only while it has no more in flight than a holder.
 *
 * While no candidate has queued, nothing here acts and the thresholds decide, as before.
 * O(upstreams × holders) per pick.
 */

const { perWorker, waitOf, serviceOf } = require('./queueing')
const admission = require('./admission')

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const INFINITY = Infinity

/** Service times assumed before an upstream has measured its own (ms): only their ratio matters. */
const DEFAULT_HIT = 1
const DEFAULT_MISS = 4

/**
 * The index of the upstream that should take this request by queueing, or -1 to let the response
 * rounds decide (nobody queues, or the key has no listed holder).
 * @param {object} w the policy state (w.recs registered this pick)
 * @param {readonly import('../types').Upstream[]} upstreams
 * @param {import('./memory').KeyRecord} krec
 * @returns {number}
 */
function route (w, upstreams, krec) {
  const { recs } = w
  const n = upstreams.length
  const holders = krec.holders
  let h = -1
  let hWait = INFINITY
  let hLoad = INFINITY
  for (let i = 0; i < n; i++) {
    if (!holders.includes(recs[i])) continue
    const f = upstreams[i].inflight > 0 ? upstreams[i].inflight : 0
    const wait = waitOf(recs[i].q, f)
    const load = perWorker(upstreams[i], recs[i]) // ties (most often: no wait at either) to the fewer per worker
    if (wait < hWait || (wait === hWait && load < hLoad)) { h = i; hWait = wait; hLoad = load }
  }
  if (h < 0 || hWait <= 0) return h
  const hq = recs[h].q
  const hit = serviceOf(hq, true) || DEFAULT_HIT
  const miss = serviceOf(hq, false) || DEFAULT_MISS * hit
  if (hWait <= w.o.spill * (miss - hit)) return h
  const hF = perWorker(upstreams[h], recs[h])
  let best = h
  let bestCost = hWait + hit
  for (let i = 0; i < n; i++) {
    if (i === h) continue
    const q = recs[i].q
    const f = upstreams[i].inflight > 0 ? upstreams[i].inflight : 0
    const held = holders.includes(recs[i])
    const wait = waitOf(q, f)
    // a miss goes only where a worker is (about) free, and never to an upstream with more in flight
    // than the holder (one that has not shown its queue yet reads as waiting 0)
    if (!held && (wait > hit || perWorker(upstreams[i], recs[i]) >= hF)) continue
    const cost = wait + (serviceOf(q, held) || (held ? hit : miss))
    if (cost < bestCost) { best = i; bestCost = cost }
  }
  if (best !== h) w.spills++
  return best
}

/**
 * A request that misses wherever it goes: its key is kept by none of its holders (admission ranks
 * it beyond every holder's cache) and its latest result from a holder was such a miss (a page
 * cached before would still hit), so the holder would serve it as a miss and not store it. It goes
 * to the upstream with the shortest expected wait, ties to the fewest in flight (then from a start
 * that depends on the key): the same miss, served where a worker is free. Returns that index, or
 * -1 when some listed holder keeps the key (or it has none listed, or admission is off).
 * @param {object} w the policy state (w.recs registered this pick)
 * @param {readonly import('../types').Upstream[]} upstreams
 * @param {import('./memory').KeyRecord} krec
 * @returns {number}
 */
function freeMiss (w, upstreams, krec) {
  const { recs } = w
  const n = upstreams.length
  const holders = krec.holders
  if (!w.o.admission || holders.length === 0 || !krec.missed) return -1
  let hF = INFINITY // the fewest in flight at a listed holder
  for (let i = 0; i < n; i++) {
    if (!holders.includes(recs[i])) continue
    if (admission.keeps(krec, recs[i])) return -1
    const f = perWorker(upstreams[i], recs[i])
    if (f < hF) hF = f
  }
  if (hF === INFINITY) return -1
  let best = -1
  let bestWait = INFINITY
  let bestLoad = INFINITY
  const start = krec.hash % n
  for (let k = 0; k < n; k++) {
    const i = (start + k) % n
    const f = perWorker(upstreams[i], recs[i])
    // one that has not shown a queue reads as waiting 0 whatever it has in flight (a backend back
    // cold, a new one): it takes a free miss only while it has no more in flight than a holder
    // (per worker, learnt: ./index.js)
    if (!recs[i].q.queued && f > hF) continue
    const wait = waitOf(recs[i].q, upstreams[i].inflight > 0 ? upstreams[i].inflight : 0)
    if (wait < bestWait || (wait === bestWait && f < bestLoad)) { best = i; bestWait = wait; bestLoad = f }
  }
  return best
}

module.exports = { route, freeMiss }
