'use strict'

const { createIpHash, normalizeAddress } = require('../src/policies/ip-hash')
const { upstreams, drive, shares } = require('./policy-driver')

const ids = (n) => Array.from({ length: n }, (_, i) => `u${i}`)
const addresses = (n) => Array.from({ length: n }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)

/** Where each address goes, for a given list. */
function assign (pool, addrs) {
  const policy = createIpHash()
  return addrs.map((clientAddress) => policy.pick(pool, { clientAddress }).id)
}

const exact = [
  {
    name: 'the same address always goes to the same upstream',
    upstreams: ['a', 'b', 'c'],
    requests: Array(6).fill({ clientAddress: '192.0.2.7' }),
    same: true
  },
  {
    name: 'no address: round-robin',
    upstreams: ['a', 'b', 'c'],
    requests: [{}, { clientAddress: '' }, { key: '/x' }, {}],
    expected: ['a', 'b', 'c', 'a']
  }
]

const distributions = [
  { name: 'addresses spread evenly over three upstreams', upstreams: ['a', 'b', 'c'], addresses: 10000, expectedRatios: [0.333, 0.333, 0.333], tolerance: 0.02 },
  { name: 'weights 3, 1 take 3/4 and 1/4 of the addresses', upstreams: [{ id: 'a', weight: 3 }, { id: 'b', weight: 1 }], addresses: 10000, expectedRatios: [0.75, 0.25], tolerance: 0.02 }
]

describe('ip-hash', () => {
  test.each(exact)('$name', ({ upstreams: specs, requests, expected, same }) => {
    const picked = drive(createIpHash(), upstreams(specs), { requests })
    if (expected) expect(picked).toEqual(expected)
    if (same) expect(new Set(picked).size).toBe(1)
  })

  test.each(distributions)('$name', ({ upstreams: specs, addresses: n, expectedRatios, tolerance }) => {
    const pool = upstreams(specs)
    const got = shares(assign(pool, addresses(n)), pool.map((u) => u.id))
    got.forEach((share, i) => expect(Math.abs(share - expectedRatios[i])).toBeLessThanOrEqual(tolerance))
  })

  test('adding an 8th upstream to 7 moves about 1/8 of 10,000 addresses, all of them to the newcomer', () => {
    const addrs = addresses(10000)
    const before = assign(upstreams(ids(7)), addrs)
    const after = assign(upstreams(ids(8)), addrs)
    const moved = addrs.filter((_, i) => before[i] !== after[i])
    expect(Math.abs(moved.length / addrs.length - 1 / 8)).toBeLessThanOrEqual(0.015)
    addrs.forEach((_, i) => { if (before[i] !== after[i]) expect(after[i]).toBe('u7') })
  })

  test('removing an upstream moves only its own addresses', () => {
    const addrs = addresses(5000)
    const before = assign(upstreams(ids(5)), addrs)
    const after = assign(upstreams(ids(5).filter((id) => id !== 'u2')), addrs)
    addrs.forEach((_, i) => { if (before[i] !== 'u2') expect(after[i]).toBe(before[i]) })
  })

  test('the list order does not matter', () => {
    const addrs = addresses(2000)
    expect(assign(upstreams(ids(6).reverse()), addrs)).toEqual(assign(upstreams(ids(6)), addrs))
  })

  test.each([
    ['::ffff:192.0.2.7', '192.0.2.7'],
    ['192.0.2.7', '192.0.2.7'],
    ['2001:db8::1', '2001:db8::1'],
    ['::ffff:abcd', '::ffff:abcd'],
    ['', undefined],
    [undefined, undefined],
    [42, undefined]
  ])('address %p normalizes to %p', (input, output) => {
    expect(normalizeAddress(input)).toBe(output)
  })

  test('an IPv4-mapped IPv6 client goes where its IPv4 form goes', () => {
    const pool = upstreams(ids(9))
    const policy = createIpHash()
    for (const a of addresses(200)) {
      expect(policy.pick(pool, { clientAddress: `::ffff:${a}` })).toBe(policy.pick(pool, { clientAddress: a }))
    }
  })
})
