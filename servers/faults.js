'use strict'

/**
 * Fault injection for tests and chaos runs. One draw of the injected `random` per page request
 * (and none when every rate is 0, so a seeded `random` stays in step with other consumers):
 * `r < dropRate` drops, then `hangRate`, then `errorRate`, stacked on [0, 1).
 */

/** @typedef {'drop'|'hang'|'error'} Fault */

/**
 * Create a fault picker.
 *
 * @param {{ errorRate?: number, hangRate?: number, dropRate?: number }} rates probabilities in [0, 1]
 * @param {() => number} random uniform in [0, 1)
 * @returns {{ draw: () => Fault|null }} `draw()` says which fault, if any, hits this request
 */
function createFaults ({ errorRate = 0, hangRate = 0, dropRate = 0 } = {}, random = Math.random) {
  const any = errorRate > 0 || hangRate > 0 || dropRate > 0
  return {
    draw () {
      if (!any) return null
      const r = random()
      if (r < dropRate) return 'drop'
      if (r < dropRate + hangRate) return 'hang'
      if (r < dropRate + hangRate + errorRate) return 'error'
      return null
    }
  }
}

module.exports = { createFaults }
