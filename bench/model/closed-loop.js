'use strict'

/**
 * A pure, seeded, event-driven closed-loop model of the experiment polistes is built for:
 * N upstreams, each with an LRU page cache of C pages and a service time (a hit is fast, a miss
 * pays an emulated cost), K keys requested with uniform or Zipf(s) popularity, and W requests in
 * flight at all times (a completion immediately triggers the next request). No sockets, no timers:
 * simulated time advances from one completion to the next, so a run is fast and reproducible.
 *
 * Any policy that follows the contract in docs/design.md ("The policy contract") can be plugged in (round-robin, random, wasp).
 * The model maintains each upstream's `inflight`, calls `onStart`/`onEnd` when the policy has them,
 * and reports the backend's cache result as `outcome.cache` (like the `X-Cache` header) unless
 * `feedback` is false.
 *
 * Colonies: `policy` may be an array of K independent policies, like K balancer processes
 * (`polistes --workers K`) in front of the same backends. Requests go to the colonies in turn
 * (round-robin, as the node:cluster primary hands out connections on Linux); each colony sees its
 * own upstream list whose `inflight` counts only its own requests (a worker knows only its own
 * pool), while the backends' caches are shared.
 *
 * Usage (see also `node bench/model/closed-loop.js`, `npm run bench:model`):
 *   const model = createModel({ policy, upstreams: 7, cacheSize: 4, keys: 25, inflight: 32, seed: 1 })
 *   model.run(5000)               // warm-up
 *   const w = model.run(5000)     // { hitRate, balance, top2, counts, ... } over these 5000 requests
 *   model.removeUpstream('u3'); model.addUpstream('u3'); model.setPopularity({ zipf: 1 }); model.permute()
 */

const { mulberry32 } = require('../../src/common/prng')

const DEFAULTS = Object.freeze({
  upstreams: 7, // a number (ids u0..u{n-1}) or an array of ids
  cacheSize: 4, // pages per upstream LRU; or an array, one size per upstream (in the order of `upstreams`)
  cacheBytes: undefined, // bytes per upstream LRU instead of pages (a number, or an array per upstream); needs pageBytes
  pageBytes: undefined, // with cacheBytes: the size of each key, an array in key order (/page1 first)
  weights: undefined, // optional array, one `weight` per upstream (in the order of `upstreams`), shown to the policy
  keys: 25, // distinct pages, named /page1 .. /pageK
  popularity: 'uniform', // or { zipf: s }
  inflight: 32, // W: requests in flight at all times
  hitMs: 1, // service time of a cache hit
  missMs: 20, // service time of a miss (emulated render / I/O cost)
  jitter: 0.5, // service times are multiplied by a uniform factor in [1 - jitter, 1 + jitter]
  serverConcurrency: Infinity, // requests an upstream serves at once; finite = FIFO queue
  feedback: true, // report outcome.cache ('HIT' | 'MISS') to the policy
  assign: 'round-robin', // with several colonies: which one takes the next request ('round-robin' | 'random')
  seed: 1, // model randomness (keys, jitter); the policy gets its own random source
  recordPicks: false // keep the sequence of picked ids (for determinism tests)
})

/** A binary min-heap of events ordered by (time, seq): ties resolve in scheduling order. */
class EventHeap {
  constructor () { this.items = [] }
  get size () { return this.items.length }
  push (ev) {
    const a = this.items
    a.push(ev)
    let i = a.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!less(a[i], a[p])) break
      ;[a[i], a[p]] = [a[p], a[i]]
      i = p
    }
  }

  pop () {
    const a = this.items
    const top = a[0]
    const last = a.pop()
    if (a.length > 0) {
      a[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < a.length && less(a[l], a[m])) m = l
        if (r < a.length && less(a[r], a[m])) m = r
        if (m === i) break
        ;[a[i], a[m]] = [a[m], a[i]]
        i = m
      }
    }
    return top
  }
}

function less (x, y) {
  return x.time < y.time || (x.time === y.time && x.seq < y.seq)
}

