'use strict'

/**
 * Power of two choices over peak-EWMA load.
 *
 * Sources:
 * - Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing", IEEE TPDS 12(10), 2001:
 *   pick two distinct upstreams at random, send to the less loaded one.
 * - Finagle `com.twitter.finagle.loadbalancer.PeakEwma` (finagle-core, "P2C least-loaded with
 *   PeakEwma"; default decay time 10 s) and tower `tower::load::PeakEwma` as used by
 *   Linkerd2-proxy (`EWMA_DECAY` 10 s, a configured default RTT for new endpoints).
 *
 * Per upstream, a latency estimate `est` stamped at the time `t0` of its last sample:
 * - a sample above `est` replaces it at once (the "peak": react to a slowdown immediately);
 * - a sample below moves it there gradually: `est = est * w + rtt * (1 - w)`, `w = exp(-Δt / tau)`,
 *   Δt the time since the previous sample (Finagle's `observe`);
 * - while no sample arrives the estimate decays toward zero, `est(t) = est * exp(-(t - t0) / tau)`
 *   (Finagle's `load` observes a 0; tower's `update_estimate`), so an upstream that was slow once and
 *   then starved of traffic is eventually tried again. Here the decay is computed at read time and not
 *   written back, so the estimate depends only on the samples and the clock, not on how often `pick` runs.
 * Cost = `est(now) * (inflight + 1)`: latency times the queue a new request would join.
 *
 * Choices:
 * - Unsampled upstreams: cost uses `initialLatencyMs`. Default (`undefined`): the largest current
 *   estimate among the sampled upstreams in the list, so a newcomer is treated as the slowest known
 *   member: it gets traffic (and its first sample) without being flooded, which is what Finagle's large
 *   penalty and tower's default RTT are for, but with no magic constant. With nothing sampled anywhere,
 *   every estimate is equal and the policy is P2C least-loaded. A number fixes it (Linkerd uses 30 ms).
 * - Ties (equal cost): the first of the two draws, i.e. random.
 * - Failures: see `latencySample` in `./latency.js` (a failure counts at least as slow as the worst known).
 * - `upstream.weight` is not used (as in Finagle and tower).
 */

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { checkOptions, inflightOf, forgetAbsent, randomIndex, ewma, largest } = require('./shared')
const { latencySample } = require('./latency')

/**
 * Create a P2C peak-EWMA policy.
 * @param {object} [options]
 * @param {number} [options.tau=10000] decay time constant in ms (> 0); 10 s as Finagle and Linkerd.
 *   Smaller forgets peaks sooner; larger holds a slow upstream's penalty longer.
 * @param {number} [options.initialLatencyMs] estimate for an upstream without samples (>= 0);
 *   default: the largest current estimate among sampled upstreams (1 when none)
 * @param {{ random?: () => number, now?: () => number }} [deps] injected random in [0, 1) and clock in ms
 * @returns {import('./types').Policy}
 */
function createP2cPeakEwma (options, { random = Math.random, now = () => performance.now() } = {}) {
  const { tau = 10000, initialLatencyMs } = checkOptions('p2c-peak-ewma', options, ['tau', 'initialLatencyMs'])
  if (!(typeof tau === 'number' && tau > 0)) {
    throw new ERR_POLISTES_BAD_OPTION(`p2c-peak-ewma: tau must be a positive number of ms, got ${tau}`)
  }
  if (initialLatencyMs !== undefined &&
    !(typeof initialLatencyMs === 'number' && initialLatencyMs >= 0 && Number.isFinite(initialLatencyMs))) {
    throw new ERR_POLISTES_BAD_OPTION('p2c-peak-ewma: initialLatencyMs must be a finite number >= 0, got ' +
      `${initialLatencyMs}`)
  }
  /** @type {Map<string, { est: number, stamp: number, samples: number }>} */
  const table = new Map()

  function estimateAt (entry, t) {
    return entry.est * Math.exp(-Math.max(0, t - entry.stamp) / tau)
  }

  function worst (t) {
    return largest(table, (entry) => estimateAt(entry, t))
  }

  return {
    name: 'p2c-peak-ewma',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      if (upstreams.length === 1) return upstreams[0]
      forgetAbsent(table, upstreams)
      const n = upstreams.length
      const i = randomIndex(random, n)
      let j = randomIndex(random, n - 1)
      if (j >= i) j++
      const a = upstreams[i]
      const b = upstreams[j]
      const t = now()
      let initial = initialLatencyMs
      if (initial === undefined) {
        initial = 0
        let any = false
        for (const u of upstreams) {
          const entry = table.get(u.id)
          if (entry !== undefined) {
            initial = Math.max(initial, estimateAt(entry, t))
            any = true
          }
        }
        if (!any) initial = 1
      }
      const cost = (u) => {
        const entry = table.get(u.id)
        return (entry === undefined ? initial : estimateAt(entry, t)) * (inflightOf(u) + 1)
      }
      return cost(b) < cost(a) ? b : a
    },
    onEnd (upstream, ctx, outcome) {
      if (!upstream) return
      const t = now()
      const rtt = latencySample(outcome, worst(t))
      if (rtt === undefined) return
      const entry = table.get(upstream.id)
      if (entry === undefined) {
        table.set(upstream.id, { est: rtt, stamp: t, samples: 1 })
        return
      }
      if (rtt > entry.est) {
        entry.est = rtt
      } else {
        const w = Math.exp(-Math.max(0, t - entry.stamp) / tau)
        entry.est = ewma(entry.est, rtt, 1 - w, w) // the decay w is the old estimate's weight
      }
      entry.stamp = t
      entry.samples++
    },
    snapshot () {
      const t = now()
      const upstreams = {}
      for (const [id, e] of table) upstreams[id] = { estimateMs: estimateAt(e, t), peakMs: e.est, samples: e.samples }
      return { tau, initialLatencyMs: initialLatencyMs ?? null, upstreams }
    }
  }
}

module.exports = { createP2cPeakEwma }
