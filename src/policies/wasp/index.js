'use strict'

/**
 * Wasp: a response-threshold router, after the way Polistes paper wasps divide labour.
 *
 * Sources: Bonabeau, Theraulaz & Deneubourg 1996, "Quantitative study of the fixed threshold model
 * for the regulation of division of labour in insect societies" (T = s²/(s²+θ²));
 * Theraulaz, Bonabeau & Deneubourg 1998, Proc. R. Soc. B 265:327 (threshold reinforcement: doing a
 * task lowers its threshold by ξ, not doing it raises it by φ); Cicirello & Smith 2004, "Wasp-like
 * agents for distributed factory coordination" (routing wasps, stimulus that grows while a job
 * waits, dominance contests won by the less loaded).
 *
 * Each upstream u keeps a threshold θ[u][k] per routing key k in [thetaMin, thetaMax]. A request for k
 * is a stimulus s; every eligible upstream responds with probability s²/(s²+θeff²), where
 * θeff = θ × (1 + inflight) so that a busy upstream answers less readily. If several respond, a
 * dominance contest picks one with weight 1/(1+inflight)² (equivalent to asking in random order
 * when loads are equal). If nobody responds the stimulus grows by `stimulusGrowth` and the round
 * repeats; after `rounds` rounds the eligible upstream with the lowest θeff takes the request.
 * A bounded-load guard (HAProxy's hash-balance-factor) makes an upstream ineligible while its
 * in-flight count would exceed `loadFactor` × the mean.
 * Idleness (Cicirello & Smith: an idle machine lowers its thresholds for every job type while it
 * waits): an upstream that has served nothing for more than `idleGaps` × n picks (n upstreams listed;
 * with a fair share it serves about every n picks) bids with θeff × 2^-(picks beyond), and the key it
 * wins keeps that discount. This is how a re-added or new upstream, whose thresholds are high because
 * the others learnt its keys meanwhile, takes a share of the keys; the others forget them (φ).
 * Idleness counts picks (absences included), not time: the model is request-driven, so this stays
 * deterministic and independent of the request rate.
 * Colonies (`balanced` B > 0, for several balancer processes that share no state): each key has an
 * owner in a balanced packing of the keys onto the upstreams (./packing.js), which every
 * process computes alike, and every other upstream bids as a stranger, with max(θ × g, thetaStart)
 * × B; so the colonies keep one division of labour, and the thresholds decide how fast the owner
 * answers, and who takes what the load guard sheds.
 *
 * Holdings (`shareGap`, `replicate`; ./holdings.js): each key has one holder, or a few
 * replicas when it takes more than a fair share of the requests, and dominance contests keep the
 * number of keys each upstream holds even within every popularity band: a key short of holders goes
 * to the least-held upstream, a holder with `shareGap` more than the least-held loses the key to it.
 * Upstreams that report their cache results (X-Cache) get a capacity from the hit ratio of the keys
 * they hold, so a small cache holds fewer keys without any weight.
 * The holders answer as specialists (θ = thetaMin); the thresholds decide everything else (who
 * takes what the load guard sheds, and everything with `shareGap` 0 or `balanced` on).
 *
 * Cost of one pick: at most `rounds` × upstreams response draws plus O(upstreams × holders) set-up.
 */

const { ewma, weightOf } = require('../shared')
const { defaults, resolveOptions } = require('./options')
const { createMemory } = require('./memory')
const { createPacking } = require('./packing')
const holdings = require('./holdings')
const admission = require('./admission')
const { snapshot } = require('./snapshot')
const queueing = require('./queueing')
const capacity = require('./capacity')
const { route, freeMiss } = require('./spill')

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { ceil, pow } = Math
const INFINITY = Infinity
const asString = String

/** Weight of the newest latency sample in an upstream's EWMA (with `feedback.latency`). */
const LATENCY_ALPHA = 0.2

/**
 * Create a wasp policy: resolved options, a memory (thresholds and upstream records), and the
 * decision phases below, which share one state object and its scratch arrays.
 * @param {Partial<typeof defaults>} [options]
 * @param {{ random?: () => number, now?: () => number }} [deps] injected sources, for determinism
 * @returns {import('../types').Policy & { snapshot (): object }}
 */
