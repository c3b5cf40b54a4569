'use strict'

/**
 * EWMA: exponentially weighted moving average of each upstream's response latency; the lowest wins,
 * and an upstream with no sample yet is probed first.
 *
 * Source: docs/experiments.md, A (the adaptive aiohttp proxy: "EWMA with alpha 0.2, lowest wins ...
 * probe a backend with no sample yet"); the estimator is the classic
 * `avg = alpha * sample + (1 - alpha) * avg` (Roberts 1959; TCP's SRTT, RFC 6298, is the same with
 * alpha 1/8). The first sample initializes the average.
 *
 * This module also holds what the latency-driven policies share (`latencySample`, `pickLowest`,
 * `createEwmaTable`): `sma`, `lowest-latency` and `latency-weighted` are built from them.
 *
 * Choices, common to sma / ewma / lowest-latency:
 * - Probing: an upstream without a sample is picked before any sampled one, as long as it has no
 *   request in flight (its probe is out); while every unsampled upstream is busy probing, the sampled
 *   ones compete on their average. With no sample anywhere, the least-loaded unsampled one is probed.
 *   This keeps a new or cold upstream from being flooded before its first answer arrives.
 * - Ties on the average: fewer in flight, then list order.
 * - Failures (outcome.error or a 5xx): the sample is the larger of the request's own latency and the
 *   worst estimate currently known, so that a fast-failing upstream never looks like the fastest
 *   (the "black hole" of latency-only balancing). A failure with no latency and nothing known, or an
 *   outcome without a finite latency, is ignored.
 * - Memory: a Map keyed by id, pruned lazily of ids absent from the eligible list.
 */

const { PolistesError } = require('../errors')
const { forgetAbsent } = require('./weighted-round-robin')

function inflightOf (upstream) {
  const n = upstream.inflight
  return typeof n === 'number' && n > 0 ? n : 0
}

/**
 * The latency sample an outcome contributes, or undefined when it contributes none.
 * @param {import('./types').Outcome | undefined} outcome
 * @param {number | undefined} worstKnown the largest estimate currently held, if any
 * @returns {number | undefined}
 */
function latencySample (outcome, worstKnown) {
  if (!outcome || typeof outcome !== 'object') return undefined
  const l = outcome.latencyMs
  const latency = typeof l === 'number' && Number.isFinite(l) && l >= 0 ? l : undefined
  const failed = Boolean(outcome.error) || (typeof outcome.statusCode === 'number' && outcome.statusCode >= 500)
  if (!failed) return latency
  if (latency === undefined && worstKnown === undefined) return undefined
  return Math.max(latency ?? 0, worstKnown ?? 0)
}

/**
 * Lowest estimate wins; unsampled upstreams are probed first (see the module comment).
 * @template {{ id: string, inflight: number }} U
 * @param {readonly U[]} upstreams non-empty
 * @param {(u: U) => number | undefined} estimateOf undefined when unsampled
 * @returns {U}
 */
function pickLowest (upstreams, estimateOf) {
  let probe
  let best
  let bestEstimate = Infinity
  for (const u of upstreams) {
    const e = estimateOf(u)
    if (e === undefined) {
      if (probe === undefined || inflightOf(u) < inflightOf(probe)) probe = u
    } else if (best === undefined || e < bestEstimate || (e === bestEstimate && inflightOf(u) < inflightOf(best))) {
      best = u
      bestEstimate = e
    }
  }
  if (probe !== undefined && (best === undefined || inflightOf(probe) === 0)) return probe
  return best
}

/**
 * A table of per-id EWMAs.
 * @param {number} alpha weight of the newest sample, in (0, 1]
 */
function createEwmaTable (alpha) {
  /** @type {Map<string, { value: number, samples: number }>} */
  const table = new Map()
  return {
    /** @returns {number | undefined} */
    get (id) {
      const entry = table.get(id)
      return entry === undefined ? undefined : entry.value
    },
    /** @returns {number | undefined} the largest estimate held */
    worst () {
      let w
      for (const entry of table.values()) if (w === undefined || entry.value > w) w = entry.value
      return w
    },
    observe (id, sample) {
      const entry = table.get(id)
      if (entry === undefined) table.set(id, { value: sample, samples: 1 })
      else {
        entry.value = alpha * sample + (1 - alpha) * entry.value
        entry.samples++
      }
    },
    /** Feed one request's outcome (errors count as at least the worst estimate held). */
    record (upstream, outcome) {
      if (!upstream) return
      const sample = latencySample(outcome, this.worst())
      if (sample !== undefined) this.observe(upstream.id, sample)
    },
    forget (upstreams) {
      forgetAbsent(table, upstreams)
    },
    toJSON () {
      const out = {}
      for (const [id, e] of table) out[id] = { estimateMs: e.value, samples: e.samples }
      return out
    }
  }
}

/**
 * @param {unknown} alpha
 * @param {string} name policy name, for the error message
 * @returns {number}
 */
function checkAlpha (alpha, name) {
  if (!(typeof alpha === 'number' && alpha > 0 && alpha <= 1)) {
    throw new PolistesError('ERR_POLISTES_BAD_OPTION', `${name}: alpha must be a number in (0, 1], got ${alpha}`)
  }
  return alpha
}

/**
 * Build a "lowest EWMA wins" policy under a given name (shared by `ewma` and `lowest-latency`).
 * @param {string} name
 * @param {{ alpha?: number }} options
 * @returns {import('./types').Policy}
 */
function createLowestEwma (name, { alpha = 0.2 } = {}) {
  checkAlpha(alpha, name)
  const table = createEwmaTable(alpha)
  return {
    name,
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      table.forget(upstreams)
      return pickLowest(upstreams, (u) => table.get(u.id))
    },
    onEnd (upstream, ctx, outcome) {
      table.record(upstream, outcome)
    },
    snapshot () {
      return { alpha, upstreams: table.toJSON() }
    }
  }
}

/**
 * Create an EWMA policy: lowest exponentially weighted moving average of latency wins; unsampled
 * upstreams are probed first.
 * @param {object} [options]
 * @param {number} [options.alpha=0.2] weight of the newest sample, in (0, 1]; 0.2 as in docs/experiments.md, A
 *   (about the last 5-10 samples matter; higher reacts faster and flaps more)
 * @returns {import('./types').Policy}
 */
function createEwma (options = {}) {
  return createLowestEwma('ewma', options)
}

module.exports = { createEwma, createLowestEwma, createEwmaTable, latencySample, pickLowest, checkAlpha }
