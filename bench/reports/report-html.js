'use strict'

/**
 * A self-contained HTML report: inline SVG charts generated here (no script, no CDN, no network).
 * Charts: throughput per second, p99 latency per second, hit rate per second (the learning
 * curves, mean over trials with each trial faint), latency percentiles, per-backend distribution.
 */

const { peerThreads } = require('./report-console')

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf']
const W = 760
const H = 260
const M = { top: 20, right: 150, bottom: 36, left: 60 }

function esc (text) {
  return String(text).replace(/[&<>"']/g, (c) => ({
    '&': '&amp;',
    '<': '&lt;',
    '>': '&gt;',
    '"': '&quot;',
    "'": '&#39;'
  })[c])
}

function num (x, digits = 2) {
  return typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '-'
}

/**
 * The start of a report page, up to and including its title heading: the doctype, the shared style
 * (with `extraStyle`, whole lines of CSS) and `<h1>polistes bench: scenario</h1>`.
 * @param {string} scenario
 * @param {string} [extraStyle]
 * @returns {string}
 */
function pageHead (scenario, extraStyle = '') {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>polistes bench: ${esc(scenario)}</title>
<style>
body{font-family:sans-serif;max-width:980px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}figure{margin:1.5em 0}figcaption{font-weight:bold;margin-bottom:.3em}
${extraStyle}</style></head><body>
<h1>polistes bench: ${esc(scenario)}</h1>`
}

/** "Nice" upper bound and ticks for an axis from 0 to max. */
function ticks (max, count = 5) {
  if (!(max > 0)) return { top: 1, step: 0.2 }
  const raw = max / count
  const mag = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw)
  return { top: Math.ceil(max / step) * step, step }
}

function axes (xMax, yTop, yStep, { xLabel, yLabel, yFormat = (v) => String(+v.toFixed(3)) }) {
  const iw = W - M.left - M.right
  const ih = H - M.top - M.bottom
  const out = []
  for (let v = 0; v <= yTop + 1e-9; v += yStep) {
    const y = M.top + ih - (v / yTop) * ih
    out.push(`<line x1="${M.left}" x2="${M.left + iw}" y1="${y}" y2="${y}" stroke="#eee"/>`)
    out.push(`<text x="${M.left - 6}" y="${y + 4}" text-anchor="end">${esc(yFormat(v))}</text>`)
  }
  if (xMax !== undefined) {
    const { step } = ticks(xMax, 10)
    for (let v = 0; v <= xMax; v += step) {
      const x = M.left + (v / xMax) * iw
      out.push(`<text x="${x}" y="${M.top + ih + 16}" text-anchor="middle">${v}</text>`)
    }
  }
  out.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${M.top + ih}" stroke="#333"/>`)
  out.push(`<line x1="${M.left}" x2="${M.left + iw}" y1="${M.top + ih}" y2="${M.top + ih}" stroke="#333"/>`)
  if (xLabel) out.push(`<text x="${M.left + iw / 2}" y="${H - 4}" text-anchor="middle">${esc(xLabel)}</text>`)
  if (yLabel) {
    out.push(`<text transform="translate(14 ${M.top + ih / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`)
  }
  return out.join('')
}

function legend (labels) {
  return labels.map((label, i) => {
    const y = M.top + 10 + i * 18
    const x = W - M.right + 14
    return `<rect x="${x}" y="${y - 9}" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/>` +
      `<text x="${x + 18}" y="${y + 1}">${esc(label)}</text>`
  }).join('')
}

function svg (title, body) {
  return `<figure><figcaption>${esc(title)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" font-family="sans-serif" font-size="11">${body}</svg></figure>`
}

/**
 * Line chart of a per-second series, one colour per algorithm: each trial faint, the mean over
 * trials bold; the learning phase shaded.
 * @param {string} title
 * @param {Record<string, Array<Array<[number, number]>>>} series label -> trials -> [t, value] points
 * @param {{ learning: number, yLabel: string, yMax?: number }} options
 */
