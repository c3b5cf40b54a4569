'use strict'

/**
 * The capacity scenario's figures (issue 28), pure: each cell of the sweep (a contender at an
 * offered rate, medians over its trials), which contenders go on sweeping, each contender's capacity
 * at the SLO, and the fleet's physical limit from the service times the backends measured.
 * bench/runners/capacity.js runs the cells; the console, CSV and HTML reports print what this returns.
 */

const { median, round } = require('./stats')
const { probabilities } = require('../workloads/popularity')

/** Rates over the SLO after which a contender's sweep stops (it has saturated). */
const DEFAULT_STOP_AFTER = 2

/**
 * The generator's own send lag (p99, ms) beyond which a cell is flagged: the load, not the fleet, may
 * have set its latency. A tenth of the SLO, at least 2 ms.
 * @param {number} sloMs
 * @returns {number}
 */
function lagLimitMs (sloMs) {
  return Math.max(2, sloMs / 10)
}

/**
 * How much slower than nominal the backends may measure their own service times before a cell is
 * flagged (0.15: 15 %): the host, not the policy, may have set the cell's latency. On a quiet hour the
 * fleet measures 3-9 % over nominal (a miss's file read and the timers' own lateness).
 */
const SLOW_LIMIT = 0.15

/**
 * The cores the hypervisor may take in any one second of a trial's measured window before the trial
 * is flagged STEAL. Over a whole window a burst reads small: on the 2-core VM of docs/benchmarks.md,
 * trials whose window lost 0.07-0.11 cores had 4-5 seconds at 0.27-0.51, and those seconds alone put
 * their p99 over the SLO; a quiet second reads 0.00-0.06.
 */
const STEAL_LIMIT = 0.25

/**
 * The most cores the hypervisor took in one second of a run's measured window (its timeline), NaN when
 * the run did not record steal (off Linux).
 * @param {{ timeline?: Array<{ phase: string, cpu: { steal?: number } | null }> }} run
 * @returns {number}
 */
function stealPeak (run) {
  let peak = NaN
  for (const t of run.timeline || []) {
    if (t.phase === 'learning' || !t.cpu || !Number.isFinite(t.cpu.steal)) continue
    if (!(peak >= t.cpu.steal)) peak = t.cpu.steal
  }
  return peak
}

/**
 * How much longer the backends held their workers than the nominal service times say, over one run:
 * measured total service ms / (hits × hitMs + misses × missMs) − 1, at the run's own mix of hits and
 * misses (0.1: the fleet served 10 % slower than nominal).
 * @param {{ hits: number, misses: number, hitTotalMs: number, missTotalMs: number } | undefined} service
 *   the run's measured service times (bench/reports/metrics.js serviceTimes)
 * @param {{ hitMs: number, missMs: number } | undefined} nominal the fleet's nominal service times
 * @returns {number} NaN when either is missing or nothing was served
 */
function serviceSlowdown (service, nominal) {
  if (!service || !nominal) return NaN
  const expected = service.hits * nominal.hitMs + service.misses * nominal.missMs
  return expected > 0 ? (service.hitTotalMs + service.missTotalMs) / expected - 1 : NaN
}

/**
 * The default SLO on p99: four hits and a miss, 4 × hitMs + missMs (40 ms at 5 and 20 ms).
 * @param {number} hitMs
 * @param {number} missMs
 * @returns {number}
 */
function defaultSlo (hitMs, missMs) {
  return 4 * hitMs + missMs
}

/**
 * One run of the sweep as a cell's trial: the figures the capacity table shows.
 * @param {object} run a run record (bench/runners/trial.js) with `offered`, its offered rate
 * @param {number} sloMs
 * @param {{ hitMs: number, missMs: number }} [nominal] the fleet's nominal service times
 * @returns {{ algo: string, rate: number, trial: number, rps: number, served: number, p50: number, p99: number,
 *   p999: number, hitRate: number, busiest: number, errors: number, lagP99: number, lagMax: number, lagged: boolean,
 *   steal: number, stealPeak: number, stolen: boolean, slowdown: number, slowed: boolean }} `served`: the backends'
 *   requests per second in the window (`rps` is the generator's, by intended send time); `steal`: the cores the
 *   hypervisor took from this machine over the window (bench/runners/host-cpu.js), `stealPeak` in its worst
 *   second, `stolen` over STEAL_LIMIT; `slowdown`: serviceSlowdown, `slowed` over SLOW_LIMIT
 */
