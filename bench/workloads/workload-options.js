'use strict'

/**
 * The workload options of issue 18, shared by `npm run bench:model` (bench/runners/model.js) and
 * `npm run bench` (bench/runners/options.js): pages, popularity, page sizes, caches in pages or bytes,
 * popularity shift, churn. Validated here, once, into a plain workload object; bad values throw
 * ERR_POLISTES_BAD_OPTION with the option's name. Each caller passes its own defaults.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../../src/common/errors')
const { parsePopularity, formatPopularity } = require('./popularity')
const { parsePageSizes, parseBytes } = require('./page-sizes')
const { DEFAULTS } = require('../../src/config/defaults')

const MAX_PAGES = 100000

/** The model's defaults: Zipf(1) over 200 pages of 62,000 B, 12 % of the pages per cache. */
const MODEL_DEFAULTS = Object.freeze({
  pages: 200,
  popularity: 'zipf:1',
  pageSize: 'fixed:62000',
  minPages: 2,
  minCachePages: 1
})

/**
 * @typedef {{ seconds: number, step: number }} Shift every `seconds`, the popularity ranking
 *   rotates by `step` places: the page at rank r takes rank r - step (mod pages), the hottest
 *   `step` pages go to the bottom
 */

/**
 * Parse `--shift SECONDS[,STEP]` (STEP defaults to a tenth of the pages, at least 1).
 * @param {string | number | undefined} value
 * @param {number} pages
 * @returns {Shift | null} null when not given
 */
function parseShift (value, pages) {
  if (value === undefined) return null
  const m = /^(\d+(?:\.\d+)?)(?:,(\d+))?$/.exec(String(value).trim())
  const seconds = m ? Number(m[1]) : NaN
  const step = m && m[2] !== undefined ? Number(m[2]) : Math.max(1, Math.round(pages / 10))
  if (!(seconds >= 1) || !Number.isInteger(seconds) || !(step >= 1 && step < pages)) {
    throw new ERR_POLISTES_BAD_OPTION('--shift must be SECONDS[,STEP]: whole seconds >= 1 and 1 <= STEP < ' +
      `pages (${pages}), e.g. 10 or 10,20, got "${value}"`)
  }
  return { seconds, step }
}

/**
 * @param {{ pages?: number, popularity?: string, 'cache-pages'?: number, 'cache-bytes'?: string, 'page-size'?:
 *   string, shift?: string, churn?: boolean }} args
 * @param {{ pages: number, popularity: string, pageSize?: string, cachePages?: number, minPages?: number,
 *   minCachePages?: number, upstreams?: number }} [defaults]
 *   the caller's defaults (the model's when not given); without `pageSize` the pages keep the
 *   caller's own sizes (the HTTP bench's lorem pages) and `pageSizes` is undefined
 * @returns {import('../model/model-workload').Workload & { describe: string }}
 * @throws {import('../../src/common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function parseWorkload (args, defaults = MODEL_DEFAULTS) {
  const minPages = defaults.minPages ?? 2
  const upstreams = defaults.upstreams ?? DEFAULTS.fleet.count
  const pages = args.pages ?? defaults.pages
  if (!Number.isInteger(pages) || pages < minPages || pages > MAX_PAGES) {
    throw new ERR_POLISTES_BAD_OPTION(`--pages must be an integer from ${minPages} to ${MAX_PAGES}, got ${args.pages}`)
  }
  const popularity = parsePopularity(args.popularity ?? defaults.popularity)
  const sizeText = args['page-size'] ?? defaults.pageSize
  const sizes = sizeText === undefined ? undefined : parsePageSizes(sizeText)
  const w = {
    pages,
    popularity,
    upstreams,
    pageSizes: sizes,
    churn: Boolean(args.churn),
    shift: parseShift(args.shift, pages)
  }
  if (w.shift && popularity.kind === 'uniform') {
    throw new ERR_POLISTES_BAD_OPTION('--shift rotates the popularity ranking, which uniform popularity ' +
      'does not have: give --popularity zipf:<s>')
  }
  if (args['cache-bytes'] !== undefined) {
    if (args['cache-pages'] !== undefined) {
      throw new ERR_POLISTES_BAD_OPTION('--cache-pages and --cache-bytes exclude each other: a cache is ' +
        'bounded in pages or in bytes')
    }
    const bytes = parseBytes(args['cache-bytes'])
    if (!(bytes >= 1024)) {
      throw new ERR_POLISTES_BAD_OPTION('--cache-bytes must be a size of at least 1k (e.g. 2m), got "' +
        `${args['cache-bytes']}"`)
    }
    w.cacheBytes = bytes
  } else {
    const minCache = defaults.minCachePages ?? 1
    const cachePages = args['cache-pages'] ?? defaults.cachePages ?? Math.max(1, Math.round(0.12 * pages))
    if (!Number.isInteger(cachePages) || cachePages < minCache) {
      throw new ERR_POLISTES_BAD_OPTION(`--cache-pages must be an integer >= ${minCache}, got ${args['cache-pages']}`)
    }
    w.cachePages = cachePages
  }
  w.describe = describeWorkload(w)
  return w
}

/** One line naming every part of a workload. */
function describeWorkload (w) {
  const s = w.pageSizes
  const size = !s
    ? 'lorem pages of about 60 KB'
    : s.kind === 'fixed'
      ? `${s.bytes} B pages`
      : s.kind === 'uniform'
        ? `pages of ${s.min}-${s.max} B`
        : `lognormal pages (median ${s.median} B, sigma ${s.sigma})`
  const cache = w.cacheBytes !== undefined ? `${w.cacheBytes} B` : `${w.cachePages} pages`
  return `${w.pages} pages, ${formatPopularity(w.popularity)}, ${size}, ${w.upstreams} upstreams caching ` +
    `${cache} each` +
    (w.shift ? `, ranking rotated by ${w.shift.step} every ${w.shift.seconds} s` : '') +
    (w.churn ? ', churn (one upstream down for the middle third)' : '')
}

module.exports = { parseWorkload, parseShift }
