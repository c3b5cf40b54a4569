'use strict'

const { parsePopularity, formatPopularity, probabilities, createSampler, pagePath } = require('../bench/popularity')
const { mulberry32 } = require('../src/prng')

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
})
