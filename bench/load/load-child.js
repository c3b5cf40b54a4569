'use strict'

/**
 * Child process generating the load, never in the balancer's event loop. Three generators:
 * - closed loop (default): autocannon's programmatic API, as fast as the server answers;
 * - open loop (`rate`): bench/load/open-loop.js, requests at fixed intended send times, latency from the
 *   intended time (coordinated omission corrected), with the generator's own lag reported;
 * - wrk (`load: 'wrk'`): bench/load/load-wrk.js, closed loop from a C client (less CPU per request);
 * - node (`load: 'node'`): bench/load/open-loop.js's lanes without a rate, a closed loop whose
 *   connections can leave from `sources` distinct loopback addresses (so do the open loop's).
 *
 * A random page per request (uniform or zipf, seeded; with a shift, the ranking rotates every
 * shift.seconds, bench/workloads/popularity.js shiftedPage); the latency of every response is kept as a
 * float in milliseconds (autocannon measures it with process.hrtime; its own histogram would
 * round to whole ms).
 *
 * One continuous run covers the learning phase [0, warmup) and the measured window
 * [warmup, warmup + duration) seconds; responses are assigned by completion time (open loop and
 * node: by intended send time). With `requests` (node generator only, as ApacheBench's `-n`) the
 * measured window is no time but that many requests sent after the learning phase: it ends when
 * the last of them is answered, and its length is measured.
 *
 * Request: `start { url, connections, rate?, ramp?, load?, sources?, requests?, warmup, duration, pages, popularity,
 * shift?, seed }` (`ramp`: seconds over which an open loop's rate rises from 0, within the learning phase) ->
 * `{ startedAt }`; `cpu` -> this process's CPU plus its generator's (wrk) in `process.cpuUsage()`
 * form. Pushed: `tick { bucket }` at each whole second, `done { result }` at the end.
 */

const { serve } = require('../children/child')
const { summarize, percentile } = require('../reports/stats')
const { createSampler, shiftedPage, pagePath } = require('../workloads/popularity')
const { mulberry32 } = require('../../src/common/prng')
const { startWrk } = require('./load-wrk')
const { procCpu } = require('../peers/peers')

function newPhase (open = false) {
  const phase = {
    requests: 0,
    bytes: 0,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    // failed requests by kind: `status 502`, or the error's code (ECONNRESET, UND_ERR_SOCKET, ...)
    failures: {},
    hits: 0,
    misses: 0,
    latencies: [],
    keys: {},
    servers: {}
  }
  if (open) phase.lags = []
  return phase
}

function header (headers, name) {
  if (!headers) return undefined
  if (headers[name] !== undefined) return headers[name]
  const lower = name.toLowerCase()
  for (const k of Object.keys(headers)) if (k.toLowerCase() === lower) return headers[k]
  return undefined
}

function phaseResult (phase, seconds) {
  const { latencies, lags, ...counts } = phase
  const lat = summarize(latencies)
  delete lat.count
  const out = { ...counts, seconds, rps: counts.requests / seconds, bytesPerSec: counts.bytes / seconds, latency: lat }
  if (lags) {
    const sorted = Float64Array.from(latencies).sort()
    out.latency.p999 = percentile(sorted, 99.9)
    const lag = summarize(lags)
    out.lag = { p50: lag.p50, p99: lag.p99, max: lag.max }
  }
  return out
}

/** An error's kind for the failure counts: a timeout, else its code (ECONNRESET, UND_ERR_SOCKET, ...) or name. */
function errorKind ({ timeout, error }) {
  if (timeout) return 'timeout'
  return (error && (error.code || error.name)) || 'error'
}

let generator // { stop() }
let wrkRun // the wrk generator, for its CPU

/**
 * Collects responses into the learning phase, the measured window and the current second.
 * @param {number} warmup seconds
 * @param {number} duration seconds
 * @param {boolean} open open loop: phases keep the generator's lag too
 */
