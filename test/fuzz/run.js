#!/usr/bin/env node
'use strict'

/**
 * The differential fuzzer's command (issue 25):
 *
 *   npm run fuzz -- --cases N [--seed S] [--engine E] [--front F] [--direction request|response]
 *                   [--jobs J] [--batch B] [--window W] [--exclude m1,m2] [--case I]
 *
 * The work is cut into slices of cases, each run by a child process (J at a time) that assembles
 * an upstream and polistes in itself and runs its cases in batches (harness.js); the child is
 * what may crash, so a crash is seen here with the slice and batch it happened in. On the first
 * failure the case is found (a crash: by halving the batch), run again alone, made as small as it
 * still fails (fewer connections, fewer requests), and printed with the seed, the case number and
 * its bytes; the exit code is then 1. Without failures it prints the cases per second.
 */

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startHarness } = require('./harness')
const { requestCase, connectionBytes, MUTATION_NAMES: REQUEST_MUTATIONS } = require('./requests')
const { responseCase, MUTATION_NAMES: RESPONSE_MUTATIONS } = require('./responses')

/** A child's exit code when an invariant failed (an uncaught exception exits with 1, a crash). */
const FAILED = 3

const ENGINES = ['direct', 'node-http', 'undici', 'http-proxy']
const FRONTS = ['fast', 'node']
const DIRECTIONS = ['request', 'response']

const USAGE = `usage: npm run fuzz -- --cases N [--seed S] [--engine ${ENGINES.join('|')}|all] [--front fast|node|all]
         [--direction request|response|all] [--jobs J] [--batch B] [--window W] [--exclude m1,m2] [--case I] [--keep-going]
  --cases N      cases in all (default 10000), spread over every engine/front/direction asked for
  --seed S       the run's seed (default: random, printed)
  --case I       run case I of the seed alone (needs one engine, front and direction)
  --jobs J       child processes at a time (default: the number of CPUs)
  --batch B      cases per batch, after which every invariant and the leak check run (default 1000)
  --window W     cases in flight at once (default 32)
  --keep-going   do not stop at the first failing batch: count every failure kind, then report
                 the first case of each (a campaign, or a throughput measurement with known failures)
  --exclude      mutation names not to generate, e.g. a class already known to fail
                 request: ${REQUEST_MUTATIONS.join(', ')}
                 response: ${RESPONSE_MUTATIONS.join(', ')}`

/**
 * Parse the command line.
 * @param {string[]} argv
 * @returns {object}
 */
