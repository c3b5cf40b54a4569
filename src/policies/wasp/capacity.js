'use strict'

/**
 * Capacity weights (issue 28): how many keys each upstream should hold, learnt from its queue
 * against the others', for a fleet of unequal backends nobody weighted.
 *
 * Holdings (./holdings.js) divide every popularity band evenly per unit of weight. On a fleet of
 * 2 to 8 workers per backend with no weights, the 2-worker backend then holds a seventh of each band,
 * takes a seventh of the requests, and saturates while the 8-worker one has workers to spare. The
 * policy is not told the workers; it sees each response's wait, its latency less its class's base
 * (./queueing.js `observe`). So every EPOCH responses, each listed upstream's mean wait in the epoch
 * is compared with the fleet's: the difference, over the fleet's mean wait plus a hit service time
 * (a relative difference: at saturation every wait is long, and the waits of an equal fleet differ
 * by tens of milliseconds of noise), feeds a smoothed difference per upstream (SMOOTH per epoch).
 * Where that is beyond DEADBAND, the upstream's weight moves by STEP × it (at most MAX_D): one that
 * waits longer holds fewer keys, one that waits less more. The weights are kept at a mean of 1 within
 * [MIN_WEIGHT, MAX_WEIGHT]; at rest (no upstream shows a queue) they go back towards 1 by RELAX per
 * epoch, so that a cold start's skew does not outlive it (nothing is learnt of a fleet that never
 * queues). An upstream given a `weight` keeps it (./index.js `register`).
 *
 * Measured in the open-loop model (docs/algorithms.md, "Sixth pass"): workers 2-8 from 4,000-4,100 to
 * 4,400-4,500 req/s at SLO; an equal fleet's weights stay at 1.00.
 * Pure: reads the records the responses fill; O(upstreams) per epoch, nothing per pick.
 */

const { ABSENT_PICKS } = require('./holdings')

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { exp, max, min } = Math

/** Responses (fleet-wide) per epoch. */
const EPOCH = 512
/** Responses an upstream needs in an epoch for its mean wait to count. */
const MIN_RESPONSES = 8
/** Weight of an epoch's difference in an upstream's smoothed difference. */
const SMOOTH = 1 / 8
/** A smoothed difference within ±DEADBAND moves nothing. */
const DEADBAND = 0.5
/** The log-weight step per unit of smoothed difference (0.1 lost 100 req/s on Zipf(1), seed 2). */
const STEP = 0.05
/** The difference counted at most. */
const MAX_D = 2
const MIN_WEIGHT = 1 / 8
const MAX_WEIGHT = 8
/** The fraction of the way back to 1 per epoch at rest. */
const RELAX = 0.02

/** The fleet-wide count of responses. */
function createCapacity () {
  return { responses: 0 }
}

/** Whether upstream record `u` counts as listed at pick `picks`: as long as a holder keeps its keys
 * (./holdings.js ABSENT_PICKS). */
function listed (u, picks) {
  return picks - u.seen <= ABSENT_PICKS
}

/**
 * One response seen: every EPOCH, the listed upstreams' weights (`urec.queueWeight`) move by their
 * waits against the fleet's (see above), and every upstream's epoch starts afresh.
 * @param {object} w the policy's state (./index.js): `capacity`, `memory`, `bases`, `queued`
 */
function responded (w) {
  if (++w.capacity.responses % EPOCH !== 0) return
  const { memory } = w
  const picks = memory.picks
  const scale = hitService(w.bases)
  let sum = 0
  let count = 0
  let n = 0
  for (const u of memory.ups.values()) {
    if (!listed(u, picks)) continue
    n++
    if (u.q.epochCount < MIN_RESPONSES) continue
    sum += u.q.epochWait
    count += u.q.epochCount
  }
  const mean = count > 0 ? sum / count : 0
  const unit = (mean > 0 ? mean : 0) + scale
  let total = 0
  for (const u of memory.ups.values()) {
    const q = u.q
    if (listed(u, picks)) {
      if (!w.queued) u.queueWeight += RELAX * (1 - u.queueWeight)
      else if (scale > 0 && q.epochCount >= MIN_RESPONSES) {
        u.waitDiff += SMOOTH * ((q.epochWait / q.epochCount - mean) / unit - u.waitDiff)
        const d = u.waitDiff
        if (d > DEADBAND || d < -DEADBAND) u.queueWeight *= exp(-STEP * max(-MAX_D, min(MAX_D, d)))
      }
      total += u.queueWeight
    }
    q.epochWait = 0
    q.epochCount = 0
  }
  if (!(total > 0)) return
  for (const u of memory.ups.values()) {
    if (!listed(u, picks)) continue
    u.queueWeight = min(MAX_WEIGHT, max(MIN_WEIGHT, u.queueWeight * n / total))
  }
}

/** The fleet's hit service time (its base at rest), else another class's; 0 when none is known. */
function hitService (bases) {
  for (let c = 0; c < 3; c++) if (bases.zero[c] > 0 && bases.base[c] > 0) return bases.base[c]
  return 0
}

module.exports = { createCapacity, responded }