function createRecorder (warmup, duration, open) {
  const endMs = (warmup + duration) * 1000
  const rec = {
    /** when the last response of the measured window arrived, ms after the start */
    lastMeasuredMs: warmup * 1000,
    learning: newPhase(open),
    measured: newPhase(open),
    bucket: newPhase(),
    phaseAt: (ms) => (ms < warmup * 1000 ? rec.learning : ms < endMs ? rec.measured : null),
    /**
     * @param {number} phaseMs time deciding the phase (completion; open loop: intended send)
     * @param {{ status: number, bytes: number, latency: number, path?: string, server?: string, cache?: string, lag?:
     *   number }} r
     */
    add (phaseMs, r) {
      const phase = rec.phaseAt(phaseMs)
      if (!phase) return
      if (phase === rec.measured && r.done !== undefined) rec.lastMeasuredMs = Math.max(rec.lastMeasuredMs, r.done)
      for (const p of [phase, rec.bucket]) {
        p.requests++
        p.bytes += r.bytes
        p.latencies.push(r.latency)
        if (p.lags && r.lag !== undefined) p.lags.push(r.lag)
        if (r.status < 200 || r.status > 299) {
          p.non2xx++
          p.failures[`status ${r.status}`] = (p.failures[`status ${r.status}`] || 0) + 1
        }
        if (r.cache === 'HIT') p.hits++
        else if (r.cache === 'MISS') p.misses++
      }
      if (r.server !== undefined && r.path !== undefined && phase === rec.measured) {
        const perKey = rec.measured.keys[r.path] || (rec.measured.keys[r.path] = {})
        perKey[r.server] = (perKey[r.server] || 0) + 1
        rec.measured.servers[r.server] = (rec.measured.servers[r.server] || 0) + 1
      }
    },
    error (phaseMs, timeout = false, kind = timeout ? 'timeout' : 'error') {
      const phase = rec.phaseAt(phaseMs)
      if (!phase) return
      for (const p of [phase, rec.bucket]) {
        p.errors++
        if (timeout) p.timeouts++
        p.failures[kind] = (p.failures[kind] || 0) + 1
      }
    }
  }
  return rec
}

