#!/usr/bin/env node
'use strict'

/**
 * `npm run bench:memory`: what many distinct URLs cost in memory. Two sections:
 *
 * - keys (the default): a real balancer (wasp, telemetry, metrics) in front of 7 upstreams on
 *   loopback, all in this process; a child process sends requests for distinct paths (`/k1`, `/k2`,
 *   ...) over keep-alive connections. The heap is read after a full garbage collection once the
 *   first `--baseline` keys have been served and again after `--keys`, so the difference is what the
 *   extra keys left behind: wasp's key table (capped by its `maxKeys`), the dashboard's page rows
 *   (capped by telemetry's `maxPages`), and anything that was not capped.
 *
 *     npm run bench:memory -- [--keys 100000] [--baseline 1000] [--max-keys 10000]
 *
 * - `--process`: the real `npm start` (bin/polistes.js with its embedded fleet of 7 page backends,
 *   default options but ports chosen by the system) out of process; a load generator in another
 *   process (bench/load/distinct-urls-child.js) sends `--urls` distinct URLs of about each
 *   `--url-bytes` length (three in four 404s, one in four an existing page with a distinct query
 *   string), and the resident set (RSS, from /proc; Linux) of the polistes process and of its child
 *   processes, if any, is read before the load and after every `--step` URLs, and sampled during
 *   each step for its peak. One fresh polistes per URL length.
 *
 *     npm run bench:memory -- --process [--urls 100000] [--step 20000] [--url-bytes 4096,32] [--connections 32]
 */

const http = require('node:http')
const { spawn } = require('node:child_process')
const { startBalancer } = require('../../src/balancer')
const { runProcessSection } = require('./memory-process')
const { DEFAULTS } = require('../../src/config/defaults')

function usage (message) {
  process.stderr.write(`bench:memory: ${message}\n`)
  process.exit(2)
}

const KEYS_USAGE = 'npm run bench:memory -- [--keys 100000] [--baseline 1000] [--max-keys 10000]'
const PROCESS_USAGE = 'npm run bench:memory -- --process [--urls 100000] [--step 20000] [--url-bytes ' +
  '4096,32] [--connections 32]'

/** Integer options of each section: flag -> [name, min, max]. */
const KEYS_FLAGS = {
  '--keys': ['keys', 1, 10_000_000],
  '--baseline': ['baseline', 1, 10_000_000],
  '--max-keys': ['maxKeys', 1, 10_000_000]
}
const PROCESS_FLAGS = {
  '--urls': ['urls', 1, 10_000_000],
  '--step': ['step', 1, 10_000_000],
  '--connections': ['connections', 1, 1024]
}

/**
 * @param {string[]} argv
 * @returns {{ mode: 'keys', keys: number, baseline: number, maxKeys: number }
 *   | { mode: 'process', urls: number, step: number, urlBytes: number[], connections: number }}
 */
function parseArgs (argv) {
  if (argv.includes('--help')) {
    console.log(`${KEYS_USAGE}\n${PROCESS_USAGE}`)
    process.exit(0)
  }
  const processMode = argv.includes('--process')
  const o = processMode
    ? { mode: 'process', urls: 100000, step: 20000, urlBytes: [4096, 32], connections: 32 }
    : { mode: 'keys', keys: 100000, baseline: 1000, maxKeys: 10000 }
  const flags = processMode ? PROCESS_FLAGS : KEYS_FLAGS
  const rest = argv.filter((a) => a !== '--process')
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i]
    const value = rest[i + 1]
    if (processMode && flag === '--url-bytes') {
      const list = String(value).split(',').map(Number)
      if (value === undefined || list.some((n) => !Number.isInteger(n) || n < 8 || n > 8192)) {
        usage(`--url-bytes must be a comma list of integers from 8 to 8192, got "${value}"`)
      }
      o.urlBytes = list
      continue
    }
    if (!flags[flag]) usage(`unknown option "${flag}"${processMode ? ' with --process' : ''}`)
    const [name, min, max] = flags[flag]
    const n = Number(value)
    if (!Number.isInteger(n) || n < min || n > max) {
      usage(`${flag} must be an integer from ${min.toLocaleString('en')} to ${max.toLocaleString('en')}, ` +
        `got "${value}"`)
    }
    o[name] = n
  }
  if (o.mode === 'keys' && o.baseline >= o.keys) usage('--baseline must be below --keys')
  if (o.mode === 'process' && o.step > o.urls) usage('--step must not exceed --urls')
  return o
}

/** Requests for /k{from}..../k{to - 1} from a child process, 16 keep-alive connections. */
function load (url, from, to) {
  const script = `
    const http = require('node:http')
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
    let next = ${from}
    let open = 0
    function one () {
      if (next >= ${to}) { if (open === 0) process.exit(0); return }
      const k = next++
      open++
      http.get(${JSON.stringify(url)} + '/k' + k, { agent }, (res) => {
        res.resume()
        res.on('end', () => { open--; one() })
      }).on('error', (err) => { console.error(err.message); process.exit(1) })
    }
    for (let i = 0; i < 16; i++) one()
  `
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'inherit', 'inherit'] })
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`load child exited ${code}`))))
  })
}

function heapAfterGc () {
  global.gc()
  global.gc()
  return process.memoryUsage().heapUsed
}

async function main () {
  const o = parseArgs(process.argv.slice(2))
  if (o.mode === 'process') return runProcessSection(o)
  if (typeof global.gc !== 'function') usage('run it with node --expose-gc (npm run bench:memory does)')
  const upstreams = []
  for (let i = 0; i < DEFAULTS.fleet.count; i++) {
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 2, 'X-Cache': 'HIT' })
      res.end('ok')
    })
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
    upstreams.push(server)
  }
  const lb = await startBalancer({
    backends: upstreams.map((s) => `http://127.0.0.1:${s.address().port}`),
    algo: 'wasp',
    policyOptions: { maxKeys: o.maxKeys },
    port: 0
  })
  try {
    await load(lb.url, 0, o.baseline)
    const before = heapAfterGc()
    const started = Date.now()
    await load(lb.url, o.baseline, o.keys)
    const after = heapAfterGc()
    const snapshot = lb.stats().policy.state
    console.log(`node ${process.version}; wasp maxKeys ${o.maxKeys}; ${o.keys - o.baseline} more distinct ` +
      `keys in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    console.log(`heap after gc: ${(before / 1048576).toFixed(2)} MiB after ${o.baseline} keys, ` +
      `${(after / 1048576).toFixed(2)} MiB after ${o.keys}: +${((after - before) / 1048576).toFixed(2)} MiB`)
    console.log(`wasp keys held: ${snapshot && snapshot.keys !== undefined ? snapshot.keys : 'n/a'}; ` +
      `requests served: ${lb.stats().responses}`)
  } finally {
    await lb.close({ graceMs: 100 })
    for (const s of upstreams) s.close()
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`bench:memory: ${err.message}\n`)
    process.exit(1)
  })
}

module.exports = { parseArgs }
