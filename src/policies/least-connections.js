'use strict'

/**
 * Least connections (weighted): the upstream with the fewest requests in flight per unit of weight
 * wins; ties are broken by smooth weighted round-robin among the tied upstreams, as nginx does.
 *
 * Source: nginx `src/http/modules/ngx_http_upstream_least_conn_module.c`,
 * `ngx_http_upstream_get_least_conn_peer()`: compare `conns * best.weight < best.conns * weight`
 * (cross-multiplied, so no float division), then run the smooth weighted round-robin of
 * `ngx_http_upstream_get_peer()` over the peers sharing the lowest ratio. HAProxy `balance leastconn`
 * is the same idea. `inflight` is maintained by the caller (the pool), so the policy keeps no
 * counters of its own; its only state is the tie-breaking rotation, a Map keyed by id.
 */

const { checkOptions, inflightOf, smoothPick, weightOf, forgetAbsent } = require('./shared')

/**
 * Create a (weighted) least-connections policy. Weights come from `upstream.weight` (default 1).
 * @param {object} [options] none: any key is an error
 * @returns {import('./types').Policy}
 */
function createLeastConnections (options = {}) {
  checkOptions('least-connections', options, [])
  /** @type {Map<string, { current: number, effective: number }>} */
  const rotation = new Map()
  return {
    name: 'least-connections',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      forgetAbsent(rotation, upstreams)
      let best = upstreams[0]
      let tied = [best]
      for (let i = 1; i < upstreams.length; i++) {
        const u = upstreams[i]
        // inflight(u) / w(u) vs inflight(best) / w(best), cross-multiplied
        const lhs = inflightOf(u) * weightOf(best)
        const rhs = inflightOf(best) * weightOf(u)
        if (lhs < rhs) {
          best = u
          tied = [u]
        } else if (lhs === rhs) {
          tied.push(u)
        }
      }
      return tied.length === 1 ? best : smoothPick(tied, weightOf, rotation)
    },
    snapshot () {
      const rotationState = {}
      for (const [id, p] of rotation) rotationState[id] = { current: p.current }
      return { rotation: rotationState }
    }
  }
}

module.exports = { createLeastConnections }
