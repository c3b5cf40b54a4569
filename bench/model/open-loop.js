'use strict'

/**
 * A pure, seeded, event-driven open-loop model of a fleet whose backends are the bottleneck (issue
 * 28): N backends, each with W workers (a FIFO queue: a request holds a worker for its service time,
 * a hit `hitMs`, a miss `missMs`) and an LRU page cache of C pages; K pages requested under uniform
 * or Zipf(s) popularity; requests arrive at a fixed offered rate (Poisson or evenly spaced) whatever
 * the fleet's state, and a request's latency is measured from its intended send time (its arrival),
 * so a queue that builds up shows in full (no coordinated omission).
 *
 * The policy sees each backend's `inflight`: the requests it was sent that have not completed, queued
 * ones included (what a balancer counts on its connections). It gets `onStart`/`onEnd` as in the
 * balancer, with `outcome.cache` (the X-Cache header) and `outcome.latencyMs`, and a simulated clock
 * through `now()` (pass `model.now` to policies that read time, e.g. p2c-peak-ewma). `ctx.noStore`
 * (wasp's admission) is honoured as the bundled backends do: a miss is not stored, a hit not refreshed.
 *
 * Also here: the fleet's physical limit (the throughput of a perfectly balanced fleet at the best
 * static hit rate, the hottest N × C pages cached), and a sweep of offered rates with the capacity at
 * an SLO (the highest offered rate, of those swept in order, before the first whose p99 exceeds the
 * SLO; default SLO 4 × hitMs + missMs).
 *
 * `node bench/model/open-loop.js --help` for the command line. Pure: no I/O outside the CLI.
 */

const { EventHeap } = require('./closed-loop')
const { mulberry32 } = require('../../src/common/prng')

const DEFAULTS = Object.freeze({
  upstreams: 7, // a number (ids u0..u{n-1}) or an array of ids
  workers: 4, // workers per backend; or an array, one per backend
  cacheSize: 100, // pages per backend LRU; or an array, one per backend
  keys: 2000, // distinct pages /page1 .. /pageK
  popularity: { zipf: 1 }, // or 'uniform'
  hitMs: 5, // service time of a hit
  missMs: 20, // service time of a miss
  jitter: 0, // service times multiplied by a uniform factor in [1 - jitter, 1 + jitter]
  rate: 2000, // offered requests per second
  arrivals: 'poisson', // 'poisson' (exponential gaps) | 'fixed' (evenly spaced)
  weights: undefined, // optional array of `weight` per backend shown to the policy
  seed: 1
})

/**
 * Create an open-loop model.
 * @param {object} options see DEFAULTS; `policy` (a policy object) is required
 * @returns {{ run (n: number): object, now: () => number, upstreams: object[], caches (): object }}
 */
