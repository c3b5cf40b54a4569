'use strict'

/**
 * What the latency-driven policies share: the sample an outcome contributes (`latencySample`), the
 * "lowest estimate wins, probe the unsampled first" choice (`pickLowest`), a table of per-upstream
 * EWMAs (`createEwmaTable`), and the policy built from them (`createLowestEwma`, which is `ewma` and
 * `lowest-latency` under two names). `sma` and `p2c-peak-ewma` use the sample and the choice with
 * estimators of their own; `latency-weighted` uses the table.
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

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { checkOptions, inflightOf, forgetAbsent, ewma, largest } = require('./shared')

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
 * A table of per-id EWMAs of latency.
 * @param {number} alpha weight of the newest sample, in (0, 1]
 */
function createEwmaTable (alpha) {
  /** @type {Map<string, { value: number, samples: number }>} */
  const table = new Map()
  const valueOf = (entry) => entry.value
  return {
    /** @returns {number | undefined} */
    get (id) {
      const entry = table.get(id)
      return entry === undefined ? undefined : entry.value
    },
    /** @returns {number | undefined} the largest estimate held */
    worst () {
      return largest(table, valueOf)
    },
    observe (id, sample) {
      const entry = table.get(id)
      if (entry === undefined) table.set(id, { value: sample, samples: 1 })
      else {
        entry.value = ewma(entry.value, sample, alpha)
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
    throw new ERR_POLISTES_BAD_OPTION(`${name}: alpha must be a number in (0, 1], got ${alpha}`)
  }
  return alpha
}

/**
 * Build a "lowest EWMA wins" policy under a given name (shared by `ewma` and `lowest-latency`).
 * @param {string} name
 * @param {{ alpha?: number }} options
 * @returns {import('./types').Policy}
 */
function createLowestEwma (name, options) {
  const { alpha = 0.2 } = checkOptions(name, options, ['alpha'])
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

module.exports = { latencySample, pickLowest, createEwmaTable, checkAlpha, createLowestEwma }
