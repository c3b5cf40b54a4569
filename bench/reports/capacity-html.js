'use strict'

/**
 * The capacity scenario's HTML report (issue 28), self-contained like report-html.js: the
 * latency-throughput chart (p99 against the offered rate, one line per contender, the SLO dashed),
 * the hit rate against the offered rate, the capacity at SLO per contender as bars beside the fleet's
 * physical limit, and the cells as a table.
 */

const { pageHead, esc, num, ticks, axes, legend, svg, PALETTE, LAYOUT } = require('./report-html')
const { peerThreads } = require('./report-console')
const { warmupText } = require('./capacity')

const { W, H, M } = LAYOUT

/**
 * A chart of a figure against the offered rate: one line with dots per contender; values above the
 * top are drawn at the top, hollow. An optional horizontal line (the SLO).
 * @param {string} title
 * @param {Record<string, Array<[number, number]>>} series contender -> [offered rate, value] points
 * @param {{ yLabel: string, yMax?: number, line?: { value: number, label: string } }} options yMax: the
 *   axis' top (default: from the values)
 * @returns {string} an SVG figure
 */
function rateChart (title, series, { yLabel, yMax, line }) {
  const labels = Object.keys(series)
  const points = labels.flatMap((l) => series[l])
  const xMax = Math.max(1, ...points.map(([x]) => x)) * 1.05
  const values = points.map(([, v]) => v).filter(Number.isFinite)
  const { top, step } = ticks(yMax ?? Math.max(line ? line.value : 0, ...values))
  const iw = W - M.left - M.right
  const ih = H - M.top - M.bottom
  const sx = (x) => M.left + (x / xMax) * iw
  const sy = (v) => M.top + ih - (Math.min(v, top) / top) * ih
  const parts = [axes(xMax, top, step, { xLabel: 'offered rate, req/s', yLabel })]
  if (line) {
    parts.push(`<line x1="${M.left}" x2="${M.left + iw}" y1="${sy(line.value).toFixed(1)}" ` +
      `y2="${sy(line.value).toFixed(1)}" stroke="#b00" stroke-dasharray="6 4"/>`)
    parts.push(`<text x="${M.left + iw - 4}" y="${(sy(line.value) - 4).toFixed(1)}" text-anchor="end" ` +
      `fill="#b00">${esc(line.label)}</text>`)
  }
  labels.forEach((label, i) => {
    const colour = PALETTE[i % PALETTE.length]
    const pts = series[label].filter(([, v]) => Number.isFinite(v)).sort((a, b) => a[0] - b[0])
    const d = pts.map(([x, v], k) => `${k ? 'L' : 'M'}${sx(x).toFixed(1)},${sy(v).toFixed(1)}`).join('')
    parts.push(`<path d="${d}" fill="none" stroke="${colour}" stroke-width="2"/>`)
    for (const [x, v] of pts) {
      const clipped = v > top
      parts.push(`<circle cx="${sx(x).toFixed(1)}" cy="${sy(v).toFixed(1)}" r="3.5" ` +
        `fill="${clipped ? 'white' : colour}" stroke="${colour}"><title>${esc(`${label} at ${x} req/s: ` +
          `${num(v)}`)}</title></circle>`)
    }
  })
  parts.push(legend(labels))
  return svg(title, parts.join(''))
}

/**
 * Horizontal bars, one per contender: its capacity at SLO, with the fleet's physical limit as a line.
 * @param {string} title
 * @param {Array<{ algo: string, capacity: number, beyondSweep: boolean }>} contenders
 * @param {number} limit req/s
 * @returns {string} an SVG figure
 */