function createOpenLoop (options = {}) {
  const o = { ...DEFAULTS, ...options }
  const policy = o.policy
  if (!policy || typeof policy.pick !== 'function') throw new TypeError('createOpenLoop: options.policy (a policy with pick()) is required')
  if (!(o.rate > 0)) throw new TypeError(`createOpenLoop: rate must be > 0, got ${o.rate}`)
  if (o.arrivals !== 'poisson' && o.arrivals !== 'fixed') throw new TypeError(`createOpenLoop: arrivals must be 'poisson' or 'fixed', got ${o.arrivals}`)
  const random = mulberry32(o.seed)
  const heap = new EventHeap()
  const ids = typeof o.upstreams === 'number' ? Array.from({ length: o.upstreams }, (_, i) => `u${i}`) : o.upstreams
  const per = (value, i) => (Array.isArray(value) ? value[i] : value)
  const list = ids.map((id, i) => (o.weights ? { id, inflight: 0, weight: o.weights[i] } : { id, inflight: 0 }))
  const workersOf = new Map(ids.map((id, i) => [id, per(o.workers, i)]))
  const servers = new Map(ids.map((id, i) => [id, { view: list[i], workers: per(o.workers, i), cacheSize: per(o.cacheSize, i), cache: new Map(), busy: 0, queue: [], queueHead: 0 }]))
  const keyNames = Array.from({ length: o.keys }, (_, i) => `/page${i + 1}`)
  let cumulative = null
  if (o.popularity !== 'uniform') {
    let sum = 0
    cumulative = keyNames.map((_, r) => (sum += 1 / Math.pow(r + 1, o.popularity.zipf)))
    for (let i = 0; i < cumulative.length; i++) cumulative[i] /= sum
  }
  let now = 0
  let seq = 0
  let nextArrival = 0
  const gapMs = 1000 / o.rate

  function sampleKey () {
    const r = random()
    if (cumulative === null) return keyNames[Math.floor(r * keyNames.length)]
    let lo = 0
    let hi = cumulative.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cumulative[mid] > r) hi = mid
      else lo = mid + 1
    }
    return keyNames[lo]
  }

  function serviceTime (hit) {
    const base = hit ? o.hitMs : o.missMs
    return o.jitter > 0 ? base * (1 - o.jitter + 2 * o.jitter * random()) : base
  }

  function startService (server, job) {
    server.busy++
    job.hit = server.cache.has(job.ctx.key) // the cache is read when a worker takes the request
    if (job.hit && job.ctx.noStore !== true) {
      server.cache.delete(job.ctx.key)
      server.cache.set(job.ctx.key, true)
    }
    job.service = serviceTime(job.hit)
    heap.push({ time: now + job.service, seq: seq++, server, job })
  }

  function arrive (win) {
    const key = sampleKey()
    const ctx = { key, method: 'GET' }
    const up = policy.pick(list, ctx)
    const server = servers.get(up && up.id)
    if (!server || server.view !== up) throw new Error(`policy picked an unknown upstream ${up && up.id}`)
    up.inflight++
    if (policy.onStart) policy.onStart(up, ctx)
    const job = { ctx, start: now, hit: false, win }
    win.sent(up.id)
    if (server.busy < server.workers) startService(server, job)
    else server.queue.push(job)
  }

  function complete (ev) {
    const { server, job } = ev
    server.busy--
    if (!job.hit && job.ctx.noStore !== true) {
      const cache = server.cache
      cache.set(job.ctx.key, true)
      if (cache.size > server.cacheSize) cache.delete(cache.keys().next().value)
    }
    server.view.inflight--
    const latencyMs = now - job.start
    job.win.done(latencyMs, job.hit, server.view.id, job.service)
    if (policy.onEnd) policy.onEnd(server.view, job.ctx, { latencyMs, statusCode: 200, error: undefined, cache: job.hit ? 'HIT' : 'MISS' })
    if (server.queueHead < server.queue.length) {
      const next = server.queue[server.queueHead++]
      if (server.queueHead > 1024 && server.queueHead * 2 > server.queue.length) {
        server.queue = server.queue.slice(server.queueHead)
        server.queueHead = 0
      }
      startService(server, next)
    }
  }

  function advance (win) {
    // next event: an arrival or a completion, whichever is earlier (a completion first on a tie)
    if (heap.size > 0 && heap.items[0].time <= nextArrival) {
      const ev = heap.pop()
      now = ev.time
      complete(ev)
      return false
    }
    now = nextArrival
    arrive(win)
    nextArrival += o.arrivals === 'poisson' ? -Math.log(1 - random()) * gapMs : gapMs
    return true
  }

  /**
   * `n` more arrivals; returns the statistics of exactly those n requests, each followed to its
   * completion (arrivals go on meanwhile, and belong to the next window).
   */
  let carry = null // the window whose arrivals continue while the previous one drains
  function run (n) {
    const win = carry || createWindow(ids, workersOf)
    carry = null
    const startedAt = now
    while (win.arrivals < n) advance(win)
    const lastArrival = now
    const next = createWindow(ids, workersOf)
    while (win.completed < win.arrivals) advance(next)
    carry = next
    return win.summary(lastArrival - startedAt, maxQueue())
  }

  function maxQueue () {
    let m = 0
    for (const s of servers.values()) m = Math.max(m, s.queue.length - s.queueHead)
    return m
  }

  return {
    run,
    now: () => now,
    upstreams: list,
    caches () {
      const out = {}
      for (const [id, s] of servers) out[id] = [...s.cache.keys()]
      return out
    }
  }
}

