'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { createMetrics } = require('./metrics')

/**
 * The balancer's own endpoints under `/_polistes/`, as a plain `(req, res) => boolean` handler
 * that any HTTP server can mount (the balancer mounts it on its public listener, or on the admin
 * listener with `adminPort`, after the handlers added by `addAdminHandler`; see admin-router.js):
 *
 * - `GET /_polistes/stats`    counters, upstreams and the policy's snapshot (JSON)
 * - `GET /_polistes/metrics`  Prometheus text (see metrics.js)
 * - `GET /_polistes/`         the live dashboard (one page, no build step)
 * - `GET /_polistes/events`   Server-Sent Events: one `frame` about once a second
 * - `GET /_polistes/assets/*` the dashboard's script and style, and uPlot's (a copy of uplot's
 *   dist files in dashboard/uplot/, with its licence, so that the dashboard needs no package)
 *
 * Anything else under `/_polistes/` is a 404 here: that prefix is never proxied.
 */

const PREFIX = '/_polistes'
const DASHBOARD_DIR = path.join(__dirname, 'dashboard')
const UPLOT_DIR = path.join(DASHBOARD_DIR, 'uplot')
const ASSETS = {
  'index.html': [path.join(DASHBOARD_DIR, 'index.html'), 'text/html; charset=utf-8'],
  'dashboard.js': [path.join(DASHBOARD_DIR, 'dashboard.js'), 'text/javascript; charset=utf-8'],
  'dashboard.css': [path.join(DASHBOARD_DIR, 'dashboard.css'), 'text/css; charset=utf-8'],
  'uPlot.iife.min.js': [path.join(UPLOT_DIR, 'uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
  'uPlot.min.css': [path.join(UPLOT_DIR, 'uPlot.min.css'), 'text/css; charset=utf-8']
}
/** How often the event stream pushes a frame. */
const FRAME_INTERVAL_MS = 1000
/** Span of the latency quantiles in a frame's summary. */
const SUMMARY_S = 10

/**
 * @typedef {object} Admin
 * @property {(req: import('http').IncomingMessage, res: import('http').ServerResponse) => boolean} handle
 *   serves the request and returns true when its path is under `/_polistes`; false otherwise
 * @property {() => object} frame the dashboard's data now (what an SSE frame holds, with full history)
 * @property {() => void} close end the event streams and stop the frame timer
 */

/**
 * Create the admin handler of one balancer.
 * @param {object} source
 * @param {() => import('../index').BalancerStats} source.stats
 * @param {import('./telemetry').Telemetry} source.telemetry
 * @param {{ frameIntervalMs?: number }} [options]
 * @returns {Admin}
 */
function createAdmin ({ stats, telemetry }, { frameIntervalMs = FRAME_INTERVAL_MS } = {}) {
  let metrics = null // created on the first scrape: prom-client's process metrics start monitors
  const assets = new Map()
  /** @type {Set<{ res: import('http').ServerResponse, lastSec: number }>} */
  const clients = new Set()
  let timer = null

  /** The dashboard's data: summary, upstreams, heat map, and series from second `fromSec`. */
  function frame (fromSec) {
    const s = stats()
    const ids = s.upstreams.map((u) => u.id)
    for (const id of ids) telemetry.upstream(id)
    const recent = telemetry.recent(SUMMARY_S)
    const [p50, p99] = telemetry.recentQuantiles(SUMMARY_S, [0.5, 0.99])
    const state = s.policy.state
    const owners = {}
    if (state && Array.isArray(state.recent)) {
      for (const r of state.recent) if (r.specialist !== undefined) owners[r.key] = { upstream: r.specialist, theta: r.theta }
    }
    return {
      t: Date.now(),
      policy: s.policy.name,
      requests: s.requests,
      summary: { seconds: SUMMARY_S, p50, p99 },
      upstreams: s.upstreams.map((u) => ({
        id: u.id,
        url: u.url,
        healthy: u.healthy,
        inflight: u.inflight,
        requests: u.requests,
        failures: u.failures,
        rps: recent.get(u.id) ? recent.get(u.id).rps : 0,
        hitRate: recent.get(u.id) ? recent.get(u.id).hitRate : null
      })),
      heat: telemetry.heatmap(ids),
      owners,
      series: telemetry.series(fromSec)
    }
  }

  function push () {
    for (const client of clients) {
      if (client.res.destroyed) {
        clients.delete(client)
        continue
      }
      const f = frame(client.lastSec + 1)
      const t = f.series.t
      if (t.length > 0) client.lastSec = t[t.length - 1]
      client.res.write(`event: frame\ndata: ${JSON.stringify(f)}\n\n`)
    }
    if (clients.size === 0) stop()
  }

  function stop () {
    if (timer) clearInterval(timer)
    timer = null
  }

  function events (req, res) {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' })
    res.write(`retry: ${frameIntervalMs}\n\n`)
    const client = { res, lastSec: -Infinity }
    clients.add(client)
    res.on('close', () => clients.delete(client))
    if (!timer) {
      timer = setInterval(push, frameIntervalMs)
      timer.unref()
    }
    const f = frame()
    const t = f.series.t
    if (t.length > 0) client.lastSec = t[t.length - 1]
    res.write(`event: frame\ndata: ${JSON.stringify({ ...f, full: true })}\n\n`)
  }

  function send (res, status, type, body) {
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) })
    res.end(body)
  }

  function handle (req, res) {
    const url = req.url
    if (!isAdminPath(url)) return false
    const q = url.indexOf('?')
    const route = (q === -1 ? url : url.slice(0, q)).slice(PREFIX.length)
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n')
      return true
    }
    if (route === '') {
      res.writeHead(302, { location: `${PREFIX}/` })
      res.end()
    } else if (route === '/') {
      sendAsset(res, 'index.html', 'no-store')
    } else if (route === '/stats') {
      send(res, 200, 'application/json', JSON.stringify(stats()))
    } else if (route === '/metrics') {
      metrics ||= createMetrics({ stats, telemetry })
      metrics.render().then(
        (text) => send(res, 200, metrics.contentType, text),
        (err) => send(res, 500, 'text/plain; charset=utf-8', `metrics failed: ${err.message}\n`)
      )
    } else if (route === '/events') {
      events(req, res)
    } else if (route.startsWith('/assets/') && Object.hasOwn(ASSETS, route.slice(8))) {
      sendAsset(res, route.slice(8), 'max-age=300')
    } else {
      send(res, 404, 'text/plain; charset=utf-8', `no such polistes endpoint: ${route}\n`)
    }
    return true
  }

  function sendAsset (res, name, cacheControl) {
    if (!assets.has(name)) assets.set(name, fs.readFileSync(ASSETS[name][0]))
    const body = assets.get(name)
    res.writeHead(200, { 'content-type': ASSETS[name][1], 'cache-control': cacheControl, 'content-length': body.length })
    res.end(body)
  }

  function close () {
    stop()
    for (const { res } of clients) res.end()
    clients.clear()
  }

  return { handle, frame: () => frame(), close }
}

/**
 * Whether a request target is the admin surface's: `/_polistes`, or under `/_polistes/` or `/_polistes?`.
 * @param {string} url the request target, e.g. '/_polistes/stats?x=1'
 * @returns {boolean}
 */
function isAdminPath (url) {
  return url.startsWith(PREFIX) && (url.length === PREFIX.length || url[PREFIX.length] === '/' || url[PREFIX.length] === '?')
}

module.exports = { createAdmin, isAdminPath, PREFIX }
