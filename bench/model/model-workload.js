'use strict'

/**
 * One policy on one workload in the closed-loop model (bench/model/closed-loop.js), with the workload's
 * static optimum (bench/model/optimum.js) as the reference line: pages, popularity, page sizes, caches in
 * pages or bytes, and churn (one upstream removed a third into the measured window and back two
 * thirds in). Pure: no I/O.
 */

const { createModel } = require('./closed-loop')
const { probabilities } = require('../workloads/popularity')
const { pageSizes } = require('../workloads/page-sizes')
const { staticOptimum, timeAveragedOptimum } = require('./optimum')
const { mulberry32 } = require('../../src/common/prng')

/**
 * @typedef {object} Workload
 * @property {number} pages distinct pages
 * @property {import('../workloads/popularity').Popularity} popularity
 * @property {number} upstreams
 * @property {number} [cachePages] pages per upstream cache (default when cacheBytes is not given)
 * @property {number} [cacheBytes] bytes per upstream cache instead of pages
 * @property {import('../workloads/page-sizes').PageSizes} [pageSizes] needed with cacheBytes
 * @property {boolean} [churn] one upstream down for the middle third of the measured window
 * @property {{ seconds: number, step: number } | null} [shift] the ranking rotates by `step` every
 *   `seconds` (of simulated time in the model, of wall time in the HTTP bench)
 * @property {number} [inflight=32]
 */

/**
 * The static optimum of a workload, time-averaged over its churn.
 * @param {Workload} w
 * @param {number} [seed=1] seed of the page sizes
 * @returns {number}
 */
function workloadOptimum (w, seed = 1) {
  const probs = probabilities(w.popularity, w.pages)
  const capacity = (n) => w.cacheBytes !== undefined
    ? { bytes: n * w.cacheBytes, sizes: pageSizes(w.pageSizes, w.pages, seed) }
    : { pages: n * (w.cachePages ?? 4) }
  if (!w.churn) return staticOptimum(probs, capacity(w.upstreams))
  return timeAveragedOptimum(probs, [
    { fraction: 2 / 3, capacity: capacity(w.upstreams) },
    { fraction: 1 / 3, capacity: capacity(w.upstreams - 1) }
  ])
}

/**
 * Run `makePolicy(random)` on workload `w`: `warmup` requests, then `measure` requests (in thirds
 * around the churn).
 * @param {(random: () => number) => object} makePolicy
 * @param {Workload} w
 * @param {{ seed?: number, warmup?: number, measure?: number }} [options]
 * @returns {{ hitRate: number, optimum: number, distance: number, balance: number }}
 */
function runWorkload (makePolicy, w, { seed = 1, warmup = 20000, measure = 30000 } = {}) {
  const model = createModel({
    policy: makePolicy(mulberry32(seed * 7919 + 17)),
    seed,
    upstreams: w.upstreams,
    keys: w.pages,
    popularity: w.popularity.kind === 'zipf' ? { zipf: w.popularity.s } : 'uniform',
    inflight: w.inflight ?? 32,
    ...(w.cacheBytes !== undefined
      ? { cacheBytes: w.cacheBytes, pageBytes: pageSizes(w.pageSizes, w.pages, seed) }
      : { cacheSize: w.cachePages ?? 4 })
  })
  let epoch = 0
  // with a shift, run in slices of at most 200 requests and rotate the ranking as simulated time
  // crosses each epoch boundary
  const run = (n) => {
    if (!w.shift) return [model.run(n)]
    const out = []
    for (let left = n; left > 0; left -= 200) {
      out.push(model.run(Math.min(200, left)))
      const now = Math.floor(model.now / (w.shift.seconds * 1000))
      for (; epoch < now; epoch++) model.rotate(w.shift.step)
    }
    return out
  }
  run(warmup)
  let windows
  if (w.churn) {
    const third = Math.round(measure / 3)
    const first = run(third)
    model.removeUpstream('u0')
    const second = run(third)
    model.addUpstream('u0')
    windows = [...first, ...second, ...run(measure - 2 * third)]
  } else {
    windows = run(measure)
  }
  const total = windows.reduce((a, x) => a + x.requests, 0)
  const hitRate = windows.reduce((a, x) => a + x.hitRate * x.requests, 0) / total
  const optimum = workloadOptimum(w, seed)
  return { hitRate, optimum, distance: optimum - hitRate, balance: windows[windows.length - 1].balance }
}

module.exports = { runWorkload, workloadOptimum }
