'use strict'

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
 * O(1) while the list is unchanged, O(n) once after a change.
 *
 * @param {object} [options] unused; accepted for a uniform factory signature
 * @returns {import('./types').Policy}
 */
function createRoundRobin (options = {}) {
  let lastId
  let lastIndex = -1
  return {
    name: 'round-robin',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      let next = 0
      if (lastIndex >= 0) {
        if (upstreams[lastIndex] !== undefined && upstreams[lastIndex].id === lastId) {
          next = lastIndex + 1
        } else {
          const found = upstreams.findIndex((u) => u.id === lastId)
          next = found >= 0 ? found + 1 : lastIndex
        }
      }
      next %= upstreams.length
      const upstream = upstreams[next]
      lastId = upstream.id
      lastIndex = next
      return upstream
    },
    snapshot () {
      return { cursor: lastIndex + 1, last: lastId === undefined ? null : lastId }
    }
  }
}

module.exports = { createRoundRobin }
