#!/usr/bin/env node
'use strict'

/**
 * `npm run bench:seeds`: replay the five earlier experiments (docs/experiments.md, A-E) through
 * the bench's scenarios, one after the other, and write the comparison with the originals: JSON
 * in the results directory and a Markdown section of docs/experiments.md, regenerated between
 * `<!-- seeds:begin -->` and `<!-- seeds:end -->`. `--quick` runs a tiny variant (for the test).
 */

const fs = require('node:fs')
const path = require('node:path')
const yargs = require('yargs/yargs')
const { parseOptions } = require('./options')
const { bench } = require('./run')
const { round } = require('../reports/stats')

const DOC = path.join(__dirname, '..', '..', 'docs', 'experiments.md')
const BEGIN = '<!-- seeds:begin -->'
const END = '<!-- seeds:end -->'

// the quick variant (the test's): 1 s per arm and a light load, enough for every arm to answer; its
// figures mean nothing (a second, cold), the test checks that each experiment runs and reports
const QUICK = ['--trials', '1', '--duration', '1', '--warmup', '0', '--jit-warmup', '0', '--peers', 'none']
// the latency scenarios (A, C): 10 connections, not the scenarios' 100 (tens of requests, not hundreds);
// B keeps its 50 req/s over 20 connections, not 200 (each answered within its 250 ms try timeout and a retry)
const QUICK_FEW = [...QUICK, '--connections', '10']
// the cache scenarios' backends answer as fast as the CPU allows: a fixed rate, not a closed loop
const QUICK_RATE = [...QUICK, '--connections', '4', '--rate', '50']
const full = (duration, warmup) => [
  '--trials',
  '1',
  '--duration',
  String(duration),
  '--warmup',
  String(warmup),
  '--jit-warmup',
  '2',
  '--peers',
  'none'
]

/** The figures of one arm: medians over trials, success over all its runs. */
function figures (doc, label) {
  const s = doc && doc.summary[label]
  if (!s) return undefined
  const runs = doc.runs.filter((r) => r.algo === label)
  const answered = runs.reduce((a, r) => a + r.requests, 0)
  const failed = runs.reduce((a, r) => a + r.non2xx, 0)
  const errors = runs.reduce((a, r) => a + r.errors, 0)
  return {
    ...s,
    requests: answered + errors,
    success: round((answered - failed) / (answered + errors), 4),
    failed: failed + errors
  }
}

const f = (x, digits = 0) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : 'n/a')
const pct = (x) => (typeof x === 'number' && Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : 'n/a')
const ratio = (a, b) => (a && b && typeof a === 'number' && typeof b === 'number' ? a / b : NaN)

