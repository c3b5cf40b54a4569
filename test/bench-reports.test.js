'use strict'

const { buildDocument, summarize, checkTargets } = require('../bench/reports/summary')
const { formatTable, createProgress, loadLine } = require('../bench/reports/report-console')
const { formatCsv } = require('../bench/reports/report-csv')
const { formatHtml } = require('../bench/reports/report-html')
const { parseOptions } = require('../bench/runners/options')

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
    // the ETA ends the terminal's line when run.js gives one
    q.tick({ arm: { label: 'wasp' }, trial: 2, trials: 3, second: 4, total: 12, phase: 'learning', rps: 5, hitRate: 0.5, index: 4, runs: 9, eta: 'ETA 1m10s' })
    expect(tty[1]).toMatch(/^\r\[4\/9\] wasp trial 2\/3 {2}4\/12 s learning {2}5 req\/s {2}hit 0\.50 {2}ETA 1m10s$/)
  })

  test('peers and the open loop: p99.9 column, the peers\' threading, the load generator\'s CPU share and lag', () => {
    const open = { ...parseOptions(['--peers', 'none', '--rate', '500']), warmup: 1, duration: 2, peers: ['haproxy-uri'] }
    const withLag = (run, lag) => ({ ...run, latency: { ...run.latency, p999: run.latency.p99 + 1 }, load: { generator: 'open-loop', lag, timeouts: 0 } })
    const peerRun = { ...withLag(fakeRun('haproxy-uri', 1, 500, 30, 0.92), { p50: 0.2, p99: 1.5, max: 4 }), peer: { name: 'haproxy', mode: 'uri', version: 'HAProxy version 2.6.12' } }
    const openDoc = buildDocument(open, [withLag(fakeRun('round-robin', 1, 500, 90, 0.16), { p50: 0.1, p99: 2.5, max: 7 }), peerRun],
      { startedAt: new Date(0), finishedAt: new Date(1000) })
    const text = formatTable(openDoc, open.columns)
    expect(text).toMatch(/open loop at 500 req\/s \(latency from the intended send time\)/)
    expect([openDoc.settings.ramp, doc.settings.ramp]).toEqual([2.5, 0]) // the JSON's settings: half the default 5 s warm-up
    expect(text.split('\n').find((l) => l.startsWith('algo'))).toMatch(/p99 ms\s+xrr\s+p99\.9 ms\s+max ms/)
    expect(text.split('\n').find((l) => l.startsWith('haproxy-uri'))).toMatch(/ 31\.00 /)
    expect(text).toMatch(/peers \(HAProxy version 2\.6\.12\): one thread \/ one process each/)
    expect(loadLine(openDoc)).toBe('load generator: open-loop, at most 0.20 of ' + openDoc.machine.cpus +
      ' cores; its own send lag p99 2.50 ms, max 7.00 ms (medians over trials, worst arm)')
    const heavy = { ...openDoc, settings: { ...openDoc.settings, load: 'autocannon' }, summary: { a: { cpuLoad: 0.93 } } }
    expect(loadLine(heavy)).toMatch(/at most 0\.93 of \d+ cores \(near one core: it may have limited the throughput\)/)
    const csv = formatCsv(openDoc).trim().split('\n').map((l) => l.split(','))
    const col = (name) => csv[0].indexOf(name)
    expect(csv[2][col('p999')]).toBe('31')
    expect(csv[2][col('peer')]).toBe('haproxy uri (HAProxy version 2.6.12)')
    expect(csv[1][col('lagP99')]).toBe('2.5')
    expect(formatHtml(openDoc)).toMatch(/Peers haproxy-uri in front of the same fresh fleet: one thread \/ one process each/)
    const two = { ...openDoc, settings: { ...openDoc.settings, peerWorkers: 2 } }
    expect(formatTable(two, open.columns)).toMatch(/peers \(HAProxy version 2\.6\.12\): HAProxy nbthread 2 \(one process\), nginx a master and worker_processes 2, like polistes --workers 2; their "balancer" CPU is the sum/)
    expect(formatHtml(two)).toMatch(/HAProxy nbthread 2/)
    expect(openDoc.settings.peerWorkers).toBe(open.peerWorkers)
  })
})
