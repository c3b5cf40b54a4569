'use strict'

/**
 * Random: each pick takes a uniformly random eligible upstream.
 *
 * Source: the "Random" strategy of the Rust/Tokio balancer and the regional forwarder
 * this project grew from (see docs/experiments.md, C and D).
 *
 * @param {object} [options] unused; accepted for a uniform factory signature
 * @param {{ random?: () => number }} [deps] injected random source in [0, 1)
 * @returns {import('./types').Policy}
 */
function createRandom (options = {}, { random = Math.random } = {}) {
  return {
    name: 'random',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      return upstreams[randomIndex(random, upstreams.length)]
    }
  }
}

/**
 * A uniform index in [0, n). Clamped, so that a source returning exactly 1 (out of contract)
 * still yields a member instead of `undefined`.
 * @param {() => number} random
 * @param {number} n
 * @returns {number}
 */
function randomIndex (random, n) {
  const i = Math.floor(random() * n)
  return i >= 0 && i < n ? i : (i >= n ? n - 1 : 0)
}

module.exports = { createRandom, randomIndex }