/**
 * Create a closed-loop model.
 * @param {object} options see DEFAULTS; `policy` is required
 * @returns {object} the model: run(n), removeUpstream(id), addUpstream(id), setPopularity(p),
 *   permute(), upstreams (the eligible list the policy sees), now (simulated ms), picks
 */
function createModel (options = {}) {
  const o = { ...DEFAULTS, ...options }
  const policies = Array.isArray(o.policy) ? o.policy : [o.policy]
  if (policies.length === 0 || policies.some((p) => !p || typeof p.pick !== 'function')) {
    throw new TypeError('createModel: options.policy (a policy with pick(), or an array of them) is required')
  }
  if (o.assign !== 'round-robin' && o.assign !== 'random') throw new TypeError(`createModel: assign must be 'round-robin' or 'random', got ${o.assign}`)
  const random = mulberry32(o.seed)
  const heap = new EventHeap()
  const servers = new Map() // id -> { views, cache, busy, queue }; views[c] is what colony c sees
  // what each colony's policy sees: [{ id, inflight }], inflight counting that colony's requests only
  let lists = policies.map(() => [])
  let now = 0
  let seq = 0
  let inflightTotal = 0
  let turn = 0
  const picks = []

  const ids = typeof o.upstreams === 'number'
    ? Array.from({ length: o.upstreams }, (_, i) => `u${i}`)
    : o.upstreams
  const keyNames = Array.from({ length: o.keys }, (_, i) => `/page${i + 1}`)
  const perm = keyNames.map((_, i) => i) // rank -> key index
  if (o.cacheBytes !== undefined && (!Array.isArray(o.pageBytes) || o.pageBytes.length !== o.keys)) {
    throw new TypeError('createModel: cacheBytes needs pageBytes, one size per key')
  }
  const keySize = o.cacheBytes === undefined ? null : new Map(keyNames.map((k, i) => [k, o.pageBytes[i]]))
  let cumulative = null // null = uniform

  /** The option value of upstream `id`: `value` itself, or its entry when `value` is an array. */
  function perUpstream (value, id, fallback) {
    if (!Array.isArray(value)) return value === undefined ? fallback : value
    const i = ids.indexOf(id)
    return i >= 0 && value[i] !== undefined ? value[i] : fallback
  }

  function addUpstream (id) {
    if (servers.has(id) && lists[0].some((u) => u.id === id)) return
    const weight = perUpstream(o.weights, id, undefined)
    const views = policies.map(() => (weight === undefined ? { id, inflight: 0 } : { id, inflight: 0, weight }))
    servers.set(id, { views, cache: new Map(), busy: 0, queue: [], cacheSize: perUpstream(o.cacheSize, id, DEFAULTS.cacheSize), cacheBytes: perUpstream(o.cacheBytes, id, undefined), bytes: 0 })
    lists = lists.map((list, c) => [...list, views[c]])
  }

  function removeUpstream (id) {
    lists = lists.map((list) => list.filter((u) => u.id !== id))
  }

  function setPopularity (popularity) {
    if (popularity === 'uniform' || popularity == null) {
      cumulative = null
      return
    }
    const s = popularity.zipf
    let sum = 0
    cumulative = keyNames.map((_, rank) => (sum += 1 / Math.pow(rank + 1, s)))
    for (let i = 0; i < cumulative.length; i++) cumulative[i] /= sum
  }

  /**
   * Rotate the popularity ranking by `step` places (--shift): the key at rank r moves to rank
   * r - step, the hottest `step` keys go to the bottom.
   * @param {number} step
   */
  function rotate (step) {
    const k = ((step % perm.length) + perm.length) % perm.length
    const rotated = perm.slice(k).concat(perm.slice(0, k))
    for (let i = 0; i < perm.length; i++) perm[i] = rotated[i]
  }

  /** Shuffle which key holds which popularity rank (Fisher-Yates with the model's random). */
  function permute () {
    for (let i = perm.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[perm[i], perm[j]] = [perm[j], perm[i]]
    }
  }

  function sampleKey () {
    const r = random()
    let rank
    if (cumulative === null) {
      rank = Math.floor(r * keyNames.length)
    } else {
      let lo = 0
      let hi = cumulative.length - 1
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (cumulative[mid] > r) hi = mid
        else lo = mid + 1
      }
      rank = lo
    }
    return keyNames[perm[rank]]
  }

  function serviceTime (hit) {
    const base = hit ? o.hitMs : o.missMs
    return base * (1 - o.jitter + 2 * o.jitter * random())
  }

  function startService (server, job) {
    server.busy++
    heap.push({ time: now + serviceTime(job.hit), seq: seq++, server, job })
  }

  function dispatch (win) {
    const key = sampleKey()
    const ctx = { key, method: 'GET' }
    const colony = policies.length === 1 ? 0 : (o.assign === 'random' ? Math.floor(random() * policies.length) : turn++ % policies.length)
    const policy = policies[colony]
    const up = policy.pick(lists[colony], ctx)
    if (up === undefined) {
      win.dropped++
      return
    }
    const server = servers.get(up && up.id)
    if (!server || server.views[colony] !== up) throw new Error(`policy picked an unknown upstream ${up && up.id}`)
    up.inflight++
    inflightTotal++
    if (policy.onStart) policy.onStart(up, ctx)
    if (o.recordPicks) picks.push(up.id)
    const hit = server.cache.has(key)
    if (hit && ctx.noStore !== true) { // LRU touch (not for a request that asks not to be stored: Cache-Control: no-store)
      const value = server.cache.get(key)
      server.cache.delete(key)
      server.cache.set(key, value)
    }
    win.record(up.id, key, hit)
    const job = { ctx, hit, start: now, colony }
    if (server.busy < o.serverConcurrency) startService(server, job)
    else server.queue.push(job)
  }

  /** Put a page in a server's LRU cache, evicting the least recently used beyond its bound. */
  function store (server, key) {
    const cache = server.cache
    if (keySize === null) {
      cache.delete(key)
      cache.set(key, true)
      if (cache.size > server.cacheSize) cache.delete(cache.keys().next().value)
      return
    }
    const size = keySize.get(key)
    if (cache.has(key) || size > server.cacheBytes) return // as lru-cache: a page larger than the cache is not kept
    cache.set(key, size)
    server.bytes += size
    while (server.bytes > server.cacheBytes) {
      const [oldest, bytes] = cache.entries().next().value
      cache.delete(oldest)
      server.bytes -= bytes
    }
  }

  function complete (ev) {
    now = ev.time
    const { server, job } = ev
    server.busy--
    if (!job.hit && job.ctx.noStore !== true) store(server, job.ctx.key)
    const up = server.views[job.colony]
    up.inflight--
    inflightTotal--
    const policy = policies[job.colony]
    if (policy.onEnd) {
      policy.onEnd(up, job.ctx, {
        latencyMs: now - job.start,
        statusCode: 200,
        error: undefined,
        cache: o.feedback ? (job.hit ? 'HIT' : 'MISS') : undefined
      })
    }
    if (server.queue.length > 0) startService(server, server.queue.shift())
  }

  /**
   * Dispatch `n` more requests (completing earlier ones as simulated time advances) and return the
   * statistics of exactly those `n` requests.
   */
  function run (n) {
    const win = createWindow()
    let dispatched = 0
    while (dispatched < n) {
      if (inflightTotal < o.inflight || heap.size === 0) {
        dispatch(win)
        dispatched++
      } else {
        complete(heap.pop())
      }
    }
    return win.summary(lists[0].map((u) => u.id))
  }

  for (const id of ids) addUpstream(id)
  setPopularity(o.popularity)

  return {
    run,
    addUpstream,
    removeUpstream,
    setPopularity,
    permute,
    rotate,
    /** the upstream list colony 0 sees (the only one without colonies) */
    get upstreams () { return lists[0] },
    get now () { return now },
    get picks () { return picks },
    /** ids of the pages each upstream holds now */
    caches () {
      const out = {}
      for (const [id, s] of servers) out[id] = [...s.cache.keys()]
      return out
    }
  }
}

