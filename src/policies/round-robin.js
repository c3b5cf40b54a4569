'use strict'

/**
 * Round-robin: each pick takes the next upstream in list order.
 *
 * Source: the classic rotation of node-http-proxy's `examples/balancer/simple-balancer.js`
 * and nginx's default `upstream` behaviour (unweighted).
 *
 * The cursor counts picks, not positions, so when the eligible list shrinks or grows the rotation
 * carries on without skipping a member twice in a row.
 *
 * @param {object} [options] unused; accepted for a uniform factory signature
 * @returns {import('./types').Policy}
 */
function createRoundRobin (options = {}) {
  let cursor = 0
  return {
    name: 'round-robin',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      const upstream = upstreams[cursor % upstreams.length]
      cursor = (cursor + 1) % Number.MAX_SAFE_INTEGER
      return upstream
    },
    snapshot () {
      return { cursor }
    }
  }
}

module.exports = { createRoundRobin }
