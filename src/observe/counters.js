'use strict'

/**
 * The balancer's request counters, listed once: the counters object the balancer increments, the
 * stats it reports (`/_polistes/stats`, `BalancerStats` in src/index.d.ts, which
 * test/counters.test.js holds to this list) and the Prometheus counters (src/observe/metrics.js)
 * all derive from it. Adding a counter is one entry here and the line that increments it.
 * - `name`: its key in the counters and the stats;
 * - `metric` and `help`: a Prometheus counter of its own; or `failureKind`: a `kind` of
 *   `polistes_failures_total`; or neither: in the stats only;
 * - `kinds`: a counter per kind (an object), each a `kind` of `polistes_failures_total`.
 * @type {ReadonlyArray<{ name: string, doc: string, metric?: string, help?: string, failureKind?: string, kinds?:
 * string[] }>}
 */
const COUNTERS = Object.freeze([
  {
    name: 'requests',
    doc: 'client requests taken (admin requests excluded)',
    metric: 'polistes_requests_total',
    help: 'Client requests received (admin requests excluded)'
  },
  { name: 'responses', doc: 'responses that reached the client whole' },
  {
    name: 'retries',
    doc: 'attempts sent again to another upstream',
    metric: 'polistes_retries_total',
    help: 'Attempts sent again to another upstream'
  },
  {
    name: 'failures',
    doc: 'failed attempts by kind (src/proxy/proxy-engine.js FailureKind)',
    kinds: ['connect', 'timeout', 'stream']
  },
  { name: 'noUpstream', doc: 'requests answered 503: no upstream to take them', failureKind: 'no_upstream' },
  { name: 'clientAborts', doc: 'requests whose client left before the response ended', failureKind: 'client_abort' },
  { name: 'bodyTooLarge', doc: 'requests refused with 413 (Content-Length or streamed body over maxBodySize)' },
  { name: 'droppedConnections', doc: 'connections closed on arrival because maxConnections were open' }
])

/**
 * A zeroed counters object of the balancer: one number per counter, one object of numbers per
 * counter with kinds.
 * @returns {Record<string, any>}
 */
function createCounters () {
  return Object.fromEntries(COUNTERS.map((c) => [c.name, c.kinds ? Object.fromEntries(c.kinds.map((k) => [k, 0])) : 0]))
}

/**
 * A copy of `counters` for the stats (the objects of kinds copied too, so later counts do not change it).
 * @param {Record<string, any>} counters
 * @returns {Record<string, any>}
 */
function snapshotCounters (counters) {
  return Object.fromEntries(COUNTERS.map((c) => [c.name, c.kinds ? { ...counters[c.name] } : counters[c.name]]))
}

module.exports = { COUNTERS, createCounters, snapshotCounters }
