'use strict'

const client = require('prom-client')
const { LATENCY_BUCKETS_MS, STATUS_CLASSES } = require('./telemetry')
const { COUNTERS } = require('./counters')

/**
 * Prometheus metrics for `GET /_polistes/metrics`, through prom-client. Nothing is counted here
 * per request: every metric is filled at scrape time (`collect()`) from the balancer's counters and
 * the telemetry's arrays, so the hot path pays nothing for Prometheus.
 *
 * Metric names and labels:
 * - `polistes_requests_total` client requests; `polistes_upstream_requests_total{upstream}` attempts sent
 * - `polistes_responses_total{upstream,class}` final responses by who answered and status class
 *   (upstream `-`: the balancer itself, e.g. 503 without upstream)
 * - `polistes_retries_total`; `polistes_failures_total{kind}` (connect, timeout, stream, no_upstream,
 *   client_abort); `polistes_upstream_failures_total{upstream}`, `polistes_upstream_ejections_total{upstream}`
 * - `polistes_upstream_inflight{upstream}`, `polistes_upstream_healthy{upstream}` (1 or 0)
 * - `polistes_upstream_admin_state{upstream,state}` 1 for the state set through the admin API
 *   (ready, drain, maint), 0 for the others; `polistes_upstream_backup{upstream}` (1 or 0)
 * - `polistes_request_duration_seconds{upstream}` histogram (buckets from 0.25 ms to 10 s)
 * - `polistes_cache_hits_total{upstream}`, `polistes_cache_misses_total{upstream}` (X-Cache) and
 *   `polistes_upstream_hit_ratio{upstream}` over the last minute
 * - `polistes_response_bytes_total{upstream}`
 * - `polistes_policy_state{policy,field}`: each number at the top of the policy's snapshot (for
 *   wasp: picks, fallbacks, guarded, keys, idleWins, …); `polistes_policy_keys_owned{upstream}` when
 *   the policy reports owners (wasp: keys whose lowest threshold is that upstream's)
 * - prom-client's default process metrics (`process_*`, `nodejs_*`)
 */

/**
 * @typedef {object} MetricsSource
 * @property {() => import('../index').BalancerStats} stats the balancer's counters and upstreams
 * @property {import('./telemetry').Telemetry} telemetry
 */

/**
 * Create the metrics registry of one balancer.
 * @param {MetricsSource} source
 * @param {{ processMetrics?: boolean }} [options] include prom-client's default metrics (default true)
 * @returns {{ registry: import('prom-client').Registry, contentType: string, render: () => Promise<string> }}
 */
