'use strict'

/**
 * What observability costs (issue 10's measurements), `npm run bench:observe`:
 *
 * 1. In process: `telemetry.record()` (ns per call), one access-log line to a file through pino's
 *    asynchronous destination (ns on the event loop per call, and process CPU per line, the
 *    sonic-boom writes on libuv's threads included), one `/_polistes/metrics` scrape and one SSE
 *    frame (ms and bytes) for 7 upstreams and 25 pages under wasp.
 * 2. Out of process, as the bench measures: a fleet child, a balancer child and an autocannon
 *    child at a fixed rate; the balancer child's CPU (process.cpuUsage) per request with the access
 *    log off and on (to a file), alternating, so the noise of a shared machine hits both alike.
 *
 *   npm run bench:observe                       # both parts
 *   npm run bench:observe -- --micro            # part 1 only (a few seconds)
 *   npm run bench:observe -- --rounds 4 --seconds 8 --rate 1500 --json
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { yargsFor } = require('../../servers/cli-support')
const { PolistesError, ERR_POLISTES_BAD_OPTION } = require('../../src/common/errors')
const { createBalancer } = require('../../src/balancer')
const { createMetrics } = require('../../src/observe/metrics')
const { createAccessLog } = require('../../src/observe/access-log')
const { mulberry32 } = require('../../src/common/prng')
const { Child } = require('../children/child')
const { DEFAULTS } = require('../../src/config/defaults')

const UPSTREAMS = DEFAULTS.fleet.count
const PAGES = 25

function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  return s[s.length >> 1]
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A balancer object (not listening) whose telemetry and wasp have seen `requests` requests. */
function warmBalancer (requests = 20000) {
  const backends = Array.from({ length: UPSTREAMS }, (_, i) => `http://127.0.0.1:${9101 + i}#id=${String.fromCharCode(97 + i)}`)
  const lb = createBalancer({ backends, random: mulberry32(1) })
  const random = mulberry32(2)
  for (let i = 0; i < requests; i++) {
    const key = `/page${1 + Math.floor(random() * PAGES)}.html`
    const up = lb.policy.pick(lb.pool.eligible(), { key })
    const hit = random() < 0.9
    const ms = hit ? 0.3 + random() * 0.4 : 21 + random() * 4
    lb.policy.onEnd(up, { key }, { latencyMs: ms, statusCode: 200, cache: hit ? 'HIT' : 'MISS' })
    up.requests++
    lb.telemetry.record({ upstream: up.id, key, status: 200, ms, cache: hit ? 'HIT' : 'MISS', bytes: 62000 })
  }
  return lb
}

/** ns per telemetry.record() call, median of 7 batches. */
function measureRecord () {
  const lb = warmBalancer()
  const t = lb.telemetry
  const random = mulberry32(3)
  const calls = Array.from({ length: 4096 }, () => {
    const hit = random() < 0.9
    return [
      String.fromCharCode(97 + Math.floor(random() * UPSTREAMS)),
      `/page${1 + Math.floor(random() * PAGES)}.html`,
      hit ? 0.4 : 22,
      hit ? 'HIT' : 'MISS'
    ]
  })
  const batch = 500000
  const samples = []
  for (let r = 0; r < 8; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < batch; i++) {
      const c = calls[i & 4095]
      t.record({ upstream: c[0], key: c[1], status: 200, ms: c[2], cache: c[3], bytes: 62211 })
    }
    if (r > 0) samples.push(Number(process.hrtime.bigint() - t0) / batch) // first batch: JIT warm-up
  }
  lb.engine.close()
  return median(samples)
}

/**
 * One access-log line per call to a file: event-loop ns per write() and process CPU per line
 * (main thread plus the libuv threads doing the writes), in batches with a yield between them as
 * a server would.
 */
