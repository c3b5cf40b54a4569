/**
 * Queueing (issue 28): what each upstream's latencies say about its queue, learnt from the
 * responses alone (nobody tells the policy how many workers a backend has).
 *
 * A backend with W workers and a FIFO queue serves a request at once when fewer than W are in
 * flight before it, and queues it otherwise: its latency is then its service time plus a wait that
 * grows with the number in flight before it. So:
 *
 * - Each pick notes the chosen upstream's in-flight count before the request (`f0`, on the context).
 * - Each response is sorted by its cache result (HIT, MISS, or unknown); a class's **base** is the
 *   mean (then EWMA) of its latencies sent with nothing in flight (f0 = 0: those never wait); with
 *   fewer than BASE_SAMPLES of those, the same over every upstream's (a backend under a standing
 *   queue is never idle; FLEET_BASE_SAMPLES suffice there), and with fewer of those too the response
 *   feeds nothing.
 * - A response's **excess**, its latency less its class's base, feeds an EWMA per f0 (0..MAX_F):
 *   the **wait table**, the expected wait of a request sent with f0 in flight. Below the knee it
 *   reads about 0 (the jitter of the service times averages out), above it grows by the service
 *   time over the workers per request ahead. Unvisited entries are interpolated from their
 *   neighbours, and above the last known one extrapolated by at least a hit service time per request.
 * - An upstream **queues** while two neighbouring entries with MIN_SAMPLES samples each read more than
 *   QUEUE_FACTOR × its slowest class base + QUEUE_MS + SPREAD_FACTOR × the **spread** of latencies
 *   sent with nothing in flight (their mean absolute deviation from the base, in the class that
 *   spreads least): until then the policy decides as before. The spread is what tells a worker
 *   queue from CPU contention: a backend whose latencies at rest already scatter by milliseconds
 *   (an event loop shared with busy neighbours, a loaded machine) shows rises of that size at every
 *   in-flight count, and moving its requests to another upstream would cost hits and free nothing.
 *
 * A backend that never queues (unlimited concurrency, or a light load) is never marked, its
 * expected wait stays 0, and the policy decides as it did before (./index.js, ./spill.js).
 * O(1) per response; an expected wait reads one entry, or scans at most MAX_F entries for its
 * neighbours. Memory: about 800 bytes per upstream.
 */

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { max, round } = Math
const INFINITY = Infinity

/** The context slot holding the chosen upstream's in-flight count at the pick. */
const AT = Symbol('polistes.wasp.inflightAtPick')
/** The context slots holding the chosen upstream's completed service, and unknown completions, at the pick. */
const WORK_AT = Symbol('polistes.wasp.workAtPick')
const UNKNOWN_AT = Symbol('polistes.wasp.unknownAtPick')

/** Weight of the newest sample in the base and wait-table EWMAs. */
const ALPHA = 1 / 16
/** The wait table covers f0 = 0..MAX_F (more in flight reads as MAX_F). */
const MAX_F = 63
/** Samples with nothing in flight a base needs before it is used (±50 % jitter: within ±4 % of the mean). */
const BASE_SAMPLES = 16
/** Samples an entry needs before it is read. */
const MIN_SAMPLES = 4
/**
 * Samples the fleet's base (every upstream's together, the stand-in until an upstream has its own)
 * needs: fewer than an own base. In a flood from cold the only requests sent with nothing in flight
 * are each upstream's first, so the fleet's base would wait for BASE_SAMPLES until the flood is over
 * (1.3-2.0 s into a cold start at 2,750 req/s in the open-loop model), and no queue could be read
 * while it lasts. Until an upstream has its own base, its queue is then read against the fleet's:
 * 3 spreads of the fleet's base stay in the bar, well above the noise of 4 samples of jittered service.
 */
const FLEET_BASE_SAMPLES = MIN_SAMPLES
/** An entry reading more than QUEUE_FACTOR × the slowest class base + QUEUE_MS shows a queue:
 * well above the noise of service times jittered by ±50 % (the closed-loop model). */
const QUEUE_FACTOR = 0.25
const QUEUE_MS = 1
/** A queue must read this many spreads (mean absolute deviations at rest) more besides: CPU
 * contention scatters the latencies of requests sent to an idle backend by as much as it raises the
 * busy ones, a FIFO of workers does not (its idle requests take their service time). */
const SPREAD_FACTOR = 3
/** The weight of a new reading of the busy workers (`observeThroughput`). */
const TP_ALPHA = 1 / 16
/** A reading only from a request that took this many of the slowest class's service times. */
const TP_WAIT = 8
/** A queued upstream's table is read again every RECHECK responses: its queue may have gone. */
const RECHECK = 16
/** Latency classes: by the X-Cache result. */
const HIT = 0
const MISS = 1
const OTHER = 2

/** The fleet's bases (every upstream's samples with nothing in flight), for upstreams without their own. */
function createBases () {
  return { base: new Float64Array(3), dev: new Float64Array(3), zero: new Uint8Array(3) }
}

