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
 * murmur3 `fmix32` finalizer so that similar inputs ("a#1", "a#2") spread over the whole range
 * (both in `./shared.js`, which chash-bounded uses too).
 */

const { checkOptions, createRotation, weightOf, fnv1a32, fmix32 } = require('./shared')

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
 * @param {object} [options] none: any key is an error
 * @returns {import('./types').Policy}
 */
function createIpHash (options = {}) {
  checkOptions('ip-hash', options, [])
  const fallback = createRotation()
  let hashed = 0
  let unaddressed = 0
  return {
    name: 'ip-hash',
    pick (upstreams, ctx) {
      if (!upstreams || upstreams.length === 0) return undefined
      const address = normalizeAddress(ctx && ctx.clientAddress)
      if (address === undefined) {
        unaddressed++
        return fallback.next(upstreams)
      }
      hashed++
      return upstreams.length === 1 ? upstreams[0] : rendezvous(upstreams, address)
    },
    snapshot () {
      return { hashed, unaddressed }
    }
  }
}

module.exports = { createIpHash, rendezvous, normalizeAddress }
