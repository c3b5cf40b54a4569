'use strict'

const path = require('node:path')
const { createOpenLoop } = require('../bench/model/open-loop')
const { placementLimit } = require('../bench/model/placement-limit')
const { createClairvoyant, createCountingLearner } = require('../bench/model/reference-learners')
const { runNode } = require('./helper')

const CLI = path.join(__dirname, '..', 'bench', 'runners', 'open-loop-model.js')
const ISSUE = { upstreams: 7, workers: 4, cacheSize: 100, keys: 2000, popularity: { zipf: 1 }, hitMs: 5, missMs: 20 }

/** Count of each value in an array. */
const tally = (values) => values.reduce((m, v) => m.set(v, (m.get(v) || 0) + 1), new Map())

describe('the model\'s references, which are told the fleet', () => {
  test('the placement at the limit fills every cache with the hottest pages, once each, and splits a page too hot for one backend', () => {
    const { homes } = placementLimit(ISSUE)
    expect(homes).toHaveLength(700) // 7 caches of 100: the 700 hottest pages, the rest nowhere
    expect(homes.every((set) => set.length === 1)).toBe(true) // at 4,044 req/s a backend's hits can be 0.198, the hottest page is 0.122
    expect([...tally(homes.flat()).values()]).toEqual(Array(7).fill(100))
    // Zipf(1.2): at its limit (4,785 req/s) a backend's hits can be 4 / (4.785 x 5) = 0.167 of the requests, the hottest page is more
    const hot = placementLimit({ ...ISSUE, popularity: { zipf: 1.2 } }).homes
    expect(hot[0].length).toBeGreaterThanOrEqual(2)
    expect(hot[hot.length - 1]).toHaveLength(1)
  })

  test('clairvoyant: only placed pages are cached, each on its home; the hit rate is the static best from the first seconds', () => {
    const fleet = { ...ISSUE, rate: 3000 }
    const { homes } = placementLimit(fleet)
    const model = createOpenLoop({ ...fleet, seed: 3, policy: createClairvoyant(fleet) })
    model.run(10000)
    const measured = model.run(10000)
    expect(measured.hitRate).toBeGreaterThan(0.85) // the hottest 700 of 2,000 under Zipf(1): 0.872
    const caches = model.caches()
    for (const [b, keys] of Object.entries(Object.values(caches))) {
      for (const key of keys) expect([key, homes[Number(key.slice(5)) - 1]]).toEqual([key, [Number(b)]])
    }
  })

  test('counting: the most requested keys get homes on backends with a free slot, the rest go unstored to the least loaded', () => {
    const fleet = { upstreams: 2, workers: [1, 1], cacheSize: [1, 1], keys: 3, hitMs: 5, missMs: 20 }
    const learner = createCountingLearner(fleet)
    const list = [{ id: 'u0', inflight: 0 }, { id: 'u1', inflight: 0 }]
    const pick = (key) => { const ctx = { key }; const up = learner.pick(list, ctx); return { id: up.id, noStore: ctx.noStore === true } }
    for (const key of ['a', 'a', 'a', 'b', 'b']) pick(key)
    expect(learner.homes).toEqual(new Map([['a', [0]], ['b', [1]]])) // two slots: a and b, one on each
    list[0].inflight = 3 // c, third by count, has no home: the least loaded serves it and does not store it
    expect(pick('c')).toEqual({ id: 'u1', noStore: true })
    expect(pick('a')).toEqual({ id: 'u0', noStore: false })
    for (let i = 0; i < 5; i++) pick('c') // c overtakes b at the next ranking and takes b's slot
    expect(learner.homes).toEqual(new Map([['a', [0]], ['c', [1]]]))
  })

  test('counting on the issue\'s fleet: every cache holds at most its size in homes, and the hit rate nears the static best', () => {
    const learner = createCountingLearner(ISSUE)
    const model = createOpenLoop({ ...ISSUE, rate: 3000, seed: 2, policy: learner })
    model.run(30000)
    const measured = model.run(10000)
    expect(learner.homes.size).toBe(700)
    expect([...tally([...learner.homes.values()].flat()).values()]).toEqual(Array(7).fill(100))
    expect(measured.hitRate).toBeGreaterThan(0.82)
    expect(measured.hitRate).toBeLessThan(0.872 + 0.01) // no better than the best static placement, up to noise
  })

  test('counting gives a key more requests than one backend can serve as hits its replicas, each a cache slot', () => {
    const fleet = { ...ISSUE, popularity: { zipf: 1.2 } } // the hottest page: about a fifth of the requests
    const learner = createCountingLearner(fleet)
    const model = createOpenLoop({ ...fleet, rate: 4000, seed: 1, policy: learner })
    model.run(20000)
    expect(learner.homes.get('/page1').length).toBeGreaterThanOrEqual(2)
    expect(new Set(learner.homes.get('/page1')).size).toBe(learner.homes.get('/page1').length) // on distinct backends
    expect(learner.homes.get('/page50')).toHaveLength(1)
    expect([...learner.homes.values()].reduce((a, set) => a + set.length, 0)).toBe(700) // every slot used, none twice
  })

  test.each([['clairvoyant', createClairvoyant], ['counting', createCountingLearner]])('%s with a backend down sends it nothing, and serves its pages elsewhere unstored', (name, create) => {
    const fleet = { ...ISSUE, rate: 2500 }
    const model = createOpenLoop({ ...fleet, seed: 4, policy: create(fleet) })
    model.run(10000)
    model.down('u2')
    model.run(2000) // its first arrivals were picked before the backend went down (the last window's drain)
    const before = model.caches().u2.length
    const down = model.run(5000)
    expect(down.share.u2).toBe(0)
    expect(down.requests).toBe(5000)
    expect(model.caches().u2).toHaveLength(before) // what it held stays: nothing new was stored there
    // its pages were served as misses and not stored elsewhere: the others' caches hold only their own homes
    expect(down.hitRate).toBeLessThan(0.872 - 0.05)
    model.restart('u2')
    expect(model.run(5000).share.u2).toBeGreaterThan(0.05)
  })

  test('the model runner lists them with --only, beside the policies', async () => {
    const small = ['--pages', '200', '--cache-pages', '10', '--warmup', '500', '--measure', '500', '--only', 'clairvoyant,counting,wasp']
    const out = await runNode(CLI, [...small, '--rates', '1000', '--sweep', ''], { timeoutMs: 20000 })
    expect(out.stderr).toBe('')
    expect(out.code).toBe(0)
    expect(out.stdout).toMatch(/│ 0\s+│ 'clairvoyant' │ '\d+\.\d \(0\.\d{3}, 0\.\d{3}\)'/)
    expect(out.stdout).toMatch(/│ 1\s+│ 'counting'/)
    expect(out.stdout).toMatch(/│ 2\s+│ 'wasp'/)
    const big = await runNode(CLI, ['--upstreams', '25', '--only', 'clairvoyant'], { timeoutMs: 10000 })
    expect(big.code).toBe(2)
    expect(big.stderr).toBe('open-loop: clairvoyant takes at most 20 backends (its placement tries every subset), got 25\n')
  })
})
