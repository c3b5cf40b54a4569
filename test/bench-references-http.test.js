'use strict'

// The model's references as the capacity scenario runs them over HTTP (bench/runners/references.js):
// the clairvoyant placement in front of a real fleet of finite backends, told that fleet. A placed page
// is served by its home (a miss, then hits there); a page placed nowhere goes out with no-store, so it
// misses every time; the counting learner serves every request.

const { startFleet } = require('../servers/fleet')
const { startBalancer } = require('../src')
const { placementLimit } = require('../bench/model/placement-limit')
const { REFERENCES } = require('../bench/model/reference-learners')
const { referenceFleet } = require('../bench/runners/references')
const { rawRequest } = require('./helper')

// public/'s 25 pages on 7 backends of 4 workers and 2-page caches: 14 slots for the hottest pages
const SETTINGS = {
  fleet: { workers: 4, cachePages: 2, hitMs: 5, missMs: 20 },
  pages: 25,
  popularity: { kind: 'zipf', s: 1 }
}

let fleet
const balancers = []

beforeAll(async () => {
  fleet = await startFleet({ count: 7, basePort: 0, host: '127.0.0.1', cachePages: 2, workers: 4, hitMs: 5, missMs: 20, service: 'timer' })
})

afterAll(async () => {
  await Promise.all(balancers.map((lb) => lb.close()))
  if (fleet) await fleet.close()
})

async function start (name) {
  const ids = fleet.backends.map((b) => b.id)
  const shape = referenceFleet(SETTINGS, ids)
  const lb = await startBalancer({
    backends: fleet.backends.map((b) => ({ id: b.id, url: b.url })),
    policy: REFERENCES[name](null, null, shape),
    port: 0,
    host: '127.0.0.1'
  })
  balancers.push(lb)
  return { lb, ids, shape }
}

const get = async (lb, page) => {
  const res = await rawRequest(lb.url, `/page${page}.html`)
  return [res.status, res.headers['x-server'], res.headers['x-cache']]
}

describe('the references over HTTP, in front of finite backends', () => {
  test('clairvoyant: a placed page on its home, a miss then hits; a page placed nowhere misses every time', async () => {
    const { lb, ids, shape } = await start('clairvoyant')
    const { homes } = placementLimit(shape)
    expect(homes.flat()).toHaveLength(14) // every slot filled (the hottest page on two)
    expect(homes.length).toBeLessThan(20)
    expect(shape.names[4]).toBe('/page5.html')
    expect(homes[4]).toHaveLength(1) // page 5: one home
    const home = ids[homes[4][0]]
    expect(await get(lb, 5)).toEqual([200, home, 'MISS'])
    expect(await get(lb, 5)).toEqual([200, home, 'HIT'])
    expect(await get(lb, 5)).toEqual([200, home, 'HIT'])
    // page 20 is past the placed pages: sent with no-store wherever it goes, the backend never keeps it
    for (let i = 0; i < 3; i++) {
      const [status, , cache] = await get(lb, 20)
      expect([status, cache]).toEqual([200, 'MISS'])
    }
    expect(lb.stats().policy.name).toBe('clairvoyant')
  })

  test('counting: every request answered, and a page it ranks in the top stays on one home', async () => {
    const { lb } = await start('counting')
    const answers = []
    for (let i = 0; i < 30; i++) answers.push(await get(lb, 1 + (i % 3)))
    expect(answers.every(([status]) => status === 200)).toBe(true)
    // after the first 50 picks' re-rankings the 3 pages asked have homes: their last answers hit
    const last = answers.slice(-6)
    expect(last.filter(([, , cache]) => cache === 'HIT').length).toBeGreaterThanOrEqual(5)
    expect(lb.stats().policy.name).toBe('counting')
  })
})
