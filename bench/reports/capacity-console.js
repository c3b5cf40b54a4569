'use strict'

/**
 * The capacity scenario's console output (issue 28): the sweep's cells per contender and offered rate,
 * each contender's capacity at the SLO, and the fleet's physical limit with how it was computed.
 */

const { peerThreads } = require('./report-console')
const { warmupText } = require('./capacity')

const fmt = (digits) => (x) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '-')
/** 0.043 as "+4%"; "-" when not a number. */
const percent = (x) => (typeof x === 'number' && Number.isFinite(x)
  ? `${x < 0 ? '' : '+'}${Math.round(x * 100)}%`
  : '-')
/** A cell's or a capacity's host flags: " LAG" (the generator lagged), " SLOW" (the fleet was slowed), " STEAL" (a
 * second of the window lost a burst of CPU to the hypervisor). */
const hostFlags = (c) => `${c.lagged ? ' LAG' : ''}${c.slowed ? ' SLOW' : ''}${c.stolen ? ' STEAL' : ''}`
const int = (x) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-')

/** Columns padded to their widest cell, the first left-aligned, a rule under the header. */
function table (rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)))
  const lines = rows.map((r) => r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i])))
    .join('  ').trimEnd())
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '))
  return lines
}

/** The fleet, the load and the SLO in two lines. */
function header (doc) {
  const st = doc.settings
  const cap = doc.capacity
  const w = cap.fleet.workers
  const workers = new Set(w).size === 1 ? `${w[0]} workers` : `${w.join('/')} workers`
  const c = cap.fleet.cachePages
  const cache = new Set(c).size === 1 ? `${c[0]} pages` : `${c.join('/')} pages`
  return [
    `scenario ${doc.scenario}: ${doc.description}`,
    `fleet: ${w.length} backends x ${workers} (FIFO, ${cap.fleet.service || 'timer'} service), hit ` +
      `${cap.fleet.hitMs} ms / miss ${cap.fleet.missMs} ms nominal, LRU of ${cache} each; ${st.pages} pages` +
      `${st.pageSize ? ` (${st.pageSize} B)` : ''}, ${st.popularity}; ${st.connections} connections, open loop ` +
      '(latency from the intended send time)',
    `${st.trials} trial(s) per cell of ${warmupText(st)} + ${st.duration} s measured, each on a fresh fleet ` +
      `and balancer, medians over trials; SLO p99 <= ${cap.sloMs} ms` +
      `${cap.sloDefault ? ' (4 x hit + miss)' : ''}; a contender stops after ${cap.stopAfter} rate(s) over it`
  ]
}

/**
 * The physical limit in words: the formula with its figures, where the service times came from.
 * @param {object} cap the document's capacity block
 * @param {number} pages the pages requested
 * @returns {string}
 */
function limitLine (cap, pages) {
  const { limit, fleet } = cap
  const n = fleet.workers.length
  const sumW = fleet.workers.reduce((a, b) => a + b, 0)
  const sumC = fleet.cachePages.reduce((a, b) => a + b, 0)
  const l = limit.measured || limit.nominal
  const s = limit.service
  const h = l.hitRate
  const hitMs = s ? s.hitMs : fleet.hitMs
  const missMs = s ? s.missMs : fleet.missMs
  const workers = new Set(fleet.workers).size === 1 ? `${n} x ${fleet.workers[0]}` : `${sumW}`
  return `fleet physical limit: ${workers} workers x 1000 / (h x hit + (1 - h) x miss) = ${sumW * 1000} / ` +
    `(${fmt(4)(h)} x ${fmt(2)(hitMs)} + ${fmt(4)(1 - h)} x ${fmt(2)(missMs)}) = ${int(l.rate)} req/s; h the best ` +
    `static hit rate (the hottest ${Math.min(sumC, pages)} of ${pages} pages cached), ` +
    (s
      ? `hit and miss the service times the backends measured over the sweep (${int(s.hits)} hits, ${int(s.misses)} ` +
        `misses); at the nominal ${fleet.hitMs}/${fleet.missMs} ms: ${int(limit.nominal.rate)} req/s`
      : 'hit and miss the NOMINAL service times (the backends did not report measured ones)')
}

