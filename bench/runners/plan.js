'use strict'

/**
 * The length of a bench run and its ETA, as pure arithmetic: each run's planned load (learning
 * phase + measured window) plus the overhead measured on the runs already done (wall time beyond
 * the planned load: starting and stopping the fleet, balancer and load processes). run.js prints
 * the plan before the first run and an ETA in its progress lines, e.g. `[3/9] wasp trial 2: ... ETA 1m10s`.
 */

/**
 * Seconds a run is taken to last beyond its planned load until one has been measured (starting and
 * stopping three child processes took 0.5-1 s on this project's 2-core machine).
 */
const DEFAULT_OVERHEAD_SECONDS = 1

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length

/**
 * Seconds of load of one run: learning phase + measured window.
 * @param {{ warmup: number, duration: number, requests?: number }} settings
 * @returns {number} NaN when the window is a count of requests (its length is not known beforehand)
 */
function runLoadSeconds ({ warmup, duration, requests }) {
  return requests ? NaN : warmup + duration
}

/**
 * Expected wall seconds of one run: its planned load plus the mean overhead of the runs done (the
 * JIT warm-up included); with a count of requests, the mean wall time of the runs done.
 * @param {number} planned seconds of load of the run (runLoadSeconds)
 * @param {Array<{ wall: number, planned: number }>} [done] wall seconds and planned load of each run done
 * @returns {number} NaN when nothing tells yet
 */
function expectedRunSeconds (planned, done = []) {
  if (Number.isFinite(planned)) {
    const overheads = done.filter((d) => Number.isFinite(d.planned)).map((d) => Math.max(0, d.wall - d.planned))
    return planned + (overheads.length ? mean(overheads) : DEFAULT_OVERHEAD_SECONDS)
  }
  const walls = done.filter((d) => !Number.isFinite(d.planned)).map((d) => d.wall)
  return walls.length ? mean(walls) : NaN
}

/**
 * Seconds left until the last run ends.
 * @param {object} p
 * @param {number} p.left runs not finished, the one going on included
 * @param {number} p.planned seconds of load of each run (runLoadSeconds)
 * @param {Array<{ wall: number, planned: number }>} [p.done] the runs done (expectedRunSeconds)
 * @param {number} [p.elapsed] wall seconds into the run going on (0 between runs)
 * @param {number} [p.second] seconds of load the run going on has done: what is left of its load
 *   is the least left of it, whatever its start took
 * @returns {number} NaN when not known yet
 */
function remainingSeconds ({ left, planned, done = [], elapsed = 0, second }) {
  if (left <= 0) return 0
  const each = expectedRunSeconds(planned, done)
  const current = Math.max(
    0,
    each - elapsed,
    Number.isFinite(planned) && Number.isFinite(second) ? planned - second : 0
  )
  return current + (left - 1) * each
}

/**
 * Expected wall seconds of a whole bench before anything ran: the JIT warm-up run, then every run,
 * each with the default overhead.
 * @param {{ runs: number, planned: number, jitWarmup?: number }} p
 * @returns {number}
 */
function planSeconds ({ runs, planned, jitWarmup = 0 }) {
  const warm = jitWarmup > 0 ? expectedRunSeconds(jitWarmup) : 0
  return warm + remainingSeconds({ left: runs, planned })
}

/**
 * A duration as a progress line shows it: `45s`, `1m10s`, `12m05s`, `1h02m`; `?` when unknown.
 * @param {number} seconds
 * @returns {string}
 */
function formatDuration (seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return '?'
  const s = Math.round(seconds)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`
}

/**
 * The line printed before the first run: arms, trials, seconds per run and the expected total.
 * @param {{ plan?: string, arms: Array<{ label: string }>, trials: number, warmup: number, duration: number,
 *   requests?: number, jitWarmup: number }} settings
 * @returns {string}
 */
function formatPlan (settings) {
  const runs = settings.trials * settings.arms.length
  const planned = runLoadSeconds(settings)
  const window = settings.requests ? `${settings.requests} requests` : `${settings.duration} s`
  const total = planSeconds({ runs, planned, jitWarmup: settings.jitWarmup })
  return `plan${settings.plan === 'quick' ? ' (quick; --full runs the whole matrix)' : ''}: ` +
    `${settings.arms.map((a) => a.label).join(', ')} x ${settings.trials} trial` +
      `${settings.trials === 1 ? '' : 's'} = ${runs} run${runs === 1 ? '' : 's'} ` +
    `of ${settings.warmup} s learning + ${window} measured` +
    `${settings.jitWarmup > 0 ? `, after a ${settings.jitWarmup} s warm-up` : ''}: ` +
    (Number.isFinite(total) ? `about ${formatDuration(total)}` : 'length unknown until a run has measured its requests')
}

module.exports = {
  DEFAULT_OVERHEAD_SECONDS,
  runLoadSeconds,
  expectedRunSeconds,
  remainingSeconds,
  planSeconds,
  formatDuration,
  formatPlan
}