function lineChart (title, series, { learning, yLabel, yMax }) {
  const labels = Object.keys(series)
  const all = labels.flatMap((l) => series[l].flat())
  const xMax = Math.max(1, ...all.map(([t]) => t))
  const { top, step } = yMax
    ? { top: yMax, step: yMax / 5 }
    : ticks(Math.max(0, ...all.map(([, v]) => v).filter(Number.isFinite)))
  const iw = W - M.left - M.right
  const ih = H - M.top - M.bottom
  const sx = (t) => M.left + (t / xMax) * iw
  const sy = (v) => M.top + ih - (Math.min(v, top) / top) * ih
  const parts = []
  if (learning > 0) {
    parts.push(`<rect x="${sx(0)}" y="${M.top}" width="${sx(learning) - sx(0)}" height="${ih}" fill="#f4f4f4"/>`)
    parts.push(`<text x="${(sx(0) + sx(learning)) / 2}" y="${M.top + 12}" text-anchor="middle" ` +
      'fill="#888">learning</text>')
  }
  parts.push(axes(xMax, top, step, { xLabel: 'seconds since load start', yLabel }))
  const path = (points) => points.filter(([, v]) => Number.isFinite(v))
    .map(([t, v], i) => `${i ? 'L' : 'M'}${sx(t).toFixed(1)},${sy(v).toFixed(1)}`).join('')
  labels.forEach((label, i) => {
    const colour = PALETTE[i % PALETTE.length]
    const trials = series[label]
    for (const points of trials) {
      if (trials.length > 1) {
        parts.push(`<path d="${path(points)}" fill="none" stroke="${colour}" stroke-opacity="0.25" stroke-width="1"/>`)
      }
    }
    const byT = new Map()
    for (const points of trials) {
      for (const [t, v] of points) {
        if (!Number.isFinite(v)) continue
        const e = byT.get(t) || { sum: 0, n: 0 }
        e.sum += v
        e.n++
        byT.set(t, e)
      }
    }
    const meanPoints = [...byT.entries()].sort((a, b) => a[0] - b[0]).map(([t, e]) => [t, e.sum / e.n])
    parts.push(`<path d="${path(meanPoints)}" fill="none" stroke="${colour}" stroke-width="2"/>`)
  })
  parts.push(legend(labels))
  return svg(title, parts.join(''))
}

/**
 * Grouped bar chart.
 * @param {string} title
 * @param {string[]} groups x categories
 * @param {Record<string, number[]>} series label -> one value per group
 * @param {{ yLabel: string, format?: (v: number) => string }} options
 */
function barChart (title, groups, series, { yLabel, format = (v) => num(v, 1) }) {
  const labels = Object.keys(series)
  const values = labels.flatMap((l) => series[l]).filter(Number.isFinite)
  const { top, step } = ticks(Math.max(0, ...values))
  const iw = W - M.left - M.right
  const ih = H - M.top - M.bottom
  const gw = iw / Math.max(1, groups.length)
  const bw = Math.min(40, (gw * 0.8) / Math.max(1, labels.length))
  const parts = [axes(undefined, top, step, { yLabel })]
  groups.forEach((g, gi) => {
    const x0 = M.left + gi * gw + (gw - bw * labels.length) / 2
    parts.push(`<text x="${M.left + gi * gw + gw / 2}" y="${M.top + ih + 16}" text-anchor="middle">${esc(g)}</text>`)
    labels.forEach((label, li) => {
      const v = series[label][gi]
      if (!Number.isFinite(v)) return
      const h = (v / top) * ih
      const x = x0 + li * bw
      parts.push(`<rect x="${x.toFixed(1)}" y="${(M.top + ih - h).toFixed(1)}" width="` +
        `${(bw - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${PALETTE[li % PALETTE.length]}"><title>` +
        `${esc(`${label} ${g}: ${format(v)}`)}</title></rect>`)
      if (labels.length * groups.length <= 16) {
        parts.push(`<text x="${(x + bw / 2 - 1).toFixed(1)}" y="${(M.top + ih - h - 3).toFixed(1)}" ` +
          `text-anchor="middle" font-size="9">${esc(format(v))}</text>`)
      }
    })
  })
  parts.push(legend(labels))
  return svg(title, parts.join(''))
}

function timelineSeries (doc, get) {
  const series = {}
  for (const run of doc.runs) {
    (series[run.algo] ||= []).push(run.timeline.map((p) => [p.t, get(p)]))
  }
  return series
}

