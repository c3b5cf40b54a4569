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
 * Pure: no I/O. The command line is bench/runners/open-loop-model.js (`--help`).
 */

const { mulberry32 } = require('../../src/common/prng')
const { EventHeap } = require('./event-heap')
const { createWindow } = require('./open-loop-window')
const {
  FLEET_SIZE, upstreamIds, pageNames, zipfCumulative, pageShares, rankOf, jittered, perBackend
} = require('./model-setup')

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { log, max, min, sqrt } = Math

const DEFAULTS = Object.freeze({
  upstreams: FLEET_SIZE, // a number (ids u0..u{n-1}) or an array of ids
  workers: 4, // workers per backend; or an array, one per backend
  cacheSize: 100, // pages per backend LRU; or an array, one per backend
  keys: 2000, // distinct pages /page1 .. /pageK
  popularity: { zipf: 1 }, // or 'uniform'
  hitMs: 5, // service time of a hit
  missMs: 20, // service time of a miss
  jitter: 0, // service times multiplied by a uniform factor in [1 - jitter, 1 + jitter]
  // the fleet's stalls (its event loop held, as a shared process's is over HTTP): every backend at once
  // finishes and starts nothing for `stallMs`, at gaps drawn exponential with mean `stallEveryMs`
  // (from a stream of their own, so that the arrivals and keys are those of the run without stalls)
  stallEveryMs: 0, // 0 = no stalls
  stallMs: 0,
  rate: 2000, // offered requests per second
  rampMs: 0, // the rate rises linearly from 0 over this many ms, as the bench's warm-up ramps it (0 = none)
  arrivals: 'poisson', // 'poisson' (exponential gaps) | 'fixed' (evenly spaced)
  weights: undefined, // optional array of `weight` per backend shown to the policy
  seed: 1
})

/**
 * Create an open-loop model.
 * @param {object} options see DEFAULTS; `policy` (a policy object) is required
 * @returns {{ run (n: number): object, now: () => number, upstreams: object[], caches (): object,
 *   down (id: string): void, restart (id: string): void }}
 */
function createOpenLoop (options = {}) {
  const m = createState({ ...DEFAULTS, ...options })
  firstStall(m)
  return {
    run: (n) => run(m, n),
    now: () => m.now,
    upstreams: m.list,
    caches () {
      const out = {}
      for (const [id, s] of m.servers) out[id] = [...s.cache.keys()]
      return out
    },
    down: (id) => setListed(m, id, false),
    restart: (id) => setListed(m, id, true)
  }
}

/**
 * A backend leaves the list the policy picks from (`down`; what it holds still completes: a crash's
 * failed requests are the balancer's to retry, not the model's), or comes back (`restart`) with an
 * empty cache, as a restarted process does. The list keeps the fleet's order.
 */
function setListed (m, id, listed) {
  const server = m.servers.get(id)
  if (!server) throw new TypeError(`open-loop model: no backend ${id}`)
  if (listed) server.cache.clear()
  const views = m.ids.map((x) => m.servers.get(x).view)
  const keep = views.filter((v) => (v === server.view ? listed : m.list.includes(v)))
  m.list.splice(0, m.list.length, ...keep)
}

/** The model's state from its options, checked: everything the steps below read and change. */
function createState (o) {
  const policy = o.policy
  if (!policy || typeof policy.pick !== 'function') {
    throw new TypeError('createOpenLoop: options.policy (a policy with pick()) is required')
  }
  if (!(o.rate > 0)) throw new TypeError(`createOpenLoop: rate must be > 0, got ${o.rate}`)
  if (!(o.rampMs >= 0)) throw new TypeError(`createOpenLoop: rampMs must be >= 0, got ${o.rampMs}`)
  if (!(o.stallEveryMs >= 0 && o.stallMs >= 0)) {
    throw new TypeError(`createOpenLoop: stallEveryMs and stallMs must be >= 0, got ${o.stallEveryMs}, ${o.stallMs}`)
  }
  if (o.arrivals !== 'poisson' && o.arrivals !== 'fixed') {
    throw new TypeError(`createOpenLoop: arrivals must be 'poisson' or 'fixed', got ${o.arrivals}`)
  }
  const ids = upstreamIds(o.upstreams)
  const workers = perBackend(o.workers, ids.length)
  const cacheSizes = perBackend(o.cacheSize, ids.length)
  const list = ids.map((id, i) => (o.weights ? { id, inflight: 0, weight: o.weights[i] } : { id, inflight: 0 }))
  const server = (id, i) => ({
    view: list[i],
    workers: workers[i],
    cacheSize: cacheSizes[i],
    cache: new Map(),
    busy: 0,
    queue: [],
    queueHead: 0
  })
  return {
    o,
    policy,
    random: mulberry32(o.seed),
    heap: new EventHeap(),
    ids,
    list,
    workersOf: new Map(ids.map((id, i) => [id, workers[i]])),
    servers: new Map(ids.map((id, i) => [id, server(id, i)])),
    keyNames: pageNames(o.keys),
    cumulative: o.popularity !== 'uniform' ? zipfCumulative(o.keys, o.popularity.zipf) : null,
    now: 0,
    seq: 0,
    nextArrival: 0,
    gapMs: 1000 / o.rate,
    expected: 0, // with a ramp: the arrivals expected by the next one's time (its operational time)
    carry: null, // the window whose arrivals continue while the previous one drains
    stallRandom: mulberry32(o.seed * 104729 + 7),
    stall: { start: Infinity, end: Infinity } // the current or next stall
  }
}

