#!/usr/bin/env node
'use strict'

/**
 * `npm run bench:engine`: the balancer's CPU-seconds per 10,000 requests for each proxy engine,
 * under the load of issue 11 (the cache scenario): a fleet of 7 backends (4-page caches, 20 ms per
 * miss, 25 pages) in one child process, the balancer in another, and wrk (-t1 -c32) requesting a
 * uniformly random page each time. Every run has a fresh fleet and balancer; wrk first runs an
 * untimed warm-up (`--warmup`, the policy learns and the JIT settles), then the measured window
 * (`--duration`), bracketed by `process.cpuUsage()` readings of the balancer child. Engines
 * alternate within each round (order rotated per round) and the table shows medians over rounds.
 *
 *   npm run bench:engine -- [--engines direct,direct:node,undici,http-proxy,relay,nginx,haproxy] [--algo wasp]
 *       [--rounds 3] [--duration 15] [--warmup 5] [--connections 32] [--cache-pages 4] [--profile DIR] [--json FILE]
 *
 * An arm is an engine, optionally with the front after a colon: `direct` runs on the default
 * front (`fast`: simple requests parsed by polistes, src/front/fast-front.js), `direct:node` on node:http's
 * server for every request. http-proxy always runs on node:http. `@DIR` after an arm runs the
 * balancer of another polistes checkout (e.g. `git worktree add /tmp/base <commit>`), so that two
 * versions of the code alternate in one run: `--engines direct,direct@/tmp/base`.
 *
 * Reference arms, measured in the same rounds under the same load, which are not polistes:
 * - `relay` (`relay:data`, `relay:pipe`): the Node floor, bench/children/relay-child.js: one upstream
 *   connection per client connection (round-robin over the fleet) and bytes relayed both ways, no
 *   HTTP parsing, so the least CPU any Node proxy can spend per request. It cannot route by page,
 *   so its hit rate is low (~cachePages / pages) and more requests wait for a 20 ms miss: fewer
 *   req/s, and at a lower rate each wake-up of the event loop carries fewer requests, so its CPU per
 *   request is no floor under the default load. `--cache-pages 25` lets every backend hold every
 *   page, so that after the warm-up every arm's requests are hits, the backends do the same work
 *   per request whatever the routing, and every arm runs at the rate the two cores allow (not the
 *   cache scenario any more: a load for comparing the cost of relaying at comparable rates).
 * - `nginx` and `haproxy`: the bench's `nginx-uri` and `haproxy-uri` peers (bench/peers/peer-configs.js,
 *   one worker / one thread, run by bench/peers/peers.js), CPU from /proc for the peer's processes.
 *   Any other arm label of bench/peers/peer-configs.js (e.g. `nginx-uri-buffered`) runs too.
 * With a peer arm in the run, a line under the table gives every other arm's median CPU per request
 * over the best peer's (the lowest median), and its req/s over the best peer's req/s.
 *
 * Each round line also shows wrk's own CPU share of the measured window (from the runner's reaped
 * children in /proc/self/stat, Linux): near 100 % of a core, wrk and not the proxy sets req/s.
 *
 * --profile DIR runs every Node proxy (balancer, relay) with `node --cpu-prof` into DIR (summarize a
 * profile with `node bench/reports/profile-summary.js DIR/<file>.cpuprofile`); profiling adds its own CPU,
 * so figures from a profiled run are not comparable with unprofiled ones. Peers are not profiled.
 *
 * CPU-time per request is the figure to compare on a noisy shared machine: req/s moves with
 * whatever else runs, CPU per request much less. Requires wrk on the PATH, and nginx / HAProxy
 * for their arms.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { Child } = require('../children/child')
const metrics = require('../reports/metrics')
const { median } = require('../reports/stats')
const { PeerProcess, findBinary, procCpu, INSTALL } = require('../peers/peers')
const { PEER_ARMS } = require('../peers/peer-configs')
const { ENGINES, DEFAULT_ENGINE } = require('../../src/proxy/proxy-engine')
const { policyNames } = require('../../src/policies')
const { DEFAULTS } = require('../../src/config/defaults')

const HOST = '127.0.0.1'
const FLEET = { count: DEFAULTS.fleet.count, missMs: 20 }
const PAGES = 25

/** wrk script: a uniformly random page per request; prints its summary as one JSON line. */
const WRK_SCRIPT = `
local pages = tonumber(os.getenv("PAGES") or "25")
local reqs = {}
function init (args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  for i = 1, pages do reqs[i] = wrk.format("GET", "/page" .. i .. ".html") end
end
function request ()
  return reqs[math.random(1, pages)]
end
function done (summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"durationUs":%d,"connectErrors":%d,` +
  `"readErrors":%d,"writeErrors":%d,"timeouts":%d,"non2xx":%d,"p50":%d,"p90":%d,"p99":%d,"mean":%f,"max":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
`

