'use strict'

/**
 * Which backends served each page, from the client's X-Server counts or, with wrk, which cannot count
 * them, from the backends' own (`GET /_stats?keys=1`), and how many of them carry each hot page: a page
 * too hot for one backend shows up served by several (replicated). Pure functions, no I/O.
 */

/** A backend counts as a replica of a page when it served at least this share of its requests. */
const REPLICA_SHARE = 0.05

/**
 * Requests per page per backend between two fleet snapshots taken with keys.
 * @param {Array<{ id: string, served?: Record<string, number> }> | undefined} before
 * @param {Array<{ id: string, served?: Record<string, number> }>} after
 * @returns {Record<string, Record<string, number>>} page path -> backend id -> requests
 */
function servedBetween (before, after) {
  const out = {}
  after.forEach((b, i) => {
    const was = (before && before[i] && before[i].served) || {}
    for (const [page, n] of Object.entries(b.served || {})) {
      const d = n - (was[page] || 0)
      if (d > 0) (out[page] || (out[page] = {}))[b.id] = d
    }
  })
  return out
}

/**
 * The hottest pages of a window with the backends that served them.
 * @param {Record<string, Record<string, number>>} keys page -> backend -> requests
 * @param {{ top?: number, replicaShare?: number }} [options]
 * @returns {Array<{ page: string, requests: number, share: number, replicas: number, backends: Record<string, number>
 *   }>}
 *   hottest first; `share` of all requests, `replicas` backends with at least `replicaShare` of the page's
 */
function hotPages (keys, { top = 10, replicaShare = REPLICA_SHARE } = {}) {
  const rows = Object.entries(keys).map(([page, backends]) => {
    const requests = Object.values(backends).reduce((a, b) => a + b, 0)
    return { page, requests, backends }
  })
  const total = rows.reduce((a, r) => a + r.requests, 0)
  rows.sort((a, b) => b.requests - a.requests || (a.page < b.page ? -1 : 1))
  return rows.slice(0, top).map((r) => ({
    page: r.page,
    requests: r.requests,
    share: total ? r.requests / total : NaN,
    replicas: Object.values(r.backends).filter((n) => n >= replicaShare * r.requests).length,
    backends: Object.fromEntries(Object.entries(r.backends).sort((a, b) => b[1] - a[1]))
  }))
}

module.exports = { servedBetween, hotPages }
