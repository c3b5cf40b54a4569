'use strict'

const { staticOptimum, timeAveragedOptimum } = require('../bench/model/optimum')
const { parsePageSizes, pageSizes, parseBytes } = require('../bench/workloads/page-sizes')
const { parseWorkload } = require('../bench/workloads/workload-options')
const { runWorkload, workloadOptimum } = require('../bench/model/model-workload')
const { createModel } = require('../bench/model/closed-loop')
const { createRoundRobin } = require('../src/policies/round-robin')
const { createWasp } = require('../src/policies/wasp')
const { runNode } = require('./helper')

describe('the static optimum', () => {
  test('caches in pages: the hottest pages that fit', () => {
    expect(staticOptimum([0.1, 0.4, 0.2, 0.3], { pages: 2 })).toBeCloseTo(0.7)
    expect(staticOptimum([0.5, 0.5], { pages: 10 })).toBe(1)
    expect(staticOptimum([0.5, 0.5], { pages: 0 })).toBe(0)
  })

  test('caches in bytes: by probability per byte, as long as they fit', () => {
    // page 0 is hottest but large; two small pages are worth more per byte
    expect(staticOptimum([0.5, 0.3, 0.2], { bytes: 100, sizes: [100, 50, 50] })).toBeCloseTo(0.5)
    expect(staticOptimum([0.4, 0.3, 0.3], { bytes: 100, sizes: [100, 50, 50] })).toBeCloseTo(0.6)
    expect(() => staticOptimum([0.5, 0.5], { bytes: 1, sizes: [1] })).toThrow(/one size per page/)
  })

  test('churn: the time-weighted mean of each phase', () => {
    const p = [0.4, 0.3, 0.2, 0.1]
    expect(timeAveragedOptimum(p, [{ fraction: 0.5, capacity: { pages: 3 } }, { fraction: 0.5, capacity: { pages: 1 } }])).toBeCloseTo(0.65)
    expect(() => timeAveragedOptimum(p, [{ fraction: 0.5, capacity: { pages: 1 } }])).toThrow(/sum to 1/)
  })

  test('Zipf(1) over 200 pages with 7 x 24 cached: about 0.97, 0.96 time-averaged over a third with 6', () => {
    const w = parseWorkload({ pages: 200, 'cache-pages': 24 })
    expect(workloadOptimum(w)).toBeCloseTo(0.970, 2)
    expect(workloadOptimum({ ...w, churn: true })).toBeCloseTo(0.962, 2)
  })
})

describe('page sizes', () => {
  test('fixed and lognormal, sizes with units', () => {
    expect(parsePageSizes('fixed:62000')).toEqual({ kind: 'fixed', bytes: 62000 })
    expect(parsePageSizes('lognormal:40k,1')).toEqual({ kind: 'lognormal', median: 40960, sigma: 1 })
    expect(parseBytes('1.5m')).toBe(1572864)
    expect(parseBytes('nope')).toBeNaN()
  })

  test.each(['fixed:10', 'fixed:-1', 'lognormal:40k', 'lognormal:40k,0', 'lognormal:40k,9', 'normal:1,1', ''])('refuses %j with the option named', (text) => {
    expect(() => parsePageSizes(text)).toThrow(/--page-size must be/)
  })

  test('lognormal sizes are the same for a seed, clipped, with about the median asked', () => {
    const a = pageSizes(parsePageSizes('lognormal:40k,1'), 5000, 3)
    expect(pageSizes(parsePageSizes('lognormal:40k,1'), 5000, 3)).toEqual(a)
    expect(pageSizes(parsePageSizes('lognormal:40k,1'), 5000, 4)).not.toEqual(a)
    const sorted = [...a].sort((x, y) => x - y)
    expect(sorted[2500] / 40960).toBeGreaterThan(0.9)
    expect(sorted[2500] / 40960).toBeLessThan(1.1)
    expect(Math.min(...a)).toBeGreaterThanOrEqual(256)
  })
})

