'use strict'

/**
 * The replay of nginx's `hash` upstream (bench/peers/nginx-hash.js): CRC-32, the ring, the picks, the
 * steady-state hit rate, and, with nginx installed, the very backends nginx picks for the pages.
 */

const { crc32, chashRing, chashPick, hashPick, steadyHitRate, pagePaths } = require('../bench/peers/nginx-hash')
const { PeerProcess } = require('../bench/peers/peers')
const { startFleet } = require('../servers/fleet')
const { request, describeIfInstalled } = require('./helper')

jest.setTimeout(30000)

describe('nginx hash replay', () => {
  test('CRC-32 is zlib\'s', () => {
    expect(crc32('123456789')).toBe(0xcbf43926)
    expect(crc32('')).toBe(0)
    expect(crc32(Buffer.from('The quick brown fox jumps over the lazy dog'))).toBe(0x414fa339)
  })

  test('the consistent ring has 160 points per server, sorted, and depends on the ports', () => {
    const a = chashRing(['127.0.0.1:9101', '127.0.0.1:9102'])
    expect(a).toHaveLength(320)
    expect(a.every((p, i) => i === 0 || p[0] > a[i - 1][0])).toBe(true)
    expect(a.filter((p) => p[1] === 1)).toHaveLength(160)
    const b = chashRing(['127.0.0.1:9101', '127.0.0.1:9103'])
    expect(b.filter((p) => p[1] === 0)).toEqual(a.filter((p) => p[1] === 0)) // a server's points are its own
    expect(b.filter((p) => p[1] === 1)).not.toEqual(a.filter((p) => p[1] === 1))
  })

  test('a pick is the first point at or after the key\'s hash, wrapping around', () => {
    const ring = [[10, 0], [20, 1], [30, 2]]
    // keys whose crc32 falls before 10, between, and past the last point
    const key = (pred) => { for (let i = 0; ; i++) if (pred(crc32(`k${i}`))) return `k${i}` }
    expect(chashPick([[0xffffffff, 3], ...ring].sort((x, y) => x[0] - y[0]), key((h) => h > 30))).toBe(3)
    expect(chashPick(ring, key((h) => h > 30))).toBe(0)
  })

  test('the plain hash picks by crc32 bits over the server count, whatever the ports', () => {
    const keys = pagePaths(25)
    expect(keys[0]).toBe('/page1.html')
    const picks = keys.map((k) => hashPick(7, k))
    expect(picks.every((p) => p >= 0 && p < 7)).toBe(true)
    expect(picks).toEqual(keys.map((k) => ((crc32(k) >>> 16) & 0x7fff) % 7))
  })

  test('steady-state hit rate: a backend with k pages and C cache slots hits min(k, C) of them', () => {
    expect(steadyHitRate([0, 0, 1, 1], 2, 2)).toBe(1)
    expect(steadyHitRate([0, 0, 0, 0, 1], 2, 2)).toBe(0.6)
    // the bench's cache scenario: nginx's plain hash keeps 23 of the 25 pages in cache, on any ports
    expect(steadyHitRate(pagePaths(25).map((k) => hashPick(7, k)), 7, 4)).toBe(0.92)
  })
})

describeIfInstalled(['nginx'], 'nginx picks what the replay says', () => {
  let fleet
  beforeAll(async () => { fleet = await startFleet({ count: 7, cachePages: 4, missMs: 0, basePort: 0, host: '127.0.0.1' }) })
  afterAll(async () => { if (fleet) await fleet.close() })

  test.each([['nginx-uri', (servers, key) => hashPick(servers.length, key)],
    ['nginx-uri-consistent', (servers, key) => chashPick(chashRing(servers), key)]])('%s', async (label, pick) => {
    const backends = fleet.backends.map(({ id, url }) => ({ id, url }))
    const servers = backends.map((b) => new URL(b.url).host)
    const peer = new PeerProcess(label)
    try {
      const { url } = await peer.start({ backends })
      for (const key of pagePaths(25)) {
        const res = await request(`${url}${key}`)
        expect(`${key} ${res.headers['x-server']}`).toBe(`${key} ${backends[pick(servers, key)].id}`)
      }
    } finally {
      await peer.close()
    }
  })
})
