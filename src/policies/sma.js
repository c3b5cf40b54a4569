'use strict'

/**
 * SMA: simple moving average of each upstream's last N response latencies; the lowest wins, and an
 * upstream with no sample yet is probed first.
 *
 * Source: docs/experiments.md, A (the adaptive aiohttp proxy: "SMA of the last N=3 latencies per backend,
 * lowest wins ... probe a backend with no sample yet"). Probing, tie-breaking, failure samples and
 * memory follow the rules documented in `./latency.js` (shared `pickLowest` and `latencySample`).
 * Each upstream keeps a ring of at most `window` samples and their running sum: O(1) per sample.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { checkOptions, forgetAbsent, largest } = require('./shared')
const { latencySample, pickLowest } = require('./latency')

/**
 * Create an SMA policy.
 * @param {object} [options]
 * @param {number} [options.window=3] how many of the latest latencies are averaged (integer >= 1);
 *   3 as in docs/experiments.md, A: reacts within three responses to a latency change
 * @returns {import('./types').Policy}
 */
function createSma (options) {
  const { window = 3 } = checkOptions('sma', options, ['window'])
  if (!(Number.isInteger(window) && window >= 1)) {
    throw new ERR_POLISTES_BAD_OPTION(`sma: window must be an integer >= 1, got ${window}`)
  }
  /** @type {Map<string, { ring: number[], next: number, sum: number }>} */
  const table = new Map()

  const averageOf = (entry) => entry.sum / entry.ring.length

  function average (id) {
    const entry = table.get(id)
    return entry === undefined ? undefined : averageOf(entry)
  }

  return {
    name: 'sma',
    pick (upstreams) {
      if (!upstreams || upstreams.length === 0) return undefined
      forgetAbsent(table, upstreams)
      return pickLowest(upstreams, (u) => average(u.id))
    },
    onEnd (upstream, ctx, outcome) {
      if (!upstream) return
      const sample = latencySample(outcome, largest(table, averageOf))
      if (sample === undefined) return
      let entry = table.get(upstream.id)
      if (entry === undefined) {
        entry = { ring: [], next: 0, sum: 0 }
        table.set(upstream.id, entry)
      }
      if (entry.ring.length < window) {
        entry.ring.push(sample)
        entry.sum += sample
      } else {
        entry.sum += sample - entry.ring[entry.next]
        entry.ring[entry.next] = sample
        entry.next = (entry.next + 1) % window
      }
      if (entry.next === 0 && entry.ring.length === window) {
        // once per full turn, recompute the sum to shed floating-point drift
        entry.sum = entry.ring.reduce((s, x) => s + x, 0)
      }
    },
    snapshot () {
      const upstreams = {}
      for (const [id, e] of table) upstreams[id] = { averageMs: averageOf(e), samples: [...e.ring] }
      return { window, upstreams }
    }
  }
}

module.exports = { createSma }
