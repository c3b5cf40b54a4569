#!/usr/bin/env node
'use strict'

/**
 * `npm run probe:peers`: send the protocol probes of bench/peers/probes.js to polistes (each
 * engine) and to nginx and HAProxy (when installed), each in front of its own recording upstream,
 * and print what the client got and what reached the upstream; with --markdown, the tables of
 * docs/proxy-behaviour.md ("Beside nginx and HAProxy: the probes"). Exit status 1 where polistes is
 * less strict than a peer on a probe (bench/peers/probe-verdict.js strictnessViolations), 2 on bad
 * options.
 *
 *   node bench/peers/probe-peers.js [--probes a,b] [--engines direct,undici] [--fronts fast,node]
 *     [--peers nginx,haproxy] [--timeout 1000] [--markdown] [--configs] [--json]
 */

const { selectProbes } = require('./probes')
const { ENGINES, PEER_ARMS, makeTargets, runMatrix } = require('./probe-run')
const { describeOutcome, isResponseProbe, strictnessViolations } = require('./probe-verdict')

const USAGE = 'usage: node bench/peers/probe-peers.js [--probes a,b] [--engines ' +
  'direct,node-http,undici,http-proxy] [--fronts fast,node] [--peers nginx,haproxy] [--timeout ms] ' +
  '[--markdown] [--configs] [--json]'

/**
 * Parse the command line (pure).
 * @param {string[]} argv
 * @returns {{ probes: string[], engines: string[], fronts: string[], peers: string[], timeoutMs: number, markdown:
 *   boolean, configs: boolean, json: boolean, help: boolean }}
 * @throws {Error} on an unknown option or value
 */
