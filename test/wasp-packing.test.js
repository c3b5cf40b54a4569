'use strict'

const { pack, createPacking, score, WINDOW } = require('../src/policies/wasp/packing')
const { fnv1a32, hash32 } = require('../src/policies/shared')

const keysOf = (count, prefix = '/k') => Array.from({ length: count }, (_, i) => ({ key: `${prefix}${i}`, hash: fnv1a32(`${prefix}${i}`) }))
const upsOf = (ids, weights = []) => ids.map((id, i) => ({ id, hash: hash32(id), weight: weights[i] ?? 1 }))
const ids = (n) => Array.from({ length: n }, (_, i) => `u${i}`)

/** key -> owner id */
function owners (keys, ups) {
  const out = pack(keys, ups)
  return new Map(keys.map((k, i) => [k.key, ups[out[i]].id]))
}

/** A key table like the wasp memory's: key -> { hash }. */
const table = (keys) => new Map(keys.map(({ key, hash }) => [key, { hash }]))

describe('wasp packing: pack', () => {
  test.each([[25, 7], [1000, 7], [10, 3], [3, 5], [7, 7], [0, 3]])('%i keys on %i upstreams: each holds floor or ceil of keys/upstreams', (count, n) => {
    const per = new Map(ids(n).map((id) => [id, 0]))
    for (const owner of owners(keysOf(count), upsOf(ids(n))).values()) per.set(owner, per.get(owner) + 1)
    const counts = [...per.values()]
    expect(counts.reduce((a, b) => a + b, 0)).toBe(count)
    expect(Math.min(...counts)).toBe(Math.floor(count / n))
    expect(Math.max(...counts)).toBe(Math.ceil(count / n))
  })

  test.each([
    [25, [2, 2, 4, 4, 8, 8, 8]], [1000, [1, 2, 3]], [10, [1, 1, 100]], [7, [0.5, 0.25, 0.25]]
  ])('%i keys on upstreams weighted %j: each holds floor or ceil of its weighted share', (count, weights) => {
    const list = upsOf(ids(weights.length), weights)
    const per = new Map(list.map((u) => [u.id, 0]))
    for (const owner of owners(keysOf(count), list).values()) per.set(owner, per.get(owner) + 1)
    const total = weights.reduce((a, b) => a + b, 0)
    list.forEach((u, i) => {
      const share = count * weights[i] / total
      expect(per.get(u.id)).toBeGreaterThanOrEqual(Math.floor(share + 1e-9))
      expect(per.get(u.id)).toBeLessThanOrEqual(Math.ceil(share - 1e-9))
    })
  })

  test('the owners depend on the sets of keys and upstreams, not on their order', () => {
    const keys = keysOf(200)
    const ups = upsOf(ids(7))
    const a = owners(keys, ups)
    const b = owners([...keys].reverse(), [...ups].reverse())
    const c = owners([...keys.slice(100), ...keys.slice(0, 100)], [...ups.slice(3), ...ups.slice(0, 3)])
    expect(b).toEqual(a)
    expect(c).toEqual(a)
  })

  test('a key with room everywhere goes to its first rendezvous choice', () => {
    const [key] = keysOf(1, '/only')
    const ups = upsOf(ids(7))
    const first = ups.reduce((best, u) => (score(u.hash, key.hash) > score(best.hash, key.hash) ? u : best))
    expect(owners([key], ups).get(key.key)).toBe(first.id)
  })

  test('an upstream removed: its keys move, and few others (bounded loads, not a reshuffle)', () => {
    const keys = keysOf(1000)
    const before = owners(keys, upsOf(ids(7)))
    const after = owners(keys, upsOf(ids(7).filter((id) => id !== 'u3')))
    let others = 0
    for (const [key, owner] of before) {
      if (owner === 'u3') expect(after.get(key)).not.toBe('u3')
      else if (after.get(key) !== owner) others++
    }
    expect(others / keys.length).toBeLessThan(0.05) // measured 0.018
  })

  test('an upstream added takes about its share of the keys, from the others', () => {
    const keys = keysOf(1000)
    const before = owners(keys, upsOf(ids(7)))
    const after = owners(keys, upsOf(ids(8)))
    let moved = 0
    for (const [key, owner] of before) if (after.get(key) !== owner) moved++
    expect(moved / keys.length).toBeLessThan(1.5 / 8) // measured 0.135; 1/8 is the least possible
  })
})

describe('wasp packing: createPacking', () => {
  /** Upstream records like the wasp memory's, all listed at pick `seen`. */
  const records = (list, seen = 1) => new Map(list.map((u) => [u.id, { ...u, seen }]))

  test('the first update packs every key; ownerOf then reads the packing', () => {
    const keys = table(keysOf(25))
    const ups = upsOf(ids(7))
    const packing = createPacking()
    expect(packing.ownerOf(keys.get('/k0'))).toBeUndefined() // no packing yet
    packing.update(1, records(ups), keys)
    expect(packing.version).toBe(1)
    const expected = owners(keysOf(25), ups)
    for (const [key, krec] of keys) expect(packing.ownerOf(krec)).toBe(expected.get(key))
  })

  test('a new key goes to its first rendezvous choice, and a repacking is due after max(WINDOW, keys.size) picks', () => {
    const keys = table(keysOf(100))
    const ups = upsOf(ids(7))
    const recs = records(ups)
    const packing = createPacking()
    packing.update(1, recs, keys)
    const [fresh] = keysOf(1, '/new')
    const krec = { hash: fresh.hash }
    keys.set(fresh.key, krec)
    const first = ups.reduce((best, u) => (score(u.hash, fresh.hash) > score(best.hash, fresh.hash) ? u : best))
    expect(packing.ownerOf(krec)).toBe(first.id)
    const at = (picks) => { for (const r of recs.values()) r.seen = picks; packing.update(picks, recs, keys); return packing.version }
    expect(at(100)).toBe(1) // 99 picks since the packing, 101 keys: not yet
    expect(at(102)).toBe(2)
    expect(krec.packed).toBe(2)
    expect(at(1000)).toBe(2) // nothing changed since: no repacking
  })

  test('a changed weight repacks, and moves keys toward the heavier upstream', () => {
    const keys = table(keysOf(63))
    const recs = records(upsOf(ids(7)))
    const packing = createPacking()
    packing.update(1, recs, keys)
    recs.get('u0').weight = 3
    packing.update(1 + WINDOW, recs, keys)
    expect(packing.version).toBe(2)
    expect([...keys.values()].filter((k) => k.owner === 'u0')).toHaveLength(63 * 3 / 9)
  })

  test('an upstream listed now and then (slow start, flapping checks) stays in the packing; one unlisted for WINDOW picks leaves it', () => {
    const keys = table(keysOf(25))
    const recs = records(upsOf(ids(7)))
    const packing = createPacking()
    for (let pick = 1; pick <= 1000; pick++) {
      for (const r of recs.values()) if (r.id !== 'u6' || pick % 10 === 0) r.seen = pick // u6 on one pick in 10
      packing.update(pick, recs, keys)
    }
    expect(packing.version).toBe(1)
    expect([...keys.values()].map((k) => k.owner)).toContain('u6')
    let pick = 1000
    for (; packing.version === 1; pick++) {
      for (const r of recs.values()) if (r.id !== 'u6') r.seen = pick
      packing.update(pick, recs, keys)
    }
    expect(pick - 1000).toBeGreaterThan(WINDOW) // u6 was last listed at pick 1000
    expect(pick - 1000).toBeLessThanOrEqual(WINDOW + 2)
    expect([...keys.values()].map((k) => k.owner)).not.toContain('u6')
  })
})
