'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { silentLogger } = require('../common/logger')

/**
 * The balancer's own endpoints under `/_polistes/`, as a plain `(req, res) => boolean` handler
 * that any HTTP server can mount (the balancer mounts it on its public listener, or on the admin
 * listener with `adminPort`, after the handlers added by `addAdminHandler`; see admin-router.js):
 *
 * - `GET /_polistes/stats`    counters, upstreams and the policy's snapshot (JSON)
 * - `GET /_polistes/metrics`  Prometheus text (see metrics.js)
 * - `GET /_polistes/`         the live dashboard (one page, no build step)
 * - `GET /_polistes/events`   Server-Sent Events: one `frame` about once a second (at most
 *   `maxEventStreams` open at once; one more gets 503 with Retry-After)
 * - `GET /_polistes/assets/*` the dashboard's script and style, and uPlot's (a copy of uplot's
 *   dist files in dashboard/uplot/, with its licence, so that the dashboard needs no package)
 *
 * The balancer serves `/_polistes/backends*` (drain, disable, enable a backend) beside these, from
 * admin-backends.js.
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
/** Event streams open at once unless the balancer says otherwise (DEFAULTS.maxEventStreams). */
const MAX_EVENT_STREAMS = 16
/** Bytes a stream client may leave unread (queued in the balancer) before the next frame: beyond, it is dropped. */
const MAX_STREAM_BUFFER_BYTES = 256 * 1024
/** Seconds a refused stream client is told to wait (Retry-After). */
const RETRY_AFTER_S = 10
/** A refusal is logged the first time and then once per this many. */
const REFUSAL_LOG_EVERY = 100

/**
 * @typedef {object} Admin
 * @property {(req: import('http').IncomingMessage, res: import('http').ServerResponse) => boolean} handle
 *   serves the request and returns true when its path is under `/_polistes`; false otherwise
 * @property {() => object} frame the dashboard's data now (what an SSE frame holds, with full history)
 * @property {() => EventStreams} streams the event streams' counters
 * @property {(options: { maxEventStreams?: number }) => void} configure change the cap (a reload): streams
 *   open beyond a lowered cap stay; new ones are refused until fewer are open
 * @property {() => void} close end the event streams and stop the frame timer
 */

/**
 * @typedef {object} EventStreams
 * @property {number} open streams open now
 * @property {number} max the cap (`maxEventStreams`)
 * @property {number} refused streams answered 503 because `max` were open
 * @property {number} dropped streams closed because their client left more than the buffer limit unread
 * @property {number} framesBuilt tick frames built (one per tick, shared by every open stream)
 * @property {number} fullFramesBuilt full frames built for new streams (at most one per tick, shared too)
 */

/**
 * Create the admin handler of one balancer.
 * @param {object} source
 * @param {() => import('../index').BalancerStats} source.stats
 * @param {import('./telemetry').Telemetry} source.telemetry
 * @param {import('pino').Logger} [source.logger] where refused streams are reported (default: silent)
 * @param {{ frameIntervalMs?: number, maxEventStreams?: number, maxStreamBufferBytes?: number }} [options]
 *   `frameIntervalMs`: ms between two frames (1000); `maxEventStreams`: streams open at once (16);
 *   `maxStreamBufferBytes`: unread bytes a stream client may hold back before it is dropped (256 KiB)
 * @returns {Admin}
 */
