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
 * The estimator, probing, tie-breaking and failure rules live in `./latency.js`, shared with `sma`,
 * `lowest-latency` and `latency-weighted`.
 */

const { createLowestEwma } = require('./latency')

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

module.exports = { createEwma }
