'use strict'

/**
 * A backend's finite capacity: `size` workers and a FIFO queue in front of them, like an
 * application server with a fixed number of worker threads. A page request holds one worker for
 * its whole service time; when all are busy it waits, in arrival order. Size 0 is unlimited: every
 * request gets a worker at once and nothing ever queues.
 *
 * Pure bookkeeping: no timers, no clock, no I/O (the backend measures the service times).
 */

/**
 * @typedef {object} WorkerPoolStats
 * @property {number} workers the pool's size, 0 = unlimited
 * @property {number} busy workers held now
 * @property {number} queued requests waiting for a worker now
 * @property {number} maxQueued the longest the queue has been since the start
 * @property {number} waited requests that had to queue since the start (cancelled ones included)
 */

/**
 * @typedef {object} WorkerTicket a request in the queue
 * @property {Promise<boolean>} granted resolves true once the request holds a worker (then it
 *   must call `release()` once), false when cancelled first
 * @property {() => void} cancel leave the queue (a no-op once granted or cancelled)
 */

/**
 * Create a worker pool.
 *
 * @param {number} size workers, an integer >= 0 (0 = unlimited)
 * @returns {{ take: () => WorkerTicket | null, release: () => void, stats: () => WorkerPoolStats }}
 *   `take()`: null when a worker is free (the caller holds it now), else a ticket in the queue;
 *   `release()`: give a held worker back (the oldest waiting request gets it)
 */
function createWorkerPool (size) {
  if (!Number.isInteger(size) || size < 0) throw new TypeError(`worker pool size must be an integer >= 0, got ${size}`)
  const waiting = new Set() // insertion order = arrival order; delete is O(1) for a cancel
  let busy = 0
  let maxQueued = 0
  let waited = 0
  const free = () => size === 0 || busy < size

  function grantWaiting () {
    while (waiting.size > 0 && free()) {
      const entry = waiting.values().next().value
      waiting.delete(entry)
      busy++
      entry.resolve(true)
    }
  }

  return {
    take () {
      if (free() && waiting.size === 0) {
        busy++
        return null
      }
      let entry
      const granted = new Promise((resolve) => { entry = { resolve } })
      waiting.add(entry)
      waited++
      if (waiting.size > maxQueued) maxQueued = waiting.size
      return { granted, cancel: () => { if (waiting.delete(entry)) entry.resolve(false) } }
    },
    release () {
      if (busy === 0) throw new Error('worker pool: release() without a held worker')
      busy--
      grantWaiting()
    },
    stats () {
      return { workers: size, busy, queued: waiting.size, maxQueued, waited }
    }
  }
}

module.exports = { createWorkerPool }