describe('workload options', () => {
  test('defaults: Zipf(1), 62,000 B pages, caches of 12 % of the pages', () => {
    expect(parseWorkload({ pages: 2000 })).toMatchObject({ pages: 2000, popularity: { kind: 'zipf', s: 1 }, cachePages: 240, churn: false })
  })

  test.each([
    [{ pages: 1 }, /--pages/],
    [{ pages: 200000 }, /--pages/],
    [{ 'cache-pages': 0 }, /--cache-pages/],
    [{ 'cache-bytes': '10' }, /--cache-bytes/],
    [{ 'cache-bytes': '1m', 'cache-pages': 3 }, /exclude each other/],
    [{ popularity: 'pareto' }, /--popularity/],
    [{ shift: '0' }, /--shift must be SECONDS/],
    [{ shift: '5', popularity: 'uniform' }, /--shift rotates the popularity ranking/]
  ])('refuses %j', (args, message) => {
    expect(() => parseWorkload(args)).toThrow(message)
  })

  test('bench:model with a bad workload option exits 2 with the message, no stack trace', async () => {
    const { code, stderr } = await runNode(require('node:path').join(__dirname, '..', 'bench', 'runners', 'model.js'), ['--pages', '7', '--cache-bytes', 'lots'], { timeoutMs: 10000 })
    expect(code).toBe(2)
    expect(stderr).toMatch(/--cache-bytes must be a size/)
    expect(stderr).not.toMatch(/at .*\.js:\d+/)
  })
})

describe('the model with a popularity shift', () => {
  /** A round-robin policy that writes down the key of every request. */
  function recording (keys) {
    const rr = createRoundRobin({}, {})
    return { pick (list, ctx) { keys.push(ctx.key); return rr.pick(list, ctx) } }
  }
  const hottest = (keys) => {
    const counts = {}
    for (const k of keys) counts[k] = (counts[k] || 0) + 1
    return Object.entries(counts).sort((a, b) => b[1] - a[1])[0][0]
  }

  test('rotate(step) moves each key up step ranks: the hottest key is then key 1 + step', () => {
    const keys = []
    const model = createModel({ policy: recording(keys), keys: 20, popularity: { zipf: 1 }, seed: 3 })
    model.run(4000)
    expect(hottest(keys)).toBe('/page1')
    keys.length = 0
    model.rotate(5)
    model.run(4000)
    expect(hottest(keys)).toBe('/page6')
    expect(keys.filter((k) => k === '/page1').length).toBeLessThan(300) // rank 16 of 20 now: about 1.8 %
  })

  test('a workload with --shift rotates as simulated time passes, and wasp keeps up', () => {
    const w = parseWorkload({ pages: 200, shift: '1' })
    expect(w.shift).toEqual({ seconds: 1, step: 20 })
    expect(w.describe).toMatch(/ranking rotated by 20 every 1 s/)
    const still = runWorkload((random) => createWasp({}, { random }), parseWorkload({ pages: 200 }), { seed: 1, warmup: 10000, measure: 10000 })
    const moving = runWorkload((random) => createWasp({}, { random }), w, { seed: 1, warmup: 10000, measure: 10000 })
    expect(moving.optimum).toBeCloseTo(still.optimum, 6) // a rotation keeps the probabilities
    expect(moving.hitRate).toBeLessThan(still.hitRate) // each rotation costs misses
    expect(moving.hitRate).toBeGreaterThan(0.5)
  })
})

describe('the model with caches in bytes', () => {
  test('an upstream never holds more bytes than its cache, and a page larger than it is never kept', () => {
    const sizes = [300, 300, 300, 500, 2000]
    const model = createModel({ policy: createRoundRobin({}, {}), upstreams: 2, keys: 5, cacheBytes: 1000, pageBytes: sizes, seed: 2 })
    model.run(2000)
    for (const pages of Object.values(model.caches())) {
      const bytes = pages.reduce((a, key) => a + sizes[Number(key.slice(5)) - 1], 0)
      expect(bytes).toBeLessThanOrEqual(1000)
      expect(pages).not.toContain('/page5')
    }
  })

  test('cacheBytes without pageBytes is refused', () => {
    expect(() => createModel({ policy: createRoundRobin({}, {}), cacheBytes: 1000 })).toThrow(/pageBytes/)
  })

  test('wasp on Zipf(1) over 200 pages: closer to the optimum than round-robin, below it', () => {
    const w = parseWorkload({ pages: 200 })
    const wasp = runWorkload((random) => createWasp({}, { random }), w, { seed: 1, warmup: 10000, measure: 10000 })
    const rr = runWorkload((random) => createRoundRobin({}, { random }), w, { seed: 1, warmup: 10000, measure: 10000 })
    expect(wasp.hitRate).toBeLessThanOrEqual(wasp.optimum)
    expect(wasp.distance).toBeLessThan(rr.distance / 4)
  })
})

describe('bench:memory', () => {
  test.each([[['--keys', '0'], /--keys must be an integer/], [['--keys', '10', '--baseline', '20'], /--baseline must be below --keys/], [['--nope', '1'], /unknown option/]])('refuses %j with exit 2', async (args, message) => {
    const { code, stderr } = await runNode(require('node:path').join(__dirname, '..', 'bench', 'runners', 'memory.js'), args, { timeoutMs: 10000 })
    expect(code).toBe(2)
    expect(stderr).toMatch(message)
  })
})