function createWasp (options = {}, { random = Math.random, now = () => performance.now() } = {}) {
  const w = createState(resolveOptions(options), random)
  return {
    name: 'wasp',

    /**
     * Pick an upstream for ctx.key. Bounded: at most `rounds` × upstreams.length response draws.
     * @param {readonly import('../types').Upstream[]} upstreams
     * @param {import('../types').PickContext} [ctx]
     */
    pick (upstreams, ctx) {
      return pick(w, upstreams, ctx)
    },

    /**
     * Feedback from the response. A MISS keeps only `missLearning` of the learning (a cold cache
     * always misses first, so a full penalty would stop any upstream from warming up); an error or a
     * 5xx takes the learning back. Latency feeds an EWMA per upstream when `feedback.latency` is on.
     */
    onEnd (upstream, ctx, outcome) {
      feedback(w, upstream, ctx, outcome)
    },

    /**
     * New options on a running policy (a reload): checked like the factory's, then taken without
     * forgetting anything learnt (thresholds, upstream records, counters).
     * @param {Partial<typeof defaults>} next
     * @throws {import('../../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION (then nothing changed)
     */
    configure (next) {
      const o = resolveOptions(next)
      w.o = o
      w.useCache = o.feedback.cache
      w.useLatency = o.feedback.latency
      w.memory.configure(o)
      w.packing.keysChanged() // the key cap may have shrunk
    },

    /** Plain JSON: counters, upstream records, and the specialist of the most recent keys. */
    snapshot () {
      return snapshot(w)
    }
  }
}

/**
 * The state of one wasp policy: options, random source, memory, counters, and scratch space reused
 * by every pick and grown on demand (no allocation per decision).
 */
function createState (o, random) {
  return {
    o,
    random,
    useCache: o.feedback.cache,
    useLatency: o.feedback.latency,
    memory: createMemory(o, { onEvict: holdings.release }),
    packing: createPacking(),
    fallbacks: 0,
    guarded: 0,
    idleWins: 0,
    joins: 0,
    swaps: 0,
    spills: 0,
    freeMisses: 0,
    bases: queueing.createBases(),
    capacity: capacity.createCapacity(),
    aging: { cursor: null }, // admission's round of the key table (./admission.js `age`)
    // per pick: whether a listed upstream has shown a queue (./queueing.js)
    queued: false,
    // per pick: the candidates' records, θeff² (-1 when ineligible), this round's responders
    recs: new Array(16),
    eff2: new Float64Array(16),
    responders: new Int32Array(16),
    // per pick: the mean latency EWMA of the candidates (0 = none known), and their mean in flight
    meanLatency: 0,
    meanInflight: 0
  }
}

function grow (w, n) {
  let size = w.eff2.length
  while (size < n) size *= 2
  w.eff2 = new Float64Array(size)
  w.recs = new Array(size)
  w.responders = new Int32Array(size)
}

/** One decision: registration, then (for a key) thresholds and guard, response rounds, learning. */
function pick (w, upstreams, ctx) {
  const n = upstreams ? upstreams.length : 0
  if (n === 0) return undefined
  const picks = w.memory.tick()
  const key = ctx && ctx.key
  if (n > w.eff2.length) grow(w, n)
  const total = register(w, upstreams, picks)
  if (key === undefined || key === null) return serveUnkeyed(w, upstreams)
  const krec = w.memory.key(asString(key), true)
  krec.step++
  holdings.observe(krec, picks)
  if (w.o.admission) admission.age(w.aging, w.memory.keys, picks)
  if (n === 1) {
    if (w.o.admission) ctx.noStore = false // a retry's earlier pick may have set it
    learn(w, krec, w.recs[0])
    return upstreams[0]
  }
  let owner
  if (w.o.balanced > 0) {
    w.packing.update(picks, w.memory.ups, w.memory.keys)
    owner = w.packing.ownerOf(krec)
  } else if (w.o.shareGap > 0) {
    holdings.contend(w, upstreams, krec)
  }
  const best = effectiveThresholds(w, upstreams, krec, total, owner)
  const held = w.o.shareGap > 0 && owner === undefined
  let chosen = held && w.queued ? freeMiss(w, upstreams, krec) : -1
  if (chosen >= 0) {
    w.freeMisses++
    return served(w, upstreams, chosen, krec, ctx)
  }
  chosen = w.queued && held ? route(w, upstreams, krec) : -1
  const spilled = chosen >= 0 && !krec.holders.includes(w.recs[chosen])
  if (chosen < 0) chosen = respond(w, upstreams)
  if (chosen < 0) {
    w.fallbacks++
    chosen = best
  }
  queueing.noteSent(ctx, upstreams[chosen], w.recs[chosen].q)
  const cr = w.recs[chosen]
  keepIdleDiscount(w, krec, cr)
  learn(w, krec, cr)
  if (w.o.admission && w.o.shareGap > 0) admit(krec, cr, ctx)
  // a request spilled past its holders misses at an upstream that does not hold its key: stored there,
  // it would evict a page that upstream holds (25 even pages on caches of 4 lost 0.12 of hit rate so)
  if (spilled && w.o.admission) ctx.noStore = true
  return upstreams[chosen]
}

