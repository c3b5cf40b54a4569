'use strict'

/**
 * Latency profile: a repeating list of extra milliseconds, one per response. It replays the
 * earlier experiment's slow backends (A `10,15,20,400,400,400,10,15,20`, B `200`, C `250`).
 */

/**
 * Create a cycling latency profile.
 *
 * @param {number[]} profile extra milliseconds per response; empty means none
 * @returns {{ next: () => number, position: () => number }} `next()` returns the delay for the
 *   next response and advances; `position()` is the index the next call will use
 */
function createLatencyProfile (profile) {
  const list = [...profile]
  let index = 0
  return {
    next () {
      if (list.length === 0) return 0
      const ms = list[index]
      index = (index + 1) % list.length
      return ms
    },
    position () {
      return index
    }
  }
}

module.exports = { createLatencyProfile }