const FRONTS = ['fast', 'node']

/** The Node floor (bench/children/relay-child.js) and its ways of moving bytes, after a colon. */
const RELAY = 'relay'
const RELAY_MODES = ['data', 'pipe']

/** Short peer arms: the bench's peers as `npm run bench` configures them. */
const PEER_SHORT = { nginx: 'nginx-uri', haproxy: 'haproxy-uri' }

/** Every arm name `--engines` accepts, besides `@DIR` and fronts after a colon. */
const ARMS = [...ENGINES, RELAY, ...Object.keys(PEER_SHORT)]

/**
 * The peer arm label (bench/peers/peer-configs.js) an arm stands for, or undefined.
 * @param {string} arm e.g. "nginx" -> "nginx-uri", "haproxy-uri-untuned" -> itself
 * @returns {string | undefined}
 */
function peerLabel (arm) {
  if (Object.hasOwn(PEER_SHORT, arm)) return PEER_SHORT[arm]
  if (Object.hasOwn(PEER_ARMS, arm)) return arm
  return undefined
}

/**
 * What an arm runs: a polistes engine (`engine`), the Node floor (`relay`) or a peer (`peer`).
 * @param {string} arm
 * @returns {{ kind: 'engine', engine: string, front?: string, dir?: string } | { kind: 'relay', mode: string } | {
 *   kind: 'peer', label: string }}
 */
function armKind (arm) {
  const label = peerLabel(arm)
  if (label !== undefined) return { kind: 'peer', label }
  const { engine, front, dir } = splitArm(arm)
  if (engine === RELAY && dir === undefined) return { kind: 'relay', mode: front ?? RELAY_MODES[0] }
  return { kind: 'engine', engine, front, dir }
}

/**
 * "direct:node" -> { engine: 'direct', front: 'node', dir: undefined }; "direct" -> { engine: 'direct' };
 * "direct@/tmp/base" -> the direct engine of the polistes checkout in /tmp/base
 */
function splitArm (arm) {
  const at = arm.indexOf('@')
  const dir = at === -1 ? undefined : arm.slice(at + 1)
  const [engine, front] = (at === -1 ? arm : arm.slice(0, at)).split(':')
  return { engine, front, dir }
}

function usage (message) {
  process.stderr.write(`engine-cpu: ${message}\n`)
  process.exit(2)
}

/**
 * @param {string[]} argv
 * @returns {{ engines: string[], algo: string, rounds: number, duration: number, warmup: number, connections: number,
 *   cachePages: number, profile?: string, json?: string }}
 */