/**
 * @param {object} doc the capacity result document (run.js)
 * @returns {string} several lines
 */
function formatCapacityTable (doc) {
  const cap = doc.capacity
  const rows = [['contender', 'offered', 'served', 'p50 ms', 'p99 ms', 'p99.9 ms', 'hit rate', 'busiest', 'errors',
    'lag p99', 'svc over', 'steal', 'flags']]
  let last
  for (const c of cap.cells) {
    rows.push([c.algo === last ? '' : c.algo, int(c.rate), fmt(0)(c.served), fmt(2)(c.p50), fmt(2)(c.p99),
      fmt(2)(c.p999), fmt(3)(c.hitRate), fmt(3)(c.busiest), String(c.errors), fmt(2)(c.lagP99),
      percent(c.slowdown), fmt(2)(c.steal),
      `${c.overSlo ? '>SLO' : ''}${hostFlags(c)}`.trim()])
    last = c.algo
  }
  const caps = [['contender', 'capacity at SLO', 'first over', 'of limit', 'p99 there', 'hit there', 'busiest there',
    'own limit']]
  for (const c of cap.contenders) {
    caps.push([c.algo, `${int(c.capacity)}${c.beyondSweep ? '+' : ''}${hostFlags(c)}`,
      c.firstOver === null ? '-' : int(c.firstOver), fmt(3)(c.ofLimit), fmt(2)(c.p99), fmt(3)(c.hitRate),
      fmt(3)(c.busiest), int(c.limitOwn)])
  }
  const out = [...header(doc), '', ...table(rows), '',
    'served: the backends\' requests per second in the window. flags: >SLO p99 over ' +
      `${cap.sloMs} ms; LAG the generator's own send lag p99 over ${cap.lagLimitMs} ms (the ` +
      'cell may measure the generator, not the fleet); SLOW the backends measured their service times over ' +
      `${Math.round(cap.slowLimit * 100)}% above nominal in a trial ("svc over", the median; the host may have ` +
      'slowed the fleet; on the capacity line: at the first rate over the SLO); STEAL in a trial one second of ' +
      `the window lost over ${cap.stealLimit} cores to the hypervisor (a burst the window's steal averages away; ` +
      'on the capacity line: at the first rate over the SLO). steal: the cores the ' +
      `hypervisor gave other guests over the window (of the machine's ${doc.machine.cpus}). busiest: the ` +
      `busiest backend's share of the requests (fair: ${fmt(3)(1 / cap.fleet.workers.length)})`,
    '', `capacity at SLO: the highest offered rate before the first whose p99 is over ${cap.sloMs} ms ` +
      '(+: none was, the capacity may lie beyond the sweep)', ...table(caps), '', limitLine(cap, doc.settings.pages),
    '"own limit": the same from the service times measured in the contender\'s own cells']
  if (cap.targets && cap.targets.length) {
    out.push('', 'targets (issue 28):')
    for (const t of cap.targets) {
      const mark = t.pass === undefined ? '?' : t.pass ? 'ok  ' : 'MISS'
      const bound = t.min !== undefined ? `>= ${t.min}` : `<= ${t.max}`
      const value = Number.isFinite(t.value) ? `${t.above ? '> ' : ''}${t.value}` : 'n/a'
      out.push(`  ${mark} ${t.name} = ${value} (target ${bound})` +
        `${t.misses && t.misses.length ? `: ${t.misses.join(', ')}` : ''}`)
    }
  }
  const peers = doc.runs.filter((r) => r.peer)
  if (peers.length) {
    const versions = [...new Set(peers.map((r) => r.peer.version).filter(Boolean))]
    out.push(`peers (${versions.join(', ')}): ${peerThreads(doc.settings.peerWorkers || 1)}`)
  }
  const rev = doc.revision
  if (rev && rev.modified && rev.modified.length) {
    out.push(`measured code: ${String(rev.commit).slice(0, 7)} plus uncommitted changes to ${rev.modified.join(', ')}`)
  }
  return out.join('\n')
}

module.exports = { formatCapacityTable }
