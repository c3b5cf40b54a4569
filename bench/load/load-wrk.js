'use strict'

/**
 * Closed-loop load from wrk (a C client, about a third of autocannon's CPU per request here), for
 * rates where autocannon would take a core of its own. Used by the load child with `--load wrk`:
 * one wrk run for the learning phase, one for the measured window, 1 thread, the bench's
 * connections, a random page per request, uniform or Zipf, with the popularity shift if any
 * (bench/load/wrk-pages.lua), and latency percentiles,
 * request and error counts read from the script's final line.
 *
 * wrk cannot tell which backend served which page, so the client-side per-page attribution
 * (specialization) is not available with it; the hit rate comes from the backends as always.
 */

const path = require('node:path')
const { spawn } = require('node:child_process')
const { findBinary } = require('../peers/peers')

const SCRIPT = path.join(__dirname, 'wrk-pages.lua')

/**
 * Parse the `BENCH_RESULT {json}` line of bench/load/wrk-pages.lua into a phase result of the load
 * child (latencies in ms).
 * @param {string} stdout wrk's output
 * @param {number} seconds the phase's nominal length
 * @returns {object}
 */
function parseWrkResult (stdout, seconds) {
  const m = /^BENCH_RESULT (\{.*\})$/m.exec(stdout)
  if (!m) throw new Error(`wrk printed no result: ${stdout.trim().split('\n').slice(-2).join(' | ') || 'nothing'}`)
  const r = JSON.parse(m[1])
  const ms = (us) => us / 1000
  const elapsed = r.durationUs / 1e6 || seconds
  return {
    requests: r.requests,
    bytes: r.bytes,
    errors: r.connect + r.read + r.write + r.timeout,
    timeouts: r.timeout,
    non2xx: r.status,
    hits: 0,
    misses: 0,
    keys: {},
    servers: {},
    seconds,
    rps: r.requests / elapsed,
    bytesPerSec: r.bytes / elapsed,
    latency: {
      mean: ms(r.mean),
      p50: ms(r.p50),
      p90: ms(r.p90),
      p95: ms(r.p95),
      p99: ms(r.p99),
      p999: ms(r['p99.9']),
      max: ms(r.max),
      min: ms(r.min),
      stdev: ms(r.stdev)
    }
  }
}

/**
 * The environment bench/load/wrk-pages.lua reads: pages, seed, Zipf exponent and popularity shift.
 * Uniform popularity sets exactly what it always did (BENCH_PAGES, BENCH_SEED), so the default
 * scenario's request sequence is unchanged.
 * @param {{ pages: number, popularity?: { kind: string, s?: number }, shift?: { seconds: number, step: number } |
 *   null, seed: number, t0: number }} params
 * @returns {Record<string, string>}
 */
function wrkEnv ({ pages, popularity, shift, seed, t0 }) {
  const env = { BENCH_PAGES: String(pages), BENCH_SEED: String(seed) }
  if (popularity && popularity.kind === 'zipf') {
    env.BENCH_ZIPF = String(popularity.s)
    if (shift) {
      Object.assign(env, {
        BENCH_SHIFT_SECONDS: String(shift.seconds),
        BENCH_SHIFT_STEP: String(shift.step),
        BENCH_T0: String(t0)
      })
    }
  }
  return env
}

function emptyPhase (seconds) {
  const latency = {}
  for (const k of ['mean', 'p50', 'p90', 'p95', 'p99', 'p999', 'max', 'min', 'stdev']) latency[k] = NaN
  const counts = {}
  for (const k of ['requests', 'bytes', 'errors', 'timeouts', 'non2xx', 'hits', 'misses']) counts[k] = 0
  return { ...counts, keys: {}, servers: {}, seconds, rps: NaN, bytesPerSec: NaN, latency }
}

/**
 * Run the learning phase and the measured window as two wrk runs.
 * @param {{ url: string, connections: number, warmup: number, duration: number, pages: number, popularity: { kind:
 *   string, s?: number },
 *   shift?: { seconds: number, step: number } | null, seed?: number, timeout?: number }} params
 * @returns {{ done: Promise<{ learning: object, measured: object }>, stop: () => void, pid: () => number | undefined }}
 */
function startWrk ({ url, connections, warmup, duration, pages, popularity, shift, seed = 1, timeout = 10 }) {
  const binary = findBinary('wrk')
  if (!binary) throw new Error('wrk not found on PATH (install: apt-get install wrk)')
  let child
  let stopped = false
  const t0 = Math.floor(Date.now() / 1000) // the shift's clock starts with the learning phase
  const run = (seconds) => new Promise((resolve, reject) => {
    if (stopped) return reject(new Error('wrk stopped'))
    const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', `${timeout}s`, '-s', SCRIPT, url]
    child = spawn(binary, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...wrkEnv({ pages, popularity, shift, seed, t0 }) }
    })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    child.once('error', reject)
    child.once('close', (code) => {
      child = undefined
      if (code !== 0) {
        return reject(new Error(`wrk exited with ${code}: ${out.trim().split('\n').slice(-2).join(' | ')}`))
      }
      try { resolve(parseWrkResult(out, seconds)) } catch (err) { reject(err) }
    })
  })
  const done = (async () => {
    const learning = warmup > 0 ? await run(warmup) : emptyPhase(0)
    const measured = await run(duration)
    return { learning, measured }
  })()
  return {
    done,
    stop: () => { stopped = true; if (child) child.kill('SIGKILL') },
    pid: () => child && child.pid
  }
}

module.exports = { startWrk, parseWrkResult, wrkEnv, SCRIPT }