function createMetrics ({ stats, telemetry }, { processMetrics = true } = {}) {
  const registry = new client.Registry()
  /** the data of the scrape in progress, read once for all metrics */
  let scrape = null

  /** A metric of `Metric`'s kind whose values `fill` puts at each scrape, through its `record` method. */
  const collected = (Metric, record) => (name, help, labelNames, fill) => new Metric({
    name,
    help,
    labelNames,
    registers: [registry],
    collect () {
      this.reset()
      fill((labels, value) => this[record](labels, value))
    }
  })
  const gauge = collected(client.Gauge, 'set')
  const counter = collected(client.Counter, 'inc')
  const perUpstream = (get) => (put) => { for (const u of scrape.stats.upstreams) put({ upstream: u.id }, get(u)) }
  const perRecord = (get) => (put) => { for (const u of telemetry.upstreams()) put({ upstream: u.id }, get(u)) }

  // the balancer's own counters (src/observe/counters.js) that have a metric of their own
  for (const c of COUNTERS) if (c.metric) counter(c.metric, c.help, [], (put) => put({}, scrape.stats[c.name]))
  counter(
    'polistes_upstream_requests_total',
    'Attempts sent to each upstream (retries included)',
    ['upstream'],
    perUpstream((u) => u.requests)
  )
  counter(
    'polistes_responses_total',
    'Responses sent to clients, by the upstream that answered ("-": the balancer) and status class',
    ['upstream', 'class'],
    (put) => {
      for (const u of telemetry.upstreams()) {
        STATUS_CLASSES.forEach((cls, i) => {
          if (u.statuses[i] > 0) put({ upstream: u.id, class: cls }, u.statuses[i])
        })
      }
    }
  )
  counter('polistes_failures_total', 'Failed attempts and requests by kind', ['kind'], (put) => {
    const s = scrape.stats
    for (const c of COUNTERS) if (c.kinds) for (const kind of c.kinds) put({ kind }, s[c.name][kind])
    for (const c of COUNTERS) if (c.failureKind) put({ kind: c.failureKind }, s[c.name])
  })
  counter(
    'polistes_upstream_failures_total',
    'Connection-level failures per upstream',
    ['upstream'],
    perUpstream((u) => u.failures)
  )
  counter(
    'polistes_upstream_ejections_total',
    'Times each upstream was left out after failures',
    ['upstream'],
    perUpstream((u) => u.ejections)
  )
  gauge('polistes_upstream_inflight', 'Requests in flight per upstream', ['upstream'], perUpstream((u) => u.inflight))
  gauge(
    'polistes_upstream_healthy',
    '1 when the upstream is eligible, 0 while it is ejected',
    ['upstream'],
    perUpstream((u) => (u.healthy ? 1 : 0))
  )
  gauge(
    'polistes_upstream_admin_state',
    'Administrative state of each upstream (admin API): 1 for the current one of ready, drain, maint',
    ['upstream', 'state'],
    (put) => {
      for (const u of scrape.stats.upstreams) {
        for (const state of ['ready', 'drain', 'maint']) put({ upstream: u.id, state }, u.adminState === state ? 1 : 0)
      }
    }
  )
  gauge(
    'polistes_upstream_backup',
    '1 for a backup upstream (used only while no primary is up)',
    ['upstream'],
    perUpstream((u) => (u.backup ? 1 : 0))
  )
  counter(
    'polistes_cache_hits_total',
    'Responses with X-Cache: HIT per upstream',
    ['upstream'],
    perRecord((u) => u.hits)
  )
  counter(
    'polistes_cache_misses_total',
    'Responses with X-Cache: MISS per upstream',
    ['upstream'],
    perRecord((u) => u.misses)
  )
  gauge(
    'polistes_upstream_hit_ratio',
    'X-Cache hit ratio per upstream over the last 60 s (absent without X-Cache answers)',
    ['upstream'],
    (put) => {
      for (const [id, r] of scrape.recent) if (r.hitRate !== null) put({ upstream: id }, r.hitRate)
    }
  )
  counter(
    'polistes_response_bytes_total',
    'Bytes written to clients per upstream (headers included)',
    ['upstream'],
    perRecord((u) => u.bytes)
  )
  gauge(
    'polistes_policy_state',
    'Numbers the routing policy reports about itself (its snapshot)',
    ['policy', 'field'],
    (put) => {
      const { name, state } = scrape.stats.policy
      if (!state || typeof state !== 'object') return
      for (const [field, value] of Object.entries(state)) {
        if (typeof value === 'number' && Number.isFinite(value)) put({ policy: name, field }, value)
      }
    }
  )
  gauge(
    'polistes_policy_keys_owned',
    'Routing keys each upstream owns in the policy (wasp: lowest threshold)',
    ['upstream'],
    (put) => {
      const owned = scrape.stats.policy.state && scrape.stats.policy.state.owned
      if (owned && typeof owned === 'object') for (const [id, n] of Object.entries(owned)) put({ upstream: id }, n)
    }
  )
  registry.registerMetric(latencyHistogram(telemetry))
  if (processMetrics) client.collectDefaultMetrics({ register: registry })

  return {
    registry,
    contentType: registry.contentType,
    async render () {
      scrape = { stats: stats(), recent: telemetry.recent(60) }
      try {
        return await registry.metrics()
      } finally {
        scrape = null
      }
    }
  }
}

/**
 * The latency histogram as a prom-client metric object whose values come from the telemetry's
 * cumulative buckets (prom-client's Histogram can only be fed one observation at a time).
 * @param {import('./telemetry').Telemetry} telemetry
 */
function latencyHistogram (telemetry) {
  const name = 'polistes_request_duration_seconds'
  const help = 'Time from request arrival to response end, per upstream that answered'
  const les = [...LATENCY_BUCKETS_MS.map((ms) => String(ms / 1000)), '+Inf']
  return {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    reset () {},
    get () {
      const values = []
      for (const u of telemetry.upstreams()) {
        let cumulative = 0
        for (let b = 0; b < les.length; b++) {
          cumulative += u.buckets[b]
          values.push({ metricName: `${name}_bucket`, labels: { upstream: u.id, le: les[b] }, value: cumulative })
        }
        values.push({ metricName: `${name}_sum`, labels: { upstream: u.id }, value: u.latencySumMs / 1000 })
        values.push({ metricName: `${name}_count`, labels: { upstream: u.id }, value: u.count })
      }
      return { name, help, type: 'histogram', values, aggregator: 'sum' }
    }
  }
}

module.exports = { createMetrics }
