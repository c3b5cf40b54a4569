'use strict'

/**
 * The workload options of `npm run bench:model` (issue 18): pages, popularity, page sizes, caches in
 * pages or bytes, churn. Validated here, once, into a plain workload object; bad values throw
 * ERR_POLISTES_BAD_OPTION with the option's name.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../src/errors')
const { parsePopularity, formatPopularity } = require('./popularity')
const { parsePageSizes, parseBytes } = require('./page-sizes')

const UPSTREAMS = 7
const MAX_PAGES = 100000

/**
 * @param {{ pages?: number, popularity?: string, 'cache-pages'?: number, 'cache-bytes'?: string, 'page-size'?: string, churn?: boolean }} args
 * @returns {import('./model-workload').Workload & { describe: string }}
 * @throws {import('../src/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function parseWorkload (args) {
  const pages = args.pages ?? 200
  if (!Number.isInteger(pages) || pages < 2 || pages > MAX_PAGES) throw new ERR_POLISTES_BAD_OPTION(`--pages must be an integer from 2 to ${MAX_PAGES}, got ${args.pages}`)
  const popularity = parsePopularity(args.popularity ?? 'zipf:1')
  const sizes = parsePageSizes(args['page-size'] ?? 'fixed:62000')
  const w = { pages, popularity, upstreams: UPSTREAMS, pageSizes: sizes, churn: Boolean(args.churn) }
  if (args['cache-bytes'] !== undefined) {
    if (args['cache-pages'] !== undefined) throw new ERR_POLISTES_BAD_OPTION('--cache-pages and --cache-bytes exclude each other: a cache is bounded in pages or in bytes')
    const bytes = parseBytes(args['cache-bytes'])
    if (!(bytes >= 1024)) throw new ERR_POLISTES_BAD_OPTION(`--cache-bytes must be a size of at least 1k (e.g. 2m), got "${args['cache-bytes']}"`)
    w.cacheBytes = bytes
  } else {
    const cachePages = args['cache-pages'] ?? Math.max(1, Math.round(0.12 * pages))
    if (!Number.isInteger(cachePages) || cachePages < 1) throw new ERR_POLISTES_BAD_OPTION(`--cache-pages must be a positive integer, got ${args['cache-pages']}`)
    w.cachePages = cachePages
  }
  const size = sizes.kind === 'fixed' ? `${sizes.bytes} B pages` : `lognormal pages (median ${sizes.median} B, sigma ${sizes.sigma})`
  const cache = w.cacheBytes !== undefined ? `${w.cacheBytes} B` : `${w.cachePages} pages`
  w.describe = `${pages} pages, ${formatPopularity(popularity)}, ${size}, ${UPSTREAMS} upstreams caching ${cache} each${w.churn ? ', churn (one upstream down for the middle third)' : ''}`
  return w
}

module.exports = { parseWorkload }