function trialCell (run, sloMs, nominal) {
  const lag = (run.load && run.load.lag) || {}
  const shares = (run.perBackend || []).map((b) => b.share).filter(Number.isFinite)
  const slowdown = serviceSlowdown(run.service, nominal)
  const peak = stealPeak(run)
  return {
    algo: run.algo,
    rate: run.offered,
    trial: run.trial,
    rps: run.rps,
    served: run.servedRps ?? NaN,
    p50: run.latency.p50,
    p99: run.latency.p99,
    p999: run.latency.p999,
    hitRate: run.hitRate,
    busiest: shares.length ? Math.max(...shares) : NaN,
    errors: run.errors + run.non2xx,
    lagP99: lag.p99 ?? NaN,
    lagMax: lag.max ?? NaN,
    lagged: lag.p99 > lagLimitMs(sloMs),
    steal: (run.cpuShare && run.cpuShare.steal) ?? NaN,
    stealPeak: peak,
    stolen: peak > STEAL_LIMIT,
    slowdown,
    slowed: slowdown > SLOW_LIMIT
  }
}

/**
 * The cells of the sweep: per contender and offered rate, the medians over its trials (errors summed,
 * `lagged` when any trial's generator lagged, `slowed` when any trial's backends measured their service
 * times over SLOW_LIMIT above nominal, `stolen` when any trial had a second over STEAL_LIMIT, `stealPeak` the worst
 * second of any trial), in the order the contenders first ran, rates ascending.
 * @param {object[]} runs run records with `offered`
 * @param {number} sloMs
 * @param {{ hitMs: number, missMs: number }} [nominal] the fleet's nominal service times (without: no slowdown)
 * @returns {Array<{ algo: string, rate: number, trials: number, rps: number, served: number, p50: number, p99: number,
 *   p999: number, hitRate: number, busiest: number, errors: number, lagP99: number, lagMax: number,
 *   lagged: boolean, steal: number, stealPeak: number, stolen: boolean, slowdown: number, slowed: boolean,
 *   overSlo: boolean }>}
 */
function sweepCells (runs, sloMs, nominal) {
  const groups = new Map()
  for (const run of runs) {
    const key = `${run.algo}\u0000${run.offered}`
    if (!groups.has(key)) groups.set(key, [])
    groups.get(key).push(trialCell(run, sloMs, nominal))
  }
  const cells = []
  for (const trials of groups.values()) {
    const mid = (k, digits = 3) => round(median(trials.map((t) => t[k])), digits)
    const p99 = mid('p99')
    const peaks = trials.map((t) => t.stealPeak).filter(Number.isFinite)
    cells.push({
      algo: trials[0].algo,
      rate: trials[0].rate,
      trials: trials.length,
      rps: mid('rps', 1),
      served: mid('served', 1),
      p50: mid('p50'),
      p99,
      p999: mid('p999'),
      hitRate: mid('hitRate', 4),
      busiest: mid('busiest', 4),
      errors: trials.reduce((a, t) => a + t.errors, 0),
      lagP99: mid('lagP99'),
      lagMax: round(Math.max(...trials.map((t) => t.lagMax)), 3),
      lagged: trials.some((t) => t.lagged),
      steal: mid('steal'),
      stealPeak: peaks.length ? round(Math.max(...peaks), 3) : NaN,
      stolen: trials.some((t) => t.stolen),
      slowdown: mid('slowdown'),
      slowed: trials.some((t) => t.slowed),
      overSlo: !(p99 <= sloMs) // a cell without a p99 (nothing answered) is over
    })
  }
  const order = [...new Set(runs.map((r) => r.algo))]
  return cells.sort((a, b) => order.indexOf(a.algo) - order.indexOf(b.algo) || a.rate - b.rate)
}