/** One experiment: its original, the scenarios that replay it, and what to compare. */
const EXPERIMENTS = [
  {
    id: 'A',
    title: 'adaptive reverse proxy: RR vs SMA vs EWMA, persistent vs not',
    original: 'Three backends (A cycling 10,15,20,400,400,400,10,15,20 ms; B 200; C 250), wrk -c100 -d120s. ' +
      'Persistent: round-robin 494.9 req/s, p95 416 ms; SMA 467.1, p95 238, share of C 1.7 %; EWMA 468.7, ' +
      'p95 239, C 1.3 %. Non-persistent: EWMA p95 416.',
    parts: [{
      scenario: 'latency-profiles',
      full: full(12, 3),
      quick: [...QUICK_FEW, '--algos', 'round-robin,ewma', '--keep-alive']
    }],
    verdict ([doc]) {
      const rr = figures(doc, 'round-robin')
      const ewma = figures(doc, 'ewma')
      const p95 = ratio(ewma && ewma.p95, rr && rr.p95)
      const shareC = ewma && ewma.share[2]
      return `EWMA/round-robin p95 ${f(p95, 2)} (original 239/416 = 0.57), EWMA's share of the 250 ms ` +
        `backend C ${pct(shareC)} (original 1.3 %): ` +
        (p95 < 0.8 ? 'the latency-aware policies cut the tail as in A' : 'the tail is not cut as in A')
    }
  },
  {
    id: 'B',
    title: 'periodic server load, random vs round-robin, at a fixed rate',
    original: 'Two servers with a periodic load, vegeta at 50 req/s for 60 s. random: mean 1.21 s, p50 33.8 ' +
      'ms, p90 7.73 s, p99 8.11 s, 83.1 % success; round-robin: mean 976 ms, p50 62.6 ms, p90 4.34 s, p99 ' +
      '8.24 s, 92.6 % success.',
    parts: [{
      scenario: 'periodic',
      full: full(20, 3),
      quick: [...QUICK, '--connections', '20', '--algos', 'random,ewma', '--retry-on', '503,timeout', '--try-timeout',
        '250']
    }],
    verdict ([doc]) {
      const labels = Object.keys(doc.summary)
      const arm = (l) => doc.runs.find((r) => r.algo === l)
      const group = (test) => labels.filter((l) => test(arm(l))).map((l) => ({ l, x: figures(doc, l) }))
      const plainLabel = labels.find((l) => arm(l).policy === 'random' && !arm(l).retryOn)
      const plain = plainLabel && figures(doc, plainLabel)
      const blind = ['random', 'round-robin']
      const on503 = group((a) => a.retryOn && !a.retryOn.includes('timeout'))
      const onTimeout = group((a) => a.retryOn && a.retryOn.includes('timeout'))
      const best = on503.filter(({ l }) => !blind.includes(arm(l).policy)).sort((a, b) => a.x.mean - b.x.mean)[0]
      const worstP99 = (arms) => Math.max(...arms.map(({ x }) => x.p99))
      const bestP99 = (arms) => Math.min(...arms.map(({ x }) => x.p99))
      const minSuccess = (arms) => Math.min(...arms.map(({ x }) => x.success))
      const parts = [`random without retries ${pct(plain && plain.success)} success, mean ` +
        `${f(plain && plain.mean)} ms, p90 ${f(plain && plain.p90)}, p99 ${f(plain && plain.p99)} (original ` +
        '83.1 %, 1,210, 7,730, 8,110 ms)']
      if (best) {
        parts.push(`best adaptive arm with retry on 503, ${best.l}: ${pct(best.x.success)} success, mean ` +
          `${f(best.x.mean)} ms (${f(ratio(best.x.mean, plain && plain.mean), 2)} of random's), p90 ` +
          `${f(best.x.p90)}, p99 ${f(best.x.p99)}`)
      }
      if (onTimeout.length) {
        parts.push(`retrying on a timeout too (${onTimeout.length} arms): p99 ${f(bestP99(onTimeout))}-` +
          `${f(worstP99(onTimeout))} ms, success at least ${pct(minSuccess(onTimeout))}`)
      }
      const agree = []
      const differ = []
      if (plain) {
        (plain.success < 0.97 ? agree : differ).push('blind routing loses requests to the connection limit (' +
          `${pct(plain.success)}, B 83.1 %)`)
      }
      if (on503.length) {
        (minSuccess(on503) === 1 ? agree : differ).push('retries on 503 ' +
          `${minSuccess(on503) === 1 ? 'bring every arm to' : 'do not bring every arm to'} 100 % success`)
      }
      if (on503.length && onTimeout.length) {
        const cut = worstP99(onTimeout) < 0.5 * bestP99(on503)
        ;(cut ? agree : differ).push(`retrying on a timeout ${cut ? 'cuts' : 'does not cut'} the p99 that ` +
          `503 retries leave at the slow phase (${f(bestP99(on503))} ms at best) to ` +
          `${f(worstP99(onTimeout))} ms at worst`)
        if (minSuccess(onTimeout) < 1) {
          differ.push('a request caught on both servers as they swap phases has no third one to go to')
        }
      }
      differ.push('B\'s 8 s p99 came from its own, longer slow phase (ours is 3 s)')
      return parts.join('; ') + `. Agrees: ${agree.join('; ') || 'nothing'}. Differs: ${differ.join('; ')}`
    }
  },
  {
    id: 'C',
    title: 'forwarder to regional workers',
    original: 'Workers in regions (emea ~325-375 ms, us ~350-430, asia ~535-600), Random, Lowest, ' +
      'EqualWorkers, EqualRegions, Smart (share proportional to speed). "Lowest" by far the slowest; about ' +
      '500 concurrent requests before the forwarder failed. No table of figures.',
    parts: [{
      scenario: 'regions',
      full: full(12, 3),
      quick: [...QUICK_FEW, '--algos', 'round-robin,latency-weighted']
    }],
    verdict ([doc]) {
      const rr = figures(doc, 'round-robin')
      const lw = figures(doc, 'latency-weighted')
      const m = ratio(lw && lw.mean, rr && rr.mean)
      return `latency-weighted ("Smart")/round-robin mean latency ${f(m, 2)}, share of the 550 ms asia ` +
        `worker ${pct(lw && lw.share[5])} vs ${pct(rr && rr.share[5])}: ` +
        (m < 1
          ? 'spreading by speed beats equal spreading, as C reported'
          : 'spreading by speed did not beat equal spreading here')
    }
  },
  {
    id: 'D',
    title: 'many clients, ten backends, 1,000 concurrent connections',
    original: 'Rust/Tokio balancer, ApacheBench 100,000 requests at concurrency 1,000, ten mock servers: ' +
      'Random 494.5 req/s (p50 2,022 ms, p99 2,194), RoundRobin 452.4 (2,179 / 2,718), IpHash 337.2 (2,687 ' +
      '/ 4,977).',
    parts: [{
      scenario: 'many-clients',
      full: full(10, 2),
      quick: [
        ...QUICK,
        '--algos',
        'round-robin,ip-hash',
        '--connections',
        '10',
        '--sources',
        '10',
        '--requests',
        '50'
      ]
    }],
    verdict ([doc]) {
      const baseLabel = doc.summary.random ? 'random' : 'round-robin'
      const random = figures(doc, baseLabel)
      const ip = figures(doc, 'ip-hash')
      const one = figures(doc, 'ip-hash (1 client address)')
      const failed = Object.keys(doc.summary).reduce((a, l) => a + figures(doc, l).failed, 0)
      const loadCpu = Math.max(...doc.runs.map((r) => r.cpuShare.load))
      const oneRatio = one && ratio(one.rps, random.rps)
      return `ip-hash/${baseLabel} req/s ${f(ratio(ip && ip.rps, random && random.rps), 2)} with many ` +
        'client addresses' +
        (one
          ? `, ${f(oneRatio, 2)} from one address (all on backend ${one.share.indexOf(Math.max(...one.share)) + 1})`
          : '') +
        ` (original IpHash/Random 0.68); ${failed} failed requests over all arms; the load generator used ` +
          `at most ${f(loadCpu, 2)} of ${doc.machine.cpus} cores. ` +
        (one
          ? 'Agrees: ' +
            `${oneRatio < 0.9
            ? 'ip-hash from one client address puts all on one backend and loses throughput, as D\'s IpHash'
            : 'ip-hash from one client address puts all on one backend'}. `
          : '') +
        `Differs: the rate, ${f(random && random.rps)} req/s against D's 494.5 (another program on another ` +
          'machine); latency follows it by Little\'s law in both: ' +
        `${doc.settings.connections} connections / ${f(random && random.rps)} req/s = ` +
          `${f(ratio(doc.settings.connections * 1000, random && random.rps))} ms against a p50 of ` +
          `${f(random && random.p50)} (D: 1,000 / 494.5 = 2,022 ms, its p50 2,022)`
    }
  },
  {
    id: 'E',
    title: 'the robin and the wasp, as it was run',
    original: 'Seven node-static servers, 25 pages, no cache of their own (the OS page cache, shared), wrk ' +
      'one page per run. Round-robin 39.39 req/s vs wasp 41.21 after training (+4.4 %); latency 856 vs 933 ' +
      'ms mean (+9 %).',
    parts: [
      { scenario: 'cache-off', full: full(12, 3), quick: QUICK_RATE },
      {
        scenario: 'cache',
        full: [...full(12, 3), '--algos', 'round-robin,wasp'],
        quick: [...QUICK_RATE, '--algos', 'round-robin,wasp']
      }
    ],
    verdict ([off, on]) {
      const offR = ratio(
        figures(off, 'wasp') && figures(off, 'wasp').rps,
        figures(off, 'round-robin') && figures(off, 'round-robin').rps
      )
      const onR = ratio(
        figures(on, 'wasp') && figures(on, 'wasp').rps,
        figures(on, 'round-robin') && figures(on, 'round-robin').rps
      )
      return `wasp/round-robin req/s without backend caches ${f(offR, 2)} (original 1.044), with 4-page ` +
        `caches ${f(onR, 2)}: ` +
        (onR > offR + 0.2
          ? 'specialization pays when backends have caches of their own, not otherwise'
          : 'the gain with caches is not clearly larger than without')
    }
  }
]

