'use strict'

const path = require('node:path')
const { parsePopularity, formatPopularity, probabilities, createSampler, shiftedPage, pagePath } = require('../bench/workloads/popularity')
const { parseShift } = require('../bench/workloads/workload-options')
const { mulberry32 } = require('../src/common/prng')
const { Child } = require('../bench/children/child')
const { startUpstream } = require('./helper')

function histogram (sample, count, n) {
  const h = new Array(count).fill(0)
  for (let i = 0; i < n; i++) h[sample()]++
  return h
}

describe('bench popularity', () => {
  test('parses uniform and zipf:s, and rejects anything else with a bad-option error', () => {
    expect(parsePopularity('uniform')).toEqual({ kind: 'uniform' })
    expect(parsePopularity('zipf:1.0')).toEqual({ kind: 'zipf', s: 1 })
    expect(parsePopularity('zipf:0.8')).toEqual({ kind: 'zipf', s: 0.8 })
    expect(parsePopularity('zipf')).toEqual({ kind: 'zipf', s: 1 })
    expect(formatPopularity({ kind: 'zipf', s: 1.2 })).toBe('zipf:1.2')
    for (const bad of ['foo', 'zipf:', 'zipf:0', 'zipf:-1', 'zipf:x', '']) {
      expect(() => parsePopularity(bad)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
    }
  })

  test('zipf:1 probabilities are proportional to 1/rank', () => {
    const p = probabilities({ kind: 'zipf', s: 1 }, 25)
    expect(p.reduce((a, b) => a + b, 0)).toBeCloseTo(1)
    expect(p[0] / p[1]).toBeCloseTo(2)
    expect(p[0] / p[9]).toBeCloseTo(10)
  })

  test('the zipf sampler with a seed matches the distribution within 1 % absolute', () => {
    const n = 200000
    const expected = probabilities({ kind: 'zipf', s: 1 }, 25)
    const h = histogram(createSampler({ kind: 'zipf', s: 1 }, 25, mulberry32(42)), 25, n)
    h.forEach((count, i) => expect(Math.abs(count / n - expected[i])).toBeLessThan(0.01))
    expect(h[0]).toBeGreaterThan(h[1])
  })

  test('the uniform sampler covers every page evenly', () => {
    const n = 100000
    const h = histogram(createSampler({ kind: 'uniform' }, 25, mulberry32(7)), 25, n)
    h.forEach((count) => expect(Math.abs(count / n - 1 / 25)).toBeLessThan(0.005))
  })

  test('the same seed gives the same page sequence; another seed another one', () => {
    const seq = (seed) => Array.from({ length: 50 }, createSampler({ kind: 'zipf', s: 1 }, 25, mulberry32(seed)))
    expect(seq(3)).toEqual(seq(3))
    expect(seq(3)).not.toEqual(seq(4))
  })

  test('indices stay in range even if random returns its extremes', () => {
    expect(createSampler({ kind: 'uniform' }, 5, () => 0.9999999999)()).toBe(4)
    expect(createSampler({ kind: 'zipf', s: 1 }, 5, () => 0.9999999999)()).toBe(4)
    expect(createSampler({ kind: 'zipf', s: 1 }, 5, () => 0)()).toBe(0)
    expect(pagePath(0)).toBe('/page1.html')
  })

  test('a shift rotates the ranking by its step per epoch, wrapping around', () => {
    const shift = parseShift('10', 200)
    expect(shift).toEqual({ seconds: 10, step: 20 }) // a tenth of the pages by default
    expect(parseShift('10,3', 200)).toEqual({ seconds: 10, step: 3 })
    expect(parseShift(undefined, 200)).toBeNull()
    expect(shiftedPage(0, 0, shift, 200)).toBe(0)
    expect(shiftedPage(0, 1, shift, 200)).toBe(20) // the 21st page is now the hottest
    expect(shiftedPage(185, 1, shift, 200)).toBe(5) // the old hottest pages are the coldest
    expect(shiftedPage(7, 10, shift, 200)).toBe(7) // ten epochs of 20: a full turn
    expect(shiftedPage(7, 3, null, 200)).toBe(7)
    const pages = Array.from({ length: 200 }, (_, r) => shiftedPage(r, 3, shift, 200))
    expect(new Set(pages).size).toBe(200) // a permutation
    for (const bad of ['0', 'x', '10,0', '10,200', '1.5', '-3']) expect(() => parseShift(bad, 200)).toThrow(/--shift must be SECONDS\[,STEP\]/)
  })

  test('the Node generator draws Zipf pages with the shift, over real HTTP', async () => {
    const paths = []
    const upstream = await startUpstream((req, res) => { paths.push({ url: req.url, t: performance.now() }); res.end('ok') })
    const child = new Child(path.join(__dirname, '..', 'bench', 'load', 'load-child.js'), { name: 'load child' })
    try {
      const done = child.waitFor('done', 15000)
      // a 1 s shift by 5 over 20 pages: the first second asks page 1 most, the second page 6
      await child.request('start', { url: upstream.url, connections: 4, load: 'node', warmup: 1, duration: 1, pages: 20, popularity: { kind: 'zipf', s: 1 }, shift: { seconds: 1, step: 5 }, seed: 1 })
      await done
    } finally {
      await child.close()
      await upstream.close()
    }
    expect(paths.length).toBeGreaterThan(400)
    const top = (list) => {
      const counts = {}
      for (const p of list) counts[p] = (counts[p] || 0) + 1
      return Object.entries(counts).sort((a, b) => b[1] - a[1])[0][0]
    }
    // the load runs 2 s, an epoch a second: by arrival time, the requests of the first 0.8 s are epoch 0,
    // those of the last 0.8 s epoch 1 (split by time, not by count: a loaded machine may send far
    // fewer in the first second than in the second)
    const start = paths[0].t
    const end = paths[paths.length - 1].t
    const mid = (start + end) / 2
    const early = paths.filter((p) => p.t < mid - 200).map((p) => p.url)
    const late = paths.filter((p) => p.t > mid + 200).map((p) => p.url)
    expect(early.length).toBeGreaterThan(20)
    expect(late.length).toBeGreaterThan(20)
    expect(top(early)).toBe('/page1.html')
    expect(top(late)).toBe('/page6.html')
  }, 20000)
})
