#!/usr/bin/env node
'use strict'

/**
 * `npm run bench`: compare routing algorithms on a fresh fleet and balancer per run, with load
 * from autocannon in a child process. Prints a table of medians with ratios to round-robin and
 * writes JSON, CSV and a self-contained HTML report (see docs/benchmarks.md). With no arguments it
 * runs the cache scenario's quick plan (about two minutes; `--full` the whole matrix), printing the
 * plan first and an ETA in its progress lines (plan.js).
 */

const fs = require('node:fs')
const path = require('node:path')
const { performance } = require('node:perf_hooks')
const { parseOptions } = require('./options')
const { runOnce } = require('./trial')
const { runLoadSeconds, remainingSeconds, formatDuration, formatPlan } = require('./plan')
const { buildDocument } = require('../reports/summary')
const { formatTable, createProgress } = require('../reports/report-console')
const { formatCsv } = require('../reports/report-csv')
const { formatHtml } = require('../reports/report-html')
const { runSweep } = require('./capacity')
const { capacityReport } = require('../reports/capacity')
const { formatCapacityTable } = require('../reports/capacity-console')
const { formatCapacityHtml } = require('../reports/capacity-html')
const { killReport, formatKillTable } = require('../reports/kill-restart')

/**
 * Arms in the order of trial t: rotated by t so that no algorithm always runs first or last
 * (cancels slow drift of the machine).
 * @template T
 * @param {T[]} arms
 * @param {number} t 0-based trial index
 * @returns {T[]}
 */
function rotation (arms, t) {
  const k = t % arms.length
  return arms.slice(k).concat(arms.slice(0, k))
}

function outputPaths (settings, startedAt) {
  const stamp = startedAt.toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-')
  const base = path.join(settings.resultsDir, `${stamp}-${settings.scenario}`)
  return { json: settings.out || `${base}.json`, csv: `${base}.csv`, html: `${base}.html` }
}

/**
 * Run the whole bench.
 * @param {object} settings from parseOptions
 * @param {{ stdout?: NodeJS.WriteStream, stderr?: NodeJS.WriteStream }} [io]
 * @returns {Promise<{ doc: object, paths: { json: string, csv: string, html: string } }>}
 */
async function bench (settings, { stdout = process.stdout, stderr = process.stderr } = {}) {
  const progress = createProgress(stderr, { quiet: settings.quiet })
  const profileDir = settings.profile ? path.join(settings.resultsDir, 'profiles') : undefined
  for (const note of settings.notes || []) stderr.write(note + '\n')
  if (settings.sweep) return sweepBench(settings, { stdout, progress, profileDir })
  progress.line(formatPlan(settings))
  const benchStart = performance.now()
  const since = (start) => (performance.now() - start) / 1000
  // wall seconds and planned load of each run done (the warm-up included): the ETA's overheads
  const done = []

  if (settings.jitWarmup > 0) {
    // warms the Node processes (fleet, load and a polistes balancer), so a polistes arm if any
    const warmArm = settings.arms.filter((a) => !a.peer).at(-1) || settings.arms.at(-1)
    progress.line(`warm-up: ${settings.jitWarmup} s untimed run (${warmArm.label}), discarded`)
    const start = performance.now()
    await runOnce({
      arm: warmArm,
      trial: 0,
      settings: { ...settings, warmup: 0, ramp: 0, duration: settings.jitWarmup, requests: undefined }
    })
    done.push({ wall: since(start), planned: settings.jitWarmup })
  }

  const startedAt = new Date()
  const runs = []
  const total = settings.trials * settings.arms.length
  const planned = runLoadSeconds(settings)
  const eta = (left, elapsed, second) => 'ETA ' +
    `${formatDuration(remainingSeconds({ left, planned, done, elapsed, second }))}`
  for (let t = 0; t < settings.trials; t++) {
    for (const arm of rotation(settings.arms, t)) {
      const index = runs.length + 1
      const start = performance.now()
      const run = await runOnce({
        arm,
        trial: t + 1,
        settings,
        profileDir,
        onProgress: (p) => progress.tick({
          ...p,
          trials: settings.trials,
          index,
          runs: total,
          eta: eta(total - runs.length, since(start), p.second)
        })
      })
      done.push({ wall: since(start), planned })
      runs.push(run)
      progress.line(`[${index}/${total}] ${arm.label} trial ${t + 1}: ${run.rps} req/s, mean ${run.latency.mean} ms, ` +
        `p99 ${run.latency.p99} ms, hit rate ${run.hitRate}, specialization ${run.specialization}, errors ` +
          `${run.errors + run.non2xx}` +
        (index < total ? `, ${eta(total - index)}` : ''))
    }
  }
  progress.line(`done in ${formatDuration(since(benchStart))}`)
  progress.clear()

  const doc = buildDocument(settings, runs, { startedAt, finishedAt: new Date() })
  const table = formatTable(doc, settings.columns)
  const paths = writeOutputs(settings, startedAt, doc, { html: formatHtml(doc), table, profileDir }, stdout)
  return { doc, paths }
}

