'use strict'

/**
 * The emulated cost of a cache miss: an I/O-like wait (a timer, the event loop stays free) and
 * optionally synchronous CPU work (the event loop is blocked, like rendering a template).
 */

const { setTimeout: sleep } = require('node:timers/promises')

/**
 * Wait `ms` milliseconds without blocking; resolves at once for 0.
 *
 * @param {number} ms milliseconds (>= 0)
 * @returns {Promise<void>} resolves after the wait
 */
async function wait (ms) {
  if (ms > 0) await sleep(ms)
}

/**
 * Burn `ms` milliseconds of CPU on the calling thread (busy work, not a sleep).
 *
 * @param {number} ms milliseconds (>= 0)
 * @returns {number} a checksum of the work, so the loop cannot be optimized away
 */
function burnCpu (ms) {
  const end = performance.now() + ms
  let x = 0x9E3779B9
  while (performance.now() < end) {
    for (let i = 0; i < 1000; i++) x = Math.imul(x ^ (x >>> 13), 0x5BD1E995) >>> 0
  }
  return x
}

module.exports = { wait, burnCpu }
