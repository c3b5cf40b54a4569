'use strict'

/**
 * The backend's own bounded page cache: an LRU (lru-cache) of at most `capacity` page bodies with
 * the counters the experiment reads (hits, misses, evictions, and what no-store requests left alone).
 *
 * Why a cache of our own: node-static has none (its `cache` option only sets Cache-Control), and
 * the OS page cache is shared by every backend on one machine, so without a per-backend bounded
 * cache every backend is equally warm and routing cannot show any specialization effect.
 */

require('./fleet-packages').assertFleetPackages()
const { LRUCache } = require('lru-cache')

/**
 * @typedef {object} CachedPage
 * @property {Buffer} body the full response body
 * @property {Record<string, string>} headers the entity headers to replay (content-type, etag, last-modified)
 */

/**
 * Create a page cache. A capacity of 0 disables caching: every lookup misses, nothing is kept.
 * With `maxBytes` the cache is bounded by the bytes of its bodies instead (lru-cache's maxSize,
 * each page counting its body's length): the least recently used pages go until the new one fits,
 * and a page larger than the whole cache is not kept.
 *
 * @param {number} capacity maximum number of pages kept (integer >= 0); ignored with maxBytes
 * @param {{ maxBytes?: number }} [options] bound in bytes (integer > 0) instead of pages
 * @returns {{ lookup: (key: string, noStore?: boolean) => CachedPage|undefined,
 *   store: (key: string, page: CachedPage) => void, stats: () => PageCacheStats }}
 */
function createPageCache (capacity, { maxBytes } = {}) {
  let hits = 0
  let misses = 0
  let evictions = 0
  let noStoreHits = 0
  let notStored = 0
  // 'evict' = pushed out by capacity; 'set' (overwrite) and 'delete' are not evictions.
  const dispose = (_page, _key, reason) => { if (reason === 'evict') evictions++ }
  let lru
  if (maxBytes > 0) {
    lru = new LRUCache({ maxSize: maxBytes, sizeCalculation: (page) => Math.max(1, page.body.length), dispose })
  } else if (capacity > 0) lru = new LRUCache({ max: capacity, dispose })

  return {
    /**
     * Look a page up, counting a hit or a miss and refreshing its recency on a hit. For a request
     * that must not be stored (`Cache-Control: no-store`) a hit leaves the recency as it was (it
     * counts in `noStoreHits` too) and a miss counts in `notStored`: the caller serves the page
     * without calling store().
     *
     * @param {string} key cache key (the page path, e.g. "/page1.html")
     * @param {boolean} [noStore=false] the request carries `Cache-Control: no-store`
     * @returns {CachedPage|undefined} the page, or undefined on a miss
     */
    lookup (key, noStore = false) {
      const page = lru && (noStore ? lru.peek(key) : lru.get(key))
      if (page) {
        hits++
        if (noStore) noStoreHits++
      } else {
        misses++
        if (noStore) notStored++
      }
      return page
    },
    /**
     * Keep a page (may evict the least recently used one).
     *
     * @param {string} key cache key
     * @param {CachedPage} page the page
     */
    store (key, page) {
      if (lru) lru.set(key, page)
    },
    /** @returns {PageCacheStats} counters and contents, most recently used key first */
    stats () {
      const cachedKeys = lru ? [...lru.keys()] : []
      let cachedBytes = 0
      if (lru) for (const page of lru.values()) cachedBytes += page.body.length
      return { hits, misses, evictions, noStoreHits, notStored, cachedKeys, cachedBytes }
    }
  }
}

/**
 * @typedef {object} PageCacheStats
 * @property {number} hits lookups that found the page
 * @property {number} misses lookups that did not
 * @property {number} evictions pages pushed out by the capacity
 * @property {number} noStoreHits hits of no-store lookups (recency left as it was; counted in `hits` too)
 * @property {number} notStored misses of no-store lookups (the page served, not kept; counted in `misses` too)
 * @property {string[]} cachedKeys most recently used first
 * @property {number} cachedBytes total bytes of cached bodies
 */

module.exports = { createPageCache }
