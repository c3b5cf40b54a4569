#!/usr/bin/env node
'use strict'

/**
 * nginx's `hash` upstream (ngx_http_upstream_hash_module, nginx 1.22), replayed in JavaScript to
 * explain the hit rate of the bench's nginx arms: which backend each page goes to, and so how many
 * of the 25 pages the 7 backends' 4-page caches can hold.
 *
 * - `hash KEY consistent`: a ring of 160 points per server (weight 1), each point
 *   crc32(HOST "\0" PORT PREV_HASH) as in Cache::Memcached::Fast, keyed by the server's address as
 *   written in the config. The bench's backends listen on ephemeral ports, so the ring, and with it
 *   the hit rate, changes from run to run.
 * - `hash KEY`: ((crc32(KEY) >> 16) & 0x7fff) % servers, over the server list in config order
 *   (first try; rehashing only happens when that server is down): the ports play no part.
 *
 * `node bench/peers/nginx-hash.js [draws]` prints the steady-state hit rate of both over random port sets.
 */

const { DEFAULTS } = require('../../src/config/defaults')

const CRC_TABLE = new Int32Array(256)
for (let n = 0; n < 256; n++) {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  CRC_TABLE[n] = c
}

/** Running CRC-32 (zlib's polynomial) over bytes, without the final xor, like ngx_crc32_update. */
function crcUpdate (crc, bytes) {
  for (const b of bytes) crc = CRC_TABLE[(crc ^ b) & 0xff] ^ (crc >>> 8)
  return crc >>> 0
}

/** @param {string | Uint8Array} data @returns {number} CRC-32 of the bytes (ngx_crc32_long) */
function crc32 (data) {
  return (crcUpdate(0xffffffff, typeof data === 'string' ? Buffer.from(data) : data) ^ 0xffffffff) >>> 0
}

/**
 * The consistent-hash ring nginx builds for an upstream of weight-1 servers.
 * @param {string[]} servers addresses as written in `server` lines, e.g. "127.0.0.1:9101"
 * @returns {Array<[number, number]>} points [hash, server index], sorted, duplicates dropped
 */
function chashRing (servers) {
  const points = []
  servers.forEach((server, index) => {
    const colon = server.lastIndexOf(':')
    const host = colon < 0 ? server : server.slice(0, colon)
    const port = colon < 0 ? '' : server.slice(colon + 1)
    const base = crcUpdate(crcUpdate(crcUpdate(0xffffffff, Buffer.from(host)), [0]), Buffer.from(port))
    const prev = Buffer.alloc(4) // the previous point's hash, little-endian (zero for the first)
    for (let j = 0; j < 160; j++) {
      const hash = (crcUpdate(base, prev) ^ 0xffffffff) >>> 0
      points.push([hash, index])
      prev.writeUInt32LE(hash)
    }
  })
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  return points.filter((p, i) => i === 0 || p[0] !== points[i - 1][0])
}

/** @returns {number} the server index `hash KEY consistent` picks: the first point at or after crc32(key) */
function chashPick (ring, key) {
  const h = crc32(key)
  let lo = 0
  let hi = ring.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (ring[mid][0] < h) lo = mid + 1
    else hi = mid
  }
  return ring[lo === ring.length ? 0 : lo][1]
}

/** @returns {number} the server index plain `hash KEY` picks first among n weight-1 servers */
function hashPick (n, key) {
  return ((crc32(key) >>> 16) & 0x7fff) % n
}

/**
 * Steady-state hit rate of backends with LRU caches of `cachePages` under uniform requests over the
 * pages: a backend given k pages hits min(k, C) / k of its requests, which are k / pages of all.
 * @param {number[]} assignment backend index per page
 * @param {number} backends
 * @param {number} cachePages
 * @returns {number}
 */
function steadyHitRate (assignment, backends, cachePages) {
  const counts = new Array(backends).fill(0)
  for (const b of assignment) counts[b]++
  return counts.reduce((a, k) => a + Math.min(k, cachePages), 0) / assignment.length
}

/** The bench's page paths: /page1.html .. /page<n>.html. */
const pagePaths = (n) => Array.from({ length: n }, (_, i) => `/page${i + 1}.html`)

function main ({ draws = 2000, backends = DEFAULTS.fleet.count, pages = 25, cachePages = 4 } = {}) {
  const keys = pagePaths(pages)
  const servers = (ports) => ports.map((p) => `127.0.0.1:${p}`)
  const consistentHit = (ports) => {
    const ring = chashRing(servers(ports))
    return steadyHitRate(keys.map((k) => chashPick(ring, k)), backends, cachePages)
  }
  const hist = new Map()
  let sum = 0
  for (let d = 0; d < draws; d++) {
    const ports = new Set()
    while (ports.size < backends) ports.add(32768 + Math.floor(Math.random() * 28232)) // Linux's ephemeral range
    const h = consistentHit([...ports])
    sum += h
    hist.set(h, (hist.get(h) || 0) + 1)
  }
  const fixed = Array.from({ length: backends }, (_, i) => 9101 + i)
  console.log(`${backends} backends, ${pages} pages, ${cachePages} cached per backend; steady-state hit rate:`)
  console.log('hash $request_uri (over the server list): ' +
    `${steadyHitRate(keys.map((k) => hashPick(backends, k)), backends, cachePages).toFixed(3)} on any ports`)
  console.log(`hash $request_uri consistent, ports 9101..${9100 + backends}: ${consistentHit(fixed).toFixed(3)}`)
  console.log(`hash $request_uri consistent, ${draws} random ephemeral port sets: mean ${(sum / draws).toFixed(3)}`)
  for (const [h, n] of [...hist].sort((a, b) => a[0] - b[0])) {
    console.log(`  ${h.toFixed(2)}  ${(100 * n / draws).toFixed(1)} %`)
  }
}

if (require.main === module) main({ draws: Number(process.argv[2]) || 2000 })

module.exports = { crc32, chashRing, chashPick, hashPick, steadyHitRate, pagePaths }
