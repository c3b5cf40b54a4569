'use strict'

/** CSV of the runs, one line per run, for spreadsheets and R. */

const { serviceSlowdown, stealPeak } = require('./capacity')
const { round } = require('./stats')

const FIELDS = [
  ['scenario', (r, doc) => doc.scenario],
  ['algo', (r) => r.algo],
  ['policy', (r) => r.policy],
  ['keepAlive', (r) => r.keepAlive],
  ['trial', (r) => r.trial],
  ['requests', (r) => r.requests],
  ['rps', (r) => r.rps],
  ['mean', (r) => r.latency.mean],
  ['p50', (r) => r.latency.p50],
  ['p90', (r) => r.latency.p90],
  ['p95', (r) => r.latency.p95],
  ['p99', (r) => r.latency.p99],
  ['max', (r) => r.latency.max],
  ['stdev', (r) => r.latency.stdev],
  ['errors', (r) => r.errors],
  ['non2xx', (r) => r.non2xx],
  ['bytesPerSec', (r) => r.bytesPerSec],
  ['hitRate', (r) => r.hitRate],
  ['clientHitRate', (r) => r.clientHitRate],
  ['specialization', (r) => r.specialization],
  ['cpuPer10k', (r) => r.cpuPer10k],
  ['learningRps', (r) => r.learning.rps],
  ['learningHitRate', (r) => r.learning.hitRate],
  ['backendShares', (r) => r.perBackend.map((b) => b.share).join(';')],
  ['backendHitRates', (r) => r.perBackend.map((b) => b.hitRate).join(';')],
  ['p999', (r) => r.latency.p999],
  ['cpuLoad', (r) => r.cpuShare && r.cpuShare.load],
  ['generator', (r) => r.load && r.load.generator],
  ['lagP99', (r) => r.load && r.load.lag && r.load.lag.p99],
  ['peer', (r) => (r.peer ? `${r.peer.name} ${r.peer.mode} (${r.peer.version})` : '')],
  ['optimum', (r) => r.optimum],
  ['distance', (r) => r.distance],
  ['hotPages', (r) => (r.hotPages || []).slice(0, 3).map((h) => `${h.page}:${h.replicas}`).join(';')],
  ['churnBackend', (r) => r.churn && r.churn.backend],
  // the capacity scenario (issue 28): the cell's offered rate and what the backends served, the
  // busiest backend's share, the generator's worst send lag, and the service times the backends measured
  ['offered', (r) => r.offered],
  ['servedRps', (r) => r.servedRps],
  ['busiestShare', (r) => (r.perBackend.length ? Math.max(...r.perBackend.map((b) => b.share)) : undefined)],
  ['lagMax', (r) => r.load && r.load.lag && r.load.lag.max],
  ['hitServiceMs', (r) => r.service && r.service.hitMs],
  ['missServiceMs', (r) => r.service && r.service.missMs],
  // the cores the hypervisor gave other guests over the window (Linux /proc/stat; empty elsewhere)
  ['steal', (r) => r.cpuShare && r.cpuShare.steal],
  // the most it took in one second of the window (the STEAL flag over 0.25 cores)
  ['stealPeak', (r) => stealPeak(r)],
  // how much longer than nominal the backends held their workers (0.1: 10 %; the SLOW flag over 0.15)
  ['serviceOver', (r, doc) => round(serviceSlowdown(r.service, doc.capacity && doc.capacity.fleet), 4)],
  // a kill/restart cell (--kill): the regain time after the restart, s (empty: none in the window)
  ['regainS', (r) => r.kill && (r.kill.regainS ?? 'never')]
]

function cell (value) {
  if (value === undefined || value === null || (typeof value === 'number' && Number.isNaN(value))) return ''
  const text = String(value)
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

/**
 * @param {object} doc the result document
 * @returns {string} CSV text with a header line
 */
function formatCsv (doc) {
  const lines = [FIELDS.map(([name]) => name).join(',')]
  for (const run of doc.runs) lines.push(FIELDS.map(([, get]) => cell(get(run, doc))).join(','))
  return lines.join('\n') + '\n'
}

module.exports = { formatCsv }
