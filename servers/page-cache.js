'use strict'

/**
 * The backend's own bounded page cache: an LRU (lru-cache) of at most `capacity` page bodies with
 * the counters the experiment reads (hits, misses, evictions).
 *
 * Why a cache of our own: node-static has none (its `cache` option only sets Cache-Control), and
 * the OS page cache is shared by every backend on one machine, so without a per-backend bounded
 * cache every backend is equally warm and routing cannot show any specialization effect.
 */

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
 * @returns {{ lookup: (key: string) => CachedPage|undefined, store: (key: string, page: CachedPage) => void,
 *   stats: () => { hits: number, misses: number, evictions: number, cachedKeys: string[], cachedBytes: number } }}
 */
function createPageCache (capacity, { maxBytes } = {}) {
  let hits = 0
  let misses = 0
  let evictions = 0
  // 'evict' = pushed out by capacity; 'set' (overwrite) and 'delete' are not evictions.
  const dispose = (_page, _key, reason) => { if (reason === 'evict') evictions++ }
  let lru
  if (maxBytes > 0) lru = new LRUCache({ maxSize: maxBytes, sizeCalculation: (page) => Math.max(1, page.body.length), dispose })
  else if (capacity > 0) lru = new LRUCache({ max: capacity, dispose })

  return {
    /**
     * Look a page up, counting a hit or a miss and refreshing its recency on a hit.
     *
     * @param {string} key cache key (the page path, e.g. "/page1.html")
     * @returns {CachedPage|undefined} the page, or undefined on a miss
     */
    lookup (key) {
      const page = lru && lru.get(key)
      if (page) hits++
      else misses++
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
    /** @returns {{ hits: number, misses: number, evictions: number, cachedKeys: string[], cachedBytes: number }} counters and contents, most recently used key first */
    stats () {
      const cachedKeys = lru ? [...lru.keys()] : []
      let cachedBytes = 0
      if (lru) for (const page of lru.values()) cachedBytes += page.body.length
      return { hits, misses, evictions, cachedKeys, cachedBytes }
    }
  }
}

module.exports = { createPageCache }
