#!/usr/bin/env node
'use strict'

/**
 * `npm run bench:memory`: what many distinct routing keys cost the balancer's memory. A real
 * balancer (wasp, telemetry, metrics) in front of 7 upstreams on loopback, all in this process; a
 * child process sends requests for distinct paths (`/k1`, `/k2`, ...) over keep-alive connections.
 * The heap is read after a full garbage collection once the first `--baseline` keys have been
 * served and again after `--keys`, so the difference is what the extra keys left behind: wasp's key
 * table (capped by its `maxKeys`), the dashboard's page rows (capped by telemetry's `maxPages`), and
 * anything that was not capped.
 *
 *   npm run bench:memory -- [--keys 100000] [--baseline 1000] [--max-keys 10000]
 */

const http = require('node:http')
const { spawn } = require('node:child_process')
const { startBalancer } = require('../../src/proxy/balancer')

function usage (message) {
  process.stderr.write(`bench:memory: ${message}\n`)
  process.exit(2)
}

/** @returns {{ keys: number, baseline: number, maxKeys: number }} */
function parseArgs (argv) {
  const o = { keys: 100000, baseline: 1000, maxKeys: 10000 }
  for (let i = 0; i < argv.length; i += 2) {
    const name = { '--keys': 'keys', '--baseline': 'baseline', '--max-keys': 'maxKeys' }[argv[i]]
    if (argv[i] === '--help') {
      console.log('npm run bench:memory -- [--keys 100000] [--baseline 1000] [--max-keys 10000]')
      process.exit(0)
    }
    if (!name) usage(`unknown option "${argv[i]}"`)
    const n = Number(argv[i + 1])
    if (!Number.isInteger(n) || n < 1 || n > 10_000_000) usage(`${argv[i]} must be an integer from 1 to 10,000,000, got "${argv[i + 1]}"`)
    o[name] = n
  }
  if (o.baseline >= o.keys) usage('--baseline must be below --keys')
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
  if (typeof global.gc !== 'function') usage('run it with node --expose-gc (npm run bench:memory does)')
  const upstreams = []
  for (let i = 0; i < 7; i++) {
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
    console.log(`node ${process.version}; wasp maxKeys ${o.maxKeys}; ${o.keys - o.baseline} more distinct keys in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    console.log(`heap after gc: ${(before / 1048576).toFixed(2)} MiB after ${o.baseline} keys, ${(after / 1048576).toFixed(2)} MiB after ${o.keys}: +${((after - before) / 1048576).toFixed(2)} MiB`)
    console.log(`wasp keys held: ${snapshot && snapshot.keys !== undefined ? snapshot.keys : 'n/a'}; requests served: ${lb.stats().responses}`)
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
