'use strict'

/**
 * The kill/restart cell of the capacity scenario (`--kill AT:DOWN`, issue 28's "a backend killed and
 * restarted mid-run: no failed request, capacity regained within 10 s"): per run, the failed requests by
 * kind and how long after the restart the per-second p99 stayed within the SLO; per contender, the medians
 * over its trials; and the console table. Pure: it reads the run records of bench/runners/trial.js.
 */

const { median } = require('./stats')

/**
 * Whether one second of the timeline was within the SLO: answers came, their p99 at most the SLO, and none
 * of them failed.
 * @param {{ latency: { p99: number }, errors: number, non2xx: number, rps: number }} p
 * @param {number} sloMs
 */
function healthy (p, sloMs) {
  return p.rps > 0 && Number.isFinite(p.latency.p99) && p.latency.p99 <= sloMs && !p.errors && !p.non2xx
}

/**
 * The kill/restart figures of one run.
 * @param {object} run the run record (timeline with `churned`, churn, failures, balancer)
 * @param {{ kill: { at: number, down: number }, sloMs: number, warmup: number, duration: number }} cell
 * @returns {{ backend: string, at: number, down: number, restartMs: number | null, failed: number,
 *   failures: Record<string, number>, retries: number | null, p99Before: number, worstP99: number,
 *   regainS: number | null, backendBackS: number | null }}
 *   regainS: whole seconds after the restart from which every second of the window was within the SLO
 *   (0: from the restart on; null: not before the window ended); backendBackS: seconds after the restart
 *   until the restarted backend served half its per-second mean of before the kill (null: not in the window)
 */
function killFields (run, { kill, sloMs, warmup, duration }) {
  const killSecond = warmup + kill.at
  const restartSecond = killSecond + kill.down
  const end = warmup + duration
  const window = run.timeline.filter((p) => p.t > warmup && p.t <= end)
  const before = window.filter((p) => p.t <= killSecond)
  const after = window.filter((p) => p.t > restartSecond)
  let from = after.length
  while (from > 0 && healthy(after[from - 1], sloMs)) from--
  const servedBefore = before.reduce((a, p) => a + (p.churned || 0), 0) / Math.max(1, before.length)
  const back = after.find((p) => p.churned > 0 && p.churned >= servedBefore / 2)
  const p99s = (points) => points.map((p) => p.latency.p99).filter(Number.isFinite)
  return {
    backend: run.churn ? run.churn.backend : null,
    at: kill.at,
    down: kill.down,
    restartMs: run.churn ? run.churn.restartMs : null,
    failed: run.errors + run.non2xx,
    failures: run.failures || {},
    retries: run.balancer ? run.balancer.retries : null,
    p99Before: before.length ? Math.max(...p99s(before)) : NaN,
    worstP99: Math.max(...p99s(window.filter((p) => p.t > killSecond))),
    regainS: from < after.length || after.length === 0 ? from : null,
    backendBackS: back ? back.t - restartSecond : null
  }
}

/** The median of values where null is "never": null when half or more of them are. */
function medianOrNever (values) {
  const m = median(values.map((v) => (v === null ? Infinity : v)))
  return Number.isFinite(m) ? m : null
}

/**
 * Per contender, in the order of the settings' arms: the medians over its trials of the kill/restart figures,
 * the failures summed.
 * @param {object} settings from options.js, with `kill`
 * @param {object[]} runs run records, each with `kill` (killFields)
 * @returns {{ backend: string | null, at: number, down: number, rate: number, sloMs: number, contenders: object[] }}
 */
function killReport (settings, runs) {
  const contenders = []
  for (const arm of settings.arms) {
    const own = runs.filter((r) => r.algo === arm.label && r.kill)
    if (own.length === 0) continue
    const failures = {}
    for (const r of own) for (const [k, n] of Object.entries(r.kill.failures)) failures[k] = (failures[k] || 0) + n
    const med = (f) => median(own.map((r) => r.kill[f]))
    contenders.push({
      algo: arm.label,
      trials: own.length,
      failed: own.reduce((a, r) => a + r.kill.failed, 0),
      failures,
      retries: own.every((r) => r.kill.retries === null) ? null : own.reduce((a, r) => a + (r.kill.retries || 0), 0),
      p99Before: med('p99Before'),
      worstP99: med('worstP99'),
      regainS: medianOrNever(own.map((r) => r.kill.regainS)),
      backendBackS: medianOrNever(own.map((r) => r.kill.backendBackS)),
      restartMs: med('restartMs')
    })
  }
  const first = runs.find((r) => r.kill)
  return {
    backend: first ? first.kill.backend : null,
    at: settings.kill.at,
    down: settings.kill.down,
    rate: settings.sweep.rates[0],
    sloMs: settings.sweep.sloMs,
    contenders
  }
}

const num = (digits) => (x) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '-')

/**
 * The kill/restart table: a header line, then one row per contender.
 * @param {ReturnType<typeof killReport>} report
 * @returns {string}
 */
function formatKillTable (report) {
  const rows = [['contender', 'failed', 'by kind', 'retries', 'p99 before', 'worst p99', 'regain s', 'backend back s',
    'flags']]
  for (const c of report.contenders) {
    const kinds = Object.entries(c.failures).map(([k, n]) => `${k}: ${n}`).join(', ') || '-'
    rows.push([c.algo, String(c.failed), kinds, c.retries === null ? '-' : String(c.retries), num(1)(c.p99Before),
      num(1)(c.worstP99), c.regainS === null ? 'never' : String(c.regainS),
      c.backendBackS === null ? 'never' : String(c.backendBackS), c.p99Before > report.sloMs ? 'UNSETTLED' : ''])
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  const lines = rows.map((r) => r.map((c, i) => (i === 0 || i === 2 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
    .join('  ').trimEnd())
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '))
  return [
    `kill/restart at ${report.rate} req/s: backend ${report.backend} crashed ${report.at} s into the measured ` +
      `window (listening socket and connections closed), started again on its port ${report.down} s later; ` +
      'regain: seconds after the restart from which ' +
      `every second had p99 <= ${report.sloMs} ms and no failed request (medians over trials; failures summed; ` +
      'retries: the polistes balancer\'s; UNSETTLED: p99 over the SLO before the crash already, the regain time ' +
      'includes the cold start\'s backlog)',
    ...lines
  ].join('\n')
}

module.exports = { killFields, killReport, formatKillTable }