/** The first stall, when the model has them. */
function firstStall (m) {
  if (m.o.stallEveryMs > 0 && m.o.stallMs > 0) m.stall = nextStall(m, 0)
}

function nextStall (m, after) {
  const start = after - log(1 - m.stallRandom()) * m.o.stallEveryMs
  return { start, end: start + m.o.stallMs }
}

/** The end of the stall that holds time t, or 0 when the fleet runs at t. */
function stalledUntil (m, t) {
  while (t >= m.stall.end) m.stall = nextStall(m, m.stall.end)
  return t >= m.stall.start ? m.stall.end : 0
}

function sampleKey (m) {
  return m.keyNames[rankOf(m.random(), m.cumulative, m.keyNames.length)]
}

function serviceTime (m, hit) {
  const base = hit ? m.o.hitMs : m.o.missMs
  return m.o.jitter > 0 ? jittered(base, m.o.jitter, m.random) : base
}

function startService (m, server, job) {
  server.busy++
  job.hit = server.cache.has(job.ctx.key) // the cache is read when a worker takes the request
  if (job.hit && job.ctx.noStore !== true) {
    server.cache.delete(job.ctx.key)
    server.cache.set(job.ctx.key, true)
  }
  job.service = serviceTime(m, job.hit)
  m.heap.push({ time: m.now + job.service, seq: m.seq++, server, job })
}

/** One arrival: a key, the policy's pick, then a worker or the backend's queue. */
function arrive (m, win) {
  const key = sampleKey(m)
  const ctx = { key, method: 'GET' }
  const up = m.policy.pick(m.list, ctx)
  const server = m.servers.get(up && up.id)
  if (!server || server.view !== up) throw new Error(`policy picked an unknown upstream ${up && up.id}`)
  up.inflight++
  if (m.policy.onStart) m.policy.onStart(up, ctx)
  const job = { ctx, start: m.now, hit: false, win }
  win.sent(up.id)
  const until = stalledUntil(m, m.now)
  if (until > 0) {
    server.queue.push(job) // the stalled backend takes it when the stall ends
    m.heap.push({ time: until, seq: m.seq++, server, job: null })
  } else if (server.busy < server.workers) startService(m, server, job)
  else server.queue.push(job)
}

/** A stall ended: the backend's free workers take what queued meanwhile. */
function resume (m, server) {
  while (server.busy < server.workers && server.queueHead < server.queue.length) {
    startService(m, server, dequeue(server))
  }
}

/** A request completes: its miss is cached, its policy told, the next queued one started. */
function complete (m, ev) {
  const { server, job } = ev
  server.busy--
  if (!job.hit && job.ctx.noStore !== true) {
    const cache = server.cache
    cache.set(job.ctx.key, true)
    if (cache.size > server.cacheSize) cache.delete(cache.keys().next().value)
  }
  server.view.inflight--
  const latencyMs = m.now - job.start
  job.win.done(latencyMs, job.hit, server.view.id, job.service)
  if (m.policy.onEnd) {
    const outcome = { latencyMs, statusCode: 200, error: undefined, cache: job.hit ? 'HIT' : 'MISS' }
    m.policy.onEnd(server.view, job.ctx, outcome)
  }
  if (server.queueHead < server.queue.length) startService(m, server, dequeue(server))
}

