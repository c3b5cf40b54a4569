'use strict'

/**
 * A pure, seeded, event-driven closed-loop model of the experiment polistes is built for:
 * N upstreams, each with an LRU page cache of C pages and a service time (a hit is fast, a miss
 * pays an emulated cost), K keys requested with uniform or Zipf(s) popularity, and W requests in
 * flight at all times (a completion immediately triggers the next request). No sockets, no timers:
 * simulated time advances from one completion to the next, so a run is fast and reproducible.
 *
 * Any policy that follows the contract in docs/design.md ("The policy contract") can be plugged in
 * (round-robin, random, wasp).
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
 * Usage (the command line, `npm run bench:model`, is bench/runners/model.js):
 *   const model = createModel({ policy, upstreams: 7, cacheSize: 4, keys: 25, inflight: 32, seed: 1 })
 *   model.run(5000)               // warm-up
 *   const w = model.run(5000)     // { hitRate, balance, top2, counts, ... } over these 5000 requests
 *   model.removeUpstream('u3'); model.addUpstream('u3'); model.setPopularity({ zipf: 1 }); model.permute()
 */

const { mulberry32 } = require('../../src/common/prng')
const { EventHeap } = require('./event-heap')
const { createWindow } = require('./closed-loop-window')
const { FLEET_SIZE, upstreamIds, pageNames, zipfCumulative, rankOf, jittered } = require('./model-setup')

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { floor } = Math