function parseArgs (argv) {
  const o = {
    engines: [DEFAULT_ENGINE],
    algo: 'wasp',
    rounds: 3,
    duration: 15,
    warmup: 5,
    connections: 32,
    cachePages: 4
  }
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]
    const value = argv[i + 1]
    if (flag === '--help' || flag === '-h') {
      console.log([
        'npm run bench:engine -- [--engines direct,direct:node,undici,direct@DIR,relay,nginx,haproxy] ' +
          '[--algo wasp] [--rounds 3] [--duration 15] [--warmup 5] [--connections 32] [--cache-pages 4] ' +
          '[--profile DIR] [--json FILE]',
        `  arms: ${ARMS.join(', ')}; ENGINE:FRONT (fronts: ${FRONTS.join(', ')}); ENGINE@DIR (another ` +
          'polistes checkout)',
        `  relay: the Node floor, bytes relayed per connection without parsing (relay:${RELAY_MODES.join(', relay:')})`,
        `  nginx, haproxy: the bench's ${PEER_SHORT.nginx} and ${PEER_SHORT.haproxy} peers; any arm of ` +
          `bench/peers/peer-configs.js: ${Object.keys(PEER_ARMS).join(', ')}`
      ].join('\n'))
      process.exit(0)
    }
    if (!flag.startsWith('--') || value === undefined) usage(`unexpected argument "${flag}"`)
    i++
    const key = flag.slice(2)
    if (key === 'engines') o.engines = value.split(',').map((s) => s.trim()).filter(Boolean)
    else if (key === 'algo') o.algo = value
    else if (key === 'profile' || key === 'json') o[key] = path.resolve(value)
    else if (['rounds', 'duration', 'warmup', 'connections'].includes(key)) {
      const n = Number(value)
      if (!Number.isInteger(n) || n < (key === 'warmup' ? 0 : 1)) {
        usage(`--${key} must be a ${key === 'warmup' ? 'non-negative' : 'positive'} integer, got "${value}"`)
      }
      o[key] = n
    } else if (key === 'cache-pages') {
      const n = Number(value)
      if (!/^\d+$/.test(value) || n > PAGES) {
        usage(`--cache-pages must be an integer from 0 to ${PAGES}, got "${value}"`)
      }
      o.cachePages = n
    } else usage(`unknown option ${flag}`)
  }
  if (o.engines.length === 0) usage('--engines needs at least one engine')
  for (const arm of o.engines) {
    const kind = armKind(arm)
    if (kind.kind === 'peer') continue
    if (kind.kind === 'relay') {
      if (!RELAY_MODES.includes(kind.mode)) {
        usage(`unknown relay mode "${kind.mode}" in "${arm}"; expected one of: ${RELAY_MODES.join(', ')}`)
      }
      continue
    }
    const { engine, front, dir } = kind
    if (!ENGINES.includes(engine)) {
      const peer = peerLabel(engine) !== undefined
      if (peer || engine === RELAY) {
        usage(`"${arm}": ${peer ? 'a peer arm takes no front nor @DIR' : 'the relay takes no @DIR'}`)
      }
      usage(`unknown engine "${engine}"; expected one of: ${ARMS.join(', ')} (or a peer arm: ` +
        `${Object.keys(PEER_ARMS).join(', ')})`)
    }
    if (front !== undefined && !FRONTS.includes(front)) {
      usage(`unknown front "${front}" in "${arm}"; expected one of: ${FRONTS.join(', ')}`)
    }
    if (dir !== undefined && !fs.existsSync(balancerChildIn(dir))) {
      usage(`"${arm}": no polistes checkout in "${dir}" (no bench/children/balancer-child.js, nor ` +
        'bench/balancer-child.js)')
    }
  }
  if (!policyNames().includes(o.algo)) usage(`unknown algorithm "${o.algo}"`)
  return o
}

/** Run wrk once against `url`; resolves with its JSON summary. */
function wrk (url, { seconds, connections, script }) {
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, url], {
      stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PAGES: String(PAGES) }
    })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    child.on('error', (err) => reject(new Error(`cannot run wrk: ${err.message}`)))
    child.on('exit', (code) => {
      const line = /WRK_JSON (\{.*\})/.exec(out)
      if (code !== 0 || !line) return reject(new Error(`wrk exited ${code}: ${out.trim()}`))
      resolve(JSON.parse(line[1]))
    })
  })
}

/**
 * The balancer child of the polistes checkout in `dir`: bench/children/ since the bench has rooms,
 * bench/ before, so that an A/B may run a checkout from either side of the move.
 * @param {string} dir
 * @returns {string}
 */
function balancerChildIn (dir) {
  const rooms = path.resolve(dir, 'bench', 'children', 'balancer-child.js')
  return fs.existsSync(rooms) ? rooms : path.resolve(dir, 'bench', 'balancer-child.js')
}

/**
 * The proxy of an arm, as a process answering `start`, `cpu` and `close` (bench/children/child.js
 * `Child`, or bench/peers/peers.js `PeerProcess`), and what its `start` is sent.
 * @param {string} arm
 * @param {{ algo: string, profile?: string }} o
 * @param {string} tag names the profile file
 * @param {Array<{ id: string, url: string }>} backends
 * @returns {{ proxy: { request: Function, close: Function }, payload: object }}
 */
function proxyOf (arm, o, tag, backends) {
  const kind = armKind(arm)
  if (kind.kind === 'peer') return { proxy: new PeerProcess(kind.label), payload: { backends, host: HOST, workers: 1 } }
  const execArgv = []
  if (o.profile) {
    fs.mkdirSync(o.profile, { recursive: true })
    execArgv.push(
      '--cpu-prof',
      `--cpu-prof-dir=${o.profile}`,
      `--cpu-prof-name=${kind.kind === 'relay' ? 'relay' : 'balancer'}-${arm.replace(/[:@/]/g, '-')}-${tag}.cpuprofile`
    )
  }
  if (kind.kind === 'relay') {
    return {
      proxy: new Child(path.join(__dirname, '..', 'children', 'relay-child.js'), { name: 'relay child', execArgv }),
      payload: { backends, host: HOST, mode: kind.mode }
    }
  }
  const { engine, front, dir } = kind
  return {
    proxy: new Child(
      dir === undefined ? path.join(__dirname, '..', 'children', 'balancer-child.js') : balancerChildIn(dir),
      { name: 'balancer child', execArgv }
    ),
    payload: { backends, algo: o.algo, host: HOST, engine, balancerOptions: front ? { front } : {} }
  }
}

