'use strict'

/**
 * http-proxy@1.18.1 vs http-proxy-3 behind the same balancer: deprecation warnings on the running
 * Node, and throughput through one fast upstream (autocannon in its own process, libraries
 * alternated, medians over rounds). The pitfall comparison is the jest suite
 * test/proxy-pitfalls.test.js, which runs every pitfall against both libraries.
 *
 *   node bench/runners/proxy-libraries.js [--rounds 3] [--duration 5] [--connections 32]
 *   npx -y -p node@22 -- node bench/runners/proxy-libraries.js     # the same on Node 22
 */

const { spawn } = require('node:child_process')
const http = require('node:http')
const path = require('node:path')
const { once } = require('node:events')

const LIBRARIES = ['http-proxy', 'http-proxy-3']
const AUTOCANNON = path.join(__dirname, '..', '..', 'node_modules', 'autocannon', 'autocannon.js')

async function role (name) {
  if (name === 'upstream') {
    const body = Buffer.alloc(1024, 'x')
    const server = http.createServer((req, res) => res.end(body))
    server.listen(0, '127.0.0.1', () => console.log(server.address().port))
    return
  }
  if (name === 'balancer') {
    const { startBalancer } = require('../../src/proxy/balancer')
    const lb = await startBalancer({ backends: [process.env.UPSTREAM], algo: 'round-robin', port: 0, engine: process.env.LIBRARY })
    console.log(lb.port)
    // one real request so the library's code paths run (and warn, if they do)
    if (process.env.ONE_REQUEST) {
      await fetch(`${lb.url}/x`).then((r) => r.text())
      await lb.close()
    }
  }
}

/** Spawn this script in a role; resolve with the child and the first line it prints. */
async function spawnRole (name, env = {}) {
  const child = spawn(process.execPath, [__filename, '--role', name], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const [chunk] = await once(child.stdout, 'data')
  return { child, port: Number(String(chunk).trim()), stderr: () => stderr }
}

async function deprecations (library, upstreamPort) {
  const { child, stderr } = await spawnRole('balancer', { UPSTREAM: `http://127.0.0.1:${upstreamPort}`, LIBRARY: library, ONE_REQUEST: '1' })
  await once(child, 'exit')
  return (stderr().match(/\[DEP\d+\][^\n]*/g) || [])
}

async function throughput (library, upstreamPort, { duration, connections }) {
  const { child, port } = await spawnRole('balancer', { UPSTREAM: `http://127.0.0.1:${upstreamPort}`, LIBRARY: library })
  const load = spawn(process.execPath, [AUTOCANNON, '-c', String(connections), '-d', String(duration), '--json', `http://127.0.0.1:${port}/x`], { stdio: ['ignore', 'pipe', 'ignore'] })
  let out = ''
  load.stdout.on('data', (d) => { out += d })
  await once(load, 'exit')
  child.kill()
  const result = JSON.parse(out)
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.errors + result.non2xx }
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }

async function main (argv) {
  const arg = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i === -1 ? fallback : argv[i + 1] }
  if (arg('role')) return role(arg('role'))
  const rounds = Number(arg('rounds', 3))
  const duration = Number(arg('duration', 5))
  const connections = Number(arg('connections', 32))
  if (![rounds, duration, connections].every((n) => Number.isInteger(n) && n > 0)) {
    console.error('proxy-libraries: --rounds, --duration and --connections must be positive integers')
    process.exit(2)
  }
  const upstream = await spawnRole('upstream')
  try {
    console.log(`node ${process.version}; ${rounds} alternated rounds of ${duration} s, ${connections} connections`)
    const results = Object.fromEntries(LIBRARIES.map((l) => [l, { rps: [], p99: [], errors: 0, warnings: [] }]))
    for (const library of LIBRARIES) results[library].warnings = await deprecations(library, upstream.port)
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? LIBRARIES : [...LIBRARIES].reverse()
      for (const library of order) {
        const t = await throughput(library, upstream.port, { duration, connections })
        results[library].rps.push(t.rps)
        results[library].p99.push(t.p99)
        results[library].errors += t.errors
        process.stdout.write(`  round ${r + 1} ${library}: ${t.rps.toFixed(0)} req/s, p99 ${t.p99} ms\n`)
      }
    }
    console.log('\n| library | version | median req/s | median p99 ms | errors | deprecation warnings |')
    console.log('|---|---|---|---|---|---|')
    for (const library of LIBRARIES) {
      const r = results[library]
      const version = require(`${library}/package.json`).version
      console.log(`| ${library} | ${version} | ${median(r.rps).toFixed(0)} | ${median(r.p99)} | ${r.errors} | ${r.warnings.length ? r.warnings.join('; ') : 'none'} |`)
    }
    console.log(`\nratio http-proxy-3 / http-proxy (req/s, medians): ${(median(results['http-proxy-3'].rps) / median(results['http-proxy'].rps)).toFixed(3)}`)
  } finally {
    upstream.child.kill()
  }
}

main(process.argv.slice(2)).catch((err) => {
  console.error(`proxy-libraries: ${err.message}`)
  process.exit(1)
})