function parseArgs (argv) {
  const o = { keepGoing: false, cases: 10000, seed: null, engine: 'all', front: 'all', direction: 'all', jobs: os.availableParallelism(), batch: 1000, window: 32, exclude: [], case: null, child: null, probe: null }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`)
      return argv[++i]
    }
    const int = (name) => {
      const v = Number(value())
      if (!Number.isInteger(v) || v < 0) throw new Error(`${name} must be a whole number >= 0`)
      return v
    }
    if (a === '--cases') o.cases = int('--cases')
    else if (a === '--seed') o.seed = int('--seed')
    else if (a === '--case') o.case = int('--case')
    else if (a === '--jobs') o.jobs = Math.max(1, int('--jobs'))
    else if (a === '--batch') o.batch = Math.max(1, int('--batch'))
    else if (a === '--window') o.window = Math.max(1, int('--window'))
    else if (a === '--engine') o.engine = value()
    else if (a === '--front') o.front = value()
    else if (a === '--direction') o.direction = value()
    else if (a === '--exclude') o.exclude = value().split(',').filter(Boolean)
    else if (a === '--child') o.child = value() // internal: a slice, as JSON
    else if (a === '--probe') o.probe = value() // internal: a file holding one case
    else if (a === '--keep-going') o.keepGoing = true
    else if (a === '--help' || a === '-h') o.help = true
    else throw new Error(`unknown option ${a}`)
  }
  const check = (name, v, allowed) => {
    if (v !== 'all' && !allowed.includes(v)) throw new Error(`--${name} must be one of ${allowed.join(', ')} or all, got ${v}`)
  }
  check('engine', o.engine, ENGINES)
  check('front', o.front, FRONTS)
  check('direction', o.direction, DIRECTIONS)
  const known = [...REQUEST_MUTATIONS, ...RESPONSE_MUTATIONS]
  for (const m of o.exclude) if (!known.includes(m)) throw new Error(`--exclude: unknown mutation ${m}`)
  return o
}

/** The case of a config. */
function makeCase (config, seed, index, exclude) {
  return config.direction === 'request' ? requestCase(seed, index, { exclude }) : responseCase(seed, index, { exclude })
}

/** Buffers survive JSON as { type: 'Buffer', data } (Buffer#toJSON); this makes them Buffers again. */
function revive (key, value) {
  return value !== null && typeof value === 'object' && value.type === 'Buffer' && Array.isArray(value.data) ? Buffer.from(value.data) : value
}

// --- the child: runs one slice, or probes one case ---

async function runChild (slice) {
  const { config, seed, start, count, batch, window, exclude } = slice
  const harness = await startHarness(config)
  const t0 = performance.now()
  let failed = false
  for (let at = start; at < start + count; at += batch) {
    const n = Math.min(batch, start + count - at)
    process.stdout.write(JSON.stringify({ type: 'batch', start: at, count: n }) + '\n')
    const cases = Array.from({ length: n }, (_, i) => makeCase(config, seed, at + i, exclude))
    const failures = await harness.runBatch(cases, { window })
    if (failures.length > 0) {
      process.stdout.write(JSON.stringify({ type: 'fail', start: at, count: n, failures }) + '\n')
      failed = true
      if (!slice.keepGoing) break
    }
  }
  const { cases, requests } = harness.counts()
  process.stdout.write(JSON.stringify({ type: 'done', cases, requests, ms: performance.now() - t0 }) + '\n')
  await harness.close()
  process.exit(failed ? FAILED : 0)
}

async function runProbe (file) {
  const { config, c } = JSON.parse(fs.readFileSync(file, 'utf8'), revive)
  const harness = await startHarness(config)
  const failures = await harness.runBatch([c], { window: 1 })
  process.stdout.write(JSON.stringify({ type: 'probe', failures }) + '\n')
  await harness.close()
  process.exit(failures.length > 0 ? FAILED : 0)
}

// --- the parent ---

/**
 * Run this script as a child with `args`; resolve with its exit and what it printed.
 * @returns {Promise<{ code: number | null, signal: string | null, messages: object[], stderr: string }>}
 */
function child (args, onMessage = () => {}) {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [__filename, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    const messages = []
    let out = ''
    let stderr = ''
    proc.stdout.on('data', (d) => {
      out += d
      const lines = out.split('\n')
      out = lines.pop()
      for (const line of lines) {
        if (!line.startsWith('{')) continue
        const m = JSON.parse(line)
        messages.push(m)
        onMessage(m)
      }
    })
    proc.stderr.on('data', (d) => { stderr += d })
    proc.on('close', (code, signal) => resolve({ code, signal, messages, stderr, pid: proc.pid }))
    children.add(proc)
    proc.on('exit', () => children.delete(proc))
  })
}
const children = new Set()

let tmp = null
let probes = 0

/**
 * Run one case alone in a new child.
 * @returns {Promise<{ crashed: boolean, kinds: string[], failures: object[], stderr: string }>}
 */
async function probe (config, c) {
  if (tmp === null) tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-fuzz-'))
  const file = path.join(tmp, `case-${probes++}.json`)
  fs.writeFileSync(file, JSON.stringify({ config, c }))
  const r = await child(['--probe', file])
  fs.rmSync(file, { force: true })
  const m = r.messages.find((x) => x.type === 'probe')
  const crashed = r.code !== 0 && r.code !== FAILED
  const failures = m ? m.failures : []
  return { crashed, kinds: failures.map((f) => f.kind), failures, stderr: r.stderr }
}

/** How many failure kinds of one batch are each minimized and shown. */
const MAX_KINDS = 4
/** Failure kinds, the worst first (a report minimizes those first). */
const SEVERITY = ['crash', 'upstream-request-not-taken-by-front', 'answer-to-another-client', 'answer-to-another-request', 'poison-delivered',
  'upstream-could-not-parse', 'body-differs', 'broken-answer-looks-whole', 'forwarded-twice', 'forwarded-host-count', 'chunked-to-http10',
  'client-got-bad-bytes', 'answer-out-of-order', 'good-answer-changed', 'good-answer-lost']
function severity (kind) {
  const i = SEVERITY.indexOf(kind)
  return i === -1 ? SEVERITY.length : i
}

/** Whether a probe shows the failure we look for. */
function matches (result, want) {
  return want.crash ? result.crashed : result.kinds.includes(want.kind)
}

/**
 * Make the case smaller while it still fails the same way: drop connections, then requests
 * (the response direction's answers go with their requests), then split points.
 */
async function minimize (config, c, want) {
  let best = c
  const tryCase = async (candidate) => {
    if (matches(await probe(config, candidate), want) || matches(await probe(config, candidate), want)) {
      best = candidate
      return true
    }
    return false
  }
  for (let i = best.connections.length - 1; i >= 0 && best.connections.length > 1; i--) {
    await tryCase({ ...best, connections: best.connections.filter((_, j) => j !== i) })
  }
  for (let ci = 0; ci < best.connections.length; ci++) {
    for (let k = best.connections[ci].requests.length - 1; k >= 0 && best.connections[ci].requests.length > 1; k--) {
      const conn = best.connections[ci]
      const smaller = { ...conn, requests: conn.requests.filter((_, j) => j !== k), splits: [], clean: conn.requests.filter((_, j) => j !== k).every((q) => q.clean !== false) }
      await tryCase({ ...best, connections: best.connections.map((x, j) => (j === ci ? smaller : x)) })
    }
    if (best.connections[ci].splits.length > 0) {
      await tryCase({ ...best, connections: best.connections.map((x, j) => (j === ci ? { ...x, splits: [] } : x)) })
    }
  }
  return best
}

/** The case's bytes, for the report. */
function describeCase (config, c) {
  const lines = []
  for (const conn of c.connections) {
    lines.push(`  client connection ${conn.index}${conn.splits && conn.splits.length ? ` (written in pieces cut at ${conn.splits.join(', ')})` : ''}:`)
    lines.push(`    ${JSON.stringify(connectionBytes(conn).toString('latin1'))}`)
    if (config.direction === 'response') {
      for (const q of conn.requests) {
        const r = q.response
        lines.push(`    upstream answer to ${q.id} [${r.mutations.join(', ') || 'plain'}${r.close ? `; then ${r.close}` : ''}]:`)
        lines.push(`      ${JSON.stringify(r.writes.map((w) => (w === 'tick' ? '<pause>' : w.toString('latin1'))).join(''))}`)
      }
    } else {
      for (const q of conn.requests) if (!q.clean) lines.push(`    ${q.id}: ${q.mutations.join(', ')}`)
    }
  }
  return lines.join('\n')
}

/** Handle a slice that failed: find the case, minimize it, print the report. */
async function report (o, seed, slice, result) {
  const { config } = slice
  const name = `engine ${config.engine}, front ${config.front}, direction ${config.direction}`
  const failMsg = result.messages.find((m) => m.type === 'fail')
  const lastBatch = [...result.messages].reverse().find((m) => m.type === 'batch')
  const excludeArg = o.exclude.length ? ` --exclude ${o.exclude.join(',')}` : ''
  /** @type {Array<{ want: object, index: number }>} */
  let todo = []
  if (failMsg) {
    const kinds = [...new Set(failMsg.failures.map((f) => f.kind))].sort((a, b) => severity(a) - severity(b))
    console.error(`\nFAIL (${name}), seed ${seed}, cases ${failMsg.start}..${failMsg.start + failMsg.count - 1}: ${failMsg.failures.length} failure(s); kinds: ${kinds.join(', ')}`)
    for (const kind of kinds) {
      const first = failMsg.failures.find((f) => f.kind === kind && f.case !== undefined) || failMsg.failures.find((f) => f.kind === kind)
      console.error(`  - [${kind}] case ${first.case ?? '?'}: ${first.detail}`)
    }
    // one case of each kind (the worst first), each minimized
    for (const kind of kinds.slice(0, MAX_KINDS)) {
      const first = failMsg.failures.find((f) => f.kind === kind && f.case !== undefined)
      if (first) todo.push({ want: { kind }, index: first.case })
    }
  } else {
    console.error(`\nCRASH (${name}), seed ${seed}: the balancer's process exited (${result.signal || result.code}) during cases ${lastBatch ? `${lastBatch.start}..${lastBatch.start + lastBatch.count - 1}` : '?'}`)
    console.error(result.stderr.split('\n').filter(Boolean).slice(0, 12).map((l) => `  ${l}`).join('\n'))
    // halve the batch until one case crashes alone
    let lo = lastBatch ? lastBatch.start : slice.start
    let hi = lastBatch ? lastBatch.start + lastBatch.count : slice.start + slice.count
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2)
      const r = await child(['--child', JSON.stringify({ ...slice, start: lo, count: mid - lo, batch: mid - lo })])
      if (r.code !== 0 && r.code !== FAILED) hi = mid
      else {
        const r2 = await child(['--child', JSON.stringify({ ...slice, start: mid, count: hi - mid, batch: hi - mid })])
        if (r2.code !== 0 && r2.code !== FAILED) lo = mid
        else break
      }
    }
    todo = hi - lo === 1 ? [{ want: { crash: true }, index: lo }] : []
  }
  for (const { want, index } of todo) {
    const c = makeCase(config, seed, index, o.exclude)
    if (!matches(await probe(config, c), want)) {
      console.error(`\ncase ${index} does not fail alone (the failure needs the other cases of its batch around it); its bytes:\n${describeCase(config, c)}`)
      continue
    }
    const small = await minimize(config, c, want)
    const again = await probe(config, small)
    console.error(`\nminimal case (seed ${seed}, case ${index}, ${name}): ${want.crash ? 'crashes the balancer' : want.kind}`)
    console.error(describeCase(config, small))
    if (again.failures.length) for (const f of again.failures.slice(0, 3)) console.error(`  -> [${f.kind}] ${f.detail}`)
    if (again.crashed) console.error(again.stderr.split('\n').filter(Boolean).slice(0, 6).map((l) => `  -> ${l}`).join('\n'))
    console.error(`replay: npm run fuzz -- --seed ${seed} --case ${index} --engine ${config.engine} --front ${config.front} --direction ${config.direction}${excludeArg}`)
  }
}

