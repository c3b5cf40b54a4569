'use strict'

/**
 * Page sizes of a workload: every page the same size (`fixed:BYTES`), drawn from a lognormal
 * distribution (`lognormal:MEDIAN,SIGMA`), the usual model of web object sizes (most pages small, a
 * few large), or uniformly between two sizes (`uniform:MIN,MAX`, e.g. issue 18's 20-80 KB). Sizes
 * are drawn from a seed, so a workload is the same on every run, and clipped to [MIN_BYTES,
 * MAX_BYTES]. Pure functions, no I/O.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../../src/common/errors')
const { mulberry32 } = require('../../src/common/prng')

const MIN_BYTES = 256
const MAX_BYTES = 16 * 1024 * 1024

/**
 * @typedef {{ kind: 'fixed', bytes: number } | { kind: 'lognormal', median: number, sigma: number } |
 *   { kind: 'uniform', min: number, max: number }} PageSizes
 */

/** "64k" -> 65536, "1.5m" -> 1572864, "900" -> 900; NaN when not a size. */
function parseBytes (text) {
  const m = /^(\d+(?:\.\d+)?)([kmg]?)i?b?$/i.exec(String(text).trim())
  if (!m) return NaN
  const unit = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2].toLowerCase()]
  return Math.round(Number(m[1]) * unit)
}

/**
 * Parse `fixed:BYTES`, `lognormal:MEDIAN,SIGMA` or `uniform:MIN,MAX` (sizes as 62000, 64k, 1m;
 * sigma in (0, 3]).
 * @param {string} text
 * @returns {PageSizes}
 * @throws {import('../../src/common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function parsePageSizes (text) {
  const value = String(text).trim().toLowerCase()
  let m = /^fixed:([^,]+)$/.exec(value)
  if (m) {
    const bytes = parseBytes(m[1])
    if (bytes >= MIN_BYTES && bytes <= MAX_BYTES) return { kind: 'fixed', bytes }
  }
  m = /^lognormal:([^,]+),([^,]+)$/.exec(value)
  if (m) {
    const median = parseBytes(m[1])
    const sigma = Number(m[2])
    if (median >= MIN_BYTES && median <= MAX_BYTES && sigma > 0 && sigma <= 3) {
      return { kind: 'lognormal', median, sigma }
    }
  }
  m = /^uniform:([^,]+),([^,]+)$/.exec(value)
  if (m) {
    const min = parseBytes(m[1])
    const max = parseBytes(m[2])
    if (min >= MIN_BYTES && max <= MAX_BYTES && min <= max) return { kind: 'uniform', min, max }
  }
  throw new ERR_POLISTES_BAD_OPTION('--page-size must be "fixed:BYTES", "lognormal:MEDIAN,SIGMA" or ' +
    `"uniform:MIN,MAX" with sizes of ${MIN_BYTES} B to 16m, ` +
    `0 < SIGMA <= 3 and MIN <= MAX (e.g. fixed:62000, lognormal:40k,1, uniform:20k,80k), got "${text}"`)
}

/**
 * @param {PageSizes} sizes
 * @returns {string} the canonical text form, e.g. `uniform:20480,81920`
 */
function formatPageSizes (sizes) {
  if (sizes.kind === 'fixed') return `fixed:${sizes.bytes}`
  if (sizes.kind === 'uniform') return `uniform:${sizes.min},${sizes.max}`
  return `lognormal:${sizes.median},${sizes.sigma}`
}

/**
 * The size of each of `count` pages, drawn from `seed`.
 * @param {PageSizes} sizes
 * @param {number} count
 * @param {number} [seed=1]
 * @returns {number[]} bytes per page, integers in [MIN_BYTES, MAX_BYTES]
 */
function pageSizes (sizes, count, seed = 1) {
  if (sizes.kind === 'fixed') return new Array(count).fill(sizes.bytes)
  const random = mulberry32(seed * 2654435761)
  const out = new Array(count)
  if (sizes.kind === 'uniform') {
    for (let i = 0; i < count; i++) out[i] = sizes.min + Math.floor(random() * (sizes.max - sizes.min + 1))
    return out
  }
  for (let i = 0; i < count; i++) {
    // Box-Muller: one standard normal from two uniforms (1 - u keeps the log away from 0)
    const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())
    const bytes = Math.round(sizes.median * Math.exp(sizes.sigma * z))
    out[i] = Math.min(MAX_BYTES, Math.max(MIN_BYTES, bytes))
  }
  return out
}

module.exports = { parsePageSizes, formatPageSizes, pageSizes, parseBytes }