/**
 * Register every candidate (so absent ones can be forgotten), count its idle time, and measure the
 * load: returns the total in flight and sets `w.meanLatency` and `w.meanInflight`.
 */
function register (w, upstreams, picks) {
  const { recs, memory } = w
  let total = 0
  let latencySum = 0
  let latencyCount = 0
  let queued = false
  for (let i = 0; i < upstreams.length; i++) {
    const urec = memory.upstream(upstreams[i].id)
    urec.idle += picks - urec.seen // picks since it last served: an absence counts as idle time
    urec.seen = picks
    // a given weight, else the one its queue earns (./capacity.js), else 1
    urec.weight = typeof upstreams[i].weight === 'number' || !w.o.capacityWeights
      ? weightOf(upstreams[i])
      : urec.queueWeight
    recs[i] = urec
    const f = upstreams[i].inflight
    if (f > 0) total += f
    if (urec.latency > 0) { latencySum += urec.latency; latencyCount++ }
    if (urec.q.queued) queued = true
  }
  w.queued = queued && w.o.spill > 0
  learntWeights(w, upstreams)
  w.meanLatency = latencyCount > 0 ? latencySum / latencyCount : 0
  w.meanInflight = upstreams.length > 0 ? total / upstreams.length : 0
  return total
}

/**
 * Each upstream's worker count (`q.busyCount`: its busy workers while saturated, ./queueing.js
 * `observeThroughput`; 0 = not known), read in the first second of a flood. One whose count
 * is not known (none of its requests waited long enough to read it) weighs the least known while it
 * shows a queue and the most known while it does not (it never queued: the roomiest); all weigh 1
 * before any is known (a fleet that never queues). The in-flight counts that decide where a key may
 * move or a miss may spill, and the load of the response rounds, are compared per worker
 * (`urec.workers`, `urec.loadScale`), and an upstream nobody weighted weighs its workers in the
 * holdings, so a backend of 8 workers takes four times the share of each popularity band of one of
 * 2 (docs/algorithms.md). Equal workers weigh alike, and pick as before.
 */
function learntWeights (w, upstreams) {
  if (!w.o.learnWorkers) return
  const { recs } = w
  let most = 0
  let least = INFINITY
  for (let i = 0; i < upstreams.length; i++) {
    const k = recs[i].q.busyCount
    if (k > most) most = k
    if (k > 0 && k < least) least = k
  }
  if (most === 0) return
  let sum = 0
  for (let i = 0; i < upstreams.length; i++) {
    const q = recs[i].q
    recs[i].workers = q.busyCount || (q.queued ? least : most)
    sum += recs[i].workers
    if (typeof upstreams[i].weight !== 'number') recs[i].weight = recs[i].workers
  }
  for (let i = 0; i < upstreams.length; i++) recs[i].loadScale = sum / (upstreams.length * recs[i].workers)
}

/**
 * A request sent by `freeMiss` (./spill.js): a miss wherever it goes, so the upstream neither learns
 * the key (its threshold stays) nor keeps the page unless it has room to spare (./admission.js).
 */
