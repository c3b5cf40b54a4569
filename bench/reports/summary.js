'use strict'

/**
 * The result document: runs, medians over trials per algorithm, ratios to the baseline, and the
 * scenario's targets checked against the medians.
 */

const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { median, ratio, round } = require('./stats')
const { formatPopularity } = require('../workloads/popularity')
const { formatPageSizes } = require('../workloads/page-sizes')

const METRICS = {
  rps: (r) => r.rps,
  mean: (r) => r.latency.mean,
  p50: (r) => r.latency.p50,
  p90: (r) => r.latency.p90,
  p95: (r) => r.latency.p95,
  p99: (r) => r.latency.p99,
  p999: (r) => r.latency.p999,
  max: (r) => r.latency.max,
  stdev: (r) => r.latency.stdev,
  hitRate: (r) => r.hitRate,
  optimum: (r) => r.optimum,
  distance: (r) => r.distance,
  // backends carrying at least 5 % of each of the three hottest pages' requests (bench/reports/replication.js)
  hot1Replicas: (r) => r.hotPages && r.hotPages[0] && r.hotPages[0].replicas,
  hot2Replicas: (r) => r.hotPages && r.hotPages[1] && r.hotPages[1].replicas,
  hot3Replicas: (r) => r.hotPages && r.hotPages[2] && r.hotPages[2].replicas,
  specialization: (r) => r.specialization,
  cpuPer10k: (r) => r.cpuPer10k,
  bytesPerSec: (r) => r.bytesPerSec,
  cpuBalancer: (r) => r.cpuShare && r.cpuShare.balancer,
  cpuFleet: (r) => r.cpuShare && r.cpuShare.fleet,
  cpuLoad: (r) => r.cpuShare && r.cpuShare.load,
  lagP99: (r) => r.load && r.load.lag && r.load.lag.p99,
  lagMax: (r) => r.load && r.load.lag && r.load.lag.max,
  learningRps: (r) => r.learning.rps,
  learningHitRate: (r) => r.learning.hitRate
}
const RATIOS = ['rps', 'mean', 'p50', 'p99', 'cpuPer10k']

/**
 * Medians over trials for each algorithm label, plus sums of errors and ratios to the baseline.
 * @param {object[]} runs
 * @param {string} baseline label of the baseline algorithm
 * @returns {Record<string, object>}
 */
function summarize (runs, baseline) {
  const labels = [...new Set(runs.map((r) => r.algo))]
  const summary = {}
  for (const label of labels) {
    const mine = runs.filter((r) => r.algo === label)
    const s = { trials: mine.length }
    for (const [name, get] of Object.entries(METRICS)) s[name] = round(median(mine.map(get)), name === 'rps' ? 2 : 4)
    s.errors = mine.reduce((a, r) => a + r.errors, 0)
    s.non2xx = mine.reduce((a, r) => a + r.non2xx, 0)
    s.share = shareMedians(mine)
    if (mine[0].peer) s.peer = mine[0].peer
    summary[label] = s
  }
  const base = summary[baseline]
  for (const s of Object.values(summary)) {
    s.vsBaseline = {}
    for (const name of RATIOS) s.vsBaseline[name] = round(base ? ratio(s[name], base[name]) : NaN, 3)
  }
  return summary
}

/** Median share of each backend (by position in the fleet) over the trials. */
function shareMedians (runs) {
  const n = Math.max(0, ...runs.map((r) => r.perBackend.length))
  const out = []
  for (let i = 0; i < n; i++) out.push(round(median(runs.map((r) => r.perBackend[i] && r.perBackend[i].share)), 4))
  return out
}

/**
 * Check the scenario's targets on the summary.
 * @param {Array<{ algo: string, metric: string, ratio?: boolean, min?: number, max?: number }>} targets
 * @param {Record<string, object>} summary
 * @returns {Array<object>} each target with `value` and `pass` (undefined when the algo did not run)
 */
function checkTargets (targets, summary) {
  const out = []
  for (const t of targets) {
    const labels = t.algo === '*' ? Object.keys(summary) : [t.algo]
    for (const label of labels) {
      const s = summary[label]
      const value = s ? (t.ratio ? s.vsBaseline[t.metric] : s[t.metric]) : undefined
      const pass = typeof value !== 'number' || Number.isNaN(value)
        ? undefined
        : (t.min === undefined || value >= t.min) && (t.max === undefined || value <= t.max)
      out.push({ ...t, algo: label, value, pass })
    }
  }
  return out
}

/**
 * The code that was measured: the commit, and the files of src/ and servers/ that differ from it
 * (others may be editing the policies while a bench runs).
 * @returns {{ commit: string | null, modified: string[] }}
 */
function revision () {
  const cwd = path.join(__dirname, '..', '..')
  const git = (args) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  try {
    const modified = git(['status', '--porcelain', '--', 'src', 'servers']).split('\n')
      .filter(Boolean)
      .map((l) => l.slice(3))
    return { commit: git(['rev-parse', 'HEAD']).trim(), modified }
  } catch {
    return { commit: null, modified: [] }
  }
}

/**
 * The whole JSON document written by --out.
 * @param {object} settings from options.js
 * @param {object[]} runs
 * @param {{ startedAt: Date, finishedAt: Date }} times
 */
function buildDocument (settings, runs, { startedAt, finishedAt }) {
  const summary = summarize(runs, settings.baseline)
  return {
    scenario: settings.scenario,
    description: settings.description,
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    settings: {
      // 'quick': the scenario's quick default; 'full': its whole matrix (or a scenario without a quick plan)
      plan: settings.plan || 'full',
      algos: settings.arms.map((a) => a.label),
      baseline: settings.baseline,
      trials: settings.trials,
      warmup: settings.warmup,
      ramp: settings.ramp ?? 0,
      duration: settings.duration,
      requests: settings.requests ?? null,
      balancerOptions: settings.balancerOptions || {},
      connections: settings.connections,
      rate: settings.rate ?? null,
      load: settings.load,
      peers: settings.peers || [],
      pages: settings.pages,
      cachePages: settings.cachePages,
      missMs: settings.missMs,
      popularity: formatPopularity(settings.popularity),
      pageSize: settings.workload && settings.workload.pageSizes ? formatPageSizes(settings.workload.pageSizes) : null,
      cacheBytes: (settings.workload && settings.workload.cacheBytes) ?? null,
      shift: (settings.workload && settings.workload.shift) || null,
      churn: Boolean(settings.workload && settings.workload.churn),
      keepAlive: settings.keepAlive,
      policyOptions: settings.policyOptions,
      seed: settings.seed,
      workers: settings.workers,
      peerWorkers: settings.peerWorkers ?? settings.workers,
      fleet: settings.fleet
    },
    revision: revision(),
    machine: {
      node: process.version,
      platform: `${os.platform()} ${os.arch()}`,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0] && os.cpus()[0].model,
      loadavg: os.loadavg().map((x) => round(x, 2))
    },
    runs,
    summary,
    targets: checkTargets(settings.targets, summary)
  }
}

module.exports = { summarize, checkTargets, buildDocument }