/**
 * Whether a contender goes on to the next rate: not once `stopAfter` of its rates so far were over the SLO.
 * @param {Array<{ overSlo: boolean }>} cells the contender's cells so far
 * @param {number} [stopAfter]
 * @returns {boolean}
 */
function keepsSweeping (cells, stopAfter = DEFAULT_STOP_AFTER) {
  return cells.filter((c) => c.overSlo).length < stopAfter
}

/**
 * A contender's capacity at the SLO: the highest offered rate, of those it ran in ascending order,
 * before the first whose p99 is over the SLO (0 when the first one is; the highest rate run when none
 * is, so the capacity may lie beyond the sweep).
 * @param {Array<{ rate: number, overSlo: boolean }>} cells the contender's cells
 * @returns {{ capacity: number, firstOver: number | null, beyondSweep: boolean }}
 */
function capacityAtSlo (cells) {
  const sorted = cells.slice().sort((a, b) => a.rate - b.rate)
  let capacity = 0
  for (const c of sorted) {
    if (c.overSlo) return { capacity, firstOver: c.rate, beyondSweep: false }
    capacity = c.rate
  }
  return { capacity, firstOver: null, beyondSweep: sorted.length > 0 }
}

/**
 * The service times the backends measured, pooled over runs: total service ms over hits and misses.
 * @param {Array<{ service?: { hits: number, misses: number, hitTotalMs: number, missTotalMs: number } }>} runs
 * @returns {{ hitMs: number, missMs: number, hits: number, misses: number } | null} null when no run has them
 */
function measuredService (runs) {
  const withService = runs.filter((r) => r.service)
  if (!withService.length) return null
  const sum = (k) => withService.reduce((a, r) => a + r.service[k], 0)
  const hits = sum('hits')
  const misses = sum('misses')
  return {
    hitMs: hits ? sum('hitTotalMs') / hits : NaN,
    missMs: misses ? sum('missTotalMs') / misses : NaN,
    hits,
    misses
  }
}

/**
 * The fleet's physical limit: the throughput of a perfectly balanced fleet (load in proportion to the
 * workers) at the best static hit rate h, the probability mass of the hottest sum-of-caches pages:
 * ΣW × 1000 / (h × hitMs + (1 − h) × missMs) req/s.
 * @param {{ workers: number[], cachePages: number[], pages: number,
 *   popularity: import('../workloads/popularity').Popularity, hitMs: number, missMs: number }} fleet
 *   workers and cachePages one per backend; hitMs and missMs the service times (measured, or nominal)
 * @returns {{ hitRate: number, serviceMs: number, rate: number }}
 */
function physicalLimit ({ workers, cachePages, pages, popularity, hitMs, missMs }) {
  const cached = Math.min(pages, cachePages.reduce((a, b) => a + b, 0))
  const p = probabilities(popularity, pages)
  let hitRate = 0
  for (let i = 0; i < cached; i++) hitRate += p[i]
  const serviceMs = hitRate * hitMs + (1 - hitRate) * missMs
  return { hitRate, serviceMs, rate: workers.reduce((a, b) => a + b, 0) * 1000 / serviceMs }
}

/**
 * Per contender: its capacity at the SLO, its cells' hit rate and busiest share there, and its
 * capacity as a share of the physical limit at the service times measured over the whole sweep.
 * @param {ReturnType<typeof sweepCells>} cells
 * @param {number} limitRate the physical limit, req/s
 * @returns {Array<{ algo: string, capacity: number, firstOver: number | null, beyondSweep: boolean,
 *   ofLimit: number, p99: number, hitRate: number, busiest: number, lagged: boolean, slowed: boolean,
 *   stolen: boolean }>}
 */
