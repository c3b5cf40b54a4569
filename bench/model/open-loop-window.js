'use strict'

/**
 * The statistics of one window of arrivals in the open-loop model (bench/model/open-loop.js):
 * latency quantiles from the intended send time, hit rate, each backend's share of requests and
 * of work, and utilization. Pure.
 */

/**
 * Statistics over one window of arrivals: `sent` at each arrival, `done` at each completion, then `summary`.
 * @param {string[]} ids the backends
 * @param {Map<string, number>} workersOf workers per backend
 */
function createWindow (ids, workersOf) {
  const latencies = []
  const counts = new Map(ids.map((id) => [id, 0]))
  const work = new Map(ids.map((id) => [id, 0])) // worker-ms of service of this window's requests
  let hits = 0
  const win = {
    arrivals: 0,
    completed: 0,
    sent (id) { win.arrivals++; counts.set(id, (counts.get(id) || 0) + 1) },
    done (latencyMs, hit, id, serviceMs) {
      win.completed++
      latencies.push(latencyMs)
      if (hit) hits++
      work.set(id, work.get(id) + serviceMs)
    },
    summary (spanMs, queue) {
      const sorted = Float64Array.from(latencies).sort()
      const q = (p) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : 0
      const total = win.arrivals
      let busiest = 0
      const share = {}
      for (const [id, c] of counts) { share[id] = c / total; if (c > busiest) busiest = c }
      // the busiest backend's work (worker-ms per worker) over the mean's: 1 = perfectly balanced
      let workSum = 0
      let workerSum = 0
      let workMax = 0
      for (const [id, ms] of work) {
        workSum += ms
        workerSum += workersOf.get(id)
        workMax = Math.max(workMax, ms / workersOf.get(id))
      }
      return {
        requests: total,
        hitRate: total ? hits / total : 0,
        p50: q(0.5),
        p99: q(0.99),
        p999: q(0.999),
        mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
        busiest: total ? busiest / total : 0,
        workImbalance: workSum > 0 ? workMax / (workSum / workerSum) : 0,
        utilization: spanMs > 0 ? workSum / (workerSum * spanMs) : 0,
        share,
        spanMs,
        queueAtEnd: queue
      }
    }
  }
  return win
}

module.exports = { createWindow }
