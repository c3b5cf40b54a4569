'use strict'

const { buildDocument, summarize, checkTargets } = require('../bench/summary')
const { formatTable, createProgress } = require('../bench/report-console')
const { formatCsv } = require('../bench/report-csv')
const { formatHtml } = require('../bench/report-html')
const { parseOptions } = require('../bench/options')

function fakeRun (algo, trial, rps, p99, hitRate) {
  return {
    algo,
    policy: algo,
    keepAlive: true,
    trial,
    requests: rps * 20,
    rps,
    latency: { mean: 32000 / rps, p50: 10, p90: 20, p95: 25, p99, max: p99 * 2, stdev: 5 },
    errors: 0,
    non2xx: 0,
    bytesPerSec: rps * 62000,
    hitRate,
    clientHitRate: hitRate,
    specialization: hitRate,
    cpuPer10k: 3,
    cpuShare: { balancer: 0.5, fleet: 0.5, load: 0.2 },
    perBackend: ['a', 'b'].map((id) => ({ id, requests: rps * 10, share: 0.5, hits: 1, misses: 1, hitRate, evictions: 0, clientRequests: rps * 10 })),
    learning: { seconds: 5, requests: 100, rps: 20, errors: 0, non2xx: 0, hitRate: 0.3, latency: { mean: 1, p50: 1, p99: 2 } },
    timeline: [1, 2, 3].map((t) => ({ t, phase: t <= 1 ? 'learning' : 'measured', rps, bytes: 1, errors: 0, non2xx: 0, hitRate, latency: { mean: 1, p50: 1, p99 }, cpu: null }))
  }
}

const settings = { ...parseOptions(['--trials', '3']), warmup: 1, duration: 2 }
const runs = [
  fakeRun('round-robin', 1, 1000, 100, 0.16), fakeRun('wasp', 1, 2500, 40, 0.95),
  fakeRun('wasp', 2, 2300, 45, 0.93), fakeRun('round-robin', 2, 1100, 90, 0.15),
  fakeRun('round-robin', 3, 900, 110, 0.17), fakeRun('wasp', 3, 2400, 60, 0.91)
]
const doc = buildDocument(settings, runs, { startedAt: new Date(0), finishedAt: new Date(1000) })

describe('bench reports', () => {
  test('the summary holds medians over trials and ratios to the baseline', () => {
    expect(doc.summary.wasp).toMatchObject({ trials: 3, rps: 2400, p99: 45, hitRate: 0.93 })
    expect(doc.summary['round-robin']).toMatchObject({ rps: 1000, p99: 100 })
    expect(doc.summary.wasp.vsBaseline).toMatchObject({ rps: 2.4, p99: 0.45 })
    expect(summarize(runs, 'missing').wasp.vsBaseline.rps).toBeNaN()
  })

  test('targets are checked on the medians', () => {
    const byMetric = Object.fromEntries(doc.targets.filter((t) => t.algo === 'wasp').map((t) => [t.metric, t]))
    expect(byMetric.hitRate).toMatchObject({ value: 0.93, pass: true })
    expect(byMetric.rps).toMatchObject({ value: 2.4, pass: true })
    expect(byMetric.p99).toMatchObject({ value: 0.45, pass: true })
    expect(checkTargets([{ algo: 'ewma', metric: 'rps', min: 1 }], doc.summary)[0].pass).toBeUndefined()
  })

  test('the JSON document has the documented shape', () => {
    expect(Object.keys(doc)).toEqual(expect.arrayContaining(['scenario', 'runs', 'summary', 'settings', 'targets']))
    expect(JSON.parse(JSON.stringify(doc)).runs[0].latency).toEqual(runs[0].latency)
  })

  test('the table has one row per algorithm with ratio columns and the targets', () => {
    const text = formatTable(doc, settings.columns)
    const lines = text.split('\n')
    expect(lines.find((l) => l.startsWith('algo'))).toMatch(/req\/s\s+xrr\s+mean ms\s+xrr/)
    expect(lines.find((l) => l.startsWith('wasp'))).toMatch(/2400\.0\s+2\.40/)
    expect(text).toMatch(/ok {3}hitRate wasp = 0\.93/)
  })

  test('the CSV has a header and one line per run', () => {
    const lines = formatCsv(doc).trim().split('\n')
    expect(lines).toHaveLength(7)
    expect(lines[0].split(',')).toEqual(expect.arrayContaining(['algo', 'trial', 'rps', 'p99', 'hitRate', 'specialization', 'cpuPer10k']))
    expect(lines[1]).toMatch(/^cache,round-robin,round-robin,true,1,20000,1000,/)
  })

  test('the HTML report is self-contained, with its charts inline', () => {
    const html = formatHtml(doc)
    expect(html).toMatch(/^<!doctype html>/)
    expect((html.match(/<svg /g) || []).length).toBe(6)
    expect(html).not.toMatch(/<script|<link|src="|https?:\/\/(?!www\.w3\.org\/2000\/svg)/)
  })

  test('progress is one rewritten line on a TTY and plain lines elsewhere', () => {
    const out = []
    const stream = { isTTY: false, write: (s) => out.push(s) }
    const p = createProgress(stream)
    p.tick({ arm: { label: 'wasp' }, trial: 1, trials: 1, second: 1, total: 2, phase: 'learning', rps: 5, hitRate: 0.5, index: 1, runs: 1 })
    p.line('done')
    expect(out).toEqual(['done\n'])
    const tty = []
    const q = createProgress({ isTTY: true, write: (s) => tty.push(s) })
    q.tick({ arm: { label: 'wasp' }, trial: 1, trials: 1, second: 1, total: 2, phase: 'learning', rps: 5, hitRate: 0.5, index: 1, runs: 1 })
    expect(tty[0]).toMatch(/^\r\[1\/1\] wasp trial 1\/1 {2}1\/2 s learning/)
  })
})
