'use strict'

/**
 * Two yardsticks for the open-loop model (issue 28), not policies: each is told the fleet (workers
 * and cache sizes), which a balancer is not. They answer how much of the gap between a policy's
 * capacity at SLO and the fleet's physical limit the cold start itself leaves.
 *
 * - `clairvoyant`: the greedy static placement of ./placement-limit.js (the one built at the fleet's
 *   placement limit, so that no backend's hits alone fill its workers below that rate), known from
 *   the first request: each page on its backends (among replicas, the fewest in flight per worker),
 *   a page cached nowhere sent to the fewest in flight per worker and not stored (`ctx.noStore`; so
 *   is a page whose every home is down). Its only misses are the first request of each placed page
 *   and the pages placed nowhere: what a placement knowing the popularity ranking does.
 * - `counting`: a learner with exact bookkeeping that knows nothing of the popularity. It counts each
 *   key's requests and, every `every` picks (and on each of the first 50), ranks the keys by count:
 *   the top (sum of the caches) keys each get a home, kept while they stay in the top, a new one on
 *   the backend with a free cache slot and the least counted load per worker; the others go where
 *   fewest are in flight per worker and are not stored. A key whose counted share of the requests is
 *   more than one backend's workers can serve as hits at the fleet's physical limit gets that many
 *   homes (replicas, each a cache slot), and its requests go to the one with fewest in flight per worker.
 *
 * Pure and deterministic (no random source): the same requests give the same picks.
 */

const { placementLimit } = require('./placement-limit')
const { pageNames, upstreamIds, perBackend } = require('./model-setup')
const { physicalLimit } = require('./open-loop')

/** The listed upstreams by their index in the fleet (null where one is not listed: down). */
function listedByIndex (list, index, n) {
  const at = new Array(n).fill(null)
  for (const u of list) {
    const i = index.get(u.id)
    if (i !== undefined) at[i] = u
  }
  return at
}

/** The fleet index of the listed upstream with the fewest in flight per worker, among `indexes`
 * (default all); -1 when none of them is listed. */
function leastLoaded (at, workers, indexes) {
  let best = -1
  let load = Infinity
  const n = indexes ? indexes.length : at.length
  for (let j = 0; j < n; j++) {
    const i = indexes ? indexes[j] : j
    if (at[i] === null) continue
    const l = at[i].inflight / workers[i]
    if (l < load) { load = l; best = i }
  }
  return best
}

/** A pick for a key cached on `set` (fleet indexes, or none): the least loaded listed one of them,
 * else (none, or all down) the least loaded listed upstream, told not to store the page. */
function pickFrom (at, workers, set, ctx) {
  const i = set ? leastLoaded(at, workers, set) : -1
  if (i >= 0) return at[i]
  ctx.noStore = true
  return at[leastLoaded(at, workers)]
}

/** The fleet's backend ids and their indexes, and its workers per backend. */
function fleetShape (fleet) {
  const ids = upstreamIds(fleet.upstreams)
  return { index: new Map(ids.map((id, i) => [id, i])), workers: perBackend(fleet.workers, ids.length) }
}

/**
 * The clairvoyant placement (see above) for the model's fleet at its offered rate.
 * @param {object} fleet the open-loop model's options (as runAt passes them), and optionally `names`: the
 *   routing keys of the pages in rank order, hottest first (default the model's `/page1` .. `/page{keys}`)
 * @returns {{ name: string, pick (list: object[], ctx: { key: string, noStore?: boolean }): object }}
 */
function createClairvoyant (fleet) {
  const homes = placementLimit(fleet).homes
  const rank = new Map((fleet.names || pageNames(fleet.keys)).map((key, r) => [key, r]))
  const { index, workers } = fleetShape(fleet)
  return {
    name: 'clairvoyant',
    pick (list, ctx) {
      return pickFrom(listedByIndex(list, index, workers.length), workers, homes[rank.get(ctx.key)], ctx)
    }
  }
}

/**
 * The counting learner (see above).
 * @param {object} fleet the open-loop model's options (`workers`, `cacheSize`, `upstreams`, and what
 *   `physicalLimit` reads)
 * @param {{ every?: number }} [options] picks between rankings (default 500)
 * @returns {{ name: string, pick (list: object[], ctx: { key: string, noStore?: boolean }): object,
 *   homes: Map<string, number[]> }}
 */
function createCountingLearner (fleet, { every = 500 } = {}) {
  const { index, workers } = fleetShape(fleet)
  const n = workers.length
  const slots = perBackend(fleet.cacheSize, n)
  const room = slots.reduce((a, b) => a + b, 0)
  // the share of the requests one backend's workers can serve as hits at the fleet's physical limit
  const limit = physicalLimit(fleet)
  const hitShare = (room > 0 ? workers.reduce((a, b) => a + b, 0) / n : 0) / (limit.rate / 1000 * fleet.hitMs)
  const counts = new Map()
  const homes = new Map() // key -> the backends (indexes) that cache it
  const load = new Float64Array(n) // counted requests of the keys each backend is home to
  const used = new Int32Array(n)
  let picks = 0

  function release (key, set) {
    homes.delete(key)
    for (const i of set) { used[i]--; load[i] -= counts.get(key) / set.length }
  }

  function place (key, k) {
    const set = []
    const c = counts.get(key)
    for (let j = 0; j < k; j++) {
      let best = -1
      for (let i = 0; i < n; i++) {
        if (used[i] >= slots[i] || set.includes(i)) continue
        if (best < 0 || load[i] / workers[i] < load[best] / workers[best]) best = i
      }
      if (best < 0) break
      set.push(best)
      used[best]++
      load[best] += c / k
    }
    if (set.length === 0) return
    // fewer free slots than replicas asked: the homes it got carry its count between them, as release takes it off
    if (set.length < k) for (const i of set) load[i] += c / set.length - c / k
    homes.set(key, set)
  }

  function rerank () {
    const sorted = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    // the top keys by count, each with its replicas: enough that none carries more than one backend can
    const want = new Map()
    let free = room
    for (const [key, c] of sorted) {
      if (free <= 0) break
      const k = Math.min(n, free, Math.max(1, Math.ceil(c / picks / hitShare)))
      want.set(key, k)
      free -= k
    }
    for (const [key, set] of homes) if (want.get(key) !== set.length) release(key, set)
    for (const [key, k] of want) if (!homes.has(key)) place(key, k)
  }

  return {
    name: 'counting',
    homes,
    pick (list, ctx) {
      counts.set(ctx.key, (counts.get(ctx.key) || 0) + 1)
      const set = homes.get(ctx.key)
      if (set) for (const i of set) load[i] += 1 / set.length
      if (++picks % every === 0 || picks <= 50) rerank()
      return pickFrom(listedByIndex(list, index, n), workers, set, ctx)
    }
  }
}

/** The references by name, as the model runner lists them beside the contenders: (random, now, fleet) => policy. */
const REFERENCES = {
  clairvoyant: (random, now, fleet) => createClairvoyant(fleet),
  counting: (random, now, fleet) => createCountingLearner(fleet)
}

module.exports = { createClairvoyant, createCountingLearner, REFERENCES }
