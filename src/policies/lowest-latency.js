'use strict'

/**
 * Lowest latency: every request goes to the upstream with the currently lowest latency estimate
 * (an EWMA of its response times), probing upstreams that have no estimate yet.
 *
 * Source: docs/experiments.md, C, the "Lowest" algorithm of the regional forwarder ("all to the
 * lowest-latency worker"; reported there as by far the slowest, because it does not spread load).
 * It is kept as a baseline under its own name so that benchmark tables line up with C. The engine is
 * the one of `ewma` (`./latency.js`: same probing, tie-breaking and failure rules); where C measured each worker
 * once at start, this keeps measuring, so the winner changes when its latency grows under the load it
 * attracts. It deliberately ignores `inflight`: use `p2c-peak-ewma` for a latency policy that spreads.
 */

const { createLowestEwma } = require('./latency')

/**
 * Create a lowest-latency policy.
 * @param {object} [options]
 * @param {number} [options.alpha=0.2] weight of the newest latency sample in the EWMA, in (0, 1]
 * @returns {import('./types').Policy}
 */
function createLowestLatency (options = {}) {
  return createLowestEwma('lowest-latency', options)
}

module.exports = { createLowestLatency }