function createAdmin ({
  stats,
  telemetry,
  logger = silentLogger()
}, {
  frameIntervalMs = FRAME_INTERVAL_MS,
  maxEventStreams = MAX_EVENT_STREAMS,
  maxStreamBufferBytes = MAX_STREAM_BUFFER_BYTES
} = {}) {
  // created on the first scrape: prom-client's process metrics start monitors, and prom-client itself is
  // loaded then (~70 ms of CPU at every start of a balancer that is never scraped)
  let metrics = null
  const assets = new Map()
  /**
   * The open streams. They all get the same frames: each tick's frame is built, serialized
   * and encoded once and the same bytes written to every stream (a frame per client cost 87 % of a core
   * with 2,000 streams open).
   * @type {Set<import('http').ServerResponse>}
   */
  const clients = new Set()
  let timer = null
  /** the last second of the series the streams have been sent */
  let lastSec = -Infinity
  /** @type {Buffer | null} the full frame (history up to lastSec) for streams that open before the next tick */
  let fullText = null
  const counters = { refused: 0, dropped: 0, framesBuilt: 0, fullFramesBuilt: 0 }

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
      for (const r of state.recent) {
        if (r.specialist !== undefined) {
          owners[r.key] = { upstream: r.specialist, theta: r.theta }
        }
      }
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

  /** One tick: the seconds since the last tick, built once, written to every stream. */
  function push () {
    fullText = null
    if (clients.size === 0) return stop()
    const f = frame(lastSec + 1)
    counters.framesBuilt++
    const t = f.series.t
    if (t.length > 0) lastSec = t[t.length - 1]
    const bytes = Buffer.from(`event: frame\ndata: ${JSON.stringify(f)}\n\n`) // encoded once too
    for (const res of clients) {
      if (res.destroyed) {
        clients.delete(res)
      } else if (res.writableLength > maxStreamBufferBytes) {
        // a client that does not read: drop it rather than queue frames for it without bound
        clients.delete(res)
        counters.dropped++
        res.destroy()
      } else {
        res.write(bytes)
      }
    }
    if (clients.size === 0) stop()
  }

  /**
   * The frame a new stream starts with: the whole history up to the seconds the open streams have
   * been sent, so that the next tick's frame continues it. Built at most once per tick.
   * @param {boolean} fresh no stream is open: the history starts the sequence
   */
  function fullFrame (fresh) {
    if (fullText !== null) return fullText
    const f = frame()
    counters.fullFramesBuilt++
    const s = f.series
    if (fresh) {
      lastSec = s.t.length > 0 ? s.t[s.t.length - 1] : -Infinity
    } else {
      let n = s.t.length
      while (n > 0 && s.t[n - 1] > lastSec) n--
      if (n < s.t.length) f.series = trimSeries(s, n)
    }
    fullText = Buffer.from(`event: frame\ndata: ${JSON.stringify({ ...f, full: true })}\n\n`)
    return fullText
  }

  function stop () {
    if (timer) clearInterval(timer)
    timer = null
  }

  function events (req, res) {
    const head = {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no'
    }
    if (req.method === 'HEAD') { // the head of a stream, which holds no slot
      res.writeHead(200, head)
      return res.end()
    }
    if (clients.size >= maxEventStreams) return refuseStream(res)
    res.writeHead(200, head)
    res.write(`retry: ${frameIntervalMs}\n\n`)
    const fresh = timer === null
    res.write(fullFrame(fresh))
    clients.add(res)
    res.on('close', () => clients.delete(res))
    if (fresh) {
      timer = setInterval(push, frameIntervalMs)
      timer.unref()
    }
  }

  /** 503 to one stream too many; logged the first time and once per REFUSAL_LOG_EVERY after. */
  function refuseStream (res) {
    counters.refused++
    if ((counters.refused - 1) % REFUSAL_LOG_EVERY === 0) {
      logger.warn(
        { open: clients.size, maxEventStreams, refused: counters.refused },
        `dashboard event streams: ${clients.size} open (maxEventStreams ${maxEventStreams}), one more refused with ` +
          `503 (${counters.refused} so far; logged once per ${REFUSAL_LOG_EVERY})`
      )
    }
    const body = `too many dashboard event streams open (${maxEventStreams}); try again later\n`
    res.writeHead(503, {
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      'retry-after': String(RETRY_AFTER_S),
      'content-length': Buffer.byteLength(body)
    })
    res.end(body)
  }

  function send (res, status, type, body) {
    res.writeHead(status, {
      'content-type': type,
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(body)
    })
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
      metrics ||= require('./metrics').createMetrics({ stats, telemetry })
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
    res.writeHead(200, {
      'content-type': ASSETS[name][1],
      'cache-control': cacheControl,
      'content-length': body.length
    })
    res.end(body)
  }

  function close () {
    stop()
    fullText = null
    for (const res of clients) res.end()
    clients.clear()
  }

  function streams () {
    return { open: clients.size, max: maxEventStreams, ...counters }
  }

  function configure (options) {
    if (options.maxEventStreams !== undefined) maxEventStreams = options.maxEventStreams
  }

  return { handle, frame: () => frame(), streams, configure, close }
}

/**
 * The first `n` seconds of a frame's series.
 * @param {ReturnType<import('./telemetry').Telemetry['series']>} s
 * @param {number} n
 */
function trimSeries (s, n) {
  return {
    t: s.t.slice(0, n),
    rps: s.rps.slice(0, n),
    hitRate: s.hitRate.slice(0, n),
    p50: s.p50.slice(0, n),
    p99: s.p99.slice(0, n),
    upstreams: s.upstreams.map((u) => ({ id: u.id, rps: u.rps.slice(0, n), hitRate: u.hitRate.slice(0, n) }))
  }
}

/**
 * Whether a request target is the admin surface's: `/_polistes`, or under `/_polistes/` or `/_polistes?`.
 * @param {string} url the request target, e.g. '/_polistes/stats?x=1'
 * @returns {boolean}
 */
function isAdminPath (url) {
  return url.startsWith(PREFIX) &&
    (url.length === PREFIX.length || url[PREFIX.length] === '/' || url[PREFIX.length] === '?')
}

module.exports = { createAdmin, isAdminPath }