/** Closed loop with autocannon; resolves at the end with autocannon's own error counts. */
function closedLoop ({ url, connections, warmup, duration, timeout, sample, rec, t0 }) {
  let last = null
  let resolveDone
  const done = new Promise((resolve) => { resolveDone = resolve })
  const opts = {
    url,
    connections,
    duration: warmup + duration + 10, // a backstop: we stop it ourselves at the end
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
  const autocannon = require('autocannon') // loaded by start() before its clock
  const instance = autocannon(opts, (err, result) => {
    if (err) process.send({ type: 'fatal', error: err.message })
    resolveDone({
      autocannon: result &&
        { errors: result.errors, timeouts: result.timeouts, non2xx: result.non2xx, resets: result.resets }
    })
  })
  instance.on('response', (client, statusCode, resBytes, responseTime) => {
    const info = last || {}
    last = null
    rec.add(performance.now() - t0, { status: statusCode, bytes: resBytes, latency: responseTime, ...info })
  })
  instance.on('reqError', () => rec.error(performance.now() - t0))
  return { done, stop: () => instance.stop() }
}

/**
 * Open loop at `rate` req/s, or without a rate a closed loop (bench/load/open-loop.js's lanes); phases
 * by intended send time (closed loop: the send time).
 */
function lanes ({ url, connections, rate, ramp, sources, requests, warmup, duration, timeout, sample, rec }) {
  const { runOpenLoop, loopbackSources } = require('./open-loop') // loaded by start() before its clock
  const run = runOpenLoop({
    url,
    rate,
    rampMs: ramp * 1000, // start() took a ramp only with a rate
    connections,
    localAddresses: sources ? loopbackSources(sources) : [],
    durationMs: requests ? Infinity : (warmup + duration) * 1000,
    requests,
    countFromMs: warmup * 1000,
    timeoutMs: timeout * 1000,
    nextPath: () => pagePath(sample()),
    onResponse: (r) => rec.add(r.intended, r),
    onError: (e) => rec.error(e.intended, e.timeout, errorKind(e))
  })
  return { done: run.done.then((openLoop) => ({ openLoop })), stop: run.stop }
}

function start ({
  url,
  connections,
  rate,
  ramp = 0,
  load = 'autocannon',
  sources = 0,
  requests,
  warmup,
  duration,
  pages,
  popularity,
  shift = null,
  seed = 1,
  timeout = 10
}) {
  if (requests !== undefined && (rate || load !== 'node')) {
    throw new Error('requests needs the closed-loop node generator')
  }
  if (!(ramp >= 0 && ramp <= warmup) || (ramp > 0 && !rate)) {
    throw new Error(`ramp must be in [0, warmup ${warmup}] s, open loop only, got ${ramp}`)
  }
  // only the generator this child runs is loaded (autocannon and the open loop's undici each cost a
  // fresh process a quarter of a CPU-second), and before the clock starts, not in the learning phase
  if (rate || load === 'node') require('./open-loop')
  else if (load !== 'wrk') require('autocannon')
  const rank = createSampler(popularity, pages, mulberry32(seed))
  // with a shift, the ranking rotates every shift.seconds since the start of the learning phase
  const sample = shift
    ? () => shiftedPage(rank(), Math.floor((performance.now() - t0) / (shift.seconds * 1000)), shift, pages)
    : rank
  const endMs = requests ? Infinity : (warmup + duration) * 1000
  const rec = createRecorder(warmup, requests ? Infinity : duration, Boolean(rate))
  let second = 0
  const t0 = performance.now()

  let wrkDone
  if (rate || load === 'node') {
    generator = lanes({ url, connections, rate, ramp, sources, requests, warmup, duration, timeout, sample, rec })
  } else if (load === 'wrk') {
    wrkRun = startWrk({ url, connections, warmup, duration, pages, popularity, shift, seed, timeout })
    generator = wrkRun
    wrkDone = wrkRun.done
  } else {
    generator = closedLoop({ url, connections, warmup, duration, timeout, sample, rec, t0 })
  }

  let ticksDone
  const ticked = new Promise((resolve) => { ticksDone = resolve })
  let generatorDone = false
  generator.done.then(() => { generatorDone = true }, () => {})
  const tick = () => {
    second++
    const { latencies, keys, servers, lags, ...counts } = rec.bucket
    const lat = summarize(latencies)
    rec.bucket = newPhase()
    process.send({
      type: 'tick',
      bucket: {
        second,
        phase: second <= warmup ? 'learning' : 'measured',
        ...counts,
        ...(wrkDone ? { requests: NaN, bytes: NaN } : {}), // wrk reports per run, not per second
        latency: { mean: lat.mean, p50: lat.p50, p99: lat.p99, max: lat.max }
      }
    })
    // a count of requests: the second in which the last was answered
    if (requests ? generatorDone : second * 1000 >= endMs) {
      // autocannon runs until stopped; the others end by themselves
      if (load === 'autocannon' && !rate) generator.stop()
      ticksDone()
      return
    }
    setTimeout(tick, Math.max(0, t0 + (second + 1) * 1000 - performance.now()))
  }
  setTimeout(tick, 1000)

  Promise.all([generator.done, ticked]).then(([extra]) => {
    const measuredSeconds = requests ? Math.max(rec.lastMeasuredMs / 1000 - warmup, 1e-3) : duration
    const phases = wrkDone
      ? extra
      : { learning: phaseResult(rec.learning, warmup || 1), measured: phaseResult(rec.measured, measuredSeconds) }
    const { learning, measured, ...rest } = { ...phases, ...(wrkDone ? {} : extra) }
    process.send({
      type: 'done',
      result: {
        learning,
        measured,
        seconds: second,
        generator: rate ? 'open-loop' : load,
        ...(sources ? { sources } : {}),
        ...(requests ? { requests } : {}),
        ...rest
      }
    })
  }, (err) => {
    process.send({ type: 'fatal', error: err.message })
  })
  return { startedAt: Date.now() }
}

/** CPU of this process plus its generator's processes (wrk), `process.cpuUsage()` form. */
function cpu () {
  const own = process.cpuUsage()
  // the other generators run in this process: no /proc read (its first asks getconf, a process of its own)
  if (!wrkRun) return own
  const add = (c) => { own.user += c.user; own.system += c.system }
  try {
    add(procCpu('self', { children: true })) // wrk runs that have ended
    const pid = wrkRun && wrkRun.pid()
    if (pid) add(procCpu(pid))
  } catch {} // no /proc: this process only
  return own
}

serve({ start, cpu }, () => { if (generator) generator.stop() })