async function measureAccessLog () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-observe-'))
  const file = path.join(dir, 'access.log')
  const log = createAccessLog({ file })
  const lines = 200000
  const batch = 200
  let loopNs = 0n
  const cpu0 = process.cpuUsage()
  for (let i = 0; i < lines; i += batch) {
    const t0 = process.hrtime.bigint()
    for (let j = 0; j < batch; j++) {
      log.write({
        method: 'GET',
        path: '/page7.html',
        status: 200,
        upstream: 'c',
        attempts: 1,
        ms: 0.6183,
        cache: 'HIT',
        bytes: 62211
      })
    }
    loopNs += process.hrtime.bigint() - t0
    await new Promise(setImmediate)
  }
  await log.close()
  const cpu = process.cpuUsage(cpu0)
  const bytes = fs.statSync(file).size
  fs.rmSync(dir, { recursive: true, force: true })
  return {
    loopNsPerLine: Number(loopNs) / lines,
    cpuNsPerLine: ((cpu.user + cpu.system) * 1000) / lines,
    bytesPerLine: bytes / lines
  }
}

/** ms and bytes of one /_polistes/metrics render and one dashboard frame (7 upstreams, 25 pages, wasp). */
async function measureScrape () {
  const lb = warmBalancer()
  const metrics = createMetrics({ stats: () => lb.stats(), telemetry: lb.telemetry })
  let text = await metrics.render() // first scrape creates the process metrics' state
  const scrapes = []
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now()
    text = await metrics.render()
    scrapes.push(performance.now() - t0)
  }
  const frames = []
  let frame = ''
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now()
    frame = JSON.stringify(lb.admin.frame())
    frames.push(performance.now() - t0)
  }
  lb.engine.close()
  return {
    scrapeMs: median(scrapes),
    scrapeBytes: Buffer.byteLength(text),
    polistesSeries: text.split('\n').filter((l) => l.startsWith('polistes_')).length,
    frameMs: median(frames),
    frameBytes: Buffer.byteLength(frame)
  }
}

