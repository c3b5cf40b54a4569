'use strict'

/**
 * The cost of one decision where a balancer takes it: in the capacity scenario's fleet (the open-loop
 * model of issue 28: 7 backends of 4 workers, LRU 100 of 2,000 pages under Zipf(1), 5 / 20 ms, 2,000
 * req/s), so that the policy walks the paths a real fleet opens (queues, replicas, admission, spills),
 * and with the CPU caches cold: `evictKB` of memory is read and written between two calls, as the
 * balancer's own work on each request (parsing, buffers, sockets) evicts the policy's records there.
 * Only the policy's calls are timed (`pick`, and `onStart` and `onEnd` where it has them;
 * process.hrtime.bigint around each), not the model or the eviction.
 *
 * Calibration (docs/benchmarks.md, "Inside the balancer"): timed the same way inside the balancer
 * (the capacity scenario at 2,000 req/s), wasp's pick + onEnd took 27-35 µs a request and the
 * clairvoyant reference's 5-8; here, with 1,024 KB evicted, 21-25 and 4-6 (3 runs of bench:micro).
 */

const { runAt } = require('../model/open-loop')

/** Default memory evicted between two calls, KB: what reproduced the in-balancer figures. */
const EVICT_KB = 1024
/** 64-byte cache lines: one 32-bit word read and written per line. */
const WORDS_PER_LINE = 16

/**
 * A buffer of `kb` KB and a function that reads and writes one word per cache line of it.
 * @param {number} kb
 * @returns {() => number} returns a running sum, so that the loop cannot be optimized away
 */
function evictor (kb) {
  const words = new Int32Array(kb * 256)
  let sink = 0
  return function evict () {
    for (let i = 0; i < words.length; i += WORDS_PER_LINE) sink += words[i]++
    return sink
  }
}

/**
 * Time a policy's calls (pick, onStart, onEnd) in the open-loop model's fleet (./open-loop.js `runAt`).
 * @param {(random: () => number, now: () => number, fleet: object) => object} makePolicy as `runAt` takes it
 * @param {{ evictKB?: number, rate?: number, warmup?: number, measure?: number, seed?: number }} [options]
 *   `warmup` requests first (untimed: the policy learns, the JIT settles), then `measure` timed ones
 * @returns {{ ns: number, hitRate: number, decisions: number }} nanoseconds in the policy's calls
 *   (pick, onStart, onEnd) over the timed span per pick in it (a request's calls, as its picks and its
 *   completions balance), the picks, and the model's hit rate over the measured requests
 */
function measureInFleet (makePolicy, options = {}) {
  const { evictKB = EVICT_KB, rate = 2000, warmup = 20000, measure = 20000, seed = 1 } = options
  if (!Number.isInteger(evictKB) || evictKB < 0) throw new RangeError(`evictKB must be an integer >= 0, got ${evictKB}`)
  const evict = evictKB > 0 ? evictor(evictKB) : null
  let timing = false
  let ns = 0n
  let decisions = 0
  /** `call` run untimed while warming up; then timed, after the eviction. */
  function timed (call) {
    if (!timing) return call()
    if (evict) evict()
    const t0 = process.hrtime.bigint()
    const out = call()
    ns += process.hrtime.bigint() - t0
    return out
  }
  function makeTimed (random, now, fleet) {
    const inner = makePolicy(random, now, fleet)
    const policy = {
      name: inner.name,
      pick (upstreams, ctx) {
        if (timing) decisions++
        return timed(() => inner.pick(upstreams, ctx))
      }
    }
    if (inner.onStart) policy.onStart = (upstream, ctx) => timed(() => inner.onStart(upstream, ctx))
    if (inner.onEnd) policy.onEnd = (upstream, ctx, outcome) => timed(() => inner.onEnd(upstream, ctx, outcome))
    return policy
  }
  const result = runAt(makeTimed, { rate }, { seed, warmup, measure, beforeMeasure: () => { timing = true } })
  return { ns: decisions > 0 ? Number(ns) / decisions : 0, hitRate: result.hitRate, decisions }
}

module.exports = { measureInFleet, EVICT_KB }