/**
 * A sweep of offered rates (the capacity scenario): its cells, then the document with its capacity
 * block instead of the medians per algorithm (which would mix the rates).
 */
async function sweepBench (settings, { stdout, progress, profileDir }) {
  const benchStart = performance.now()
  const { runs, startedAt, finishedAt } = await runSweep(settings, { progress, profileDir })
  progress.line(`done in ${formatDuration((performance.now() - benchStart) / 1000)}`)
  progress.clear()
  const doc = buildDocument(settings, runs, { startedAt, finishedAt })
  delete doc.summary
  delete doc.targets
  doc.settings.sweep = settings.sweep
  if (settings.kill) doc.settings.kill = settings.kill
  if (settings.stealGate) doc.settings.stealGate = settings.stealGate
  doc.capacity = capacityReport(settings, runs)
  if (settings.kill) doc.kill = killReport(settings, runs)
  const table = formatCapacityTable(doc) + (doc.kill ? `\n\n${formatKillTable(doc.kill)}` : '')
  const paths = writeOutputs(settings, startedAt, doc, { html: formatCapacityHtml(doc), table, profileDir }, stdout)
  return { doc, paths }
}

/** Write the JSON, CSV and HTML, print the table and where they went (and the balancer's CPU profiles, if any). */
function writeOutputs (settings, startedAt, doc, { html, table, profileDir }, stdout) {
  const paths = outputPaths(settings, startedAt)
  fs.mkdirSync(settings.resultsDir, { recursive: true })
  fs.mkdirSync(path.dirname(paths.json), { recursive: true })
  fs.writeFileSync(paths.json, JSON.stringify(doc, null, 2) + '\n')
  fs.writeFileSync(paths.csv, formatCsv(doc))
  fs.writeFileSync(paths.html, html)
  stdout.write('\n' + table + '\n\n')
  stdout.write(`JSON ${path.relative(process.cwd(), paths.json)}\nCSV  ` +
    `${path.relative(process.cwd(), paths.csv)}\nHTML ${path.relative(process.cwd(), paths.html)}\n`)
  if (profileDir) stdout.write(`CPU profiles of the balancer in ${path.relative(process.cwd(), profileDir)}\n`)
  return paths
}

async function main (argv) {
  let settings
  try {
    settings = parseOptions(argv)
  } catch (err) {
    process.stderr.write(`polistes bench: ${err.message}\n`)
    process.exitCode = err.exitCode || 2
    return
  }
  if (!settings) return // --help
  try {
    await bench(settings)
  } catch (err) {
    process.stderr.write(`\npolistes bench: ${err.message}\n`)
    process.exitCode = 1
  }
}

if (require.main === module) main(process.argv.slice(2))

module.exports = { bench, rotation }