/** Statistics over one window of arrivals. */
function createWindow (ids, workersOf) {
  const latencies = []
  const counts = new Map(ids.map((id) => [id, 0]))
  const work = new Map(ids.map((id) => [id, 0])) // worker-ms of service of this window's requests
  let hits = 0
  const win = {
    arrivals: 0,
    completed: 0,
    sent (id) { win.arrivals++; counts.set(id, (counts.get(id) || 0) + 1) },
    done (latencyMs, hit, id, serviceMs) {
      win.completed++
      latencies.push(latencyMs)
      if (hit) hits++
      work.set(id, work.get(id) + serviceMs)
    },
    summary (spanMs, queue) {
      const sorted = Float64Array.from(latencies).sort()
      const q = (p) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] : 0
      const total = win.arrivals
      let busiest = 0
      const share = {}
      for (const [id, c] of counts) { share[id] = c / total; if (c > busiest) busiest = c }
      // the busiest backend's work (worker-ms per worker) over the mean's: 1 = perfectly balanced
      let workSum = 0
      let workerSum = 0
      let workMax = 0
      for (const [id, ms] of work) { workSum += ms; workerSum += workersOf.get(id); workMax = Math.max(workMax, ms / workersOf.get(id)) }
      return {
        requests: total,
        hitRate: total ? hits / total : 0,
        p50: q(0.5),
        p99: q(0.99),
        p999: q(0.999),
        mean: sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length),
        busiest: total ? busiest / total : 0,
        workImbalance: workSum > 0 ? workMax / (workSum / workerSum) : 0,
        utilization: spanMs > 0 ? workSum / (workerSum * spanMs) : 0,
        share,
        spanMs,
        queueAtEnd: queue
      }
    }
  }
  return win
}

/**
 * The fleet's physical limit: the throughput (req/s) of a perfectly balanced fleet (load in
 * proportion to workers) at the best static hit rate (the hottest sum-of-caches pages cached).
 * @param {object} fleet { workers, upstreams, cacheSize, keys, popularity, hitMs, missMs }
 * @returns {{ hitRate: number, serviceMs: number, rate: number }}
 */
function physicalLimit (fleet) {
  const f = { ...DEFAULTS, ...fleet }
  const n = typeof f.upstreams === 'number' ? f.upstreams : f.upstreams.length
  const sum = (v) => (Array.isArray(v) ? v.reduce((a, b) => a + b, 0) : v * n)
  const probs = Array.from({ length: f.keys }, (_, r) => (f.popularity === 'uniform' ? 1 : 1 / Math.pow(r + 1, f.popularity.zipf)))
  const total = probs.reduce((a, b) => a + b, 0)
  let hitRate = 0
  for (let i = 0; i < Math.min(f.keys, sum(f.cacheSize)); i++) hitRate += probs[i] / total
  const serviceMs = hitRate * f.hitMs + (1 - hitRate) * f.missMs
  return { hitRate, serviceMs, rate: sum(f.workers) * 1000 / serviceMs }
}

/**
 * One contender at one rate: a fresh model and policy, `warmup` arrivals, then `measure` measured.
 * @param {(random: () => number, now: () => number) => object} makePolicy
 * @param {object} fleet model options (rate included)
 * @param {{ seed?: number, warmup?: number, measure?: number }} [run]
 */
