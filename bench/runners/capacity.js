'use strict'

/**
 * A sweep of offered rates (the capacity scenario, issue 28): each contender at each rate is a run of
 * its own (bench/runners/trial.js: a fresh fleet and balancer, an open loop at that rate, a warm-up and
 * a measured window), the cells of one rate run before the next rate's, the contenders in a rotated
 * order per trial and rate (so none always runs first or last), and a contender's sweep stops once
 * `stopAfter` of its rates were over the SLO (medians over its trials). run.js writes what it returns.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { performance } = require('node:perf_hooks')
const { generatePages } = require('../../servers/pages')
const { runOnce } = require('./trial')
const { probeSteal } = require('./host-cpu')
const { createStealGate } = require('./steal-gate')
const { formatDuration, remainingSeconds, runLoadSeconds, planSeconds } = require('./plan')
const { sweepCells, keepsSweeping, warmupText, stealPeak } = require('../reports/capacity')
const { round } = require('../reports/stats')
const { killFields } = require('../reports/kill-restart')

/**
 * The contenders in the order of trial t at the rate of index r: rotated by t + r.
 * @template T
 * @param {T[]} arms
 * @param {number} t 0-based trial
 * @param {number} r 0-based rate index
 * @returns {T[]}
 */
function sweepOrder (arms, t, r) {
  const k = (t + r) % arms.length
  return arms.slice(k).concat(arms.slice(0, k))
}

/**
 * The line printed before the first cell: contenders, rates, trials, seconds per cell, the stop rule and
 * the longest it can take (every contender at every rate).
 * @param {object} settings from options.js, with `sweep`
 * @returns {string}
 */
function formatSweepPlan (settings) {
  const { rates, sloMs, stopAfter } = settings.sweep
  const cells = settings.arms.length * rates.length * settings.trials
  const kill = settings.kill
    ? `; kill/restart: backend a crashed ${settings.kill.at} s into each measured window, started again ` +
      `${settings.kill.down} s later`
    : ''
  const gate = settings.stealGate
    ? `; steal gate: before each cell every CPU is asked for ${settings.stealGate.probeS} s, and the cell waits ` +
      `until the hypervisor withheld at most ${settings.stealGate.limit} cores (not in the time below)`
    : ''
  const total = planSeconds({ runs: cells, planned: runLoadSeconds(settings), jitWarmup: settings.jitWarmup })
  return `plan${settings.plan === 'quick' ? ' (quick; --full: 3 trials of 10 s + 15 s per cell)' : ''}: ` +
    `${settings.arms.length} contenders (${settings.arms.map((a) => a.label).join(', ')}) x ${rates.length} ` +
    `offered rates (${rates.join(', ')} req/s) x ${settings.trials} trial${settings.trials === 1 ? '' : 's'} = at ` +
    `most ${cells} cells of ${warmupText(settings)} + ${settings.duration} s measured; a contender stops ` +
    `after ${stopAfter} rate${stopAfter === 1 ? '' : 's'} with p99 over the SLO (${sloMs} ms): at most about ` +
    `${formatDuration(total)}${kill}${gate}`
}

/** The progress line's steal: over the window, and in its worst second (the STEAL flag's reading). */
function stealText (run) {
  return Number.isFinite(run.cpuShare.steal)
    ? `, steal ${run.cpuShare.steal} cores (${stealPeak(run)} in its worst second)`
    : ''
}

/**
 * Run the sweep.
 * @param {object} settings from options.js, with `sweep`
 * @param {{ progress: { line (text: string): void, tick (p: object): void }, profileDir?: string }} io
 *   (`profileDir`: each polistes balancer child runs with --cpu-prof into it)
 * @returns {Promise<{ runs: object[], startedAt: Date, finishedAt: Date }>} run records, each with
 *   `offered` (its rate) and `servedRps` (the backends' requests per second in the window)
 */
async function runSweep (settings, { progress, profileDir }) {
  // the pages, generated once for every cell (each fleet child would take seconds to write 2,000 files)
  const pagesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-bench-sweep-pages-'))
  try {
    generatePages({ count: settings.pages, dir: pagesDir, sizes: settings.pageSizes })
    const run = (gate) => sweep({ ...settings, pagesDir }, { progress, profileDir, gate })
    return await withStealGate(settings.stealGate, run)
  } finally {
    fs.rmSync(pagesDir, { recursive: true, force: true })
  }
}

/**
 * Run `fn` with the steal gate of `--steal-gate`, or with none.
 * @template T
 * @param {{ limit: number, probeS: number } | null} options
 * @param {(gate: ReturnType<typeof createStealGate> | null) => Promise<T>} fn
 * @returns {Promise<T>}
 */
function withStealGate (options, fn) {
  if (!options) return fn(null)
  return fn(createStealGate({
    limit: options.limit,
    probe: () => probeSteal(options.probeS * 1000),
    now: () => performance.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms))
  }))
}

