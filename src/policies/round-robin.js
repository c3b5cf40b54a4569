'use strict'

const { checkOptions, createRotation } = require('./shared')

/**
 * Round-robin: each pick takes the next upstream in list order.
 *
 * Source: the classic rotation of node-http-proxy's `examples/balancer/simple-balancer.js`
 * and nginx's default `upstream` behaviour (unweighted).
 *
 * The rotation follows the member last picked, not a pick counter: the next pick is the member after
 * it in the current list. So when the eligible list shrinks or grows between picks, the rotation
 * carries on from where it was and never serves the same member twice in a row (a bare
 * `counter % length` does: picks 5 of [a, b, c] → b, then 6 % 4 of [a, b, c, d] → b again).
 * If the last-picked member left, its successor at the vacated position goes next.
 * O(1) while the list is unchanged, O(n) once after a change. The cursor (`createRotation` in
 * `./shared.js`) also serves ip-hash and chash-bounded for requests without an address or key.
 *
 * @param {object} [options] none: any key is an error
 * @returns {import('./types').Policy}
 */
function createRoundRobin (options = {}) {
  checkOptions('round-robin', options, [])
  const rotation = createRotation()
  return {
    name: 'round-robin',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      return rotation.next(upstreams)
    },
    snapshot () {
      return rotation.snapshot()
    }
  }
}

module.exports = { createRoundRobin }
