'use strict'

/**
 * A backend's requests per page path (`GET /_stats?keys=1`), in a table of at most `cap` paths
 * whatever the number of distinct URLs it is sent: the least recently served path goes when a new
 * one comes in beyond the cap (its count is dropped, and starts again at 1 if it comes back).
 * A page served often stays in the table, so the counts of the hot pages, which the bench's
 * replication report reads, stay exact; only pages that were served are counted (the caller
 * does not count 404s), so the table holds paths that exist, not what clients made up.
 *
 * Memory: O(cap) entries, each a path the size of a file name under the root.
 */

/** Page paths counted one by one by default (far above the 25 committed pages and the bench's 200). */
const DEFAULT_STATS_KEYS = 4096

/**
 * A copy of `s` that holds no larger string alive: V8 may make a substring (the path of a request
 * target with a long query string) a slice that keeps its whole parent in memory.
 * @param {string} s
 * @returns {string}
 */
function ownCopy (s) {
  return (' ' + s).slice(1)
}

/**
 * @param {number} cap page paths kept (integer >= 1)
 * @returns {{ count: (path: string) => void, snapshot: () => Record<string, number>,
 *   readonly size: number, readonly dropped: number, readonly cap: number }}
 *   `dropped`: paths pushed out by the cap since the start
 */
function createServedCounts (cap) {
  if (!Number.isInteger(cap) || cap < 1) {
    throw new TypeError(`served counts: cap must be a positive integer, got ${cap}`)
  }
  /** @type {Map<string, number>} in recency order, least recently served first */
  const counts = new Map()
  let dropped = 0
  return {
    /** Count one request served for `path` (it becomes the most recently served). */
    count (path) {
      const n = counts.get(path)
      if (n !== undefined) {
        counts.delete(path)
        counts.set(path, n + 1)
        return
      }
      counts.set(ownCopy(path), 1)
      if (counts.size > cap) {
        counts.delete(counts.keys().next().value)
        dropped++
      }
    },
    /** @returns {Record<string, number>} path -> requests served since it entered the table */
    snapshot () {
      return Object.fromEntries(counts)
    },
    get size () { return counts.size },
    get dropped () { return dropped },
    get cap () { return cap }
  }
}

module.exports = { createServedCounts, DEFAULT_STATS_KEYS }