/**
 * Wait at the gate before a cell, saying so when the cell has to wait.
 * @param {ReturnType<typeof createStealGate> | null} gate
 * @param {{ limit: number, probeS: number } | null} options --steal-gate
 * @param {{ line (text: string): void }} progress
 * @param {string} cell the cell's name in the progress lines
 * @returns {Promise<import('./steal-gate').StealGateResult | null>} null without a gate
 */
async function passStealGate (gate, options, progress, cell) {
  if (!gate) return null
  const result = await gate.wait()
  if (result.probes > 1) {
    const withheld = round(result.steal, 2) ?? 'unknown'
    progress.line(`steal gate: ${cell} ${result.timedOut ? 'runs anyway' : 'starts'} after ` +
      `${formatDuration(result.waitedS)} and ${result.probes} probes (the hypervisor withheld ${withheld} ` +
      `cores of the ${options.probeS} s probe; at most ${options.limit})`)
  }
  return result
}

/** The progress line's words on a kill/restart cell ('' for a cell without one). */
function regainText (kill) {
  if (!kill) return ''
  return kill.regainS === null ? ', not regained in the window' : `, regained ${kill.regainS} s after the restart`
}

async function sweep (settings, { progress, profileDir, gate }) {
  const { rates, sloMs, stopAfter } = settings.sweep
  const since = (start) => (performance.now() - start) / 1000
  const done = []
  progress.line(formatSweepPlan(settings))
  if (settings.jitWarmup > 0) {
    const warmArm = settings.arms.filter((a) => !a.peer).at(-1) || settings.arms.at(-1)
    progress.line(`warm-up: ${settings.jitWarmup} s untimed run (${warmArm.label} at ${rates[0]} req/s), discarded`)
    const start = performance.now()
    await runOnce({
      arm: warmArm,
      trial: 0,
      settings: { ...settings, rate: rates[0], warmup: 0, ramp: 0, duration: settings.jitWarmup }
    })
    done.push({ wall: since(start), planned: settings.jitWarmup })
  }

  const startedAt = new Date()
  const runs = []
  const planned = runLoadSeconds(settings)
  let active = settings.arms.slice()
  const most = settings.arms.length * rates.length * settings.trials
  // cells left if every contender still sweeping ran every rate left: the ETA's upper bound
  const left = (r, inRate) => active.length * settings.trials * (rates.length - r) - inRate
  for (let r = 0; r < rates.length && active.length; r++) {
    const rate = rates[r]
    let inRate = 0
    for (let t = 0; t < settings.trials; t++) {
      for (const arm of sweepOrder(active, t, r)) {
        const cell = `${arm.label} at ${rate} req/s trial ${t + 1}`
        const stealGate = await passStealGate(gate, settings.stealGate, progress, cell)
        const start = performance.now()
        const eta = (elapsed, second) => `ETA <= ${formatDuration(remainingSeconds({
          left: left(r, inRate), planned, done, elapsed, second
        }))}`
        const run = await runOnce({
          arm,
          trial: t + 1,
          settings: { ...settings, rate },
          profileDir,
          onProgress: (p) => progress.tick({
            ...p,
            trials: settings.trials,
            index: runs.length + 1,
            runs: `<=${most}`,
            eta: eta(since(start), p.second)
          })
        })
        done.push({ wall: since(start), planned })
        inRate++
        // what the backends served in the window: below the offered rate once the fleet saturates (the open
        // loop's own count, by intended send time, is the offered rate whatever the latency)
        const served = run.perBackend.reduce((a, b) => a + b.requests, 0) / settings.duration
        const kill = settings.kill ? killFields(run, { ...settings, kill: settings.kill, sloMs }) : null
        runs.push({
          ...run,
          offered: rate,
          servedRps: Math.round(served * 10) / 10,
          ...(kill ? { kill } : {}),
          ...(stealGate ? { stealGate } : {})
        })
        progress.line(`[${rate} req/s] ${arm.label} trial ${t + 1}: p50 ${run.latency.p50} ms, p99 ` +
          `${run.latency.p99} ms, hit rate ${run.hitRate}, errors ${run.errors + run.non2xx}` +
          regainText(kill) +
          `${run.service ? `, service ${run.service.hitMs} / ${run.service.missMs} ms` : ''}` +
          stealText(run) +
          `${run.load.lag ? `, generator lag p99 ${run.load.lag.p99} ms` : ''}, ${eta(0)}`)
      }
    }
    const cells = sweepCells(runs, sloMs)
    const stopped = active.filter((a) => !keepsSweeping(cells.filter((c) => c.algo === a.label), stopAfter))
    for (const a of stopped) {
      progress.line(`${a.label}: ${stopAfter} rate${stopAfter === 1 ? '' : 's'} over the SLO, its sweep stops at ` +
        `${rate} req/s`)
    }
    active = active.filter((a) => !stopped.includes(a))
  }
  return { runs, startedAt, finishedAt: new Date() }
}

module.exports = { runSweep, formatSweepPlan }
