'use strict'

const { checkOptions, createRotation, smoothPick, weightOf, forgetAbsent } = require('./shared')

/**
 * Round-robin as nginx's default `upstream` does it: smooth weighted round-robin by `upstream.weight`
 * (a backend's `#w=2`), which with equal weights is the plain rotation in list order.
 *
 * Source: nginx `src/http/ngx_http_upstream_round_robin.c`, `ngx_http_upstream_get_peer()` (the
 * smooth weighted round-robin, `smoothPick` in `./shared.js`): weights 5, 1, 1 give a, a, b, a, c,
 * a, a, the heavy member interleaved rather than served in a burst. The rotation of equal members is
 * also node-http-proxy's `examples/balancer/simple-balancer.js`.
 *
 * When every eligible member has the same weight, smooth WRR picks them in list order, and that is
 * what runs then: the rotation cursor (`createRotation` in `./shared.js`, also ip-hash's and
 * chash-bounded's fallback), which follows the member last picked, not a pick counter. So when the
 * eligible list shrinks or grows between picks, the rotation carries on from where it was and never
 * serves the same member twice in a row (a bare `counter % length` does: picks 5 of [a, b, c] → b,
 * then 6 % 4 of [a, b, c, d] → b again; smooth WRR's credits do too, after a member leaves right
 * after its turn). If the last-picked member left, its successor at the vacated position goes next.
 * Unequal weights take nginx's smooth pick, its credits kept across membership changes as nginx keeps
 * them. O(n) per pick either way (the weights are compared each time: the pool may change one).
 *
 * `weighted-round-robin` is the same smooth pick with nginx's failure handling on top (a failed
 * request lowers the member's effective weight); round-robin does not look at outcomes.
 *
 * @param {object} [options] none: any key is an error
 * @returns {import('./types').Policy}
 */
function createRoundRobin (options = {}) {
  checkOptions('round-robin', options, [])
  const rotation = createRotation()
  /** smooth WRR credits, used while the weights differ */
  const credits = new Map()
  return {
    name: 'round-robin',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      if (equalWeights(upstreams)) {
        if (credits.size > 0) credits.clear() // the credits of an earlier weighted spell are stale
        return rotation.next(upstreams)
      }
      forgetAbsent(credits, upstreams)
      const upstream = smoothPick(upstreams, weightOf, credits)
      rotation.follow(upstreams, upstream) // should the weights become equal, the rotation goes on from here
      return upstream
    },
    snapshot () {
      const snap = rotation.snapshot()
      if (credits.size === 0) return snap
      const peers = {}
      for (const [id, p] of credits) peers[id] = p.current
      return { ...snap, credits: peers }
    }
  }
}

/**
 * Whether every member of a non-empty list has the same weight (as `weightOf` reads it).
 * @param {readonly { weight?: number }[]} list
 */
function equalWeights (list) {
  const first = list[0].weight
  for (let i = 1; i < list.length; i++) {
    const w = list[i].weight
    if (w !== first && weightOf(list[i]) !== weightOf(list[0])) return false // (undefined and 1 are equal)
  }
  return true
}

module.exports = { createRoundRobin }