function parseArgs (argv) {
  const list = (v) => String(v).split(',').map((s) => s.trim()).filter(Boolean)
  const o = {
    probes: [],
    engines: [...ENGINES],
    fronts: ['fast'],
    peers: Object.keys(PEER_ARMS),
    timeoutMs: 1000,
    markdown: false,
    configs: false,
    json: false,
    help: false
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`)
      return argv[++i]
    }
    if (a === '--probes') o.probes = list(value())
    else if (a === '--engines') o.engines = list(value())
    else if (a === '--fronts') o.fronts = list(value())
    else if (a === '--peers') o.peers = value() === 'none' ? [] : list(argv[i])
    else if (a === '--timeout') o.timeoutMs = Number(value())
    else if (a === '--markdown') o.markdown = true
    else if (a === '--configs') o.configs = true
    else if (a === '--json') o.json = true
    else if (a === '--help' || a === '-h') o.help = true
    else throw new Error(`unknown option ${a}`)
  }
  for (const e of o.engines) {
    if (!ENGINES.includes(e)) throw new Error(`unknown engine "${e}"; expected ${ENGINES.join(', ')}`)
  }
  for (const f of o.fronts) {
    if (!['fast', 'node'].includes(f)) throw new Error(`unknown front "${f}"; expected fast, node`)
  }
  if (!Number.isInteger(o.timeoutMs) || o.timeoutMs < 100 || o.timeoutMs > 30000) {
    throw new Error('--timeout must be 100..30000 ms')
  }
  selectProbes(o.probes) // throws on an unknown name
  return o
}

/** A markdown table cell: pipes escaped, and angle brackets, which would render as HTML tags. */
const esc = (s) => String(s).replace(/\|/g, '\\|').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/**
 * The tables (pure): one row per request probe, one column per target; the headers the upstream
 * saw; one row per response probe.
 * @param {object[]} probes
 * @param {object[]} results from runMatrix
 * @param {{ markdown?: boolean }} [options]
 * @returns {string}
 */
function formatTables (probes, results, { markdown = false } = {}) {
  const names = results.map((r) => r.name)
  const rows = []
  const responseRows = []
  const shownRows = []
  for (const probe of probes) {
    const cells = results.map((r) => (r.outcomes[probe.name] ? describeOutcome(probe, r.outcomes[probe.name]) : null))
    ;(isResponseProbe(probe) ? responseRows : rows).push([probe.name, ...cells.map((c) => (c ? c.cell : 'not run'))])
    for (const h of probe.show || []) {
      shownRows.push([
        `${probe.name}: ${h}`,
        ...cells.map((c) => (c ? (c.shown[h] === undefined ? '(none)' : c.shown[h]) : ''))
      ])
    }
  }
  const table = (head, body) => {
    if (markdown) {
      return [
        `| ${head.map(esc).join(' | ')} |`,
        `|${head.map(() => '---').join('|')}|`,
        ...body.map((row) => `| ${row.map(esc).join(' | ')} |`)
      ].join('\n')
    }
    const widths = head.map((_, i) => Math.max(...[head, ...body].map((row) => String(row[i]).length)))
    const line = (row) => row.map((c, i) => String(c).padEnd(widths[i])).join('  ').trimEnd()
    return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n')
  }
  const out = []
  if (rows.length) out.push(table(['probe', ...names], rows))
  if (shownRows.length) out.push(table(['header at the upstream', ...names], shownRows))
  if (responseRows.length) out.push(table(['response probe', ...names], responseRows))
  return out.join('\n\n')
}

/**
 * Violations per polistes target and probe (pure).
 * @returns {Array<{ target: string, probe: string, violations: string[] }>}
 */
function allViolations (probes, results) {
  const peers = results.filter((r) => !r.name.startsWith('polistes'))
  const out = []
  for (const r of results.filter((x) => x.name.startsWith('polistes'))) {
    for (const probe of probes) {
      if (!r.outcomes[probe.name]) continue
      const theirs = Object.fromEntries(
        peers.filter((p) => p.outcomes[probe.name]).map((p) => [p.name, p.outcomes[probe.name]])
      )
      const violations = strictnessViolations(probe, r.outcomes[probe.name], theirs)
      if (violations.length) out.push({ target: r.name, probe: probe.name, violations })
    }
  }
  return out
}

async function main (argv) {
  let options
  try {
    options = parseArgs(argv)
  } catch (err) {
    console.error(`probe-peers: ${err.message}\n${USAGE}`)
    return 2
  }
  if (options.help) {
    console.log(USAGE)
    return 0
  }
  const probes = selectProbes(options.probes)
  const { targets, missing } = makeTargets(options)
  for (const peer of missing) {
    console.error(`probe-peers: ${peer} not installed (apt-get install ` +
      `${peer === 'nginx' ? 'nginx-light' : peer}); left out`)
  }
  const results = await runMatrix({ probes, targets, timeoutMs: options.timeoutMs })
  let failed = false
  for (const r of results) {
    if (r.error) { console.error(`probe-peers: ${r.name}: ${r.error}`); failed = true }
  }
  if (options.json) {
    console.log(
      JSON.stringify(
        results.map((r) => ({
          ...r,
          outcomes: Object.fromEntries(
            Object.entries(r.outcomes).map(([k, o]) => [
              k,
              { ...o, client: { ...o.client, raw: o.client.raw.toString('latin1') } }
            ])
          )
        })),
        null,
        2
      )
    )
  } else {
    console.log(
      results.map((r) => `${r.name}: ` +
        `${r.version}${r.restarts ? ` (restarted ${r.restarts} times after a crash)` : ''}`).join('\n')
    )
    console.log('')
    console.log(formatTables(probes, results, options))
    if (options.configs) {
      for (const r of results.filter((x) => !x.name.startsWith('polistes'))) {
        console.log(`\n${r.name} (${r.version}):\n${r.config}`)
      }
      for (const r of results.filter((x) => x.name.startsWith('polistes'))) console.log(`\n${r.name}: ${r.config}`)
    }
  }
  const violations = allViolations(probes, results)
  if (violations.length) {
    console.error('\npolistes is less strict than a peer, or its forward is wrong:')
    for (const v of violations) console.error(`  ${v.target} ${v.probe}: ${v.violations.join('; ')}`)
  }
  return failed || violations.length ? 1 : 0
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code }, (err) => {
    console.error(`probe-peers: ${err.message}`)
    process.exitCode = 1
  })
}

module.exports = { parseArgs, formatTables }