/** Statistics over one window of requests. */
function createWindow () {
  let requests = 0
  let hits = 0
  const counts = new Map() // id -> n
  const perKey = new Map() // key -> Map(id -> n)
  return {
    dropped: 0,
    record (id, key, hit) {
      requests++
      if (hit) hits++
      counts.set(id, (counts.get(id) || 0) + 1)
      let m = perKey.get(key)
      if (!m) perKey.set(key, (m = new Map()))
      m.set(id, (m.get(id) || 0) + 1)
    },
    /** @param {string[]} present ids eligible at the end of the window */
    summary (present) {
      const all = new Set([...present, ...counts.keys()])
      const countObj = {}
      for (const id of all) countObj[id] = counts.get(id) || 0
      // balance over the upstreams present at the end of the window (a removed one's tail is not load)
      const presentCounts = present.map((id) => counts.get(id) || 0)
      const mean = presentCounts.reduce((a, b) => a + b, 0) / Math.max(1, presentCounts.length)
      const balance = mean > 0 ? Math.max(...presentCounts) / mean : 0
      // per key: share of its requests served by its top 2 upstreams, and how many upstreams served it
      let minTop2 = 1
      let weighted = 0
      let keysOk = 0
      const servedBy = {}
      for (const [key, m] of perKey) {
        const ns = [...m.values()].sort((a, b) => b - a)
        const total = ns.reduce((a, b) => a + b, 0)
        const top2 = (ns[0] + (ns[1] || 0)) / total
        minTop2 = Math.min(minTop2, top2)
        weighted += top2 * total
        if (top2 >= 0.9) keysOk++
        servedBy[key] = Object.fromEntries(m)
      }
      return {
        requests,
        hits,
        hitRate: requests ? hits / requests : 0,
        dropped: this.dropped,
        counts: countObj,
        balance,
        top2: {
          min: perKey.size ? minTop2 : 1, // the worst key's top-2 share
          mean: requests ? weighted / requests : 1, // request-weighted top-2 share
          keysOver90: perKey.size ? keysOk / perKey.size : 1 // fraction of keys with top-2 share >= 0.9
        },
        servedBy
      }
    }
  }
}

