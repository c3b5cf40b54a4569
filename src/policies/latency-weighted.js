'use strict'

/**
 * Latency-weighted: each upstream's share of requests is proportional to its speed, 1 / latency
 * (times `upstream.weight`): an upstream three times faster gets three times the requests.
 *
 * Source: docs/experiments.md, C, the "Smart" algorithm of the regional forwarder ("share proportional to
 * speed"). Latency is the EWMA of `ewma` (`./latency.js`, same failure rule); the split is made
 * deterministic with nginx's smooth weighted round-robin (`smoothPick`, `./shared.js`) over the weights
 * `weight / latencyEwma`, recomputed at every pick, so no random source is needed and the shares hold
 * exactly over any window, not only on average.
 *
 * Choices:
 * - Unsampled upstreams get the mean speed of the sampled ones (neutral: probed within a round or two,
 *   never flooded); with no sample anywhere every upstream has the same speed, i.e. weighted
 *   round-robin. Speeds are divided by their mean, so weights stay near 1 as latencies change.
 * - Latencies are floored at `minLatencyMs` so that a 0 ms sample does not make an infinite weight.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { checkOptions, smoothPick, weightOf, forgetAbsent } = require('./shared')
const { createEwmaTable, checkAlpha } = require('./latency')

/**
 * Create a latency-weighted policy.
 * @param {object} [options]
 * @param {number} [options.alpha=0.2] weight of the newest latency sample in the EWMA, in (0, 1]
 * @param {number} [options.minLatencyMs=0.01] floor under latency estimates (> 0), against division by zero
 * @returns {import('./types').Policy}
 */
function createLatencyWeighted (options) {
  const { alpha = 0.2, minLatencyMs = 0.01 } = checkOptions('latency-weighted', options, ['alpha', 'minLatencyMs'])
  checkAlpha(alpha, 'latency-weighted')
  if (!(typeof minLatencyMs === 'number' && minLatencyMs > 0 && Number.isFinite(minLatencyMs))) {
    throw new ERR_POLISTES_BAD_OPTION(`latency-weighted: minLatencyMs must be a positive number, got ${minLatencyMs}`)
  }
  const table = createEwmaTable(alpha)
  /** @type {Map<string, { current: number, effective: number }>} */
  const rotation = new Map()

  return {
    name: 'latency-weighted',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      table.forget(upstreams)
      forgetAbsent(rotation, upstreams)
      if (upstreams.length === 1) return upstreams[0]
      const speed = new Map()
      let sum = 0
      let sampled = 0
      for (const u of upstreams) {
        const e = table.get(u.id)
        if (e !== undefined) {
          const s = 1 / Math.max(e, minLatencyMs)
          speed.set(u.id, s)
          sum += s
          sampled++
        }
      }
      // speeds relative to the mean speed: the weights stay near 1 whatever the latencies are, so the
      // rotation's accumulated `current` values keep their meaning as estimates move (no transient
      // bias when the first samples arrive); an unsampled member is exactly the mean
      const mean = sampled === 0 ? 1 : sum / sampled
      return smoothPick(upstreams, (u) => weightOf(u) * (speed.has(u.id) ? speed.get(u.id) / mean : 1), rotation)
    },
    onEnd (upstream, ctx, outcome) {
      table.record(upstream, outcome)
    },
    snapshot () {
      return { alpha, upstreams: table.toJSON() }
    }
  }
}

module.exports = { createLatencyWeighted }
