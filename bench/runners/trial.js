'use strict'

/**
 * One bench run: a fresh fleet (cold caches) and balancer for one algorithm, driven by the load
 * child for a learning phase and a measured window, all in separate processes. At every whole
 * second of load the run snapshots the backends' `/_stats` and the balancer's CPU, so the
 * timeline shows the learning curve and the window's figures are deltas between snapshots.
 */

const path = require('node:path')
const fs = require('node:fs')
const { Child } = require('../children/child')
const { round } = require('../reports/stats')
const metrics = require('../reports/metrics')
const { PeerProcess } = require('../peers/peers')
const { probabilities } = require('../workloads/popularity')
const { fleetCapacities, runOptimum } = require('../model/optimum')
const { servedBetween, hotPages } = require('../reports/replication')
const { referenceFleet } = require('./references')
const { readHostCpu, hostCores } = require('./host-cpu')

const HOST = '127.0.0.1'

function roundLatency (l) {
  const out = {}
  for (const k of ['mean', 'p50', 'p90', 'p95', 'p99', 'p999', 'max', 'stdev']) if (k in l) out[k] = round(l[k], 3)
  return out
}

/**
 * Requests in one second: the client's count, or when the generator cannot count per second
 * (wrk) the pages the backends served between the two snapshots.
 */
function perSecond (clientCount, prev, cur) {
  if (Number.isFinite(clientCount)) return clientCount
  if (!prev || !cur) return null
  return metrics.perBackend(prev.stats, cur.stats).reduce((a, r) => a + r.requests, 0)
}

/**
 * @param {object} params
 * @param {{ label: string, algo: string, keepAlive: boolean }} params.arm
 * @param {number} params.trial 1-based trial number (0 for the JIT warm-up)
 * @param {object} params.settings from options.js (fleet, pages, connections, warmup, duration, ...)
 * @param {(p: object) => void} [params.onProgress] called each second
 * @param {string} [params.profileDir] when set, the balancer child runs with --cpu-prof into it
 * @returns {Promise<object>} the run record (see docs/benchmarks.md, "JSON schema")
 */
async function runOnce ({ arm, trial, settings, onProgress = () => {}, profileDir }) {
  const { fleet, balancer, load } = startChildren(arm, trial, profileDir)
  try {
    const started = await startServers(fleet, balancer, arm, settings)
    const driven = await driveLoad({ fleet, balancer, load, arm, trial, settings, onProgress, url: started.url })
    return runRecord({ arm, trial, settings, started, driven })
  } finally {
    await load.close()
    await balancer.close()
    await fleet.close()
  }
}