/** The head of a backend's FIFO queue (the array is compacted once half of it is consumed). */
function dequeue (server) {
  const next = server.queue[server.queueHead++]
  if (server.queueHead > 1024 && server.queueHead * 2 > server.queue.length) {
    server.queue = server.queue.slice(server.queueHead)
    server.queueHead = 0
  }
  return next
}

/** The next event: an arrival or a completion, whichever is earlier (a completion first on a tie). */
function advance (m, win) {
  if (m.heap.size > 0 && m.heap.items[0].time <= m.nextArrival) {
    const ev = m.heap.pop()
    m.now = ev.time
    const until = stalledUntil(m, ev.time)
    if (until > 0) {
      ev.time = until // what falls due in a stall happens as it ends, in the order it fell due
      m.heap.push(ev)
    } else if (ev.job) complete(m, ev)
    else resume(m, ev.server)
    return false
  }
  m.now = m.nextArrival
  arrive(m, win)
  const step = m.o.arrivals === 'poisson' ? -log(1 - m.random()) : 1
  if (m.o.rampMs > 0) {
    m.expected += step
    m.nextArrival = rampedTime(m, m.expected)
  } else m.nextArrival += step * m.gapMs
  return true
}

/**
 * When the rate ramps linearly from 0 to the full rate over `rampMs`, then holds: the time by which
 * `u` arrivals are expected (the inverse of the expected count, u = t² / (2 rampMs gapMs) in the ramp).
 * Fixed arrivals step u by 1, Poisson ones by an exponential draw: a non-homogeneous Poisson process.
 */
function rampedTime (m, u) {
  const inRamp = m.o.rampMs / (2 * m.gapMs) // the arrivals expected during the ramp
  return u <= inRamp ? sqrt(2 * m.o.rampMs * m.gapMs * u) : m.o.rampMs + (u - inRamp) * m.gapMs
}

/**
 * `n` more arrivals; returns the statistics of exactly those n requests, each followed to its
 * completion (arrivals go on meanwhile, and belong to the next window).
 */
function run (m, n) {
  const win = m.carry || createWindow(m.ids, m.workersOf)
  m.carry = null
  const startedAt = m.now
  while (win.arrivals < n) advance(m, win)
  const lastArrival = m.now
  const next = createWindow(m.ids, m.workersOf)
  while (win.completed < win.arrivals) advance(m, next)
  m.carry = next
  return win.summary(lastArrival - startedAt, maxQueue(m))
}

function maxQueue (m) {
  let q = 0
  for (const s of m.servers.values()) q = max(q, s.queue.length - s.queueHead)
  return q
}

/**
 * The fleet's physical limit: the throughput (req/s) of a perfectly balanced fleet (load in
 * proportion to workers) at the best static hit rate (the hottest sum-of-caches pages cached).
 * @param {object} fleet { workers, upstreams, cacheSize, keys, popularity, hitMs, missMs }
 * @returns {{ hitRate: number, serviceMs: number, rate: number }}
 */
function physicalLimit (fleet) {
  const f = { ...DEFAULTS, ...fleet }
  const n = upstreamIds(f.upstreams).length
  const sum = (v) => perBackend(v, n).reduce((a, b) => a + b, 0)
  const shares = pageShares(f.keys, f.popularity)
  let hitRate = 0
  for (let i = 0; i < min(f.keys, sum(f.cacheSize)); i++) hitRate += shares[i]
  const serviceMs = hitRate * f.hitMs + (1 - hitRate) * f.missMs
  return { hitRate, serviceMs, rate: sum(f.workers) * 1000 / serviceMs }
}

/**
 * One contender at one rate: a fresh model and policy, `warmup` arrivals, then `measure` measured.
 * @param {(random: () => number, now: () => number, fleet: object) => object} makePolicy (the fleet,
 *   with the rate and the defaults filled in, for references that know it: ./reference-learners.js)
 * @param {object} fleet model options (rate included)
 * @param {{ seed?: number, warmup?: number, measure?: number, beforeMeasure?: () => void }} [run]
 *   `beforeMeasure`, if given, is called between the warm-up and the measured requests
 */
function runAt (makePolicy, fleet, { seed = 1, warmup = 40000, measure = 40000, beforeMeasure } = {}) {
  const clock = { model: null }
  const policy = makePolicy(mulberry32(seed * 7919 + 17), () => clock.model.now(), { ...DEFAULTS, ...fleet })
  const model = clock.model = createOpenLoop({ ...fleet, seed, policy })
  model.run(warmup)
  if (beforeMeasure) beforeMeasure()
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

module.exports = { DEFAULTS, createOpenLoop, physicalLimit, runAt, sweep, contenders }
