'use strict'

/**
 * Equal regions: requests are split equally among regions, and within a region a member is chosen at
 * random.
 *
 * Source: docs/experiments.md, C, the "EqualRegions" algorithm of the regional forwarder ("equal split among
 * regions, random worker within"). Regions are taken in turn (sorted by name, so the order does not
 * depend on list order) and a member at random within the region, with the injected `random`.
 * An upstream without `region` belongs to the region named "default". The rotation follows the region
 * last served, so a region that empties or appears between picks does not disturb the turn of the others.
 * O(n) per pick (grouping); no per-upstream state.
 */

const { checkOptions, randomIndex } = require('./shared')

const DEFAULT_REGION = 'default'

function regionOf (upstream) {
  const r = upstream.region
  return typeof r === 'string' && r.length > 0 ? r : DEFAULT_REGION
}

/**
 * Create an equal-regions policy.
 * @param {object} [options] none: any key is an error
 * @param {{ random?: () => number }} [deps] injected random source in [0, 1)
 * @returns {import('./types').Policy}
 */
function createEqualRegions (options = {}, { random = Math.random } = {}) {
  checkOptions('equal-regions', options, [])
  let lastRegion
  const served = new Map()
  return {
    name: 'equal-regions',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      /** @type {Map<string, object[]>} */
      const groups = new Map()
      for (const u of upstreams) {
        const r = regionOf(u)
        const g = groups.get(r)
        if (g === undefined) groups.set(r, [u])
        else g.push(u)
      }
      const names = [...groups.keys()].sort()
      // the first region after the last one served, wrapping around
      let region = names[0]
      if (lastRegion !== undefined) {
        const after = names.find((name) => name > lastRegion)
        if (after !== undefined) region = after
      }
      lastRegion = region
      if (served.size > 2 * names.length + 16) served.clear()
      served.set(region, (served.get(region) ?? 0) + 1)
      const members = groups.get(region)
      return members[randomIndex(random, members.length)]
    },
    snapshot () {
      return { lastRegion: lastRegion ?? null, served: Object.fromEntries(served) }
    }
  }
}

module.exports = { createEqualRegions }
