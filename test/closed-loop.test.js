'use strict'

const { createModel, EventHeap } = require('../bench/closed-loop')
const { mulberry32 } = require('../bench/prng')
const { createWasp } = require('../src/policies/wasp')
const { createRoundRobin } = require('../src/policies/round-robin')
const { createRandom } = require('../src/policies/random')

// The scenario of the issue: 7 upstreams x LRU of 4 pages, 25 keys, 32 requests in flight.
const waspModel = (seed, options = {}) =>
  createModel({ policy: createWasp({}, { random: mulberry32(seed + 1000) }), seed, ...options })

describe('closed-loop model', () => {
  test('the event heap pops in time order, ties in scheduling order', () => {
    const heap = new EventHeap()
    const times = [5, 1, 3, 1, 9, 0, 3]
    times.forEach((time, seq) => heap.push({ time, seq }))
    const out = []
    while (heap.size) out.push(heap.pop())
    expect(out.map((e) => `${e.time}:${e.seq}`)).toEqual(['0:5', '1:1', '1:3', '3:2', '3:6', '5:0', '9:4'])
  })

  test('keeps exactly the configured number of requests in flight', () => {
    let maxTotal = 0
    const policy = {
      pick (ups) {
        maxTotal = Math.max(maxTotal, ups.reduce((a, u) => a + u.inflight, 0))
        return ups[0]
      }
    }
    const model = createModel({ policy, inflight: 32 })
    model.run(1000)
    expect(maxTotal).toBe(31) // the 32nd is being picked
    expect(model.upstreams[0].inflight).toBe(32)
  })

  test('round-robin hits about 1/6 of the time; random about the same', () => {
    const rr = createModel({ policy: createRoundRobin(), seed: 3 })
    rr.run(5000)
    const r = rr.run(5000)
    expect(r.hitRate).toBeGreaterThan(0.13)
    expect(r.hitRate).toBeLessThan(0.19)
    expect(r.balance).toBeLessThan(1.01)
    const rnd = createModel({ policy: createRandom({}, { random: mulberry32(4) }), seed: 3 })
    rnd.run(5000)
    expect(rnd.run(5000).hitRate).toBeLessThan(0.2)
  })

  test('the same seeds give the same run; different seeds a different one', () => {
    const picks = (seed) => {
      const m = waspModel(seed, { recordPicks: true })
      m.run(3000)
      return m.picks.join(',')
    }
    expect(picks(1)).toBe(picks(1))
    expect(picks(1)).not.toBe(picks(2))
  })

  test('Zipf popularity concentrates requests on the top ranks; permute moves them', () => {
    const model = createModel({ policy: createRoundRobin(), popularity: { zipf: 1 }, seed: 5 })
    const top = (w) => Object.entries(w.servedBy)
      .map(([k, m]) => [k, Object.values(m).reduce((a, b) => a + b, 0)])
      .sort((a, b) => b[1] - a[1])[0]
    const before = top(model.run(20000))
    expect(before[1] / 20000).toBeGreaterThan(0.22) // 1/H(25) = 0.262
    model.permute()
    const after = top(model.run(20000))
    expect(after[0]).not.toBe(before[0])
  })
})

describe('wasp in the closed-loop model', () => {
  // table-driven over seeds (undici habit): each row is one seeded run of the scenario
  const seeds = [1, 2, 3]

  test.each(seeds)('specializes: after 5,000 requests, hit rate >= 0.90, every key mostly on two upstreams (seed %i)', (seed) => {
    const model = waspModel(seed)
    model.run(5000)
    const w = model.run(5000)
    expect(w.hitRate).toBeGreaterThanOrEqual(0.9)
    expect(w.top2.min).toBeGreaterThanOrEqual(0.9) // each key: top two upstreams serve >= 90 %
    expect(w.balance).toBeLessThanOrEqual(1.5) // busiest upstream <= 1.5 x mean
  })

  test.each(seeds)('adapts: an upstream removed, the hit rate is back to 0.85 within 2,000 requests; re-added, it gets work (seed %i)', (seed) => {
    const model = waspModel(seed)
    model.run(5000)
    model.removeUpstream('u3')
    model.run(1000)
    const recovered = model.run(1000)
    expect(recovered.hitRate).toBeGreaterThanOrEqual(0.85)
    expect(recovered.counts.u3 || 0).toBe(0)
    model.addUpstream('u3')
    const back = model.run(3000)
    expect(back.counts.u3).toBeGreaterThan(0) // it gets work, mostly shed by the load guard at first
    expect(back.hitRate).toBeGreaterThanOrEqual(0.85)
  })

  test.each(seeds)('adapts: popularity switched to Zipf(1.0), then ranks permuted, the hit rate recovers each time (seed %i)', (seed) => {
    const model = waspModel(seed)
    model.run(5000)
    const uniform = model.run(2000).hitRate
    model.setPopularity({ zipf: 1 })
    model.run(2000)
    expect(model.run(2000).hitRate).toBeGreaterThanOrEqual(Math.min(0.9, uniform))
    model.permute()
    model.run(2000)
    expect(model.run(2000).hitRate).toBeGreaterThanOrEqual(0.9)
  })

  test('beats round-robin by a wide margin on the same seed', () => {
    const rr = createModel({ policy: createRoundRobin(), seed: 2 })
    const wasp = waspModel(2)
    rr.run(5000)
    wasp.run(5000)
    expect(wasp.run(5000).hitRate - rr.run(5000).hitRate).toBeGreaterThan(0.7)
  })
})