async function main () {
  let o
  try {
    o = parseArgs(process.argv.slice(2))
  } catch (err) {
    console.error(`${err.message}\n${USAGE}`)
    process.exit(2)
  }
  if (o.help) return console.log(USAGE)
  if (o.child) return runChild(JSON.parse(o.child))
  if (o.probe) return runProbe(o.probe)
  const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31)
  const pickAll = (v, all) => (v === 'all' ? all : [v])
  const configs = []
  for (const direction of pickAll(o.direction, DIRECTIONS)) {
    for (const engine of pickAll(o.engine, ENGINES)) {
      for (const front of pickAll(o.front, FRONTS)) configs.push({ engine, front, direction })
    }
  }
  if (o.case !== null) {
    if (configs.length !== 1) {
      console.error('--case needs one --engine, --front and --direction')
      process.exit(2)
    }
    const slice = { config: configs[0], seed, start: o.case, count: 1, batch: 1, window: 1, exclude: o.exclude }
    const r = await child(['--child', JSON.stringify(slice)])
    if (r.code === 0) return console.log(`case ${o.case} of seed ${seed} passes`)
    await report(o, seed, slice, r)
    if (tmp !== null) fs.rmSync(tmp, { recursive: true, force: true })
    process.exit(1)
  }
  console.log(`fuzz: seed ${seed}, ${o.cases} cases over ${configs.length} configuration(s), ${o.jobs} job(s)`)
  // slices: consecutive case numbers, each slice for one config (round robin)
  const sliceSize = Math.max(o.batch, Math.min(20 * o.batch, Math.ceil(o.cases / configs.length / o.jobs)))
  const slices = []
  for (let start = 0, k = 0; start < o.cases; start += sliceSize, k++) {
    slices.push({ config: configs[k % configs.length], seed, start, count: Math.min(sliceSize, o.cases - start), batch: o.batch, window: o.window, exclude: o.exclude })
  }
  const t0 = performance.now()
  let done = 0
  let requests = 0
  let failed = null
  /** with --keep-going: failure kind -> { count, slice, result } of its first failing slice */
  const kinds = new Map()
  const work = async () => {
    while (slices.length > 0 && failed === null) {
      const slice = slices.shift()
      const r = await child(['--child', JSON.stringify({ ...slice, keepGoing: o.keepGoing })])
      if (failed !== null) return
      const m = r.messages.find((x) => x.type === 'done')
      if (m) {
        done += m.cases
        requests += m.requests
      }
      for (const f of r.messages.filter((x) => x.type === 'fail')) {
        for (const failure of f.failures) {
          const k = kinds.get(failure.kind)
          if (k) k.count++
          else kinds.set(failure.kind, { count: 1, slice, result: { ...r, messages: [f] } })
        }
      }
      if (o.keepGoing && r.code !== 0 && r.code !== FAILED) {
        // a crash ends its slice; the campaign goes on and reports it at the end
        const k = kinds.get('crash')
        if (k) k.count++
        else kinds.set('crash', { count: 1, slice, result: r })
      }
      if (r.code === 0 || o.keepGoing) {
        const s = (performance.now() - t0) / 1000
        console.log(`  ${done}/${o.cases} cases (${requests} requests), ${(done / s).toFixed(0)} cases/s${kinds.size ? `; failures so far: ${[...kinds].map(([k, v]) => `${k} ${v.count}`).join(', ')}` : ''}`)
        continue
      }
      failed = { slice, r }
      for (const p of children) p.kill('SIGKILL') // only the children this run started
    }
  }
  await Promise.all(Array.from({ length: o.jobs }, work))
  const s = (performance.now() - t0) / 1000
  console.log(`${done} cases, ${requests} client requests in ${s.toFixed(1)} s: ${(done / s).toFixed(0)} cases/s, ${(requests / s).toFixed(0)} requests/s (seed ${seed})`)
  if (failed === null && kinds.size > 0) {
    console.error(`\nfailure kinds: ${[...kinds].map(([k, v]) => `${k} ${v.count}`).join(', ')}`)
    // the first failing batch of each kind (the worst kinds first), each reported once
    const reported = new Set()
    for (const [, v] of [...kinds].sort((a, b) => severity(a[0]) - severity(b[0]))) {
      const key = `${JSON.stringify(v.slice.config)} ${v.slice.start} ${v.result.messages.map((m) => m.start).join()}`
      if (reported.has(key)) continue
      reported.add(key)
      await report(o, seed, v.slice, v.result)
    }
  }
  if (failed) await report(o, seed, failed.slice, failed.r)
  if (tmp !== null) fs.rmSync(tmp, { recursive: true, force: true })
  if (failed || kinds.size > 0) process.exit(1)
  console.log('ok')
}

if (require.main === module) main()

module.exports = { parseArgs }