/** A new queueing record (on an upstream record). */
function createQueueing () {
  return {
    base: new Float64Array(3), // per class; 0 = none yet
    dev: new Float64Array(3), // per class: the mean absolute deviation from the base
    zero: new Uint8Array(3), // per class: its f0 = 0 samples (to 255)
    wait: new Float64Array(MAX_F + 1),
    samples: new Uint32Array(MAX_F + 1),
    seen: 0, // responses that fed the table
    known: false, // some entry has MIN_SAMPLES samples: the table can be read (until then every wait reads 0)
    queued: false,
    busyWorkers: 0, // its workers busy while saturated (`observeThroughput`); 0 = not seen saturated
    busyCount: 0, // that, rounded, with hysteresis: its worker count from it; 0 = none
    doneWork: 0, // the service time (ms) of its completions, from the class bases (`observeThroughput`)
    doneUnknown: 0, // its completions of a class whose base was not known yet
    epochWait: 0, // the waits (excesses) of this epoch's responses, and their count (./capacity.js)
    epochCount: 0
  }
}

/** Note the in-flight count of the chosen upstream before this request joins it (and with its
 * queueing record `q`, the service it has completed so far: `observeThroughput`). */
function noteSent (ctx, upstream, q) {
  if (!ctx) return
  ctx[AT] = upstream.inflight > 0 ? upstream.inflight : 0
  if (q) {
    ctx[WORK_AT] = q.doneWork
    ctx[UNKNOWN_AT] = q.doneUnknown
  }
}

/**
 * An upstream's in-flight count per worker: over its record's learnt `workers` (1 until the counts
 * are learnt, ./index.js `learntWeights`), so that upstreams of unequal workers compare by load.
 */
function perWorker (upstream, urec) {
  return (upstream.inflight > 0 ? upstream.inflight : 0) / urec.workers
}

function classOf (cache) {
  return cache === 'HIT' ? HIT : cache === 'MISS' ? MISS : OTHER
}

/** The weight of a sample after `n` others: their mean for the first 1 / ALPHA, then an EWMA. */
function weight (n) {
  return n < 1 / ALPHA ? 1 / (n + 1) : ALPHA
}

/**
 * A latency sample with nothing in flight: the base is the mean of the first 1 / ALPHA, then an
 * EWMA; the spread the same of its absolute deviations from the base before it.
 */
function learnBase (q, c, latency) {
  const k = q.zero[c]
  if (k > 0) {
    const d = latency > q.base[c] ? latency - q.base[c] : q.base[c] - latency
    q.dev[c] += weight(k - 1) * (d - q.dev[c])
  }
  q.base[c] += weight(k) * (latency - q.base[c])
  if (k < 255) q.zero[c] = k + 1
}

/** The spread at rest: the least of the classes' with a settled base (their own, else the fleet's). */
function spreadOf (q, fleet) {
  let spread = INFINITY
  for (let c = 0; c < 3; c++) {
    const d = q.zero[c] >= BASE_SAMPLES
      ? q.dev[c]
      : fleet && fleet.zero[c] >= FLEET_BASE_SAMPLES ? fleet.dev[c] : INFINITY
    if (d < spread) spread = d
  }
  return spread
}

/**
 * A response from the upstream whose queueing record is `q`: its class's base, and its excess
 * over that base into the wait table at its f0.
 * @param {ReturnType<typeof createQueueing>} q
 * @param {object} ctx the pick's context (carries f0)
 * @param {{ latencyMs?: number, cache?: string }} outcome
 * @param {{ base: Float64Array, zero: Uint8Array }} [fleet] the bases of every upstream's samples
 *   together: the base of an upstream that is never idle (a small backend under a long queue)
 */
function observe (q, ctx, outcome, fleet) {
  const at = ctx ? ctx[AT] : undefined
  const latency = outcome.latencyMs
  if (typeof at !== 'number' || typeof latency !== 'number' || !(latency >= 0)) return
  const c = classOf(outcome.cache)
  if (at === 0) {
    learnBase(q, c, latency)
    if (fleet) learnBase(fleet, c, latency)
  }
  // no settled base yet (its own, else the fleet's): an excess over a guess would read as a queue
  const own = q.zero[c] >= BASE_SAMPLES
  if (!own && !(fleet && fleet.zero[c] >= FLEET_BASE_SAMPLES)) return
  const base = own ? q.base[c] : fleet.base[c]
  const f = at < MAX_F ? at : MAX_F
  const excess = latency - base
  q.epochWait += excess
  q.epochCount++
  const n = q.samples[f]
  q.wait[f] += weight(n) * (excess - q.wait[f])
  q.samples[f] = n + 1
  if (n + 1 >= MIN_SAMPLES) q.known = true
  q.seen++
  if (q.queued ? q.seen % RECHECK === 0 : n + 1 >= MIN_SAMPLES) {
    const bar = QUEUE_FACTOR * max(q.base[HIT], q.base[MISS], q.base[OTHER], base) + QUEUE_MS +
      SPREAD_FACTOR * spreadOf(q, fleet)
    q.queued = q.queued ? anyQueue(q, bar) : overBar(q, f, bar)
  }
}