function runAt (makePolicy, fleet, { seed = 1, warmup = 40000, measure = 40000 } = {}) {
  const clock = { model: null }
  const policy = makePolicy(mulberry32(seed * 7919 + 17), () => clock.model.now())
  const model = clock.model = createOpenLoop({ ...fleet, seed, policy })
  model.run(warmup)
  return model.run(measure)
}

/**
 * Sweep the offered rates in order; the capacity at SLO is the last rate before the first whose
 * p99 exceeds `slo` (0 if the first does). Stops `after` rates past the first failure.
 * @returns {{ rows: object[], capacity: number }}
 */
function sweep (makePolicy, fleet, rates, { slo, after = 1, ...run } = {}) {
  const target = slo ?? 4 * (fleet.hitMs ?? DEFAULTS.hitMs) + (fleet.missMs ?? DEFAULTS.missMs)
  const rows = []
  let capacity = 0
  let failed = 0
  for (const rate of rates) {
    const r = runAt(makePolicy, { ...fleet, rate }, run)
    rows.push({ rate, ...r })
    if (r.p99 > target) { failed++ } else if (failed === 0) capacity = rate
    if (failed > after) break
  }
  return { rows, capacity, slo: target }
}

/** The contenders of issue 28, by name: (random, now) => policy. `waspOptions` for wasp. */
function contenders (waspOptions = {}) {
  const { createWasp } = require('../../src/policies/wasp')
  const { createChashBounded } = require('../../src/policies/chash-bounded')
  const { createLeastConnections } = require('../../src/policies/least-connections')
  const { createP2cPeakEwma } = require('../../src/policies/p2c-peak-ewma')
  return {
    wasp: (random, now) => createWasp(waspOptions, { random, now }),
    'chash-bounded-1.25': () => createChashBounded({ balanceFactor: 1.25 }),
    'chash-bounded-1.5': () => createChashBounded({ balanceFactor: 1.5 }),
    'chash-bounded-2': () => createChashBounded({ balanceFactor: 2 }),
    chash: () => createChashBounded({ balanceFactor: Number.MAX_SAFE_INTEGER }),
    'least-connections': () => createLeastConnections(),
    'p2c-peak-ewma': (random, now) => createP2cPeakEwma({}, { random, now })
  }
}