/**
 * Run a standard scenario for a policy and return a summary row.
 * @param {(random: () => number) => object} makePolicy builds the policy from a random source
 * @param {object} [options] model options (seed, popularity, ...); `colonies` (default 1)
 *   independent policies, each with its own random source, share the upstreams
 */
function scenario (makePolicy, { seed = 1, warmup = 5000, measure = 5000, colonies = 1, ...options } = {}) {
  const policies = Array.from({ length: colonies }, (_, c) => makePolicy(mulberry32(seed * 7919 + 17 + c * 104729)))
  const model = createModel({ ...options, seed, policy: colonies === 1 ? policies[0] : policies })
  model.run(warmup)
  return model.run(measure)
}

/**
 * `npm run bench:model [-- --colonies 1,2,4] [--seeds 5] [--assign random] [--policy-options JSON]`:
 * without --colonies, hit rate, balance and key spread per policy; with it, the hit rate of K
 * independent colonies (balancer workers) sharing the same backends, per policy, wasp with the
 * options `polistes --workers K` gives it (`balanced` 16 for K > 1 unless --policy-options sets it).
 */
function cli (argv) {
  const yargs = require('yargs/yargs')
  const args = yargs(argv)
    .scriptName('npm run bench:model --')
    .option('colonies', { type: 'string', describe: 'comma-separated colony counts, e.g. 1,2,4,8,16' })
    .option('seeds', { type: 'number', default: 5, describe: 'seeds 1..N, averaged' })
    .option('assign', { type: 'string', choices: ['round-robin', 'random'], default: 'round-robin', describe: 'which colony takes the next request' })
    .option('policy-options', { type: 'string', default: '{}', describe: 'wasp options as JSON' })
    .option('pages', { type: 'number', describe: 'workload: distinct pages (2 to 100000); with any workload option the table shows each policy against the static optimum' })
    .option('popularity', { type: 'string', describe: 'workload: uniform | zipf:<s> (default zipf:1)' })
    .option('cache-pages', { type: 'number', describe: 'workload: pages each upstream caches (default: 12 % of the pages over 7 upstreams)' })
    .option('cache-bytes', { type: 'string', describe: 'workload: bytes each upstream caches instead of pages, e.g. 1m (LRU by size)' })
    .option('page-size', { type: 'string', describe: 'workload: fixed:BYTES | lognormal:MEDIAN,SIGMA (default fixed:62000)' })
    .option('churn', { type: 'boolean', describe: 'workload: one upstream down for the middle third of the measured window' })
    .option('shift', { type: 'string', describe: 'workload: SECONDS[,STEP]: the popularity ranking rotates by STEP places (default a tenth of the pages) every SECONDS of simulated time' })
    .option('warmup', { type: 'number', describe: 'workload: requests before the measured window (default: 100 per page, at least 20,000)' })
    .option('measure', { type: 'number', describe: 'workload: measured requests (default 30,000)' })
    .strict().help().version(false)
    .fail((msg, err) => { process.stderr.write(`bench:model: ${err ? err.message : msg}\n`); process.exit(2) })
    .parse()
  const { createRoundRobin } = require('../../src/policies/round-robin')
  const { createRandom } = require('../../src/policies/random')
  const { createChashBounded } = require('../../src/policies/chash-bounded')
  const { createWasp } = require('../../src/policies/wasp')
  let waspOptions
  try {
    waspOptions = JSON.parse(args['policy-options'])
    createWasp(waspOptions)
  } catch (err) {
    process.stderr.write(`bench:model: --policy-options: ${err.message}\n`)
    process.exit(2)
  }
  const seeds = Array.from({ length: args.seeds }, (_, i) => i + 1)
  const avg = (runs, f) => runs.reduce((a, r) => a + f(r), 0) / runs.length
  if (['pages', 'popularity', 'cache-pages', 'cache-bytes', 'page-size', 'churn', 'shift', 'warmup', 'measure'].some((k) => args[k] !== undefined)) {
    return workloadCli(args, seeds, waspOptions)
  }
  const label = (p) => p === 'uniform' ? 'uniform' : `zipf(${p.zipf})`
  const head = `7 upstreams x LRU 4 pages, 25 keys, 32 in flight; mean of seeds 1-${args.seeds}; 5,000 warm-up, 5,000 measured`
  if (args.colonies === undefined) {
    const policies = {
      'round-robin': (random) => createRoundRobin({}, { random }),
      random: (random) => createRandom({}, { random }),
      wasp: (random) => createWasp(waspOptions, { random })
    }
    const rows = []
    for (const popularity of ['uniform', { zipf: 1 }]) {
      for (const [name, make] of Object.entries(policies)) {
        const runs = seeds.map((seed) => scenario(make, { seed, popularity }))
        rows.push({
          popularity: label(popularity),
          policy: name,
          'hit rate': avg(runs, (r) => r.hitRate).toFixed(3),
          'balance (max/mean)': avg(runs, (r) => r.balance).toFixed(2),
          'top-2 share (min key)': avg(runs, (r) => r.top2.min).toFixed(3),
          'keys with top-2 >= 0.9': avg(runs, (r) => r.top2.keysOver90).toFixed(2)
        })
      }
    }
    console.log(head)
    console.table(rows)
    return
  }
  const counts = String(args.colonies).split(',').map(Number)
  if (counts.some((k) => !Number.isInteger(k) || k < 1 || k > 64)) {
    process.stderr.write(`bench:model: --colonies must list integers in [1, 64], got ${args.colonies}\n`)
    process.exit(2)
  }
  // K colonies get the options of `polistes --workers K` (wasp's `balanced` unless given)
  const { workerConfig } = require('../../src/run/cluster')
  const waspFor = (colonies) => workerConfig({ algo: 'wasp', policyOptions: waspOptions, workers: colonies }).policyOptions
  const policies = {
    wasp: (colonies) => (random) => createWasp(waspFor(colonies), { random }),
    'chash-bounded': () => (random) => createChashBounded({}, { random }),
    'round-robin': () => (random) => createRoundRobin({}, { random })
  }
  const rows = []
  for (const popularity of ['uniform', { zipf: 1 }]) {
    for (const [name, make] of Object.entries(policies)) {
      const row = { popularity: label(popularity), policy: name }
      for (const colonies of counts) {
        const runs = seeds.map((seed) => scenario(make(colonies), { seed, popularity, colonies, assign: args.assign }))
        row[`K=${colonies}`] = `${avg(runs, (r) => r.hitRate).toFixed(3)} (${Math.min(...runs.map((r) => r.hitRate)).toFixed(3)})`
      }
      rows.push(row)
    }
  }
  console.log(`${head}\nhit rate with K independent colonies (requests to colonies ${args.assign}); mean (worst seed)`)
  console.log(`wasp options: K = 1 ${JSON.stringify(waspFor(1))}; K > 1 ${JSON.stringify(waspFor(2))} (as with polistes --workers K)`)
  console.table(rows)
}

