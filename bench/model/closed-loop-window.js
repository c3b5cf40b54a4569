'use strict'

/**
 * The statistics of one window of requests in the closed-loop model (bench/model/closed-loop.js):
 * hit rate, requests per upstream, balance and how concentrated each key is on its top two
 * upstreams. Pure.
 */

/**
 * Statistics over one window of requests: `record` each pick, count `dropped` ones, then `summary`.
 * @returns {{ dropped: number, record (id: string, key: string, hit: boolean): void,
 *   summary (present: string[]): object }}
 */
function createWindow () {
  let requests = 0
  let hits = 0
  const counts = new Map() // id -> n
  const perKey = new Map() // key -> Map(id -> n)
  return {
    dropped: 0,
    record (id, key, hit) {
      requests++
      if (hit) hits++
      counts.set(id, (counts.get(id) || 0) + 1)
      let m = perKey.get(key)
      if (!m) perKey.set(key, (m = new Map()))
      m.set(id, (m.get(id) || 0) + 1)
    },
    /** @param {string[]} present ids eligible at the end of the window */
    summary (present) {
      const all = new Set([...present, ...counts.keys()])
      const countObj = {}
      for (const id of all) countObj[id] = counts.get(id) || 0
      // balance over the upstreams present at the end of the window (a removed one's tail is not load)
      const presentCounts = present.map((id) => counts.get(id) || 0)
      const mean = presentCounts.reduce((a, b) => a + b, 0) / Math.max(1, presentCounts.length)
      const balance = mean > 0 ? Math.max(...presentCounts) / mean : 0
      // per key: share of its requests served by its top 2 upstreams, and how many upstreams served it
      let minTop2 = 1
      let weighted = 0
      let keysOk = 0
      const servedBy = {}
      for (const [key, m] of perKey) {
        const ns = [...m.values()].sort((a, b) => b - a)
        const total = ns.reduce((a, b) => a + b, 0)
        const top2 = (ns[0] + (ns[1] || 0)) / total
        minTop2 = Math.min(minTop2, top2)
        weighted += top2 * total
        if (top2 >= 0.9) keysOk++
        servedBy[key] = Object.fromEntries(m)
      }
      return {
        requests,
        hits,
        hitRate: requests ? hits / requests : 0,
        dropped: this.dropped,
        counts: countObj,
        balance,
        top2: {
          min: perKey.size ? minTop2 : 1, // the worst key's top-2 share
          mean: requests ? weighted / requests : 1, // request-weighted top-2 share
          keysOver90: perKey.size ? keysOk / perKey.size : 1 // fraction of keys with top-2 share >= 0.9
        },
        servedBy
      }
    }
  }
}

module.exports = { createWindow }
