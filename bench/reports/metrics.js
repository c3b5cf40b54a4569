'use strict'

/**
 * Figures derived from snapshots: hit rates from the backends' `/_stats` counters, the
 * specialization index from per-key per-backend counts, the balancer's CPU per 10k requests.
 * Pure functions, no I/O.
 */

/**
 * @typedef {{ id: string, requests: number, hits: number, misses: number, evictions: number }} BackendStats
 */

function delta (after, before, field) {
  return (after[field] || 0) - ((before && before[field]) || 0)
}

/**
 * Overall hit rate between two fleet snapshots (arrays of `/_stats`, same order).
 * @param {BackendStats[] | undefined} before
 * @param {BackendStats[]} after
 * @returns {number} hits / (hits + misses), NaN when no page was served
 */
function hitRate (before, after) {
  let hits = 0
  let total = 0
  after.forEach((b, i) => {
    const h = delta(b, before && before[i], 'hits')
    hits += h
    total += h + delta(b, before && before[i], 'misses')
  })
  return total ? hits / total : NaN
}

/**
 * Per-backend figures between two snapshots.
 * @param {BackendStats[] | undefined} before
 * @param {BackendStats[]} after
 * @param {Record<string, number>} [clientCounts] responses per X-Server seen by the client
 * @returns {Array<{ id: string, requests: number, share: number, hits: number, misses: number, hitRate: number,
 *   evictions: number, clientRequests: number }>}
 */
function perBackend (before, after, clientCounts = {}) {
  const rows = after.map((b, i) => {
    const hits = delta(b, before && before[i], 'hits')
    const misses = delta(b, before && before[i], 'misses')
    return {
      id: b.id,
      requests: hits + misses,
      share: 0,
      hits,
      misses,
      hitRate: hits + misses ? hits / (hits + misses) : NaN,
      evictions: delta(b, before && before[i], 'evictions'),
      clientRequests: clientCounts[b.id] || 0
    }
  })
  const total = rows.reduce((a, r) => a + r.requests, 0)
  for (const r of rows) r.share = total ? r.requests / total : NaN
  return rows
}

/**
 * Specialization index: the mean over keys of the share of the key's requests served by the
 * backend that served it most. 1 when every key always goes to one backend; 1/n for an even
 * spread over n backends (round-robin).
 * @param {Record<string, Record<string, number>>} keys per key, requests per backend
 * @returns {number} NaN when there are no keys
 */
function specialization (keys) {
  const shares = []
  for (const counts of Object.values(keys)) {
    const values = Object.values(counts)
    const total = values.reduce((a, b) => a + b, 0)
    if (total) shares.push(Math.max(...values) / total)
  }
  return shares.length ? shares.reduce((a, b) => a + b, 0) / shares.length : NaN
}

/**
 * Balancer CPU-seconds per 10,000 requests.
 * @param {{ user: number, system: number }} before process.cpuUsage(), microseconds
 * @param {{ user: number, system: number }} after
 * @param {number} requests requests served in between
 * @returns {number}
 */
function cpuPer10k (before, after, requests) {
  if (!requests) return NaN
  return cpuSeconds(before, after) * 10000 / requests
}

/**
 * CPU-seconds (user + system) between two `process.cpuUsage()` readings.
 * @param {{ user: number, system: number }} before microseconds
 * @param {{ user: number, system: number }} after
 * @returns {number}
 */
function cpuSeconds (before, after) {
  return ((after.user - before.user) + (after.system - before.system)) / 1e6
}

/**
 * The balancer's own counters for a run record (learning and measured phases together).
 * `errors` counts what went wrong on the balancer's side: failed upstream attempts of every kind
 * (a retried one included) plus requests no upstream could take.
 *
 * @param {{ requests: number, retries: number, noUpstream: number,
 *   failures: { connect: number, timeout: number, stream: number } } | undefined} stats the balancer's stats()
 * @returns {{ requests: number, retries: number, failures: { connect: number, timeout: number, stream: number },
 *   noUpstream: number, errors: number } | undefined} undefined when there are no stats
 */
function balancerCounts (stats) {
  if (!stats) return undefined
  const { connect, timeout, stream } = stats.failures
  return {
    requests: stats.requests,
    retries: stats.retries,
    failures: { connect, timeout, stream },
    noUpstream: stats.noUpstream,
    errors: connect + timeout + stream + stats.noUpstream
  }
}

/**
 * The service times the backends measured between two snapshots (backends with a finite number of
 * workers report the total ms their workers spent on hits and on misses, issue 28), summed over the
 * fleet, over the responses that finished (`hitServiceCount`, `missServiceCount`), and the longest
 * queue any backend has had since it started.
 * @param {Array<object> | undefined} before
 * @param {Array<object>} after `/_stats` of each backend, with `hitServiceTotalMs` and `missServiceTotalMs`
 * @returns {{ hits: number, misses: number, hitTotalMs: number, missTotalMs: number, hitMs: number, missMs: number,
 *   maxQueued: number } | null} null when the backends do not report service times
 */
function serviceTimes (before, after) {
  const reports = (b) => Number.isFinite(b.hitServiceTotalMs) && Number.isFinite(b.missServiceTotalMs)
  if (!after.length || !after.every(reports)) return null
  const sum = (field) => after.reduce((a, b, i) => a + delta(b, before && before[i], field), 0)
  // the responses behind the totals (those that finished); backends without these counts: hits and misses
  const counted = after.every((b) => Number.isFinite(b.hitServiceCount) && Number.isFinite(b.missServiceCount))
  const hits = sum(counted ? 'hitServiceCount' : 'hits')
  const misses = sum(counted ? 'missServiceCount' : 'misses')
  const hitTotalMs = sum('hitServiceTotalMs')
  const missTotalMs = sum('missServiceTotalMs')
  return {
    hits,
    misses,
    hitTotalMs,
    missTotalMs,
    hitMs: hits ? hitTotalMs / hits : NaN,
    missMs: misses ? missTotalMs / misses : NaN,
    maxQueued: Math.max(0, ...after.map((b) => b.maxQueued).filter(Number.isFinite))
  }
}

module.exports = { hitRate, perBackend, specialization, cpuPer10k, cpuSeconds, balancerCounts, serviceTimes }