/** `bench:model` with workload options: wasp, chash-bounded, unbounded chash and round-robin against the static optimum. */
function workloadCli (args, seeds, waspOptions) {
  const { parseWorkload } = require('../workloads/workload-options')
  const { runWorkload } = require('./model-workload')
  const { createRoundRobin } = require('../../src/policies/round-robin')
  const { createChashBounded } = require('../../src/policies/chash-bounded')
  const { createWasp } = require('../../src/policies/wasp')
  let w
  try {
    w = parseWorkload(args)
  } catch (err) {
    process.stderr.write(`bench:model: ${err.message}\n`)
    process.exit(2)
  }
  const policies = {
    wasp: (random) => createWasp(waspOptions, { random }),
    'chash-bounded': (random) => createChashBounded({}, { random }),
    // unbounded consistent hashing: what HAProxy `balance uri` + `hash-type consistent` and nginx
    // `hash $request_uri consistent` do (the bench's haproxy-uri and nginx-uri peers)
    chash: (random) => createChashBounded({ balanceFactor: Number.MAX_SAFE_INTEGER }, { random }),
    'round-robin': (random) => createRoundRobin({}, { random })
  }
  const median = (xs) => { const a = [...xs].sort((x, y) => x - y); const m = a.length >> 1; return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2 }
  const warmup = args.warmup ?? Math.max(20000, 100 * w.pages)
  const measure = args.measure ?? 30000
  for (const [flag, n] of [['warmup', warmup], ['measure', measure]]) {
    if (!Number.isInteger(n) || n < (flag === 'warmup' ? 0 : 3)) {
      process.stderr.write(`bench:model: --${flag} must be a ${flag === 'warmup' ? 'non-negative' : 'positive'} integer of requests, got ${n}\n`)
      process.exit(2)
    }
  }
  const rows = []
  let optimum
  for (const [name, make] of Object.entries(policies)) {
    const runs = seeds.map((seed) => runWorkload(make, w, { seed, warmup, measure }))
    optimum = median(runs.map((r) => r.optimum))
    rows.push({
      policy: name,
      'hit rate (median)': median(runs.map((r) => r.hitRate)).toFixed(3),
      'per seed': runs.map((r) => r.hitRate.toFixed(3)).join(' '),
      'distance to optimum': median(runs.map((r) => r.distance)).toFixed(3),
      'balance (max/mean)': median(runs.map((r) => r.balance)).toFixed(2)
    })
  }
  console.log(`workload: ${w.describe}; seeds 1-${seeds.length}; ${warmup} warm-up, ${measure} measured requests`)
  console.log(`static optimum (the hottest pages that fit in the fleet's cache${w.churn ? ', time-averaged over the churn' : ''}): ${optimum.toFixed(3)}`)
  console.table(rows)
}

module.exports = { createModel, scenario, EventHeap }

if (require.main === module) cli(process.argv.slice(2))