/**
 * CPU time of this process's children that have ended and been waited for (wrk's, once it has
 * exited), µs; NaN where /proc is missing.
 * @returns {{ user: number, system: number }}
 */
function reapedCpu () {
  try {
    return procCpu('self', { children: true })
  } catch {
    return { user: NaN, system: NaN }
  }
}

/**
 * One measured run of one arm on a fresh fleet and proxy.
 * @returns {Promise<object>} figures of the measured window
 */
async function runOnce (arm, o, script, tag) {
  const fleet = new Child(path.join(__dirname, '..', 'children', 'fleet-child.js'), { name: 'fleet child' })
  let proxy = null
  try {
    const { backends } = await fleet.request('start', {
      fleet: { ...FLEET, cachePages: o.cachePages },
      pages: PAGES,
      host: HOST
    })
    const made = proxyOf(arm, o, tag, backends.map((b) => ({ id: b.id, url: b.url })))
    proxy = made.proxy
    const { url } = await proxy.request('start', made.payload)
    if (o.warmup > 0) await wrk(url, { seconds: o.warmup, connections: o.connections, script })
    const [stats0, cpu0, fleetCpu0] = await Promise.all([
      fleet.request('stats'),
      proxy.request('cpu'),
      fleet.request('cpu')
    ])
    const wrkCpu0 = reapedCpu()
    const w = await wrk(url, { seconds: o.duration, connections: o.connections, script })
    const wrkCpu1 = reapedCpu()
    const [stats1, cpu1, fleetCpu1] = await Promise.all([
      fleet.request('stats'),
      proxy.request('cpu'),
      fleet.request('cpu')
    ])
    const seconds = w.durationUs / 1e6
    return {
      engine: arm,
      requests: w.requests,
      rps: w.requests / seconds,
      cpuPer10k: metrics.cpuPer10k(cpu0, cpu1, w.requests),
      userPer10k: (cpu1.user - cpu0.user) / 1e6 * 10000 / w.requests,
      systemPer10k: (cpu1.system - cpu0.system) / 1e6 * 10000 / w.requests,
      balancerCpuShare: metrics.cpuSeconds(cpu0, cpu1) / seconds,
      fleetCpuShare: metrics.cpuSeconds(fleetCpu0, fleetCpu1) / seconds,
      wrkCpuShare: metrics.cpuSeconds(wrkCpu0, wrkCpu1) / seconds,
      hitRate: metrics.hitRate(stats0, stats1),
      p50: w.p50 / 1000,
      p99: w.p99 / 1000,
      errors: w.connectErrors + w.readErrors + w.writeErrors + w.timeouts,
      non2xx: w.non2xx
    }
  } finally {
    if (proxy) await proxy.close()
    await fleet.close()
  }
}

/**
 * Lines comparing every non-peer arm with the best peer of the run: median CPU per request over
 * the lowest peer median, and median req/s over the highest peer median. Empty without a peer arm.
 * @param {string[]} arms in the order of the table
 * @param {Record<string, { cpuPer10k: number, rps: number }>} summary medians by arm
 * @returns {string[]}
 */
function ratioLines (arms, summary) {
  const peers = arms.filter((a) => armKind(a).kind === 'peer')
  const others = arms.filter((a) => armKind(a).kind !== 'peer')
  if (peers.length === 0 || others.length === 0) return []
  const best = (key, better) => peers.reduce((b, a) => (better(summary[a][key], summary[b][key]) ? a : b))
  const cpuBest = best('cpuPer10k', (x, y) => x < y)
  const rpsBest = best('rps', (x, y) => x > y)
  return [
    `CPU per request / best peer (${cpuBest}, ${fmt(summary[cpuBest].cpuPer10k, 3)} CPU-s/10k, medians): ` +
      others.map((a) => `${a} / ${cpuBest} = ${fmt(summary[a].cpuPer10k / summary[cpuBest].cpuPer10k, 2)}x`).join(', '),
    `req/s / best peer (${rpsBest}, ${fmt(summary[rpsBest].rps, 0)} req/s, medians): ` +
      others.map((a) => `${a} / ${rpsBest} = ${fmt(summary[a].rps / summary[rpsBest].rps, 2)}x`).join(', ')
  ]
}

