'use strict'

const { createWasp, defaults } = require('../src/policies/wasp')
const { mulberry32 } = require('../src/common/prng')
const { pack } = require('../src/policies/wasp/packing')
const { fnv1a32, hash32 } = require('../src/policies/shared')
const { execFileSync } = require('node:child_process')

const ups = (n) => Array.from({ length: n }, (_, i) => ({ id: `u${i}`, inflight: 0 }))

/** Serve `count` requests for `key` with the caller keeping inflight at zero; returns the ids picked. */
function serve (wasp, upstreams, key, count, outcome = { latencyMs: 1, statusCode: 200 }) {
  const ids = []
  for (let i = 0; i < count; i++) {
    const u = wasp.pick(upstreams, { key })
    ids.push(u.id)
    wasp.onEnd(u, { key }, outcome)
  }
  return ids
}

/** A random source that counts its calls. */
function counting (seed) {
  const r = mulberry32(seed)
  const f = () => { f.calls++; return r() }
  f.calls = 0
  return f
}

describe('wasp: the policy contract', () => {
  test('an empty or missing list gives undefined and never throws', () => {
    const wasp = createWasp()
    expect(wasp.pick([], { key: '/a' })).toBeUndefined()
    expect(wasp.pick(undefined, { key: '/a' })).toBeUndefined()
    expect(wasp.name).toBe('wasp')
  })

  test('a single upstream is always picked, with no random draw', () => {
    const random = counting(1)
    const wasp = createWasp({}, { random })
    const only = ups(1)
    expect(serve(wasp, only, '/a', 5)).toEqual(['u0', 'u0', 'u0', 'u0', 'u0'])
    expect(random.calls).toBe(0)
  })

  test('a request without a key goes to the least loaded upstream', () => {
    const wasp = createWasp()
    const list = [{ id: 'a', inflight: 3 }, { id: 'b', inflight: 1 }, { id: 'c', inflight: 2 }]
    expect(wasp.pick(list, {}).id).toBe('b')
    expect(wasp.pick(list).id).toBe('b')
  })

  test('every parameter has a default, exposed on createWasp.defaults too', () => {
    expect(createWasp.defaults).toBe(defaults)
    expect(Object.keys(defaults).sort()).toEqual(['admission', 'balanced', 'capacityWeights', 'feedback', 'idleGaps', 'learnWorkers', 'loadFactor', 'maxKeys', 'missLearning',
      'phi', 'replicate', 'replicateQueued', 'rounds', 'shareGap', 'spill', 'stimulus', 'stimulusGrowth', 'thetaMax',
      'thetaMin', 'thetaStart', 'xi'])
    expect(Object.isFrozen(defaults)).toBe(true)
  })

  test.each([
    [{ xi: 'fast' }], [{ rounds: 2.5 }], [{ rounds: 1000 }], [{ thetaMin: 0 }], [{ thetaMax: 0.5 }],
    [{ thetaStart: 5000 }], [{ loadFactor: 0.5 }], [{ stimulus: 0 }], [{ stimulusGrowth: 0.9 }],
    [{ maxKeys: 0 }], [{ missLearning: 2 }], [{ feedback: { cache: 'yes' } }], [{ idleGaps: -1 }],
    [{ idleGaps: Infinity }], [{ balanced: -1 }], [{ balanced: 0.5 }], [{ balanced: 2e6 }], [{ balanced: '16' }], [{ shareGap: 1 }], [{ shareGap: 2.5 }],
    [{ replicate: -1 }], [{ replicate: 'yes' }], [null]
  ])('the bad option %j throws ERR_POLISTES_BAD_OPTION', (options) => {
    expect(() => createWasp(options)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })

  test('snapshot is plain JSON naming the specialist of recent keys', () => {
    const wasp = createWasp({}, { random: mulberry32(3) })
    serve(wasp, ups(3), '/a', 20)
    const snap = wasp.snapshot()
    expect(JSON.parse(JSON.stringify(snap))).toEqual(snap)
    expect(snap).toMatchObject({ name: 'wasp', picks: 20, keys: 1 })
    expect(snap.recent[0]).toMatchObject({ key: '/a', theta: defaults.thetaMin, requests: 20 })
  })

  test('snapshot counts the keys each upstream owns; an unlearnt key belongs to nobody', () => {
    const wasp = createWasp({ shareGap: 0 }, { random: mulberry32(5) }) // thresholds alone
    const list = ups(3)
    serve(wasp, list, '/a', 20)
    serve(wasp, list, '/b', 20)
    const snap = wasp.snapshot()
    const owners = snap.recent.map((r) => r.specialist)
    expect(Object.keys(snap.owned).sort()).toEqual(['u0', 'u1', 'u2'])
    for (const id of ['u0', 'u1', 'u2']) expect(snap.owned[id]).toBe(owners.filter((o) => o === id).length)
    expect(Object.values(snap.owned).reduce((a, b) => a + b, 0)).toBe(2)
    const unlearning = createWasp({ xi: 0, shareGap: 0 }, { random: mulberry32(5) })
    serve(unlearning, list, '/c', 5)
    expect(Object.values(unlearning.snapshot().owned).reduce((a, b) => a + b, 0)).toBe(0)
  })
})

describe('wasp: termination', () => {
  const cases = [
    { title: 'all thresholds at the maximum', options: { thetaMin: 1000, thetaStart: 1000, thetaMax: 1000 }, n: 7 },
    { title: 'a stimulus that never grows', options: { stimulusGrowth: 1, stimulus: 1e-9 }, n: 7 },
    { title: 'zero rounds', options: { rounds: 0 }, n: 7 },
    { title: 'the most rounds', options: { rounds: 64, stimulus: 1e-9, stimulusGrowth: 1 }, n: 7 },
    { title: 'one upstream', options: {}, n: 1 },
    { title: 'a balanced packing', options: { balanced: 16 }, n: 7 },
    { title: '1,000 upstreams', options: { stimulus: 1e-9, stimulusGrowth: 1 }, n: 1000 }
  ]
  test.each(cases)('pick draws at most rounds × upstreams + 1 random numbers with $title', ({ options, n }) => {
    const random = counting(7)
    const wasp = createWasp(options, { random })
    const rounds = options.rounds ?? defaults.rounds
    const list = ups(n)
    for (let i = 0; i < 20; i++) {
      const before = random.calls
      const u = wasp.pick(list, { key: `/k${i % 3}` })
      expect(list).toContain(u)
      // each round: one draw per upstream, plus one for a dominance contest that ends the loop
      expect(random.calls - before).toBeLessThanOrEqual(rounds * n + 1)
    }
  })

  test('with nobody responding, the fallback is deterministic: lowest effective threshold', () => {
    const wasp = createWasp({ rounds: 0, shareGap: 0 }, { random: () => { throw new Error('no draw expected') } })
    const list = [{ id: 'a', inflight: 4 }, { id: 'b', inflight: 1 }, { id: 'c', inflight: 1 }]
    expect(wasp.pick(list, { key: '/x' }).id).toBe('b') // equal thresholds: the less loaded, first listed
  })

  test('the load guard skips an upstream at loadFactor × the mean in-flight', () => {
    const wasp = createWasp({ loadFactor: 3 }, { random: mulberry32(5) })
    const list = ups(4)
    serve(wasp, list, '/hot', 30) // a specialist emerges
    const specialist = list.find((u) => u.id === wasp.snapshot().recent[0].specialist)
    specialist.inflight = 12 // cap = ceil(3 × 13 / 4) = 10
    const picks = new Set(serve(wasp, list, '/hot', 50))
    expect(picks.has(specialist.id)).toBe(false)
  })
})

describe('wasp: learning and forgetting', () => {
  test('a key served repeatedly gets one specialist', () => {
    // idleGaps 0: with one key and no load the six others are idle by construction and would take turns
    const wasp = createWasp({ idleGaps: 0, shareGap: 0 }, { random: mulberry32(11) }) // thresholds alone
    const ids = serve(wasp, ups(7), '/a', 200)
    const last = ids.slice(100)
    expect(new Set(last).size).toBe(1)
  })

  test('the same seed gives the same pick sequence', () => {
    const run = () => {
      const wasp = createWasp({}, { random: mulberry32(99) })
      const list = ups(7)
      return Array.from({ length: 500 }, (_, i) => serve(wasp, list, `/p${(i * 7) % 25}`, 1)[0])
    }
    expect(run()).toEqual(run())
  })

  test('forgetting is lazy: a specialist of a key requested elsewhere rises by φ per request', () => {
    const wasp = createWasp({ phi: 10, idleGaps: 0, shareGap: 0 }, { random: mulberry32(2) }) // thresholds alone
    const list = ups(2)
    serve(wasp, list, '/a', 30)
    const first = wasp.snapshot().recent[0]
    expect(first.theta).toBe(1)
    // the specialist leaves; the other serves /a 20 times; the specialist comes back
    const other = list.filter((u) => u.id !== first.specialist)
    serve(wasp, other, '/a', 20)
    const back = list.find((u) => u.id === first.specialist)
    // with 20 requests elsewhere its threshold is 1 + 20 × 10 = 201, the other's is 1: the other keeps /a
    expect(serve(wasp, [back, ...other], '/a', 20).every((id) => id === other[0].id)).toBe(true)
  })

  test('an error takes the learning back', () => {
    const wasp = createWasp({ phi: 0, shareGap: 0 }, { random: mulberry32(4) })
    const list = ups(3)
    serve(wasp, list, '/a', 3, { statusCode: 502, error: new Error('boom') })
    expect(wasp.snapshot().recent[0].theta).toBe(defaults.thetaStart)
  })

  test('with cache feedback a MISS keeps only missLearning of the learning', () => {
    const wasp = createWasp({ feedback: { cache: true }, missLearning: 0.5, phi: 0 }, { random: mulberry32(4) })
    serve(wasp, ups(1), '/a', 1, { statusCode: 200, cache: 'MISS' })
    expect(wasp.snapshot().recent[0].theta).toBe(defaults.thetaStart - defaults.xi / 2)
    const off = createWasp({ phi: 0 }, { random: mulberry32(4) })
    serve(off, ups(1), '/a', 1, { statusCode: 200, cache: 'MISS' })
    expect(off.snapshot().recent[0].theta).toBe(defaults.thetaStart - defaults.xi)
  })

  test('idleness: a newcomer idle for idleGaps × n picks bids for a specialist\'s key and keeps it', () => {
    const run = (options) => {
      const wasp = createWasp({ shareGap: 0, ...options }, { random: mulberry32(6) }) // thresholds alone
      const list = ups(3)
      serve(wasp, list, '/a', 30) // u0..u2: one of them is /a's specialist (θ = 1)
      const all = [...list, { id: 'new', inflight: 0 }]
      return { ids: serve(wasp, all, '/a', 200), snap: wasp.snapshot() }
    }
    const on = run({})
    const first = on.ids.indexOf('new')
    // idle beyond 8 × 4 = 32 picks, its θ of 500 halves per pick: ~9 picks later it is as keen as θ = 1
    expect(first).toBeGreaterThan(defaults.idleGaps * 4)
    expect(first).toBeLessThan(defaults.idleGaps * 4 + 20)
    expect(on.snap.idleWins).toBeGreaterThanOrEqual(1)
    // the discount it won with is kept for /a: it is now a specialist of /a too and serves it again
    expect(on.ids.slice(first + 1).filter((id) => id === 'new').length).toBeGreaterThan(10)
    expect(on.snap.upstreams.find((u) => u.id === 'new').idle).toBeLessThan(on.ids.length - first)
    // off: the newcomer's θ of 500 never beats a specialist's 1
    const off = run({ idleGaps: 0 })
    expect(off.ids).not.toContain('new')
    expect(off.snap.idleWins).toBe(0)
  })

  test('idleness counts picks, not time, and an absence counts as idle', () => {
    const wasp = createWasp({ shareGap: 0 }, { random: mulberry32(9), now: () => { throw new Error('no clock expected') } })
    const list = ups(2)
    serve(wasp, list, '/a', 30)
    const spec = wasp.snapshot().recent[0].specialist
    const other = list.find((u) => u.id !== spec)
    serve(wasp, [other], '/b', 100) // the specialist is away for 100 picks
    const away = wasp.snapshot()
    expect(away.upstreams.find((u) => u.id === spec).idle).toBe(0) // not listed: not counted yet
    expect(wasp.pick(list, { key: '/b' }).id).toBe(spec) // 101 picks idle > 8 × 2: it bids for /b at once
    expect(wasp.snapshot().idleWins).toBe(away.idleWins + 1)
  })

  /** The owner of each of `keys` in the balanced packing onto `list`. */
  const packed = (keys, list) => {
    const ups = list.map((u) => ({ id: u.id, hash: hash32(u.id), weight: 1 }))
    const owners = pack(keys.map((key) => ({ key, hash: fnv1a32(key) })), ups)
    return new Map(keys.map((key, i) => [key, ups[owners[i]].id]))
  }

  test('balanced: policies with other random sources and list orders send each key to the same upstream, its owner', () => {
    const keys = Array.from({ length: 25 }, (_, i) => `/page${i + 1}`)
    const owners = packed(keys, ups(7))
    const agreement = (balanced) => {
      const a = createWasp({ balanced }, { random: mulberry32(1) })
      const b = createWasp({ balanced }, { random: mulberry32(2) })
      const listA = ups(7)
      const listB = ups(7).reverse()
      let same = 0
      let toOwner = 0
      for (let i = 0; i < 2000; i++) {
        const key = keys[(i * 7) % 25]
        const ua = serve(a, listA, key, 1)[0]
        if (ua === serve(b, listB, key, 1)[0]) same++
        if (ua === owners.get(key)) toOwner++
      }
      return { same: same / 2000, toOwner: toOwner / 2000 }
    }
    const off = agreement(0)
    expect(off.same).toBeLessThan(0.5) // each learns its own division (measured 0.13)
    const on = agreement(16)
    expect(on.same).toBeGreaterThan(0.99)
    expect(on.toOwner).toBeGreaterThan(0.99)
  })

  test('balanced: a specialist that is not the owner loses the key to the owner (a reload that turns it on)', () => {
    const list = ups(7)
    const wasp = createWasp({ idleGaps: 0 }, { random: mulberry32(4) })
    // a key whose learnt specialist is not its owner in the packing
    let key
    for (let i = 0; key === undefined; i++) {
      serve(wasp, list, `/k${i}`, 30)
      if (wasp.snapshot().recent[0].specialist !== packed([`/k${i}`], list).get(`/k${i}`)) key = `/k${i}`
    }
    const keys = wasp.snapshot().recent.map((r) => r.key)
    wasp.configure({ idleGaps: 0, balanced: 16 })
    serve(wasp, list, key, 10)
    expect(new Set(serve(wasp, list, key, 20))).toEqual(new Set([packed(keys, list).get(key)]))
  })

  test('balanced: a member offered on one pick in two (slow start) keeps its keys, without a repacking per pick', () => {
    const keys = Array.from({ length: 25 }, (_, i) => `/page${i + 1}`)
    const full = ups(7)
    const gated = full.filter((u) => u.id !== 'u6')
    const owners = packed(keys, full)
    const wasp = createWasp({ balanced: 16 }, { random: mulberry32(6) })
    let toU6 = 0
    let ofU6 = 0
    for (let i = 0; i < 2000; i++) {
      const key = keys[(i * 7) % 25]
      const id = serve(wasp, i % 2 === 0 ? full : gated, key, 1)[0]
      if (i % 2 === 0 && i > 500 && owners.get(key) === 'u6') { ofU6++; if (id === 'u6') toU6++ }
    }
    expect(wasp.snapshot().packings).toBeLessThanOrEqual(3)
    expect(toU6 / ofU6).toBeGreaterThan(0.95)
  })

  test('balanced: the load guard still sheds an owner at capacity', () => {
    const wasp = createWasp({ loadFactor: 3, balanced: 16 }, { random: mulberry32(5) })
    const list = ups(4)
    serve(wasp, list, '/hot', 30)
    const owner = list.find((u) => u.id === packed(['/hot'], list).get('/hot'))
    expect(wasp.snapshot().recent[0].specialist).toBe(owner.id)
    owner.inflight = 12 // cap = ceil(3 × 13 / 4) = 10
    expect(new Set(serve(wasp, list, '/hot', 50)).has(owner.id)).toBe(false)
    owner.inflight = 0
    expect(serve(wasp, list, '/hot', 1)).toEqual([owner.id])
  })

  test('an upstream gone for long is forgotten and comes back neutral', () => {
    const wasp = createWasp({}, { random: mulberry32(8) })
    const list = ups(2)
    serve(wasp, list, '/a', 50)
    const spec = wasp.snapshot().recent[0].specialist
    const rest = list.filter((u) => u.id !== spec)
    for (let i = 0; i < 6000; i++) serve(wasp, rest, `/b${i % 10}`, 1)
    expect(wasp.snapshot().upstreams.map((u) => u.id)).not.toContain(spec)
  })
})

describe('wasp: reconfigured while running (hot reload)', () => {
  test('configure takes new options and keeps every threshold and counter', () => {
    const wasp = createWasp({}, { random: mulberry32(5) })
    const list = ups(3)
    for (let i = 0; i < 300; i++) wasp.pick(list, { key: `/k${i % 10}` })
    const before = wasp.snapshot()
    wasp.configure({ rounds: 4, loadFactor: 3 })
    expect(wasp.snapshot()).toEqual(before)
    wasp.pick(list, { key: '/k1' })
    expect(wasp.snapshot().picks).toBe(before.picks + 1)
  })

  test('configure refuses a bad or unknown option and changes nothing', () => {
    const wasp = createWasp({ maxKeys: 5 }, { random: mulberry32(5) })
    for (let i = 0; i < 20; i++) wasp.pick(ups(2), { key: `/k${i}` })
    expect(() => wasp.configure({ maxRounds: 4 })).toThrow('wasp: unknown option "maxRounds"')
    expect(() => wasp.configure({ rounds: -1 })).toThrow(/rounds must be an integer/)
    expect(wasp.snapshot()).toMatchObject({ keys: 5, maxKeys: 5 })
    wasp.configure({ maxKeys: 2 }) // a smaller cap drops the least recently used keys
    expect(wasp.snapshot()).toMatchObject({ keys: 2, maxKeys: 2 })
  })
})

describe('wasp: bounded memory', () => {
  const MILLION_CASES = [[{ maxKeys: 1000 }], [{ maxKeys: 1000, balanced: 16 }]]
  // Both cases run in one plain node process, started once: jest's module sandbox (a vm context) makes the
  // million picks several times slower, and the second run finds the policy's code compiled.
  // --no-concurrent-recompilation: the hot functions are optimized on the main thread at once, instead of
  // running unoptimized while a background thread waits for a core (on a busy machine, about half the CPU)
  let million
  beforeAll(() => {
    const script = `
      const { createWasp } = require(${JSON.stringify(require.resolve('../src/policies/wasp'))})
      const { mulberry32 } = require(${JSON.stringify(require.resolve('../src/common/prng'))})
      for (const options of JSON.parse(process.argv[1])) {
        const wasp = createWasp(options, { random: mulberry32(1) })
        const list = [{ id: 'a', inflight: 0 }, { id: 'b', inflight: 0 }, { id: 'c', inflight: 0 }]
        const outcome = { latencyMs: 1, statusCode: 200 }
        let max = 0
        for (let i = 0; i < 1e6; i++) {
          const ctx = { key: '/k' + i }
          wasp.onEnd(wasp.pick(list, ctx), ctx, outcome)
          if ((i & 8191) === 0) max = Math.max(max, wasp.snapshot().keys)
        }
        console.log(JSON.stringify({ keys: wasp.snapshot().keys, max, picks: wasp.snapshot().picks, packings: wasp.snapshot().packings }))
      }`
    const args = ['--no-concurrent-recompilation', '-e', script, JSON.stringify(MILLION_CASES.map(([o]) => o))]
    const lines = execFileSync(process.execPath, args, { encoding: 'utf8' }).trim().split('\n')
    million = new Map(MILLION_CASES.map(([o], i) => [o, JSON.parse(lines[i])]))
  }, 120000)

  test.each(MILLION_CASES)('a million distinct keys keep the key table at its cap (%j)', (options) => {
    const out = million.get(options)
    expect(out).toMatchObject({ keys: 1000, max: 1000, picks: 1e6 })
    // a packing of the 1,000 keys at most once per 1,000 picks, so O(n + log K) per pick amortized
    expect(out.packings).toBeLessThanOrEqual(options.balanced ? 1e6 / 1000 + 1 : 0)
  })

  test('the least recently used key is the one evicted', () => {
    const wasp = createWasp({ maxKeys: 2 }, { random: mulberry32(1) })
    const list = ups(2)
    serve(wasp, list, '/a', 1)
    serve(wasp, list, '/b', 1)
    serve(wasp, list, '/a', 1) // touch /a
    serve(wasp, list, '/c', 1) // evicts /b
    expect(wasp.snapshot().recent.map((r) => r.key).sort()).toEqual(['/a', '/c'])
  })
})

describe('wasp: examples', () => {
  test('examples/wasp.mjs imports polistes/wasp and prints its picks', () => {
    const out = execFileSync(process.execPath, [require.resolve('../examples/wasp.mjs')], { encoding: 'utf8' })
    const lines = out.trim().split('\n')
    expect(lines).toHaveLength(13)
    expect(lines[0]).toMatch(/^\/page1 -> [abc]$/)
    expect(JSON.parse(lines[12])).toEqual({ picks: 12, keys: 3 })
  })

  test('examples/wasp-proxy.js loads without listening', () => {
    const { server, wasp, upstreams } = require('../examples/wasp-proxy.js')
    expect(server.listening).toBe(false)
    expect(wasp.name).toBe('wasp')
    expect(upstreams.length).toBeGreaterThan(0)
  })
})