/**
 * A completion, for the busy workers while saturated, with no clock: the upstream's completed
 * service time (each response's class base, its own or the fleet's) counts up, and a request notes
 * the count when it is sent (`noteSent`). When it comes back, the service completed there in its
 * lifetime, its own included, over its latency is the number of workers that were busy meanwhile;
 * when it was sent behind at least that many (+1) and it waited long (TP_WAIT slowest
 * services), no worker was idle, and that is the worker count. Seen within the first hundreds of
 * milliseconds of a flood. (The wait table's knee, the least in-flight count whose requests wait, is
 * the worker count too, but under jittered service times its small first rise is lost in the noise:
 * it read 1 to 3 for 4 workers at ±50 %.)
 */
function observeThroughput (q, ctx, outcome, fleet) {
  const c = classOf(outcome.cache)
  // any sample at rest will do here (a flood leaves few): the estimate is an EWMA of many readings
  const service = q.zero[c] >= BASE_SAMPLES ? q.base[c] : fleet.zero[c] > 0 ? fleet.base[c] : 0
  if (service > 0) q.doneWork += service
  else q.doneUnknown++
  const at = ctx ? ctx[AT] : undefined
  const work = ctx ? ctx[WORK_AT] : undefined
  const latency = outcome.latencyMs
  if (typeof work !== 'number' || !(service > 0) || ctx[UNKNOWN_AT] !== q.doneUnknown) return
  // the completions of its lifetime began up to a service time before it was sent: a long wait
  // (TP_WAIT slowest services) makes that edge small
  const slowest = max(fleet.base[HIT], fleet.base[MISS], fleet.base[OTHER], service)
  if (!(latency > TP_WAIT * slowest)) return
  const busy = (q.doneWork - work) / latency
  if (!(at >= busy + 1)) return
  q.busyWorkers = q.busyWorkers > 0 ? q.busyWorkers + TP_ALPHA * (busy - q.busyWorkers) : busy
  // the count, rounded, moves only when the estimate is a whole worker away from it: jittered service
  // times bias the readings up by about a tenth, and a count flipping between 4 and 5 on an equal
  // fleet would unbalance its holdings
  const d = q.busyWorkers - q.busyCount
  if (q.busyCount === 0 || d >= 1 || d <= -1) q.busyCount = q.busyWorkers >= 0.5 ? round(q.busyWorkers) : 0
}

/**
 * Whether entry f and the one below it both read more than the bar (with MIN_SAMPLES each): a queue
 * grows with f, the noise of one entry does not (the last entry stands alone: it gathers
 * everything beyond).
 */
function overBar (q, f, bar) {
  if (q.samples[f] < MIN_SAMPLES || !(q.wait[f] > bar)) return false
  return f === MAX_F || (f > 0 && q.samples[f - 1] >= MIN_SAMPLES && q.wait[f - 1] > bar)
}

/** Whether some entry still shows the queue (a transient, e.g. a cold start or a pause, fades). */
function anyQueue (q, bar) {
  for (let f = 1; f <= MAX_F; f++) if (overBar(q, f, bar)) return true
  return false
}

/**
 * The expected wait (ms) of a request sent now to an upstream with `inflight` in flight: the wait
 * table's entry, or its neighbours' when it has too few samples; 0 while it has not queued, unless
 * `raw` (the table as it reads, for a backend whose queue faded while it was away).
 * @param {ReturnType<typeof createQueueing>} q
 * @param {number} inflight
 * @param {boolean} [raw]
 */
function waitOf (q, inflight, raw = false) {
  if (!q.queued && !raw) return 0
  const f = inflight < MAX_F ? (inflight > 0 ? inflight : 0) : MAX_F
  if (q.samples[f] >= MIN_SAMPLES) return q.wait[f] > 0 ? q.wait[f] : 0
  let lo = f - 1
  while (lo >= 0 && q.samples[lo] < MIN_SAMPLES) lo--
  let hi = f + 1
  while (hi <= MAX_F && q.samples[hi] < MIN_SAMPLES) hi++
  let value
  if (lo >= 0 && hi <= MAX_F) value = q.wait[lo] + (q.wait[hi] - q.wait[lo]) * (f - lo) / (hi - lo)
  else if (hi <= MAX_F) value = q.wait[hi]
  else if (lo < 0) value = 0
  else {
    // above every known entry: at least one hit service time per request more (a backend with one
    // worker; a larger one shows its own, flatter slope once it is sent that many)
    let lo2 = lo - 1
    while (lo2 >= 0 && q.samples[lo2] < MIN_SAMPLES) lo2--
    const measured = lo2 >= 0 ? (q.wait[lo] - q.wait[lo2]) / (lo - lo2) : 0
    const slope = q.base[HIT] || q.base[OTHER] || q.base[MISS]
    value = q.wait[lo] + (measured > slope ? measured : slope) * (f - lo)
  }
  return value > 0 ? value : 0
}

/** The expected service time of a class (HIT or MISS) at this upstream, 0 when unknown. */
function serviceOf (q, hit) {
  return q.base[hit ? HIT : MISS]
}

module.exports = { createBases, createQueueing, noteSent, observe, observeThroughput, perWorker, waitOf, serviceOf }
