'use strict'

/**
 * Smooth weighted round-robin, as nginx does it.
 *
 * Source: nginx `src/http/ngx_http_upstream_round_robin.c`, `ngx_http_upstream_get_peer()`
 * (Maxim Dounin's 2012 "smooth weighted round-robin", commit 52327e0627f4). Each pick, every peer's
 * `current` grows by its effective weight; the peer with the largest `current` wins and pays the total
 * back. For weights 5, 1, 1 the sequence is a, a, b, a, c, a, a: the heavy peer is interleaved, not
 * served in a burst of five. nginx's failure handling is kept too: a failed request lowers the peer's
 * effective weight by `weight / maxFails`, and every pick restores it by 1 until it is whole again.
 *
 * Per-upstream state is a Map keyed by id; ids absent from the eligible list are forgotten lazily.
 * The rotation itself (`smoothPick`) lives in `./shared.js`: least-connections and latency-weighted
 * use it too.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { checkOptions, smoothPick, weightOf, forgetAbsent } = require('./shared')

/**
 * Create a smooth weighted round-robin policy (weights from `upstream.weight`, default 1).
 * @param {object} [options]
 * @param {number} [options.maxFails=1] nginx `max_fails`: a failed request (outcome.error) lowers the
 *   upstream's effective weight by `weight / maxFails`; each pick restores 1. `Infinity` disables it.
 * @returns {import('./types').Policy}
 */
function createWeightedRoundRobin (options) {
  const { maxFails = 1 } = checkOptions('weighted-round-robin', options, ['maxFails'])
  if (!(typeof maxFails === 'number' && maxFails >= 1)) {
    throw new ERR_POLISTES_BAD_OPTION(`weighted-round-robin: maxFails must be a number >= 1, got ${maxFails}`)
  }
  /** @type {Map<string, { current: number, effective: number }>} */
  const state = new Map()
  return {
    name: 'weighted-round-robin',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      forgetAbsent(state, upstreams)
      return smoothPick(upstreams, weightOf, state)
    },
    onEnd (upstream, ctx, outcome) {
      if (!upstream || !outcome || !outcome.error) return
      const peer = state.get(upstream.id)
      if (peer) peer.effective = Math.max(0, peer.effective - weightOf(upstream) / maxFails)
    },
    snapshot () {
      const peers = {}
      for (const [id, p] of state) peers[id] = { current: p.current, effective: p.effective }
      return { peers }
    }
  }
}

module.exports = { createWeightedRoundRobin }