/** `node bench/model/open-loop.js [--rates 1500,2000,...] [--zipf 1] [--pages 2000] [--workers 4|2,3,...] ...` */
function cli (argv) {
  const yargs = require('yargs/yargs')
  const args = yargs(argv)
    .scriptName('node bench/model/open-loop.js')
    .option('rates', { type: 'string', default: '1500,2000,2500,3000,3500', describe: 'offered rates (req/s) for the table, comma-separated' })
    .option('sweep', { type: 'string', default: '1500:5000:100', describe: 'FROM:TO:STEP offered rates for the capacity at SLO ("" = no sweep)' })
    .option('zipf', { type: 'number', default: 1, describe: 'Zipf exponent (0 = uniform)' })
    .option('pages', { type: 'number', default: 2000 })
    .option('cache-pages', { type: 'number', default: 100 })
    .option('upstreams', { type: 'number', default: 7 })
    .option('workers', { type: 'string', default: '4', describe: 'workers per backend, or one per backend: 2,3,4,5,6,7,8' })
    .option('hit-ms', { type: 'number', default: 5 })
    .option('miss-ms', { type: 'number', default: 20 })
    .option('jitter', { type: 'number', default: 0 })
    .option('arrivals', { choices: ['poisson', 'fixed'], default: 'poisson' })
    .option('warmup', { type: 'number', default: 40000 })
    .option('measure', { type: 'number', default: 40000 })
    .option('seed', { type: 'number', default: 1 })
    .option('only', { type: 'string', describe: 'comma-separated contenders (default all)' })
    .option('policy-options', { type: 'string', default: '{}', describe: 'wasp options as JSON' })
    .strict().help().version(false)
    .fail((msg, err) => { process.stderr.write(`open-loop: ${err ? err.message : msg}\n`); process.exit(2) })
    .parse()
  let waspOptions
  try { waspOptions = JSON.parse(args['policy-options']) } catch (err) {
    process.stderr.write(`open-loop: --policy-options: ${err.message}\n`)
    process.exit(2)
  }
  const workers = args.workers.split(',').map(Number)
  if (workers.some((w) => !Number.isInteger(w) || w < 1) || (workers.length !== 1 && workers.length !== args.upstreams)) {
    process.stderr.write(`open-loop: --workers must be one positive integer or ${args.upstreams} of them, got ${args.workers}\n`)
    process.exit(2)
  }
  const fleet = {
    upstreams: args.upstreams,
    workers: workers.length === 1 ? workers[0] : workers,
    cacheSize: args['cache-pages'],
    keys: args.pages,
    popularity: args.zipf === 0 ? 'uniform' : { zipf: args.zipf },
    hitMs: args['hit-ms'],
    missMs: args['miss-ms'],
    jitter: args.jitter,
    arrivals: args.arrivals
  }
  const run = { seed: args.seed, warmup: args.warmup, measure: args.measure }
  const all = contenders(waspOptions)
  const names = args.only ? args.only.split(',') : Object.keys(all)
  for (const name of names) {
    if (!all[name]) { process.stderr.write(`open-loop: unknown contender ${name} (${Object.keys(all).join(', ')})\n`); process.exit(2) }
  }
  const limit = physicalLimit(fleet)
  const slo = 4 * fleet.hitMs + fleet.missMs
  console.log(`fleet: ${fleet.upstreams} backends x ${args.workers} workers, LRU ${fleet.cacheSize} of ${fleet.keys} pages, ${args.zipf === 0 ? 'uniform' : `zipf(${args.zipf})`}, hit ${fleet.hitMs} ms, miss ${fleet.missMs} ms, ${fleet.arrivals} arrivals; seed ${args.seed}, ${run.warmup} warm-up + ${run.measure} measured requests per cell; wasp options ${JSON.stringify(waspOptions)}`)
  console.log(`physical limit: ${limit.rate.toFixed(0)} req/s (best static hit rate ${limit.hitRate.toFixed(3)}, mean service ${limit.serviceMs.toFixed(2)} ms); SLO p99 <= ${slo} ms`)
  const rates = args.rates ? args.rates.split(',').map(Number) : []
  if (rates.length) {
    console.log('\np99 ms (hit rate, busiest share) per offered rate')
    const rows = []
    for (const name of names) {
      const row = { contender: name }
      for (const rate of rates) {
        const r = runAt(all[name], { ...fleet, rate }, run)
        row[`${rate} req/s`] = `${r.p99.toFixed(1)} (${r.hitRate.toFixed(3)}, ${r.busiest.toFixed(3)})`
      }
      rows.push(row)
    }
    console.table(rows)
  }
  if (args.sweep) {
    const [from, to, step] = args.sweep.split(':').map(Number)
    const grid = []
    for (let r = from; r <= to + 1e-9; r += step) grid.push(r)
    const rows = []
    for (const name of names) {
      const s = sweep(all[name], fleet, grid, { slo, ...run })
      const at = s.rows.find((x) => x.rate === s.capacity)
      rows.push({ contender: name, 'capacity at SLO': s.capacity, 'of physical limit': (s.capacity / limit.rate).toFixed(3), 'p99 there': at ? at.p99.toFixed(1) : '-', 'hit rate there': at ? at.hitRate.toFixed(3) : '-', 'busiest there': at ? at.busiest.toFixed(3) : '-' })
    }
    console.log(`\ncapacity at SLO (sweep ${args.sweep}; last rate before the first p99 > ${slo} ms)`)
    console.table(rows)
  }
}

module.exports = { createOpenLoop, physicalLimit, runAt, sweep }

if (require.main === module) cli(process.argv.slice(2))