function capacityBars (title, contenders, limit) {
  const left = 190
  const right = 90
  const rowH = 22
  const height = 40 + contenders.length * rowH + 30
  const iw = W - left - right
  const { top, step } = ticks(Math.max(limit || 0, ...contenders.map((c) => c.capacity)))
  const sx = (v) => left + (v / top) * iw
  const parts = []
  for (let v = 0; v <= top + 1e-9; v += step) {
    parts.push(`<line x1="${sx(v)}" x2="${sx(v)}" y1="20" y2="${height - 30}" stroke="#eee"/>`)
    parts.push(`<text x="${sx(v)}" y="${height - 14}" text-anchor="middle">${v}</text>`)
  }
  contenders.forEach((c, i) => {
    const y = 30 + i * rowH
    parts.push(`<text x="${left - 8}" y="${y + 12}" text-anchor="end">${esc(c.algo)}</text>`)
    parts.push(`<rect x="${left}" y="${y}" width="${(sx(c.capacity) - left).toFixed(1)}" height="${rowH - 6}" ` +
      `fill="${PALETTE[i % PALETTE.length]}"><title>${esc(`${c.algo}: ${c.capacity} req/s`)}</title></rect>`)
    const text = `${c.capacity}${c.beyondSweep ? '+' : ''}`
    parts.push(`<text x="${(sx(c.capacity) + 4).toFixed(1)}" y="${y + 12}">${text}</text>`)
  })
  if (limit > 0) {
    parts.push(`<line x1="${sx(limit).toFixed(1)}" x2="${sx(limit).toFixed(1)}" y1="20" y2="${height - 30}" ` +
      'stroke="#b00" stroke-dasharray="6 4"/>')
    parts.push(`<text x="${sx(limit).toFixed(1)}" y="14" text-anchor="middle" fill="#b00">physical limit ` +
      `${Math.round(limit)}</text>`)
  }
  return `<figure><figcaption>${esc(title)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" ` +
    `viewBox="0 0 ${W} ${height}" width="${W}" height="${height}" font-family="sans-serif" font-size="11">` +
    `${parts.join('')}</svg></figure>`
}