function capacities (cells, limitRate) {
  const algos = [...new Set(cells.map((c) => c.algo))]
  return algos.map((algo) => {
    const mine = cells.filter((c) => c.algo === algo)
    const cap = capacityAtSlo(mine)
    const at = mine.find((c) => c.rate === cap.capacity)
    const over = mine.find((c) => c.rate === cap.firstOver) // undefined when none was over
    return {
      algo,
      ...cap,
      ofLimit: round(cap.capacity / limitRate, 3),
      p99: at ? at.p99 : NaN,
      hitRate: at ? at.hitRate : NaN,
      busiest: at ? at.busiest : NaN,
      // a cell at or under the capacity whose generator lagged: the figure may be the generator's
      lagged: mine.some((c) => c.rate <= cap.capacity && c.lagged),
      // the first rate over the SLO had a slowed fleet, or lost a burst of CPU to the hypervisor: the host,
      // not the policy, may have ended the sweep
      slowed: Boolean(over && over.slowed),
      stolen: Boolean(over && over.stolen)
    }
  })
}

const meets = (t) => (t.min === undefined || t.value >= t.min) && (t.max === undefined || t.value <= t.max)
const check = (t) => ({ ...t, pass: Number.isFinite(t.value) ? meets(t) : undefined })

/**
 * The capacity ratio to the best peer. When every peer was over the SLO at the sweep's lowest rate, the
 * peers' capacity lies below the sweep: the ratio is then a lower bound (`above`), the contender's
 * capacity over that lowest rate, and passes only if that bound already meets the target.
 * @param {{ capacity: number }} me
 * @param {{ algo: string, capacity: number }} best
 * @param {number} lowest the sweep's lowest offered rate
 * @param {string} algo
 */
function peerRatio (me, best, lowest, algo) {
  // no peer held any rate: none is the best, so none is named
  const name = `capacity ${algo} / the best peer's (${best.capacity ? best.algo : `none held ${lowest}`})`
  if (best.capacity) return check({ name, value: round(me.capacity / best.capacity, 3), min: 1.15 })
  if (!me.capacity) return check({ name, value: NaN, min: 1.15 })
  const value = round(me.capacity / lowest, 3)
  return {
    name,
    value,
    above: true,
    min: 1.15,
    pass: value >= 1.15 ? true : undefined,
    misses: [`every peer over the SLO at the sweep's lowest rate (${lowest}), ${algo} not: a lower bound; ` +
      'lower --rates measure it']
  }
}

/**
 * Issue 28's targets for one contender (wasp): its capacity at least 0.85 of the physical limit and
 * 1.15 times the best peer's (HAProxy or nginx), and its p99 at or below every peer's at every rate up
 * to the best peer's capacity.
 * @param {ReturnType<typeof sweepCells>} cells
 * @param {ReturnType<typeof capacities>} contenders
 * @param {number} limitRate the physical limit, req/s
 * @param {string[]} peers the labels of the peer arms
 * @param {string} [algo]
 * @returns {Array<{ name: string, value: number, above?: boolean, min?: number, max?: number,
 *   pass: boolean | undefined, misses?: string[] }>} pass undefined when it cannot be told (the contender or
 *   the peers did not run; a lower bound under the target); above: the value is a lower bound
 */
function issueTargets (cells, contenders, limitRate, peers, algo = 'wasp') {
  const me = contenders.find((c) => c.algo === algo)
  if (!me) return []
  const out = [
    check({ name: `capacity ${algo} / physical limit`, value: round(me.capacity / limitRate, 3), min: 0.85 })
  ]
  const others = contenders.filter((c) => peers.includes(c.algo))
  if (!others.length) return out
  const best = others.reduce((a, b) => (b.capacity > a.capacity ? b : a))
  out.push(peerRatio(me, best, Math.min(...cells.map((c) => c.rate)), algo))
  const misses = []
  for (const rate of [...new Set(cells.map((c) => c.rate))].filter((r) => r <= best.capacity)) {
    const mine = cells.find((c) => c.algo === algo && c.rate === rate)
    for (const peer of others) {
      const theirs = cells.find((c) => c.algo === peer.algo && c.rate === rate)
      if (theirs && !(mine && mine.p99 <= theirs.p99)) misses.push(`${rate} (${peer.algo})`)
    }
  }
  out.push(check({
    name: `rates where a peer's p99 is below ${algo}'s, up to the best peer's capacity (${best.capacity})`,
    value: best.capacity ? misses.length : NaN,
    max: 0,
    misses
  }))
  return out
}

