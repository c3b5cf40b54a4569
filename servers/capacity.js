'use strict'

/**
 * A backend's capacity (issue 28): its workers and FIFO queue (servers/worker-pool.js), how it
 * spends the service time of a hit or a miss (a timer, or CPU work that blocks the event loop), and
 * the service times it measures, from taking a worker to the response's end, for `/_stats`.
 */

const { wait, burnCpu } = require('./miss-cost')
const { createWorkerPool } = require('./worker-pool')

/**
 * @typedef {object} CapacityStats the capacity's fields of `/_stats`
 * @property {number} workers the pool's size, 0 = unlimited
 * @property {number} busy page requests holding a worker now
 * @property {number} queued page requests waiting for a worker now
 * @property {number} maxQueued the longest the queue has been since the start
 * @property {number} waited page requests that had to queue since the start
 * @property {number} hitServiceCount hits answered (head written; a client gone during the service time is not counted)
 * @property {number} hitServiceTotalMs the time they held a worker, summed (ms)
 * @property {number | null} hitServiceMs its mean; null before the first
 * @property {number} missServiceCount misses answered (404s included)
 * @property {number} missServiceTotalMs the time they held a worker, summed (ms)
 * @property {number | null} missServiceMs its mean; null before the first
 */

const round3 = (ms) => Math.round(ms * 1000) / 1000

/**
 * Create a backend's capacity from its normalized options.
 *
 * @param {{ workers: number, hitMs: number, missMs: number, service: 'timer' | 'cpu' }} options
 * @returns {{ take: (res: import('node:http').ServerResponse, gone: () => boolean) => Promise<boolean> | null,
 *   hold: (res: import('node:http').ServerResponse) => { kind: 'hit' | 'miss' | null },
 *   spend: (kind: 'hit' | 'miss', extraMs: number) => Promise<void>, stats: () => CapacityStats }}
 *   `take`: null when the request holds a worker at once, else a promise of whether it holds one
 *   after queueing (false: its client left first); `hold`: from now until the response finishes or
 *   closes, then the worker is given back and the time of a response whose head was written is
 *   added to the hit or miss totals, as the returned object's `kind` says by then; `spend`: the
 *   service time of a hit or a miss plus `extraMs` of waiting (latency profile, periodic load)
 */
function createCapacity ({ workers, hitMs, missMs, service }) {
  const pool = createWorkerPool(workers)
  const measured = { hit: { count: 0, totalMs: 0 }, miss: { count: 0, totalMs: 0 } }

  async function queue (res, ticket, gone) {
    const leave = () => ticket.cancel()
    res.once('close', leave)
    const granted = await ticket.granted
    res.off('close', leave)
    if (granted && gone()) pool.release() // closed in the tick its worker came
    return granted && !gone()
  }

  function hold (res) {
    const takenAt = performance.now()
    const held = { kind: null }
    let done = false
    const release = () => {
      if (done) return
      done = true
      pool.release()
      if (!res.headersSent || held.kind === null) return
      const m = measured[held.kind]
      m.count++
      m.totalMs += performance.now() - takenAt
    }
    // 'finish' for a response written whole; 'close' alone when the socket went first, which also
    // happens to a complete response: node-static calls end() only once a further read of the file
    // has found its end, and a client that has all Content-Length bytes may close before that. So a
    // response counts as served once its head was written (after the service time), whichever came.
    res.once('finish', release)
    res.once('close', release)
    return held
  }

  async function spend (kind, extraMs) {
    const ms = kind === 'hit' ? hitMs : missMs
    if (service === 'cpu') {
      if (ms > 0) burnCpu(ms)
      await wait(extraMs)
    } else {
      await wait(ms + extraMs)
    }
  }

  function stats () {
    const { hit, miss } = measured
    return {
      ...pool.stats(),
      hitServiceCount: hit.count,
      hitServiceTotalMs: round3(hit.totalMs),
      hitServiceMs: hit.count > 0 ? round3(hit.totalMs / hit.count) : null,
      missServiceCount: miss.count,
      missServiceTotalMs: round3(miss.totalMs),
      missServiceMs: miss.count > 0 ? round3(miss.totalMs / miss.count) : null
    }
  }

  return {
    take (res, gone) {
      const ticket = pool.take()
      return ticket ? queue(res, ticket, gone) : null
    },
    hold,
    spend,
    stats
  }
}

module.exports = { createCapacity }