function served (w, upstreams, chosen, krec, ctx) {
  queueing.noteSent(ctx, upstreams[chosen], w.recs[chosen].q)
  const cr = w.recs[chosen]
  cr.idle = 0
  if (w.o.admission) admit(krec, cr, ctx)
  return upstreams[chosen]
}

/** Requests without a key have no affinity: least in-flight, ties to the earliest listed. */
function serveUnkeyed (w, upstreams) {
  let best = 0
  for (let i = 1; i < upstreams.length; i++) if (upstreams[i].inflight < upstreams[best].inflight) best = i
  w.recs[best].idle = 0
  return upstreams[best]
}

/** Load seen by the policy: in-flight count, scaled by relative latency when that feedback is on. */
function loadOf (w, upstream, urec) {
  // per worker, in units of the mean upstream's workers (learnt: `learntWeights`; 1 before)
  const inflight = (upstream.inflight > 0 ? upstream.inflight : 0) * urec.loadScale
  if (!w.useLatency || w.meanLatency <= 0 || urec.latency <= 0) return inflight
  return inflight * (urec.latency / w.meanLatency)
}

/**
 * Bounded-load guard and effective thresholds: fills `w.eff2` with θeff² of each eligible candidate
 * (-1 for the guarded), sets each one's idle discount `g`, and returns the index of the lowest θeff
 * (ties to the less loaded), the fallback when nobody responds. With an `owner` among the
 * candidates (option `balanced`), every other candidate bids as a stranger: its θ × g read as at
 * least thetaStart, times `balanced`.
 */
function effectiveThresholds (w, upstreams, krec, total, owner) {
  const { recs, eff2, memory } = w
  const { loadFactor, idleGaps, thetaStart, balanced } = w.o
  const n = upstreams.length
  if (owner !== undefined) { // an owner not among the candidates (gone, gated): plain wasp
    let listed = false
    for (let i = 0; i < n && !listed; i++) listed = recs[i].id === owner
    if (!listed) owner = undefined
  }
  // HAProxy's rule: capacity ceil(c × (total + 1) / n) always leaves the least loaded eligible
  const cap = ceil(loadFactor * (total + 1) / n)
  // idleness: beyond idleGaps fair gaps (an upstream with a fair share serves about every n picks)
  const idleAfter = idleGaps * n
  let eligible = 0
  let best = -1
  let bestEff = INFINITY
  let bestLoad = INFINITY
  for (let i = 0; i < n; i++) {
    const load = loadOf(w, upstreams[i], recs[i])
    if (upstreams[i].inflight >= cap) {
      eff2[i] = -1
      continue
    }
    eligible++
    const over = recs[i].idle - idleAfter
    const g = over > 0 && idleAfter > 0 ? pow(2, -over) : 1 // halves per pick beyond
    recs[i].g = g
    let t = memory.theta(krec, recs[i]) * g
    if (owner !== undefined && recs[i].id !== owner) t = (t < thetaStart ? thetaStart : t) * balanced
    const eff = t * (1 + load)
    eff2[i] = eff * eff
    if (eff < bestEff || (eff === bestEff && load < bestLoad)) {
      best = i
      bestEff = eff
      bestLoad = load
    }
  }
  if (eligible < n) w.guarded++
  return best
}

/**
 * Response rounds: each eligible candidate answers with s²/(s²+θeff²), the stimulus growing by
 * `stimulusGrowth` per round; several answers go to a dominance contest. Returns the index of the
 * one that takes the request, or -1 when nobody answered within `rounds` rounds.
 */
function respond (w, upstreams) {
  const { eff2, responders, random } = w
  const { stimulus, stimulusGrowth, rounds } = w.o
  const n = upstreams.length
  let s2 = stimulus * stimulus
  const g2 = stimulusGrowth * stimulusGrowth
  for (let round = 0; round < rounds; round++) {
    let count = 0
    for (let i = 0; i < n; i++) {
      const e2 = eff2[i]
      if (e2 >= 0 && random() * (s2 + e2) < s2) responders[count++] = i
    }
    if (count === 1) return responders[0]
    if (count > 1) return contest(w, upstreams, count)
    s2 *= g2
  }
  return -1
}

