'use strict'

const { checkOptions, randomIndex } = require('./shared')

/**
 * Random: each pick takes a uniformly random eligible upstream.
 *
 * Source: the "Random" strategy of the Rust/Tokio balancer and the regional forwarder
 * this project grew from (see docs/experiments.md, C and D).
 *
 * @param {object} [options] none: any key is an error
 * @param {{ random?: () => number }} [deps] injected random source in [0, 1)
 * @returns {import('./types').Policy}
 */
function createRandom (options = {}, { random = Math.random } = {}) {
  checkOptions('random', options, [])
  return {
    name: 'random',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      return upstreams[randomIndex(random, upstreams.length)]
    }
  }
}

module.exports = { createRandom }