/** One value per backend of a fleet option that is a number or an array. */
function perBackend (value, count) {
  return Array.isArray(value) ? value.slice() : Array.from({ length: count }, () => value)
}

/**
 * The capacity block of the result document: the sweep's cells, each contender's capacity at the SLO,
 * and the physical limit at the nominal service times and at those the backends measured (pooled over
 * every cell of the sweep; per contender over its own cells too).
 * @param {{ sweep: { rates: number[], sloMs: number, sloDefault: boolean, stopAfter: number }, fleet: object,
 *   pages: number, popularity: import('../workloads/popularity').Popularity }} settings
 * @param {object[]} runs run records with `offered`
 * @returns {object}
 */
function capacityReport (settings, runs) {
  const { fleet, pages, popularity } = settings
  const { rates, sloMs, sloDefault, stopAfter } = settings.sweep
  const shape = {
    workers: perBackend(fleet.workers, fleet.count),
    cachePages: perBackend(fleet.cachePages, fleet.count),
    pages,
    popularity
  }
  const nominal = physicalLimit({ ...shape, hitMs: fleet.hitMs, missMs: fleet.missMs })
  const service = measuredService(runs)
  const measured = service ? physicalLimit({ ...shape, hitMs: service.hitMs, missMs: service.missMs }) : null
  const limit = measured || nominal
  const cells = sweepCells(runs, sloMs, fleet)
  const contenders = capacities(cells, limit.rate).map((c) => {
    const own = measuredService(runs.filter((r) => r.algo === c.algo))
    const ownLimit = own ? physicalLimit({ ...shape, hitMs: own.hitMs, missMs: own.missMs }).rate : NaN
    return { ...c, limitOwn: round(ownLimit, 1) }
  })
  const targets = issueTargets(cells, contenders, limit.rate, settings.peers || [])
  const roundLimit = (l) => l &&
    { hitRate: round(l.hitRate, 4), serviceMs: round(l.serviceMs, 3), rate: round(l.rate, 1) }
  return {
    rates,
    sloMs,
    sloDefault,
    stopAfter,
    lagLimitMs: lagLimitMs(sloMs),
    slowLimit: SLOW_LIMIT,
    stealLimit: STEAL_LIMIT,
    fleet: {
      workers: shape.workers,
      cachePages: shape.cachePages,
      hitMs: fleet.hitMs,
      missMs: fleet.missMs,
      service: fleet.service
    },
    limit: {
      // the figure the capacities are set against: from the measured service times when the backends report them
      basis: measured ? 'measured' : 'nominal',
      measured: roundLimit(measured),
      nominal: roundLimit(nominal),
      service: service && { ...service, hitMs: round(service.hitMs, 3), missMs: round(service.missMs, 3) }
    },
    cells,
    contenders,
    targets
  }
}

/**
 * A cell's warm-up in words, with its ramp when it had one: "10 s warm-up (the rate ramped up from 0
 * over its first 5 s)".
 * @param {{ warmup: number, ramp?: number }} settings
 * @returns {string}
 */
function warmupText ({ warmup, ramp }) {
  return `${warmup} s warm-up${ramp > 0 ? ` (the rate ramped up from 0 over its first ${ramp} s)` : ''}`
}

module.exports = {
  DEFAULT_STOP_AFTER,
  warmupText,
  capacityReport,
  lagLimitMs,
  serviceSlowdown,
  stealPeak,
  defaultSlo,
  sweepCells,
  keepsSweeping,
  capacityAtSlo,
  measuredService,
  physicalLimit,
  capacities,
  issueTargets
}
