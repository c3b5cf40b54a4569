'use strict'

/**
 * Child process generating the load with autocannon's programmatic API, never in the
 * balancer's event loop. A random page per request (uniform or zipf, seeded); the latency of
 * every response is kept as a float in milliseconds (autocannon measures it with
 * process.hrtime; its own histogram would round to whole ms).
 *
 * One continuous autocannon run covers the learning phase [0, warmup) and the measured window
 * [warmup, warmup + duration) seconds; responses are assigned by completion time.
 *
 * Request: `start { url, connections, rate?, warmup, duration, pages, popularity, seed }` ->
 * `{ startedAt }`. Pushed: `tick { bucket }` at each whole second, `done { result }` at the end.
 */

const autocannon = require('autocannon')
const { serve } = require('./child')
const { summarize } = require('./stats')
const { createSampler, pagePath } = require('./popularity')
const { mulberry32 } = require('../src/prng')

function newPhase () {
  return { requests: 0, bytes: 0, errors: 0, non2xx: 0, hits: 0, misses: 0, latencies: [], keys: {}, servers: {} }
}

function header (headers, name) {
  if (!headers) return undefined
  if (headers[name] !== undefined) return headers[name]
  const lower = name.toLowerCase()
  for (const k of Object.keys(headers)) if (k.toLowerCase() === lower) return headers[k]
  return undefined
}

function phaseResult (phase, seconds) {
  const { latencies, ...counts } = phase
  const lat = summarize(latencies)
  delete lat.count
  return { ...counts, seconds, rps: counts.requests / seconds, bytesPerSec: counts.bytes / seconds, latency: lat }
}

let instance

function start ({ url, connections, rate, warmup, duration, pages, popularity, seed = 1, timeout = 10 }) {
  const sample = createSampler(popularity, pages, mulberry32(seed))
  const endMs = (warmup + duration) * 1000
  const learning = newPhase()
  const measured = newPhase()
  let bucket = newPhase()
  let second = 0
  let last = null
  const t0 = performance.now()
  const phaseAt = (ms) => (ms < warmup * 1000 ? learning : ms < endMs ? measured : null)

  const opts = {
    url,
    connections,
    duration: warmup + duration + 10, // a backstop: we stop it ourselves at endMs
    timeout,
    // autocannon accumulates every response body as a string (UTF-8 decoding ~60 KB per page)
    // although we never read it; skipping that keeps the load generator's CPU off the machine
    // the balancer and backends share.
    //
    // And when the server closes a connection after a response (`Connection: close`, e.g. the
    // balancer without upstream keep-alive passing the backend's header on), autocannon 9 writes
    // the next request on the dying socket and another on the new one, leaving a request that
    // will never be answered at the head of its queue: every later latency would then be
    // measured from that stale start. Clearing the queue on each (re)connect keeps the
    // latencies true (a reconnect's latency includes the TCP connect, as it should).
    setupClient (client) {
      const queue = client.pipelinedRequests
      if (queue && typeof queue.addBody === 'function') queue.addBody = () => {}
      if (queue && typeof queue.clear === 'function' && typeof client._connect === 'function') {
        const connect = client._connect
        client._connect = function () {
          queue.clear()
          return connect.call(this)
        }
      }
    },
    requests: [{
      method: 'GET',
      setupRequest (req, context) {
        const page = sample()
        context.path = pagePath(page)
        return { ...req, path: context.path }
      },
      onResponse (status, body, context, headers) {
        // Called synchronously just before autocannon's 'response' event for the same client.
        last = { path: context.path, server: header(headers, 'X-Server'), cache: header(headers, 'X-Cache') }
      }
    }]
  }
  if (rate) opts.overallRate = rate

  instance = autocannon(opts, (err, result) => {
    if (err) process.send({ type: 'fatal', error: err.message })
    const res = {
      learning: phaseResult(learning, warmup || 1),
      measured: phaseResult(measured, duration),
      autocannon: result && { errors: result.errors, timeouts: result.timeouts, non2xx: result.non2xx, resets: result.resets }
    }
    process.send({ type: 'done', result: res })
  })

  instance.on('response', (client, statusCode, resBytes, responseTime) => {
    const ms = performance.now() - t0
    const phase = phaseAt(ms)
    const info = last
    last = null
    if (!phase) return
    for (const p of [phase, bucket]) {
      p.requests++
      p.bytes += resBytes
      p.latencies.push(responseTime)
      if (statusCode < 200 || statusCode > 299) p.non2xx++
      if (info) {
        if (info.cache === 'HIT') p.hits++
        else if (info.cache === 'MISS') p.misses++
      }
    }
    if (info && info.server !== undefined && phase === measured) {
      const perKey = measured.keys[info.path] || (measured.keys[info.path] = {})
      perKey[info.server] = (perKey[info.server] || 0) + 1
      measured.servers[info.server] = (measured.servers[info.server] || 0) + 1
    }
  })
  instance.on('reqError', () => {
    const phase = phaseAt(performance.now() - t0)
    if (!phase) return
    phase.errors++
    bucket.errors++
  })

  const tick = () => {
    second++
    const { latencies, keys, servers, ...counts } = bucket
    const lat = summarize(latencies)
    bucket = newPhase()
    process.send({
      type: 'tick',
      bucket: {
        second,
        phase: second <= warmup ? 'learning' : 'measured',
        ...counts,
        latency: { mean: lat.mean, p50: lat.p50, p99: lat.p99, max: lat.max }
      }
    })
    if (second * 1000 >= endMs) {
      instance.stop()
      return
    }
    setTimeout(tick, Math.max(0, t0 + (second + 1) * 1000 - performance.now()))
  }
  setTimeout(tick, 1000)
  return { startedAt: Date.now() }
}

serve({ start }, () => { if (instance) instance.stop() })