/** The run's three processes: the fleet, the balancer (or a peer) and the load generator. */
function startChildren (arm, trial, profileDir) {
  const execArgv = []
  if (profileDir) {
    fs.mkdirSync(profileDir, { recursive: true })
    const name = `balancer-${arm.label.replace(/\W+/g, '_')}-t${trial}-${process.pid}-${Date.now()}.cpuprofile`
    execArgv.push('--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}`)
  }
  const fleet = new Child(path.join(__dirname, '..', 'children', 'fleet-child.js'), { name: 'fleet child' })
  // a peer (HAProxy, nginx) answers start/cpu/close like the balancer child
  const balancer = arm.peer
    ? new PeerProcess(arm.label)
    : new Child(path.join(__dirname, '..', 'children', 'balancer-child.js'), { name: 'balancer child', execArgv })
  const load = new Child(path.join(__dirname, '..', 'load', 'load-child.js'), { name: 'load child' })
  return { fleet, balancer, load }
}

/** Start the fleet, then the balancer in front of it. */
async function startServers (fleet, balancer, arm, settings) {
  const { backends, pageBytes } = await fleet.request('start', {
    fleet: settings.fleet, pages: settings.pages, pageSizes: settings.pageSizes, pagesDir: settings.pagesDir, host: HOST
  })
  const lbBackends = backends.map((b, i) => ({ id: b.id, url: b.url, ...(settings.backendLabels[i] || {}) }))
  const { url, version } = await balancer.request('start', {
    // HAProxy and polistes check the servers each second (nginx: passive only)
    healthChecks: Boolean((settings.workload && settings.workload.churn) || settings.kill),
    backends: lbBackends,
    algo: arm.algo,
    // a reference of the capacity scenario (bench/runners/references.js), told the fleet it runs in front of
    ...(arm.reference
      ? { reference: { name: arm.algo, fleet: referenceFleet(settings, backends.map((b) => b.id)) } }
      : {}),
    policyOptions: settings.policyOptions,
    keepAlive: arm.keepAlive,
    retryOn: arm.retryOn,
    tryTimeoutMs: arm.tryTimeoutMs,
    host: HOST,
    workers: arm.workers ?? settings.workers,
    engine: arm.engine,
    balancerOptions: settings.balancerOptions
  })
  return { backends, pageBytes, url, version }
}

/**
 * Churn: backend 0 SIGKILLed a third into the measured window, restarted cold a third later; a kill/restart
 * cell (--kill AT:DOWN): at the seconds given (null: none).
 */
function churnPlan (settings) {
  if (settings.kill) {
    const { index, at, down } = settings.kill
    return { index, killAt: at, restartAt: at + down }
  }
  if (!(settings.workload && settings.workload.churn && !settings.requests)) return null
  return { index: 0, killAt: Math.round(settings.duration / 3), restartAt: Math.round((2 * settings.duration) / 3) }
}

/**
 * Drive the load: a snapshot of the backends' and processes' figures at every whole second, the
 * churn at its seconds, until the load child is done.
 * @returns {Promise<{ result: object, snaps: object[], buckets: object[], churn: object | null,
 *   lbStats: object | undefined }>}
 */
async function driveLoad ({ fleet, balancer, load, arm, trial, settings, onProgress, url }) {
  const { warmup, duration } = settings
  // the backends' requests per page (`/_stats?keys=1`) at the window's start and end, only where the
  // generator cannot count them by X-Server itself (wrk): a keyed snapshot of 7 backends x 2,000 pages
  // holds the fleet's one event loop 20-37 ms, a latency spike in the window's first second
  const keyed = settings.load === 'wrk'
  const windowEnd = settings.requests ? -1 : warmup + duration
  const snapshot = async (second) => {
    const keys = keyed && (second === warmup || second === windowEnd)
    const host = readHostCpu()
    const [stats, cpu, fleetCpu, loadCpu] = await Promise.all([
      fleet.request('stats', { keys }), balancer.request('cpu'), fleet.request('cpu'), load.request('cpu')
    ])
    return { stats, cpu, fleetCpu, loadCpu, host }
  }
  const run = { churn: churnPlan(settings), churnDone: [], snaps: [await snapshot(0)], buckets: [], pending: [] }
  load.on(tickHandler({ fleet, arm, trial, settings, onProgress, snapshot, run }))
  // a count of requests has no set length: allow it 15 minutes
  const done = load.waitFor('done', (warmup + (settings.requests ? 900 : duration + 60)) * 1000)
  await load.request('start', {
    url,
    connections: settings.connections,
    rate: settings.rate,
    ramp: settings.ramp,
    load: settings.load,
    sources: arm.sources || settings.sources,
    requests: settings.requests,
    warmup,
    duration,
    pages: settings.pages,
    popularity: settings.popularity,
    shift: settings.workload ? settings.workload.shift : null,
    seed: settings.seed + trial
  })
  const { result } = await done
  await Promise.all(run.pending)
  await Promise.all(run.churnDone)
  const lbStats = await balancer.request('stats').catch(() => undefined)
  return { result, snaps: run.snaps, buckets: run.buckets, churn: run.churn, lbStats }
}

/** What each second's tick of the load child does: the churn due then, a snapshot, the progress line. */
function tickHandler ({ fleet, arm, trial, settings, onProgress, snapshot, run }) {
  const { warmup, duration } = settings
  const { churn, churnDone, snaps, buckets, pending } = run
  return (msg) => {
    if (msg.type !== 'tick') return
    const { bucket } = msg
    buckets[bucket.second] = bucket
    if (churn && bucket.second === warmup + churn.killAt) {
      churnDone.push(fleet.request('kill', { index: churn.index }).then((r) => { churn.killed = r }))
    }
    if (churn && bucket.second === warmup + churn.restartAt) {
      const restart = () => fleet.request('restart', { index: churn.index })
      churnDone.push(Promise.all(churnDone.slice()).then(restart).then((r) => { churn.restarted = r }))
    }
    pending.push(snapshot(bucket.second).then((s) => {
      snaps[bucket.second] = s
      const prev = snaps[bucket.second - 1]
      onProgress({
        arm,
        trial,
        second: bucket.second,
        phase: bucket.phase,
        total: settings.requests ? '?' : warmup + duration,
        rps: perSecond(bucket.requests, prev, s),
        hitRate: prev ? metrics.hitRate(prev.stats, s.stats) : NaN
      })
    }))
  }
}

/** One point per second of load: its phase, throughput, hit rate, latency and CPU. */
function timelineOf (snaps, buckets, end, churn) {
  const timeline = []
  for (let s = 1; s <= end; s++) {
    const b = buckets[s]
    const prev = snaps[s - 1]
    const cur = snaps[s]
    if (!b) continue
    timeline.push({
      t: s,
      phase: b.phase,
      rps: perSecond(b.requests, prev, cur),
      bytes: b.bytes,
      errors: b.errors,
      non2xx: b.non2xx,
      hitRate: round(prev && cur ? metrics.hitRate(prev.stats, cur.stats) : NaN, 4),
      latency: { mean: round(b.latency.mean, 3), p50: round(b.latency.p50, 3), p99: round(b.latency.p99, 3) },
      ...(b.failures && Object.keys(b.failures).length ? { failures: b.failures } : {}),
      // with churn: what the backend killed and restarted served that second, by its own count
      ...(churn && prev && cur ? { churned: cur.stats[churn.index].requests - prev.stats[churn.index].requests } : {}),
      cpu: prev && cur
        ? {
            balancer: round(metrics.cpuSeconds(prev.cpu, cur.cpu), 3),
            fleet: round(metrics.cpuSeconds(prev.fleetCpu, cur.fleetCpu), 3),
            load: round(metrics.cpuSeconds(prev.loadCpu, cur.loadCpu), 3),
            ...hostFields(prev.host, cur.host)
          }
        : null
    })
  }
  return timeline
}

/** The run record from the window's first and last snapshots and the load child's result. */
function runRecord ({ arm, trial, settings, started, driven }) {
  const { warmup, duration } = settings
  const { result, snaps, churn } = driven
  const m = result.measured
  // with a count of requests the window lasted what it took: to the second of the last answer
  const end = settings.requests ? result.seconds : warmup + duration
  const seconds = settings.requests ? m.seconds : duration
  const start = snaps[warmup]
  const last = snaps[end]
  if (!start || !last) throw new Error(`missing stats snapshot at second ${start ? end : warmup}`)
  // requests per page per backend in the window: counted by the backends where the generator is wrk
  const counted = start.stats[0] && 'served' in start.stats[0] && 'served' in last.stats[0]
  const served = counted ? servedBetween(start.stats, last.stats) : null
  const keys = Object.keys(m.keys).length ? m.keys : (served || {})
  const down = churn ? { index: churn.index, fraction: (churn.restartAt - churn.killAt) / duration } : undefined
  const optimum = settings.popularity
    ? runOptimum(probabilities(settings.popularity, settings.pages), fleetCapacities(settings.fleet),
      started.pageBytes, down)
    : NaN
  const hitRate = metrics.hitRate(start.stats, last.stats)
  // backends with finite workers: the service times they measured in the window (issue 28)
  const service = metrics.serviceTimes(start.stats, last.stats)
  return {
    ...armFields(arm, trial, settings, seconds, started.version),
    requests: m.requests,
    rps: round(m.rps, 2),
    latency: roundLatency(m.latency),
    errors: m.errors,
    non2xx: m.non2xx,
    ...(m.failures ? { failures: m.failures } : {}),
    bytesPerSec: Math.round(m.bytesPerSec),
    hitRate: round(hitRate, 4),
    optimum: round(optimum, 4),
    distance: round(optimum - hitRate, 4),
    clientHitRate: round(m.hits + m.misses ? m.hits / (m.hits + m.misses) : NaN, 4),
    specialization: round(metrics.specialization(keys), 4),
    ...(Object.keys(keys).length ? { hotPages: hotPages(keys).map((h) => ({ ...h, share: round(h.share, 4) })) } : {}),
    ...(churn ? { churn: churnFields(churn, started.backends) } : {}),
    ...(service ? { service: roundService(service) } : {}),
    ...cpuFields(start, last, seconds, m),
    load: loadFields(result, m),
    // { '/page1.html': { a: 812, c: 3 }, ... } measured window: the client's X-Server counts,
    // or (wrk) the backends' own
    perKey: keys,
    learning: learningFields(result.learning, warmup, snaps[0], start),
    balancer: metrics.balancerCounts(driven.lbStats),
    ...policyFields(driven.lbStats),
    timeline: timelineOf(snaps, driven.buckets, end, churn)
  }
}

/**
 * What the policy learnt of each upstream by the trial's end, where its snapshot lists them (wasp: the
 * weight its holdings are compared by, whether it reads a queue, the keys it holds); nothing for the others.
 */
function policyFields (stats) {
  const ups = stats && stats.policy && stats.policy.state && stats.policy.state.upstreams
  if (!Array.isArray(ups)) return {}
  return { policyUpstreams: ups.map((u) => ({ id: u.id, weight: round(u.weight, 3), queued: u.queued, held: u.held })) }
}

/** The record's head: which arm, trial and balancer processes. */
function armFields (arm, trial, settings, seconds, version) {
  return {
    algo: arm.label,
    policy: arm.algo,
    keepAlive: arm.keepAlive,
    ...(arm.retryOn ? { retryOn: arm.retryOn } : {}),
    ...(arm.tryTimeoutMs ? { tryTimeoutMs: arm.tryTimeoutMs } : {}),
    ...(settings.requests ? { seconds: round(seconds, 3) } : {}),
    ...(arm.peer ? { peer: { name: arm.peer, mode: arm.mode, version } } : {}),
    workers: arm.workers ?? settings.workers,
    trial
  }
}

/** The window's service times, rounded for the record (the totals to the microsecond, so they pool exactly). */
function roundService (s) {
  return {
    ...s,
    hitTotalMs: round(s.hitTotalMs, 3),
    missTotalMs: round(s.missTotalMs, 3),
    hitMs: round(s.hitMs, 3),
    missMs: round(s.missMs, 3)
  }
}

function churnFields (churn, backends) {
  return {
    backend: backends[churn.index].id,
    killedAt: churn.killAt,
    restartedAt: churn.restartAt,
    restartMs: churn.restarted ? churn.restarted.startMs : null
  }
}

/** CPU per 10k requests and each process's share over the window, and the backends' figures. */
function cpuFields (start, last, seconds, m) {
  return {
    cpuPer10k: round(metrics.cpuPer10k(start.cpu, last.cpu, m.requests), 4),
    cpuShare: {
      balancer: round(metrics.cpuSeconds(start.cpu, last.cpu) / seconds, 3),
      fleet: round(metrics.cpuSeconds(start.fleetCpu, last.fleetCpu) / seconds, 3),
      load: round(metrics.cpuSeconds(start.loadCpu, last.loadCpu) / seconds, 3),
      ...hostFields(start.host, last.host)
    },
    perBackend: metrics.perBackend(start.stats, last.stats, m.servers)
      .map((r) => ({ ...r, share: round(r.share, 4), hitRate: round(r.hitRate, 4) }))
  }
}

/**
 * The host's CPU between two snapshots (bench/runners/host-cpu.js), in cores: `host` every process of the
 * machine, `steal` the time the hypervisor gave another guest; nothing off Linux.
 */
function hostFields (before, after) {
  const h = hostCores(before, after)
  return h ? { host: round(h.busy, 3), steal: round(h.steal, 3) } : {}
}

function loadFields (result, m) {
  return {
    generator: result.generator,
    ...(result.sources ? { sources: result.sources } : {}),
    ...(m.lag ? { lag: { p50: round(m.lag.p50, 3), p99: round(m.lag.p99, 3), max: round(m.lag.max, 3) } } : {}),
    ...(result.openLoop ? { openLoop: result.openLoop } : {}),
    timeouts: m.timeouts
  }
}

function learningFields (l, warmup, first, start) {
  return {
    seconds: warmup,
    requests: l.requests,
    rps: round(warmup ? l.rps : NaN, 2),
    errors: l.errors,
    non2xx: l.non2xx,
    hitRate: round(warmup ? metrics.hitRate(first.stats, start.stats) : NaN, 4),
    latency: roundLatency(l.latency)
  }
}

module.exports = { runOnce }