function htmlTable (head, rows) {
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${
    rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`
}

/**
 * @param {object} doc the capacity result document
 * @returns {string} a complete HTML page
 */
function formatCapacityHtml (doc) {
  const cap = doc.capacity
  const st = doc.settings
  const p99 = {}
  const hit = {}
  for (const c of cap.cells) {
    (p99[c.algo] ||= []).push([c.rate, c.p99]);
    (hit[c.algo] ||= []).push([c.rate, c.hitRate])
  }
  const limit = (cap.limit.measured || cap.limit.nominal).rate
  const cells = htmlTable(
    ['contender', 'offered req/s', 'served req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'hit rate', 'busiest share',
      'errors', 'generator lag p99 ms', 'service over nominal', 'host steal, cores', 'flags'],
    cap.cells.map((c) => [c.algo, c.rate, num(c.served, 0), num(c.p50), num(c.p99), num(c.p999), num(c.hitRate, 3),
      num(c.busiest, 3), c.errors, num(c.lagP99), Number.isFinite(c.slowdown) ? `${num(100 * c.slowdown, 0)} %` : '-',
      num(c.steal),
      [c.overSlo && 'over SLO', c.lagged && 'generator lagged', c.slowed && 'fleet slowed',
        c.stolen && 'steal burst'].filter(Boolean).join(', ')])
  )
  const caps = htmlTable(
    ['contender', 'capacity at SLO, req/s', 'first rate over', 'of the physical limit', 'p99 there', 'hit rate there',
      'busiest there', 'limit from its own cells'],
    cap.contenders.map((c) => [c.algo, `${c.capacity}${c.beyondSweep ? '+' : ''}`, c.firstOver ?? '-',
      num(c.ofLimit, 3), num(c.p99), num(c.hitRate, 3), num(c.busiest, 3), num(c.limitOwn, 0)])
  )
  const s = cap.limit.service
  const basis = s
    ? `the service times the backends measured over the sweep: hit ${num(s.hitMs)} ms, miss ${num(s.missMs)} ms ` +
      `(nominal ${cap.fleet.hitMs}/${cap.fleet.missMs} ms: ${num(cap.limit.nominal.rate, 0)} req/s)`
    : `the nominal service times, hit ${cap.fleet.hitMs} ms and miss ${cap.fleet.missMs} ms (the backends did not ` +
      'report measured ones)'
  const w = cap.fleet.workers
  const sumW = w.reduce((a, b) => a + b, 0)
  const cached = Math.min(st.pages, cap.fleet.cachePages.reduce((a, b) => a + b, 0))
  return `${pageHead(doc.scenario)}
<p>${esc(doc.description)}. ${w.length} backends with ${esc(w.join('/'))} workers (a FIFO queue each), hit ` +
  `${cap.fleet.hitMs} ms and miss ${cap.fleet.missMs} ms nominal; ${st.pages} pages, ${esc(st.popularity)}; ` +
  `${st.connections} connections, open loop, latency from the intended send time. Per cell (a contender at an ` +
  `offered rate) ${st.trials} trial(s), each on a fresh fleet and balancer, ${esc(warmupText(st))} then ` +
  `${st.duration} s measured; medians over trials. A contender's sweep stops after ${cap.stopAfter} rate(s) with p99 ` +
  `over the SLO of ${cap.sloMs} ms. ${(st.peers || []).length
    ? `Peers: ${esc(peerThreads(st.peerWorkers || 1))}.`
    : ''} Node ${esc(doc.machine.node)}, ${doc.machine.cpus} CPU(s), load average at the end ` +
  `${esc(doc.machine.loadavg.join(' '))}. ${esc(doc.startedAt)}.</p>
${rateChart('p99 latency against the offered rate (ms; hollow: above the chart)', p99, {
  yLabel: 'p99 ms',
  yMax: ticks(4 * cap.sloMs).top,
  line: { value: cap.sloMs, label: `SLO ${cap.sloMs} ms` }
})}
${capacityBars('Capacity at SLO (req/s), the fleet\'s physical limit dashed', cap.contenders, limit)}
<p>Physical limit: the throughput of a perfectly balanced fleet at the best static hit rate
${num(cap.limit[cap.limit.basis].hitRate, 4)} (the hottest ${cached}
of ${st.pages} pages cached): ${sumW} workers x 1000 / (h x hit + (1 - h) x miss) = ${num(limit, 0)} req/s,
from ${basis}.</p>
${caps}
${(cap.targets || []).length
  ? `<ul>${cap.targets.map((t) => `<li>${t.pass === undefined ? '?' : t.pass ? 'ok' : 'MISS'}: ${esc(t.name)} = ` +
    `${t.above ? '&gt; ' : ''}${esc(num(t.value, 3))} ` +
    `(target ${t.min !== undefined ? `&ge; ${t.min}` : `&le; ${t.max}`})` +
    `${t.misses && t.misses.length ? `: ${esc(t.misses.join(', '))}` : ''}</li>`).join('')}</ul>`
  : ''}
${rateChart('Hit rate against the offered rate (backends\' /_stats)', hit, { yLabel: 'hit rate', yMax: 1 })}
<h2>Cells (medians over trials)</h2>
${cells}
<p>Flags: "over SLO", p99 over ${cap.sloMs} ms; "generator lagged", the load generator's own send lag p99 was over
${cap.lagLimitMs} ms, so the cell may measure the generator rather than the fleet; "fleet slowed", in a trial the
backends measured their service times more than ${num(100 * cap.slowLimit, 0)} % above the nominal ones (at that
trial's mix of hits and misses; "service over nominal" is the median), so the host may have slowed the fleet
itself; "steal burst", in a trial one second of the window lost over ${esc(cap.stealLimit)} cores to the hypervisor
(the window's steal averages such a burst away). Host steal: the cores the hypervisor gave other guests over the
window (of the machine's
${esc(doc.machine.cpus)}). Busiest share: the busiest backend's share of the requests
(fair: ${num(1 / w.length, 3)}).</p>
</body></html>
`
}

module.exports = { formatCapacityHtml }