/**
 * The programs the arms need that are not installed, as one message, or null.
 * @param {string[]} arms
 * @returns {string | null}
 */
function missingPrograms (arms) {
  const programs = new Set(['wrk'])
  for (const arm of arms) {
    const kind = armKind(arm)
    if (kind.kind === 'peer') programs.add(PEER_ARMS[kind.label].peer)
  }
  const missing = [...programs].filter((p) => !findBinary(p))
  if (missing.length === 0) return null
  return `not installed: ${missing.join(', ')} (install: ` +
    `${missing.map((p) => INSTALL[p] || `apt-get install ${p}`).join('; ')})`
}

const fmt = (x, d) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a')

async function main () {
  const o = parseArgs(process.argv.slice(2))
  const missing = missingPrograms(o.engines)
  if (missing) throw new Error(missing)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-engine-cpu-'))
  const script = path.join(dir, 'pages.lua')
  fs.writeFileSync(script, WRK_SCRIPT)
  const runs = []
  try {
    console.log(`node ${process.version}, ${os.cpus().length} CPUs; algo ${o.algo}; ${o.rounds} rounds x [` +
      `${o.engines.join(', ')}]; ` +
      `wrk -t1 -c${o.connections}, ${o.warmup} s warm-up + ${o.duration} s measured; fleet ${FLEET.count} x ` +
        `${o.cachePages}-page caches, ${PAGES} pages, ${FLEET.missMs} ms miss`)
    for (let r = 0; r < o.rounds; r++) {
      const k = r % o.engines.length
      const order = o.engines.slice(k).concat(o.engines.slice(0, k))
      for (const engine of order) {
        const run = await runOnce(engine, o, script, `r${r + 1}-${process.pid}`)
        runs.push({ round: r + 1, ...run })
        console.log(`  round ${r + 1} ${engine.padEnd(14)} ${fmt(run.cpuPer10k, 3)} CPU-s/10k (user ` +
          `${fmt(run.userPer10k, 3)} sys ${fmt(run.systemPer10k, 3)})  ${fmt(run.rps, 0)} req/s  ` +
          `hit ${fmt(run.hitRate, 3)}  p50 ${fmt(run.p50, 2)} ms  p99 ${fmt(run.p99, 2)} ms  balancer CPU ` +
            `${fmt(run.balancerCpuShare * 100, 0)} %  wrk CPU ${fmt(run.wrkCpuShare * 100, 0)} %  errors ` +
            `${run.errors + run.non2xx}`)
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  console.log('\n| engine | runs | CPU-s / 10k req (median) | user | system | req/s (median) | hit rate | ' +
    'p50 ms | p99 ms | balancer CPU | wrk CPU | errors |')
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|')
  const summary = {}
  for (const engine of o.engines) {
    const mine = runs.filter((x) => x.engine === engine)
    const m = (k) => median(mine.map((x) => x[k]))
    summary[engine] = {
      runs: mine.length,
      cpuPer10k: m('cpuPer10k'),
      userPer10k: m('userPer10k'),
      systemPer10k: m('systemPer10k'),
      rps: m('rps'),
      hitRate: m('hitRate'),
      p50: m('p50'),
      p99: m('p99'),
      balancerCpuShare: m('balancerCpuShare'),
      wrkCpuShare: m('wrkCpuShare')
    }
    const s = summary[engine]
    console.log(`| ${engine} | ${s.runs} | ${fmt(s.cpuPer10k, 3)} | ${fmt(s.userPer10k, 3)} | ` +
      `${fmt(s.systemPer10k, 3)} | ${fmt(s.rps, 0)} | ${fmt(s.hitRate, 3)} | ${fmt(s.p50, 2)} | ` +
      `${fmt(s.p99, 2)} | ${fmt(s.balancerCpuShare * 100, 0)} % | ${fmt(s.wrkCpuShare * 100, 0)} % | ` +
      `${mine.reduce((a, x) => a + x.errors + x.non2xx, 0)} |`)
  }
  const ratios = ratioLines(o.engines, summary)
  if (ratios.length > 0) console.log(`\n${ratios.join('\n')}`)
  if (o.json) fs.writeFileSync(o.json, JSON.stringify({ options: o, node: process.version, runs, summary }, null, 2))
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`engine-cpu: ${err.message}\n`)
    process.exit(1)
  })
}

module.exports = { parseArgs, armKind, ratioLines, ARMS }