function summaryTable (doc) {
  const head = [
    'algo', 'req/s', 'x base', 'mean ms', 'p50', 'p90', 'p95', 'p99', 'p99.9', 'max', 'hit rate', 'special.',
    'proxy cpu s/10k', 'load cpu', 'errors'
  ]
  const rows = Object.entries(doc.summary).map(([label, s]) => [
    label, num(s.rps, 1), num(s.vsBaseline.rps), num(s.mean), num(s.p50), num(s.p90), num(s.p95), num(s.p99),
    num(s.p999), num(s.max),
    num(s.hitRate, 3), num(s.specialization, 3), num(s.cpuPer10k, 3), num(s.cpuLoad, 2), String(s.errors + s.non2xx)
  ])
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${
    rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`
}

function runsTable (doc) {
  const head = [
    'algo', 'trial', 'req/s', 'mean', 'p99', 'hit rate', 'special.', 'cpu s/10k', 'errors', 'learning req/s',
    'learning hit'
  ]
  const rows = doc.runs.map((r) => [r.algo, r.trial, num(r.rps, 1), num(r.latency.mean), num(r.latency.p99),
    num(r.hitRate, 3), num(r.specialization, 3), num(r.cpuPer10k, 3), r.errors + r.non2xx, num(r.learning.rps, 1),
    num(r.learning.hitRate, 3)])
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${
    rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody></table>`
}

/**
 * @param {object} doc the result document
 * @returns {string} a complete HTML page
 */
function formatHtml (doc) {
  const learning = doc.settings.warmup
  const labels = Object.keys(doc.summary)
  const pct = ['p50', 'p90', 'p95', 'p99']
  const latency = {}
  for (const l of labels) latency[l] = pct.map((p) => doc.summary[l][p])
  const nBackends = Math.max(0, ...doc.runs.map((r) => r.perBackend.length))
  const backendIds = doc.runs.find((r) => r.perBackend.length === nBackends)?.perBackend.map((b) => b.id) || []
  const shares = {}
  const backendHit = {}
  for (const l of labels) {
    shares[l] = doc.summary[l].share.map((s) => s * 100)
    const mine = doc.runs.filter((r) => r.algo === l)
    backendHit[l] = backendIds.map((_, i) => {
      const vs = mine.map((r) => r.perBackend[i] && r.perBackend[i].hitRate).filter(Number.isFinite)
      return vs.length ? vs.reduce((a, b) => a + b, 0) / vs.length : NaN
    })
  }
  const targets = (doc.targets || []).map((t) =>
    `<li class="${t.pass === false ? 'miss' : 'ok'}">` +
      `${t.pass === undefined ? '?' : t.pass ? 'ok' : 'MISS'}: ${esc(t.metric)} ` +
      `${esc(t.algo)}${t.ratio ? `/${esc(doc.settings.baseline)}` : ''} = ${esc(num(t.value, 3))} (target ` +
      `${t.min !== undefined ? `&ge; ${t.min}` : ''}${t.max !== undefined ? ` &le; ${t.max}` : ''})</li>`).join('')

  return `${pageHead(doc.scenario, '.miss{color:#b00}.ok{color:#070}code{background:#f4f4f4;padding:1px 4px}\n')}
<p>${esc(doc.description)}. ${doc.settings.trials} trial(s) per algorithm, each on a fresh fleet (cold caches) ` +
  `and balancer:
${doc.settings.warmup} s learning phase, then ${doc.settings.requests
? `${doc.settings.requests} requests`
: `${doc.settings.duration} s`} measured. ${doc.settings.connections} connections,
${esc(doc.settings.popularity)} page popularity over ${doc.settings.pages} pages${doc.settings.rate
? `, open loop at ${doc.settings.rate} req/s (latency from the intended send time)`
: ', closed loop'},
load from ${esc(doc.settings.load || 'autocannon')} (its CPU share per arm: column "load cpu", in cores).
${(doc.settings.peers || []).length
? `Peers ${esc(doc.settings.peers.join(', '))} in front of the same fresh fleet: ` +
  `${esc(peerThreads(doc.settings.peerWorkers || 1))}.`
: ''}
Node ${esc(doc.machine.node)}, ${doc.machine.cpus} CPU(s), load average at the end ` +
  `${esc(doc.machine.loadavg.join(' '))}. ${esc(doc.startedAt)}.</p>
<h2>Summary (medians over trials, measured window)</h2>
${summaryTable(doc)}
${targets ? `<ul>${targets}</ul>` : ''}
${lineChart(
  'Throughput per second (req/s); bold: mean over trials, faint: each trial',
  timelineSeries(doc, (p) => p.rps),
  { learning, yLabel: 'req/s' }
)}
${lineChart(
  'Hit rate per second (backends\' /_stats)',
  timelineSeries(doc, (p) => p.hitRate),
  { learning, yLabel: 'hit rate', yMax: 1 }
)}
${lineChart('p99 latency per second (ms)', timelineSeries(doc, (p) => p.latency.p99), { learning, yLabel: 'ms' })}
${barChart('Latency percentiles in the measured window (ms, medians over trials)', pct, latency, { yLabel: 'ms' })}
${barChart(
  'Share of requests per backend in the measured window (%)',
  backendIds,
  shares,
  { yLabel: '%', format: (v) => num(v, 0) }
)}
${barChart(
  'Hit rate per backend in the measured window (mean over trials)',
  backendIds,
  backendHit,
  { yLabel: 'hit rate', format: (v) => num(v, 2) }
)}
<h2>Runs</h2>
${runsTable(doc)}
<p>How to read: the learning phase (shaded) is when the policy is still finding its specialists; the
summary covers only the measured window after it. Specialization is the mean over pages of the share
of the page's requests served by its most frequent backend (1/${nBackends || 'n'} for an even spread, 1 when
each page has one backend).</p>
</body></html>
`
}

/** The charts' size and margins, for the other reports that draw with these helpers (capacity-html.js). */
const LAYOUT = Object.freeze({ W, H, M })

module.exports = { formatHtml, pageHead, esc, num, ticks, axes, legend, svg, PALETTE, LAYOUT }