const DEFAULTS = Object.freeze({
  upstreams: FLEET_SIZE, // a number (ids u0..u{n-1}) or an array of ids
  cacheSize: 4, // pages per upstream LRU; or an array, one size per upstream (in the order of `upstreams`)
  // bytes per upstream LRU instead of pages (a number, or an array per upstream); needs pageBytes
  cacheBytes: undefined,
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

/**
 * Create a closed-loop model.
 * @param {object} options see DEFAULTS; `policy` is required
 * @returns {object} the model: run(n), removeUpstream(id), addUpstream(id), setPopularity(p),
 *   permute(), upstreams (the eligible list the policy sees), now (simulated ms), picks
 */
function createModel (options = {}) {
  const m = createState({ ...DEFAULTS, ...options })
  for (const id of m.ids) addUpstream(m, id)
  setPopularity(m, m.o.popularity)
  return modelApi(m)
}

/** The model's state from its options, checked: everything the steps below read and change. */
function createState (o) {
  const policies = Array.isArray(o.policy) ? o.policy : [o.policy]
  if (policies.length === 0 || policies.some((p) => !p || typeof p.pick !== 'function')) {
    throw new TypeError('createModel: options.policy (a policy with pick(), or an array of them) is required')
  }
  if (o.assign !== 'round-robin' && o.assign !== 'random') {
    throw new TypeError(`createModel: assign must be 'round-robin' or 'random', got ${o.assign}`)
  }
  if (o.cacheBytes !== undefined && (!Array.isArray(o.pageBytes) || o.pageBytes.length !== o.keys)) {
    throw new TypeError('createModel: cacheBytes needs pageBytes, one size per key')
  }
  const keyNames = pageNames(o.keys)
  return {
    o,
    policies,
    random: mulberry32(o.seed),
    heap: new EventHeap(),
    servers: new Map(), // id -> { views, cache, busy, queue }; views[c] is what colony c sees
    // what each colony's policy sees: [{ id, inflight }], inflight counting that colony's requests only
    lists: policies.map(() => []),
    now: 0,
    seq: 0,
    inflightTotal: 0,
    turn: 0,
    picks: [],
    ids: upstreamIds(o.upstreams),
    keyNames,
    perm: keyNames.map((_, i) => i), // rank -> key index
    keySize: o.cacheBytes === undefined ? null : new Map(keyNames.map((k, i) => [k, o.pageBytes[i]])),
    cumulative: null // null = uniform
  }
}

/** What the caller holds: the model's controls and views of its state. */
function modelApi (m) {
  return {
    run: (n) => run(m, n),
    addUpstream: (id) => addUpstream(m, id),
    removeUpstream: (id) => removeUpstream(m, id),
    setPopularity: (popularity) => setPopularity(m, popularity),
    permute: () => permute(m),
    rotate: (step) => rotate(m, step),
    /** the upstream list colony 0 sees (the only one without colonies) */
    get upstreams () { return m.lists[0] },
    get now () { return m.now },
    get picks () { return m.picks },
    /** ids of the pages each upstream holds now */
    caches () {
      const out = {}
      for (const [id, s] of m.servers) out[id] = [...s.cache.keys()]
      return out
    }
  }
}

/** The option value of upstream `id`: `value` itself, or its entry when `value` is an array. */
function perUpstream (m, value, id, fallback) {
  if (!Array.isArray(value)) return value === undefined ? fallback : value
  const i = m.ids.indexOf(id)
  return i >= 0 && value[i] !== undefined ? value[i] : fallback
}

function addUpstream (m, id) {
  if (m.servers.has(id) && m.lists[0].some((u) => u.id === id)) return
  const weight = perUpstream(m, m.o.weights, id, undefined)
  const views = m.policies.map(() => (weight === undefined ? { id, inflight: 0 } : { id, inflight: 0, weight }))
  m.servers.set(id, {
    views,
    cache: new Map(),
    busy: 0,
    queue: [],
    cacheSize: perUpstream(m, m.o.cacheSize, id, DEFAULTS.cacheSize),
    cacheBytes: perUpstream(m, m.o.cacheBytes, id, undefined),
    bytes: 0
  })
  m.lists = m.lists.map((list, c) => [...list, views[c]])
}

function removeUpstream (m, id) {
  m.lists = m.lists.map((list) => list.filter((u) => u.id !== id))
}

function setPopularity (m, popularity) {
  const uniform = popularity === 'uniform' || popularity == null
  m.cumulative = uniform ? null : zipfCumulative(m.keyNames.length, popularity.zipf)
}

/**
 * Rotate the popularity ranking by `step` places (--shift): the key at rank r moves to rank
 * r - step, the hottest `step` keys go to the bottom.
 * @param {object} m
 * @param {number} step
 */
function rotate (m, step) {
  const perm = m.perm
  const k = ((step % perm.length) + perm.length) % perm.length
  const rotated = perm.slice(k).concat(perm.slice(0, k))
  for (let i = 0; i < perm.length; i++) perm[i] = rotated[i]
}

/** Shuffle which key holds which popularity rank (Fisher-Yates with the model's random). */
function permute (m) {
  const perm = m.perm
  for (let i = perm.length - 1; i > 0; i--) {
    const j = floor(m.random() * (i + 1))
    ;[perm[i], perm[j]] = [perm[j], perm[i]]
  }
}

function sampleKey (m) {
  return m.keyNames[m.perm[rankOf(m.random(), m.cumulative, m.keyNames.length)]]
}

function startService (m, server, job) {
  server.busy++
  const time = m.now + jittered(job.hit ? m.o.hitMs : m.o.missMs, m.o.jitter, m.random)
  m.heap.push({ time, seq: m.seq++, server, job })
}

/** The colony that takes the next request: the only one, the next in turn, or a random one. */
function nextColony (m) {
  const n = m.policies.length
  if (n === 1) return 0
  return m.o.assign === 'random' ? floor(m.random() * n) : m.turn++ % n
}

/** One request: a key, a colony, its policy's pick, the cache lookup, then service or the queue. */
function dispatch (m, win) {
  const key = sampleKey(m)
  const ctx = { key, method: 'GET' }
  const colony = nextColony(m)
  const policy = m.policies[colony]
  const up = policy.pick(m.lists[colony], ctx)
  if (up === undefined) {
    win.dropped++
    return
  }
  const server = m.servers.get(up && up.id)
  if (!server || server.views[colony] !== up) throw new Error(`policy picked an unknown upstream ${up && up.id}`)
  up.inflight++
  m.inflightTotal++
  if (policy.onStart) policy.onStart(up, ctx)
  if (m.o.recordPicks) m.picks.push(up.id)
  const hit = server.cache.has(key)
  // LRU touch (not for a request that asks not to be stored: Cache-Control: no-store)
  if (hit && ctx.noStore !== true) touch(server.cache, key)
  win.record(up.id, key, hit)
  const job = { ctx, hit, start: m.now, colony }
  if (server.busy < m.o.serverConcurrency) startService(m, server, job)
  else server.queue.push(job)
}

/** Make `key` the most recently used entry of an LRU map. */
function touch (cache, key) {
  const value = cache.get(key)
  cache.delete(key)
  cache.set(key, value)
}

/** Put a page in a server's LRU cache, evicting the least recently used beyond its bound. */
function store (m, server, key) {
  const cache = server.cache
  if (m.keySize === null) {
    cache.delete(key)
    cache.set(key, true)
    if (cache.size > server.cacheSize) cache.delete(cache.keys().next().value)
    return
  }
  const size = m.keySize.get(key)
  if (cache.has(key) || size > server.cacheBytes) return // as lru-cache: a page larger than the cache is not kept
  cache.set(key, size)
  server.bytes += size
  while (server.bytes > server.cacheBytes) {
    const [oldest, bytes] = cache.entries().next().value
    cache.delete(oldest)
    server.bytes -= bytes
  }
}

/** A request completes: its miss is cached, its policy told, the next queued one started. */
function complete (m, ev) {
  m.now = ev.time
  const { server, job } = ev
  server.busy--
  if (!job.hit && job.ctx.noStore !== true) store(m, server, job.ctx.key)
  const up = server.views[job.colony]
  up.inflight--
  m.inflightTotal--
  const policy = m.policies[job.colony]
  if (policy.onEnd) {
    policy.onEnd(up, job.ctx, {
      latencyMs: m.now - job.start,
      statusCode: 200,
      error: undefined,
      cache: m.o.feedback ? (job.hit ? 'HIT' : 'MISS') : undefined
    })
  }
  if (server.queue.length > 0) startService(m, server, server.queue.shift())
}

/**
 * Dispatch `n` more requests (completing earlier ones as simulated time advances) and return the
 * statistics of exactly those `n` requests.
 */
function run (m, n) {
  const win = createWindow()
  let dispatched = 0
  while (dispatched < n) {
    if (m.inflightTotal < m.o.inflight || m.heap.size === 0) {
      dispatch(m, win)
      dispatched++
    } else {
      complete(m, m.heap.pop())
    }
  }
  return win.summary(m.lists[0].map((u) => u.id))
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

module.exports = { createModel, scenario, DEFAULTS }