/** A Markdown table of the arms of one bench document. */
function table (doc) {
  const lines = [
    '| arm | req/s | mean ms | p50 | p90 | p99 | max | success | failed | share % |',
    '|---|---|---|---|---|---|---|---|---|---|'
  ]
  for (const label of Object.keys(doc.summary)) {
    const x = figures(doc, label)
    lines.push(`| ${label} | ${f(x.rps, 1)} | ${f(x.mean)} | ${f(x.p50, 1)} | ${f(x.p90)} | ${f(x.p99)} | ` +
      `${f(x.max)} | ${pct(x.success)} | ${x.failed} | ${x.share.map((s) => f(s * 100)).join('/')} |`)
  }
  return lines.join('\n')
}

function setup (doc) {
  const s = doc.settings
  const load = s.rate
    ? `open loop at ${s.rate} req/s over ${s.connections} connections`
    : `closed loop, ${s.connections} connections (${s.load})`
  const measured = s.requests ? `${s.requests} requests` : `${s.duration} s`
  return `\`${doc.scenario}\`: ${doc.description}; ${load}; ${s.trials} trial(s) of ${s.warmup} s learning ` +
    `+ ${measured} measured.`
}

/**
 * The Markdown section from the results.
 * @param {{ quick: boolean, results: Array<{ id: string, docs: object[], verdict: string }>, machine: object,
 *   revision: object, startedAt: string }} report
 * @returns {string}
 */