/** Balancer CPU per request at a fixed rate, access log off and on, `rounds` alternations. */
async function endToEnd ({ rounds, seconds, rate, connections }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-observe-'))
  const results = { off: [], file: [] }
  try {
    for (let r = 0; r < rounds; r++) {
      for (const mode of r % 2 === 0 ? ['off', 'file'] : ['file', 'off']) {
        const fleet = new Child(path.join(__dirname, '..', 'children', 'fleet-child.js'), { name: 'fleet child' })
        const balancer = new Child(
          path.join(__dirname, '..', 'children', 'balancer-child.js'),
          { name: 'balancer child' }
        )
        const load = new Child(path.join(__dirname, '..', 'load', 'load-child.js'), { name: 'load child' })
        try {
          const { backends } = await fleet.request('start', { fleet: { count: UPSTREAMS }, pages: PAGES })
          const accessLogFile = mode === 'file' ? path.join(dir, `access-${r}.log`) : undefined
          const { url } = await balancer.request('start', { backends, algo: 'wasp', accessLogFile })
          // an untimed second first, so the JIT has settled before the measured span
          const done = load.waitFor('done', (seconds + 70) * 1000)
          await load.request('start', {
            url,
            connections,
            rate,
            warmup: 1,
            duration: seconds,
            pages: PAGES,
            popularity: { kind: 'uniform' },
            seed: r + 1
          })
          const ticks = []
          const off = load.on((msg) => {
            if (msg.type === 'tick') {
              ticks.push(
                balancer.request('cpu').then((cpu) => ({
                  second: msg.bucket.second,
                  cpu,
                  requests: msg.bucket.requests
                }))
              )
            }
          })
          const { result } = await done
          off()
          const snaps = await Promise.all(ticks)
          const first = snaps.find((s) => s.second === 1)
          const last = snaps.find((s) => s.second === 1 + seconds)
          if (!first || !last) throw new Error('missing CPU snapshots')
          const requests = snaps.filter((s) => s.second > 1 && s.second <= 1 + seconds).reduce(
            (a, s) => a + s.requests,
            0
          )
          const us = (last.cpu.user + last.cpu.system) - (first.cpu.user + first.cpu.system)
          results[mode].push({
            usPerRequest: us / requests,
            requests,
            errors: result.measured.errors + result.measured.non2xx
          })
        } finally {
          await Promise.all([load.close(), balancer.close(), fleet.close()])
        }
        await sleep(300)
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
  const off = median(results.off.map((x) => x.usPerRequest))
  const on = median(results.file.map((x) => x.usPerRequest))
  return {
    rate,
    seconds,
    rounds,
    connections,
    offUsPerRequest: off,
    fileUsPerRequest: on,
    deltaUs: on - off,
    runs: results
  }
}

function parse (argv) {
  return yargsFor(argv, 'What the access log and the telemetry cost per request, and what a metrics scrape costs.')
    .scriptName('npm run bench:observe --')
    .exitProcess(false)
    .option('micro', { type: 'boolean', default: false, describe: 'in-process measurements only' })
    .option('rounds', { type: 'number', default: 3, describe: 'off/on alternations in the end-to-end part' })
    .option('seconds', { type: 'number', default: 6, describe: 'measured seconds per run' })
    .option('rate', { type: 'number', default: 1500, describe: 'fixed request rate, req/s' })
    .option('connections', { type: 'number', default: 16, describe: 'client connections' })
    .option('json', { type: 'boolean', default: false, describe: 'machine-readable output' })
    .parse()
}

async function main (argv) {
  const args = parse(argv)
  if (args.help) return
  for (const name of ['rounds', 'seconds', 'rate', 'connections']) {
    if (!(Number.isInteger(args[name]) && args[name] > 0)) {
      throw new ERR_POLISTES_BAD_OPTION(`--${name} must be a positive integer, got ${args[name]}`)
    }
  }
  const out = { node: process.version, cpus: os.cpus().length, loadavg: os.loadavg().map((x) => +x.toFixed(2)) }
  out.recordNs = measureRecord()
  out.accessLog = await measureAccessLog()
  out.scrape = await measureScrape()
  if (!args.micro) out.endToEnd = await endToEnd(args)
  if (args.json) return console.log(JSON.stringify(out, null, 2))
  console.log(`node ${out.node}, ${out.cpus} CPU(s), load ${out.loadavg.join(' ')}`)
  console.log(`telemetry.record():      ${out.recordNs.toFixed(0)} ns per request`)
  console.log(`access log to a file:    ${out.accessLog.loopNsPerLine.toFixed(0)} ns on the event loop, ` +
    `${out.accessLog.cpuNsPerLine.toFixed(0)} ns of process CPU per line (` +
    `${out.accessLog.bytesPerLine.toFixed(0)} bytes)`)
  console.log(`/_polistes/metrics:      ${out.scrape.scrapeMs.toFixed(2)} ms, ${out.scrape.scrapeBytes} ` +
    `bytes (${out.scrape.polistesSeries} polistes_* series; ${UPSTREAMS} upstreams, ${PAGES} pages, wasp)`)
  console.log(`dashboard frame (SSE):   ${out.scrape.frameMs.toFixed(2)} ms, ${out.scrape.frameBytes} bytes ` +
    '(full history)')
  if (out.endToEnd) {
    const e = out.endToEnd
    console.log(`balancer CPU per request at ${e.rate} req/s (${e.rounds} x ${e.seconds} s each, medians): ` +
      `access log off ${e.offUsPerRequest.toFixed(1)} µs, to a file ${e.fileUsPerRequest.toFixed(1)} µs (` +
      `${e.deltaUs >= 0 ? '+' : ''}${e.deltaUs.toFixed(1)} µs)`)
    console.log(`  runs off:  ${e.runs.off.map((x) => x.usPerRequest.toFixed(1)).join(', ')}`)
    console.log(`  runs file: ${e.runs.file.map((x) => x.usPerRequest.toFixed(1)).join(', ')}`)
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    if (err instanceof PolistesError) {
      process.stderr.write(`bench:observe: ${err.message}\n`)
      process.exit(2)
    }
    process.stderr.write(`bench:observe: ${err.stack}\n`)
    process.exit(1)
  })
}
