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
 */

const { ERR_POLISTES_BAD_OPTION } = require('../errors')

/**
 * The weight of an upstream: `upstream.weight` when it is a positive finite number, else 1.
 * (A weight of 0 is not "drained": the pool removes drained members from the eligible list.)
 * @param {{ weight?: number }} upstream
 * @returns {number}
 */
function weightOf (upstream) {
  const w = upstream.weight
  return typeof w === 'number' && Number.isFinite(w) && w > 0 ? w : 1
}

/**
 * One round of nginx's smooth weighted round-robin over `list`.
 * @template {{ id: string }} U
 * @param {readonly U[]} list candidates, non-empty
 * @param {(u: U) => number} weight configured weight of each candidate (positive)
 * @param {Map<string, { current: number, effective: number }>} state per-id peer state, updated
 * @returns {U} the chosen candidate
 */
function smoothPick (list, weight, state) {
  let total = 0
  let best
  let bestPeer
  for (const u of list) {
    const w = weight(u)
    let peer = state.get(u.id)
    if (peer === undefined) {
      peer = { current: 0, effective: w }
      state.set(u.id, peer)
    }
    if (peer.effective > w) peer.effective = w // the configured weight went down
    peer.current += peer.effective
    total += peer.effective
    if (peer.effective < w) peer.effective = Math.min(w, peer.effective + 1)
    if (bestPeer === undefined || peer.current > bestPeer.current) {
      best = u
      bestPeer = peer
    }
  }
  bestPeer.current -= total
  return best
}

/**
 * Drop state for ids no longer in the list, once the table has grown well past the list.
 * Amortized O(1) per pick; an upstream that flaps out and back in keeps its state meanwhile.
 * @param {Map<string, unknown>} state
 * @param {readonly { id: string }[]} upstreams
 */
function forgetAbsent (state, upstreams) {
  if (state.size <= 2 * upstreams.length + 16) return
  const present = new Set(upstreams.map((u) => u.id))
  for (const id of state.keys()) if (!present.has(id)) state.delete(id)
}

/**
 * Create a smooth weighted round-robin policy (weights from `upstream.weight`, default 1).
 * @param {object} [options]
 * @param {number} [options.maxFails=1] nginx `max_fails`: a failed request (outcome.error) lowers the
 *   upstream's effective weight by `weight / maxFails`; each pick restores 1. `Infinity` disables it.
 * @returns {import('./types').Policy}
 */
function createWeightedRoundRobin ({ maxFails = 1 } = {}) {
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

module.exports = { createWeightedRoundRobin, smoothPick, weightOf, forgetAbsent }
