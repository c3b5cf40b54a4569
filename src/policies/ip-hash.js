'use strict'

/**
 * Client-address affinity by rendezvous (highest random weight, HRW) hashing.
 *
 * Sources: Thaler & Ravishankar, "Using name-based mappings to increase hit rates", IEEE/ACM ToN
 * 6(1), 1998 (rendezvous hashing); weighted form `score = w / -ln(h)` from Schindelhauer & Schomaker,
 * "Weighted distributed hash tables", SPAA 2005. The policy's name and its round-robin fallback follow
 * nginx `ip_hash` (`ngx_http_upstream_ip_hash_module.c`) and the IpHash strategy of docs/experiments.md, D.
 *
 * Each upstream scores `hash(id, clientAddress)`; the highest score wins. The same address goes to the
 * same upstream while the membership is unchanged; when an upstream joins, only the addresses it now
 * wins move (about 1/n of them) and no address moves between old members; when one leaves, only its
 * own addresses move. Unlike nginx (which hashes the first three octets of an IPv4 address) the whole
 * address is hashed; an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) counts as its IPv4 form.
 * A request without `ctx.clientAddress` is routed round-robin. Stateless apart from that cursor.
 *
 * Hash: FNV-1a 32 over UTF-16 code units (identical to byte-wise FNV-1a for ASCII), followed by the
 * murmur3 `fmix32` finalizer so that similar inputs ("a#1", "a#2") spread over the whole range.
 */

const { createRoundRobin } = require('./round-robin')
const { weightOf } = require('./weighted-round-robin')

const FNV_OFFSET = 0x811c9dc5
const FNV_PRIME = 0x01000193

/**
 * FNV-1a, 32 bits, over the string's UTF-16 code units.
 * @param {string} str
 * @param {number} [seed] starting state (default the FNV offset basis), to chain strings
 * @returns {number} unsigned 32-bit hash
 */
function fnv1a32 (str, seed = FNV_OFFSET) {
  let h = seed
  for (let i = 0; i < str.length; i++) {
    h ^= str.charCodeAt(i)
    h = Math.imul(h, FNV_PRIME)
  }
  return h >>> 0
}

/**
 * murmur3's 32-bit finalizer: full avalanche of a 32-bit value.
 * @param {number} h
 * @returns {number} unsigned 32-bit
 */
function fmix32 (h) {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/**
 * A well-mixed 32-bit hash of a string.
 * @param {string} str
 * @returns {number}
 */
function hash32 (str) {
  return fmix32(fnv1a32(str))
}

/**
 * Normalize a client address: IPv4-mapped IPv6 counts as IPv4.
 * @param {unknown} address
 * @returns {string | undefined}
 */
function normalizeAddress (address) {
  if (typeof address !== 'string' || address.length === 0) return undefined
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address
}

/**
 * The weighted rendezvous winner for `key` among `upstreams` (non-empty).
 * Exact score ties (astronomically rare) go to the smaller id, so list order never matters.
 * @template {{ id: string, weight?: number }} U
 * @param {readonly U[]} upstreams
 * @param {string} key
 * @returns {U}
 */
function rendezvous (upstreams, key) {
  const keyState = fnv1a32(key)
  let best
  let bestScore = -Infinity
  for (const u of upstreams) {
    // chain: hash(key) then "\0" then id, finalized; then map to (0, 1)
    const h = fmix32(fnv1a32(String(u.id), fnv1a32('\0', keyState)))
    const unit = (h + 0.5) / 4294967296
    const score = weightOf(u) / -Math.log(unit)
    if (score > bestScore || (score === bestScore && String(u.id) < String(best.id))) {
      best = u
      bestScore = score
    }
  }
  return best
}

/**
 * Create an ip-hash policy: the same `ctx.clientAddress` goes to the same upstream (weighted by
 * `upstream.weight`, default 1); no address → round-robin.
 * @param {object} [options] unused; accepted for a uniform factory signature
 * @returns {import('./types').Policy}
 */
function createIpHash (options = {}) {
  const fallback = createRoundRobin()
  let hashed = 0
  let unaddressed = 0
  return {
    name: 'ip-hash',
    pick (upstreams, ctx) {
      if (!upstreams || upstreams.length === 0) return undefined
      const address = normalizeAddress(ctx && ctx.clientAddress)
      if (address === undefined) {
        unaddressed++
        return fallback.pick(upstreams)
      }
      hashed++
      return upstreams.length === 1 ? upstreams[0] : rendezvous(upstreams, address)
    },
    snapshot () {
      return { hashed, unaddressed }
    }
  }
}

module.exports = { createIpHash, fnv1a32, fmix32, hash32, rendezvous, normalizeAddress }