function formatMarkdown (report) {
  const out = [
    `## Replayed by \`npm run bench:seeds\`${report.quick ? ' (quick variant)' : ''}`,
    '',
    `Generated ${report.startedAt} at commit ` +
      `${report.revision.commit ? report.revision.commit.slice(0, 12) : 'unknown'}` +
    `${report.revision.modified.length ? ' (with local changes)' : ''} on ${report.machine.cpus} × ` +
      `${report.machine.cpuModel}, ${report.machine.platform}, Node ${report.machine.node}; ` +
    `load average at the start ${report.machine.loadavg.join(' / ')} (a shared machine is noisy: compare ` +
      'shapes and ratios, not absolute figures).',
    ''
  ]
  for (const r of report.results) {
    const e = EXPERIMENTS.find((x) => x.id === r.id)
    out.push(`### ${e.id}. ${e.title}`, '', `**Original.** ${e.original}`, '')
    for (const doc of r.docs) out.push(`**polistes.** ${setup(doc)}`, '', table(doc), '')
    out.push(`**Comparison.** ${r.verdict}.`, '')
  }
  return out.join('\n')
}

/**
 * Replace (or append) the marked section of a Markdown file.
 * @param {string} text the file
 * @param {string} section the new section
 * @returns {string}
 */
function replaceSection (text, section) {
  const block = `${BEGIN}\n${section.trimEnd()}\n${END}`
  const i = text.indexOf(BEGIN)
  const j = text.indexOf(END)
  if (i === -1 || j === -1 || j < i) return text.trimEnd() + '\n\n' + block + '\n'
  return text.slice(0, i) + block + text.slice(j + END.length)
}

/**
 * Run every experiment and write the JSON and the Markdown section.
 * @param {{ quick?: boolean, resultsDir: string, doc?: string | null, stderr?: NodeJS.WritableStream }} options
 * @returns {Promise<{ report: object, json: string }>}
 */
