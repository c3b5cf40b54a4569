'use strict'

/**
 * mulberry32: a tiny seeded PRNG with a 32-bit state (Tommy Ettinger, public domain).
 * Good enough for simulations, tests and seeding a policy's `random`; not for anything that needs
 * unpredictability. Shared by the page generator, the bench, the model and the tests.
 *
 * @param {number} seed any integer; the same seed gives the same sequence
 * @returns {() => number} uniform in [0, 1)
 */
// Math.imul read once: under jest, code runs in a vm context where every read of a global (Math) goes
// through the context's interceptor, several times the cost of the multiply itself (the model tests)
const { imul } = Math

function mulberry32 (seed) {
  let a = seed >>> 0
  return function random () {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = imul(t ^ (t >>> 15), t | 1)
    t ^= t + imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

module.exports = { mulberry32 }
