'use strict'

/**
 * The model's two references (bench/model/reference-learners.js: `clairvoyant`, a static placement known
 * from the first request, and `counting`, a learner with exact request counts) as contenders of the
 * capacity scenario over HTTP. They are not policies a user can run: each is told the fleet (its workers,
 * caches and the popularity ranking), which a balancer is not. Beside wasp in one run, they show how much
 * of the fleet's physical limit a placement reaches on this machine in the same warm-up, cold processes
 * and all: the runtime's share of the gap, measured beside the policy's.
 */

const { pagePath } = require('../workloads/popularity')
const { MAX_UPSTREAMS } = require('../model/placement-limit')

/** The references by name, as `--algos` takes them in the capacity scenario. */
const REFERENCE_NAMES = ['clairvoyant', 'counting']

/**
 * Why the references cannot run with these settings, or null when they can.
 * @param {{ sweep: object | null, workload: object, fleet: object, workers: number }} settings
 * @param {string[]} names the references asked for
 * @returns {string | null}
 */
function referenceProblem ({ sweep, workload, fleet, workers }, names) {
  const list = names.join(', ')
  if (!sweep) return `${list}: a reference of the capacity scenario only (--scenario capacity)`
  if (workload.cacheBytes !== undefined) return `${list}: the references count caches in pages, not --cache-bytes`
  if (workers > 1) return `${list}: a reference runs in one balancer process (leave --workers out)`
  if (names.includes('clairvoyant')) {
    if (workload.shift) return 'clairvoyant: its placement is static, --shift rotates the ranking it was told'
    if (fleet.count > MAX_UPSTREAMS) {
      return `clairvoyant: at most ${MAX_UPSTREAMS} backends (its placement tries every subset), got ${fleet.count}`
    }
  }
  return null
}

/**
 * The fleet as the model's references take it, for the backends a run started.
 * @param {{ fleet: { workers: number | number[], cachePages: number | number[], hitMs: number, missMs: number },
 *   pages: number, popularity: import('../workloads/popularity').Popularity }} settings
 * @param {string[]} ids the backends' ids, in fleet order
 * @returns {object} `{ upstreams, workers, cacheSize, keys, popularity, hitMs, missMs, names }`
 */
function referenceFleet ({ fleet, pages, popularity }, ids) {
  return {
    upstreams: ids,
    workers: fleet.workers,
    cacheSize: fleet.cachePages,
    keys: pages,
    popularity: popularity.kind === 'zipf' ? { zipf: popularity.s } : 'uniform',
    hitMs: fleet.hitMs,
    missMs: fleet.missMs,
    // the balancer's routing key of each page, hottest first, as the load generator names them
    names: Array.from({ length: pages }, (_, i) => pagePath(i))
  }
}

module.exports = { REFERENCE_NAMES, referenceProblem, referenceFleet }