async function runSeeds ({ quick = false, resultsDir, doc = DOC, stderr = process.stderr }) {
  const sink = { write: () => true }
  const startedAt = new Date()
  const results = []
  for (const e of EXPERIMENTS) {
    const docs = []
    for (const part of e.parts) {
      stderr.write(`seeds: ${e.id} ${part.scenario}${quick ? ' (quick)' : ''}\n`)
      const settings = parseOptions([
        '--scenario',
        part.scenario,
        ...(quick ? part.quick : part.full),
        '--results-dir',
        resultsDir,
        '--quiet'
      ])
      docs.push((await bench(settings, { stdout: sink, stderr: sink })).doc)
    }
    results.push({ id: e.id, title: e.title, original: e.original, docs, verdict: e.verdict(docs) })
  }
  const first = results[0].docs[0]
  const report = {
    quick,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine: first.machine,
    revision: first.revision,
    results
  }
  const stamp = startedAt.toISOString().replace(/\.\d+Z$/, 'Z').replace(/:/g, '-')
  const json = path.join(resultsDir, `${stamp}-seeds${quick ? '-quick' : ''}.json`)
  fs.writeFileSync(json, JSON.stringify(report, null, 2) + '\n')
  if (doc) fs.writeFileSync(doc, replaceSection(fs.readFileSync(doc, 'utf8'), formatMarkdown(report)))
  return { report, json }
}

async function main (argv) {
  let args
  try {
    args = yargs(argv)
      .scriptName('npm run bench:seeds --')
      .usage('$0 [options]\n\nReplay the earlier experiments A-E and write the comparison with the originals.')
      .option('quick', {
        type: 'boolean',
        default: false,
        describe: 'a tiny variant (seconds per arm, few arms), for tests'
      })
      .option('doc', {
        type: 'string',
        default: DOC,
        defaultDescription: 'docs/experiments.md',
        describe: 'Markdown file whose seeds section is regenerated'
      })
      .option('no-doc', { type: 'boolean', describe: 'write the JSON only' })
      .option('from', {
        type: 'string',
        describe: 'no run: regenerate the Markdown section from the JSON of an earlier run (comparison ' +
          'lines recomputed)'
      })
      .option('results-dir', {
        type: 'string',
        default: path.join(__dirname, '..', 'results'),
        defaultDescription: 'bench/results',
        describe: 'where the JSON goes'
      })
      .strict().help().version(false).exitProcess(false)
      .fail((msg, err) => { throw new Error(err ? err.message : msg) })
      .parseSync()
  } catch (err) {
    process.stderr.write(`polistes bench:seeds: ${err.message}\n`)
    process.exitCode = 2
    return
  }
  if (args.help) return
  try {
    if (args.from) {
      const report = JSON.parse(fs.readFileSync(args.from, 'utf8'))
      for (const r of report.results) r.verdict = EXPERIMENTS.find((e) => e.id === r.id).verdict(r.docs)
      fs.writeFileSync(args.doc, replaceSection(fs.readFileSync(args.doc, 'utf8'), formatMarkdown(report)))
      process.stdout.write(`Markdown section regenerated in ${path.relative(process.cwd(), args.doc)} from ` +
        `${args.from}\n`)
      return
    }
    const resultsDir = path.resolve(args['results-dir'])
    fs.mkdirSync(resultsDir, { recursive: true })
    const { json } = await runSeeds({ quick: args.quick, resultsDir, doc: args.noDoc ? null : path.resolve(args.doc) })
    process.stdout.write(`JSON ${path.relative(process.cwd(), json)}\n` +
      `${args.noDoc ? '' : `Markdown section regenerated in ${path.relative(process.cwd(), args.doc)}\n`}`)
  } catch (err) {
    process.stderr.write(`\npolistes bench:seeds: ${err.message}\n`)
    process.exitCode = 1
  }
}

if (require.main === module) main(process.argv.slice(2))

module.exports = { EXPERIMENTS, runSeeds, replaceSection, BEGIN, END }