/** Dominance contest among the `count` responders: the less loaded wins more often (weight 1/(1+load)²). */
function contest (w, upstreams, count) {
  const { responders, recs } = w
  let sum = 0
  for (let j = 0; j < count; j++) {
    const l = 1 + loadOf(w, upstreams[responders[j]], recs[responders[j]])
    sum += 1 / (l * l)
  }
  let r = w.random() * sum
  for (let j = 0; j < count; j++) {
    const l = 1 + loadOf(w, upstreams[responders[j]], recs[responders[j]])
    r -= 1 / (l * l)
    if (r < 0) return responders[j]
  }
  return responders[count - 1]
}

/**
 * A winner that bid with its idle discount θ × g keeps that for this key (Cicirello & Smith lower an
 * idle machine's thresholds for real; applied lazily, to the key it takes), so one idle win makes it
 * that key's specialist.
 */
function keepIdleDiscount (w, krec, urec) {
  if (urec.g >= 1) return
  w.idleWins++
  w.memory.adjust(krec, urec, w.memory.theta(krec, urec) * (urec.g - 1))
}

/**
 * Admission (./admission.js): whether the chosen upstream should keep the page, as
 * `ctx.noStore` (the proxy sends `Cache-Control: no-store` when set); a holder told not to keep a
 * key is marked (warm -1), so that its first result once told to keep it again counts as cold.
 */
function admit (krec, urec, ctx) {
  const keep = admission.keeps(krec, urec)
  ctx.noStore = !keep
  ctx[admission.TEST] = false
  const j = krec.holders.indexOf(urec)
  if (j < 0) return
  if (!keep) krec.warm[j] = -1
  else if (krec.warm[j] < 0) krec.warm[j] = 0
  else if (krec.warm[j] > 0) ctx[admission.TEST] = true // kept, and a kept answer came back since: it should hit
}

/** Serving: the upstream is busy again, and its threshold for the key falls by ξ. */
function learn (w, krec, urec) {
  urec.idle = 0
  w.memory.adjust(krec, urec, -w.o.xi)
}

/** onEnd: latency EWMA, and the learning taken back (in full or in part) by a failure or a MISS. */
function feedback (w, upstream, ctx, outcome) {
  if (!upstream || !outcome) return
  const { memory } = w
  const urec = memory.ups.get(upstream.id)
  if (urec === undefined) return
  queueing.observe(urec.q, ctx, outcome, w.bases)
  queueing.observeThroughput(urec.q, ctx, outcome, w.bases)
  if (w.o.capacityWeights) capacity.responded(w)
  if (w.useLatency && typeof outcome.latencyMs === 'number' && outcome.latencyMs >= 0) {
    urec.latency = ewma(urec.latency > 0 ? urec.latency : undefined, outcome.latencyMs, LATENCY_ALPHA)
  }
  const key = ctx && ctx.key
  if (key === undefined || key === null) return
  const { xi, missLearning } = w.o
  if (w.o.shareGap > 0 && (outcome.cache === 'HIT' || outcome.cache === 'MISS')) {
    const held = memory.keys.get(asString(key)) // no LRU touch: feedback is not a use
    if (held !== undefined) {
      holdings.observeCache(held, urec, outcome.cache === 'HIT', ctx.noStore !== true, ctx[admission.TEST] === true)
      if (held.holders.includes(urec)) held.missed = outcome.cache === 'MISS' && ctx.noStore === true
    }
  }
  const failed = outcome.error !== undefined && outcome.error !== null
  const refund = failed || outcome.statusCode >= 500
    ? xi // (a holder also gives the key up, see ./holdings.js)
    : (w.useCache && outcome.cache === 'MISS' ? xi * (1 - missLearning) : 0)
  if (refund === 0) return
  const krec = memory.keys.get(asString(key)) // no LRU touch: feedback is not a use
  if (krec === undefined) return
  if (refund === xi && w.o.shareGap > 0) holdings.fail(w, krec, urec)
  memory.adjust(krec, urec, refund)
}

createWasp.defaults = defaults

module.exports = { createWasp, defaults }
