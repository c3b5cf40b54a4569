'use strict'

const { createChashBounded } = require('../src/policies/chash-bounded')
const { upstreams, drive, shares } = require('./policy-driver')

const ids = (n) => Array.from({ length: n }, (_, i) => `u${i}`)
const keys = (n) => Array.from({ length: n }, (_, i) => `/page-${i}.html`)

/** Where each key goes on an idle pool (no bound applies). */
function assign (pool, ks, options) {
  const policy = createChashBounded(options)
  return ks.map((key) => policy.pick(pool, { key }).id)
}

const distributions = [
  { name: 'keys spread over five upstreams (100 virtual nodes each)', upstreams: ids(5), keys: 10000, expectedRatios: [0.2, 0.2, 0.2, 0.2, 0.2], tolerance: 0.04 },
  { name: 'weights 3, 1 get 3/4 and 1/4 of the keys', upstreams: [{ id: 'a', weight: 3 }, { id: 'b', weight: 1 }], keys: 10000, expectedRatios: [0.75, 0.25], tolerance: 0.04 }
]

// a hot key with every request held: the bound spreads it, c sets how far
const hotKey = [
  { name: 'c = 1.25: the owner keeps most, nobody exceeds ceil(c × total / n)', options: {}, c: 1.25, spreads: true },
  { name: 'c = 2: the owner keeps more before spilling', options: { balanceFactor: 2 }, c: 2, spreads: true },
  { name: 'c = Infinity: plain consistent hashing, everything on the owner', options: { balanceFactor: Infinity }, c: Infinity, spreads: false }
]

describe('chash-bounded', () => {
  test('the same key goes to the same upstream while loads allow', () => {
    const picked = drive(createChashBounded(), upstreams(ids(4)), { picks: 50, ctx: () => ({ key: '/index.html' }) })
    expect(new Set(picked).size).toBe(1)
  })

  test('no key: round-robin', () => {
    const picked = drive(createChashBounded(), upstreams(['a', 'b', 'c']), { requests: [{}, { clientAddress: '10.0.0.1' }, {}, {}] })
    expect(picked).toEqual(['a', 'b', 'c', 'a'])
  })

  test.each(distributions)('$name', ({ upstreams: specs, keys: n, expectedRatios, tolerance }) => {
    const pool = upstreams(specs)
    const got = shares(assign(pool, keys(n)), pool.map((u) => u.id))
    got.forEach((share, i) => expect(Math.abs(share - expectedRatios[i])).toBeLessThanOrEqual(tolerance))
  })

  test.each(hotKey)('hot key, $name', ({ options, c, spreads }) => {
    const pool = upstreams(ids(4))
    const total = 100
    const picked = drive(createChashBounded(options), pool, { picks: total, hold: true, ctx: () => ({ key: '/hot' }) })
    const owner = picked[0]
    const counts = pool.map((u) => u.inflight)
    expect(Math.max(...counts)).toBe(pool.find((u) => u.id === owner).inflight)
    if (spreads) {
      expect(Math.max(...counts)).toBeLessThanOrEqual(Math.ceil(c * total / pool.length))
      expect(Math.max(...counts)).toBeGreaterThanOrEqual(Math.floor(c * total / pool.length) - 1)
      expect(counts.filter((x) => x > 0).length).toBeGreaterThan(1)
    } else {
      expect(counts.filter((x) => x > 0)).toEqual([total])
    }
  })

  test('a spilled key always spills to the same next upstream', () => {
    const pool = upstreams(ids(5))
    const policy = createChashBounded()
    const owner = policy.pick(pool, { key: '/hot' })
    owner.inflight = 10 // far above its share: the key must spill
    const spill = policy.pick(pool, { key: '/hot' })
    expect(spill).not.toBe(owner)
    for (let i = 0; i < 20; i++) expect(policy.pick(pool, { key: '/hot' })).toBe(spill)
    owner.inflight = 0 // load gone: the key comes home
    expect(policy.pick(pool, { key: '/hot' })).toBe(owner)
  })

  test('adding a 5th upstream to 4 moves about 1/5 of the keys, all of them to the newcomer', () => {
    const ks = keys(10000)
    const before = assign(upstreams(ids(4)), ks)
    const after = assign(upstreams(ids(5)), ks)
    const moved = ks.filter((_, i) => before[i] !== after[i]).length
    expect(Math.abs(moved / ks.length - 1 / 5)).toBeLessThanOrEqual(0.04)
    ks.forEach((_, i) => { if (before[i] !== after[i]) expect(after[i]).toBe('u4') })
  })

  test('the ring is rebuilt only when ids or weights change', () => {
    const policy = createChashBounded()
    const pick = (list) => policy.pick(list, { key: '/k' })
    pick(upstreams(ids(3)))
    pick(upstreams(ids(3))) // new objects, same membership
    pick(upstreams(ids(3)).map((u) => ({ ...u, inflight: 2 })))
    expect(policy.snapshot().builds).toBe(1)
    pick(upstreams([{ id: 'u0', weight: 2 }, 'u1', 'u2']))
    expect(policy.snapshot().builds).toBe(2)
    pick(upstreams(ids(2)))
    expect(policy.snapshot().builds).toBe(3)
    expect(policy.snapshot().ringPoints).toBe(200)
  })

  test('huge weights are scaled down to a bounded ring', () => {
    const policy = createChashBounded()
    const pool = upstreams([{ id: 'a', weight: 1e6 }, { id: 'b', weight: 1e6 }])
    policy.pick(pool, { key: '/k' })
    expect(policy.snapshot().ringPoints).toBeLessThanOrEqual(65536)
  })

  test.each([
    { balanceFactor: 0.9 }, { balanceFactor: 'x' }, { balanceFactor: NaN }, { replicas: 0 }, { replicas: 1.5 }
  ])('option %p is refused with ERR_POLISTES_BAD_OPTION', (options) => {
    expect(() => createChashBounded(options)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })
})
