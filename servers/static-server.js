'use strict'

/**
 * One page backend: node-static over `root`, behind guards, with its own bounded in-memory page
 * cache, emulated hit and miss service times, a finite number of workers with a FIFO queue (0 =
 * unlimited), a latency profile, a max-inflight limit and fault injection.
 * Every page response carries `X-Server: <id>` and `X-Cache: HIT|MISS`; `GET /_stats` reports
 * the counters as JSON (with a stats token, only `GET /_stats?token=<token>`: servers/stats-token.js).
 * Every structure is bounded whatever the number of distinct URLs: the page cache by its
 * capacity, the per-page counts by `statsKeys` (servers/served-counts.js; 404s are not counted).
 *
 * On a MISS node-static serves the file and the cache keeps what it writes (servers/cache-tee.js);
 * on a HIT we replay the cached body and entity headers from memory. A request with
 * `Cache-Control: no-store` (RFC 9111 §5.2.1.5; the balancer's admission hint) is served the same
 * way, but its MISS is not kept and its HIT leaves the page's LRU recency as it was.
 *
 * With `workers` > 0 a page request that passed the guards, the max-inflight limit and the fault
 * draw takes a worker (servers/worker-pool.js), in arrival order, before its cache lookup, and
 * holds it until its response has finished: the service time (`hitMs` or `missMs`, as a timer or
 * as CPU work, plus the latency profile's delay) and the page's read and write. `/_stats`, the
 * guards' answers and injected faults take no worker. A request whose client leaves while it
 * queues leaves the queue.
 */

const http = require('node:http')
require('./fleet-packages').assertFleetPackages()
const nodeStatic = require('node-static')
const { createLifecycle } = require('../src/front/http-lifecycle')
const { normalizeBackendOptions } = require('./backend-options')
const { createPageCache } = require('./page-cache')
const { teeFullBody, fullPageRequest } = require('./cache-tee')
const { serveStatic } = require('./serve-static')
const { createLatencyProfile } = require('./latency-profile')
const { createPeriodicLoad } = require('./periodic-load')
const { createFaults } = require('./faults')
const { burnCpu } = require('./miss-cost')
const { createCapacity } = require('./capacity')
const { checkMethod, resolvePagePath, guardWriteHead, parseRange } = require('./guards')
const { hasNoStore } = require('../src/proxy/cache-control')
const { createServedCounts } = require('./served-counts')
const { statsAllowed } = require('./stats-token')

/**
 * @typedef {object} BackendStats the body of `GET /_stats`
 * @property {string} id backend id
 * @property {number} pid process id
 * @property {number} requests GET/HEAD page requests that passed the guards
 *   (= hits + misses + rejected + faults.errors + faults.hangs + faults.drops)
 * @property {number} hits served from the page cache
 * @property {number} misses paid the miss cost and went to node-static (404s included)
 * @property {number} evictions pages pushed out of the cache by its capacity
 * @property {number} noStoreHits hits of requests with `Cache-Control: no-store`, served without
 *   refreshing the page's recency (counted in `hits` too)
 * @property {number} notStored misses of requests with `Cache-Control: no-store`, served and not
 *   kept (counted in `misses` too, 404s included)
 * @property {string[]} cachedKeys cached page paths, most recently used first
 * @property {number} cachedBytes total bytes of cached bodies
 * @property {number} inflight page requests being handled now (hung ones included)
 * @property {number} cachePages cache capacity in pages
 * @property {number} cacheBytes cache capacity in bytes of page bodies (0: bounded in pages)
 * @property {Record<string, number>} [served] with `GET /_stats?keys=1` only: page requests served
 *   (hits and misses answered with the page, 404s not counted) per page path, for the `statsKeys`
 *   paths served most recently (a path pushed out and back again starts over)
 * @property {number} statsKeys the cap of `served` (paths)
 * @property {number} servedKeys paths in `served` now
 * @property {number} servedDropped paths pushed out of `served` by the cap since the start
 * @property {number} missMs emulated I/O wait per miss
 * @property {number} missCpuMs emulated CPU work per miss
 * @property {number} hitMs emulated service time per hit
 * @property {'timer' | 'cpu'} service how hitMs / missMs are spent: a wait, or busy CPU work
 * @property {number} workers workers, 0 = unlimited (no queue)
 * @property {number} busy page requests holding a worker now
 * @property {number} queued page requests waiting for a worker now
 * @property {number} maxQueued the longest the queue has been since the start
 * @property {number} waited page requests that had to queue since the start
 * @property {number} hitServiceCount hits answered, the count behind hitServiceMs (their head was
 *   written: a client gone during the service time is not counted)
 * @property {number} hitServiceTotalMs measured time those hits held a worker, from taking it to the
 *   response's end, summed (ms; difference two snapshots for an interval's mean)
 * @property {number | null} hitServiceMs hitServiceTotalMs / hitServiceCount; null before the first
 * @property {number} missServiceCount misses answered (404s included)
 * @property {number} missServiceTotalMs as hitServiceTotalMs, for the misses
 * @property {number | null} missServiceMs missServiceTotalMs / missServiceCount; null before the first
 * @property {number[]} latencyProfile the repeating extra delays
 * @property {number} latencyIndex index in latencyProfile the next response uses
 * @property {object | null} periodic the periodic load (servers/periodic-load.js), null when none
 * @property {number} maxInflight limit, 0 = unlimited
 * @property {number} rejected answered 503 because of maxInflight
 * @property {number} guarded refused by the guards (400 / 403 / 405, and 404 for `/_stats` without
 *   the stats token, whatever the method); OPTIONS is not counted otherwise
 * @property {{ errors: number, hangs: number, drops: number }} faults injected faults
 * @property {number} uptimeMs since createBackend
 */

/**
 * Create a backend (not yet listening).
 *
 * @param {object} [options]
 * @param {string} [options.id='a'] name reported in `X-Server` and /_stats
 * @param {string} [options.root] directory served (default: the repository's `public/`)
 * @param {number} [options.cachePages=4] page cache capacity (0 disables the cache)
 * @param {number} [options.cacheBytes=0] page cache capacity in bytes instead (LRU by size; 0: in pages)
 * @param {number} [options.missMs=20] I/O wait (timer) paid by each miss, ms
 * @param {number} [options.missCpuMs=0] synchronous CPU work paid by each miss, ms
 * @param {number} [options.hitMs=0] service time of each hit, ms
 * @param {number} [options.workers=0] workers; a page request holds one for its service time and
 *   queues (FIFO) when all are busy; 0 = unlimited
 * @param {'timer' | 'cpu'} [options.service='timer'] hitMs / missMs as a timer (the event loop
 *   stays free) or as busy CPU work (the event loop is blocked)
 * @param {number[]} [options.latencyProfile=[]] extra ms per response, cycling
 * @param {import('./periodic-load').PeriodicSpec | null} [options.periodic=null] extra ms per response
 *   by wall time (experiment B)
 * @param {() => number} [options.now=Date.now] wall clock of the periodic load, ms
 * @param {number} [options.maxInflight=0] beyond this many in-flight page requests answer 503 (0 = unlimited)
 * @param {number} [options.statsKeys=4096] page paths counted one by one for `/_stats?keys=1`
 * @param {string | null} [options.statsToken=null] when set, `/_stats` is answered only with
 *   `?token=<statsToken>` and is a 404 otherwise (servers/stats-token.js)
 * @param {{ errorRate?: number, hangRate?: number, dropRate?: number }} [options.faults] fault probabilities
 * @param {() => number} [options.random=Math.random] randomness for faults
 * @param {number} [options.closeGraceMs=2000] how long close() waits for in-flight requests before destroying them
 * @returns {{ listen: (port?: number, host?: string) => Promise<{ port: number, url: string }>,
 *   stats: () => BackendStats, close: () => Promise<void>, server: import('node:http').Server, id: string }}
 *   throws PolistesError ERR_POLISTES_BAD_OPTION for bad options
 */
function createBackend (options = {}) {
  const b = createState(normalizeBackendOptions(options))
  const server = http.createServer((req, res) => {
    handle(b, req, res).catch((err) => {
      // Nothing may escape as an unhandled rejection (Node 20 would exit).
      if (!res.headersSent) send(b, res, 500, 'internal error: ' + err.message)
      else res.destroy()
    })
  })
  server.keepAliveTimeout = 5000
  const lifecycle = createLifecycle(server, { name: `backend ${b.o.id}` })
  return {
    id: b.o.id,
    server,
    listen: (port, host) => listen(lifecycle, port, host),
    stats: (options) => stats(b, options),
    close: () => close(b, lifecycle)
  }
}

/**
 * A backend's parts and counters, from its normalized options: what the steps below read and change.
 * @param {object} o from normalizeBackendOptions
 */
function createState (o) {
  return {
    o,
    files: new nodeStatic.Server(o.root, { cache: false, serverInfo: 'polistes-backend' }),
    cache: createPageCache(o.cachePages, { maxBytes: o.cacheBytes }),
    served: createServedCounts(o.statsKeys), // page path -> hits + misses, bounded
    profile: createLatencyProfile(o.latencyProfile),
    periodic: createPeriodicLoad(o.periodic, o.now),
    faults: createFaults(o.faults, o.random),
    capacity: createCapacity(o),
    startedAt: performance.now(),
    hung: new Set(),
    counters: { requests: 0, rejected: 0, guarded: 0, errors: 0, hangs: 0, drops: 0 },
    inflight: 0,
    closing: false
  }
}

/**
 * The body of `GET /_stats`.
 * @param {object} b the backend's state
 * @param {{ keys?: boolean }} [options] `keys`: add the per-page `served` counts
 * @returns {BackendStats}
 */
function stats (b, { keys = false } = {}) {
  const { o, counters, served } = b
  const c = b.cache.stats()
  return {
    id: o.id,
    pid: process.pid,
    requests: counters.requests,
    hits: c.hits,
    misses: c.misses,
    evictions: c.evictions,
    noStoreHits: c.noStoreHits,
    notStored: c.notStored,
    cachedKeys: c.cachedKeys,
    cachedBytes: c.cachedBytes,
    inflight: b.inflight,
    cachePages: o.cachePages,
    cacheBytes: o.cacheBytes,
    missMs: o.missMs,
    missCpuMs: o.missCpuMs,
    hitMs: o.hitMs,
    service: o.service,
    ...b.capacity.stats(),
    latencyProfile: [...o.latencyProfile],
    latencyIndex: b.profile.position(),
    periodic: o.periodic,
    maxInflight: o.maxInflight,
    rejected: counters.rejected,
    guarded: counters.guarded,
    faults: { errors: counters.errors, hangs: counters.hangs, drops: counters.drops },
    uptimeMs: Math.round(performance.now() - b.startedAt),
    statsKeys: served.cap,
    servedKeys: served.size,
    servedDropped: served.dropped,
    ...(keys ? { served: served.snapshot() } : {})
  }
}

/** Write a whole response; while closing, with `Connection: close`. */
function reply (b, res, status, body, headers) {
  if (b.closing) res.setHeader('Connection', 'close')
  res.writeHead(status, headers)
  res.end(body)
}

/** A plain-text response: `text` and a newline. */
function send (b, res, status, text, headers = {}) {
  const body = text + '\n'
  const head = { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), ...headers }
  reply(b, res, status, body, head)
}

/**
 * One request: answered by the guards or `/_stats`, refused when busy, a fault, or a page served
 * by a worker (taken at once when one is free: with unlimited workers nothing waits).
 */
async function handle (b, req, res) {
  guardWriteHead(res)
  res.setHeader('X-Server', b.o.id)
  const route = routeOrAnswer(b, req, res)
  if (!route) return
  b.counters.requests++
  if (b.o.maxInflight > 0 && b.inflight >= b.o.maxInflight) {
    b.counters.rejected++
    return send(b, res, 503, 'busy', { 'Retry-After': '1' })
  }
  const gone = track(b, res)
  if (injectFault(b, req, res)) return // before taking a worker: a fault holds none
  const queued = b.capacity.take(res, gone)
  if (queued && !(await queued)) return // the client left while queued
  return servePage(b, req, res, route, gone, b.capacity.hold(res))
}

/**
 * Answer what is not a page request: `GET /_stats`, OPTIONS, refused methods and paths. With a
 * stats token, `/_stats` without it is refused 404 (counted in `guarded`), whatever the method.
 * @returns {import('./guards').PageRoute|null} the page to serve, or null when answered here
 */
function routeOrAnswer (b, req, res) {
  const method = checkMethod(req.method)
  const route = resolvePagePath(req.url, b.o.root)
  if (route.key === '/_stats' && !statsAllowed(req.url, b.o.statsToken)) {
    b.counters.guarded++
    send(b, res, 404, 'not found')
    return null
  }
  if (route.key === '/_stats' && !method) {
    const body = JSON.stringify(stats(b, { keys: /[?&]keys=1(&|$)/.test(req.url) }))
    const head = {
      'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store'
    }
    reply(b, res, 200, body, head)
    return null
  }
  if (method && method.status === 204) {
    reply(b, res, 204, undefined, method.headers)
    return null
  }
  const refusal = method || (route.status ? route : null)
  if (!refusal) return route
  b.counters.guarded++
  send(b, res, refusal.status, refusal.reason, refusal.headers)
  return null
}

/**
 * Count a page request in `inflight` until its response finishes or closes.
 * @returns {() => boolean} whether the response closed already (client abort, drop, destroyed hang)
 */
function track (b, res) {
  b.inflight++
  let done = false
  let gone = false
  const release = () => {
    if (!done) { done = true; b.inflight-- }
    b.hung.delete(res)
  }
  res.once('finish', release) // 'finish' comes first for a normal response ('close' follows a tick later)
  res.once('close', () => { gone = true; release() })
  return () => gone
}

/**
 * Inject the fault drawn for this request, if any: drop the socket, hang, or answer 500.
 * @returns {boolean} whether a fault took the request
 */
function injectFault (b, req, res) {
  const fault = b.faults.draw()
  if (fault === 'drop') {
    b.counters.drops++
    req.socket.destroy()
  } else if (fault === 'hang') {
    b.counters.hangs++
    if (b.closing) res.destroy() // close() already swept the hung set
    else b.hung.add(res)
  } else if (fault === 'error') {
    b.counters.errors++
    send(b, res, 500, 'injected error')
  }
  return fault !== null
}

/**
 * A HIT after the hit service time and the profile's extra delay, or a MISS after the miss cost,
 * unless the client left meanwhile; with `Cache-Control: no-store`, a HIT that does not refresh and
 * a MISS that is not kept. `held` (the capacity's hold) learns which of the two it is.
 */
async function servePage (b, req, res, route, gone, held) {
  const noStore = hasNoStore(req.headers['cache-control'])
  const page = b.cache.lookup(route.key, noStore)
  const extraMs = b.profile.next() + b.periodic.next()
  held.kind = page ? 'hit' : 'miss'
  if (page) {
    b.served.count(route.key)
    res.setHeader('X-Cache', 'HIT')
    await b.capacity.spend('hit', extraMs)
    if (!gone()) sendCached(b, req, res, page)
    return
  }
  res.setHeader('X-Cache', 'MISS')
  countOnSuccess(b, res, route.key)
  await b.capacity.spend('miss', extraMs)
  if (b.o.missCpuMs > 0) burnCpu(b.o.missCpuMs)
  if (!gone()) serveMiss(b, req, res, route, noStore)
}

/**
 * Count a miss in `served` once its response head says the page was found (status < 400), so
 * that the paths of 404s never enter the table; counted when the head is written, before the
 * client can hold the response.
 */
function countOnSuccess (b, res, key) {
  const writeHead = res.writeHead
  res.writeHead = function countingWriteHead (status, ...rest) {
    if (!res.headersSent && status < 400) b.served.count(key)
    return writeHead.call(res, status, ...rest)
  }
}

/** Replay a cached page: the whole body, or the one byte range asked for. */
function sendCached (b, req, res, page) {
  const range = parseRange(req.headers.range, page.body.length)
  if (!range) return reply(b, res, 200, page.body, { ...page.headers, 'Content-Length': page.body.length })
  reply(b, res, 206, page.body.subarray(range.start, range.end + 1), {
    ...page.headers,
    'Content-Range': `bytes ${range.start}-${range.end}/${page.body.length}`,
    'Content-Length': range.end - range.start + 1
  })
}

/**
 * Let node-static serve the file, and keep the page in the cache once its last byte is written
 * (unless the request said no-store).
 */
function serveMiss (b, req, res, route, noStore) {
  if (b.closing) res.setHeader('Connection', 'close')
  if (!noStore) teeFullBody(res, (body, headers) => b.cache.store(route.key, { body, headers }))
  serveStatic(b.files, route.key, fullPageRequest(req, route.url), res, (err) => {
    if (!err) return
    if (res.headersSent) return res.destroy() // a read error mid-stream: the body is truncated
    send(b, res, err.status || 500, err.message || 'error')
  })
}

/**
 * Start listening.
 *
 * @param {object} lifecycle the server's (src/front/http-lifecycle.js)
 * @param {number} [port=0] 0 for an ephemeral port
 * @param {string} [host='127.0.0.1'] interface
 * @returns {Promise<{ port: number, url: string }>} rejects with PolistesError
 *   ERR_POLISTES_PORT_IN_USE when the address is taken
 */
async function listen (lifecycle, port = 0, host = '127.0.0.1') {
  const { port: bound, url } = await lifecycle.listen(port, host)
  return { port: bound, url }
}

/**
 * Stop: no new connections, idle keep-alive sockets ended, hung requests destroyed; requests still
 * paying a miss or latency delay get `closeGraceMs` to finish (with `Connection: close`), then
 * every connection is destroyed. Idempotent.
 *
 * @returns {Promise<void>} resolves when the server is closed
 */
function close (b, lifecycle) {
  b.closing = true
  const closed = lifecycle.close({ graceMs: b.o.closeGraceMs })
  for (const res of b.hung) res.destroy()
  b.hung.clear()
  return closed
}

module.exports = { createBackend }

if (require.main === module) {
  const { runCli, yargsFor, intOption, exitOnStop } = require('./cli-support')
  const { BACKEND_FLAGS, backendOptionsFromArgs } = require('./backend-options')
  runCli('static-server', async (argv) => {
    const args = yargsFor(argv, 'One page backend: node-static + bounded page cache + emulated miss cost. ' +
      'With POLISTES_STATS_TOKEN set in the environment, /_stats answers only /_stats?token=<it>.')
      .option('port', { type: 'string', default: '9101', describe: 'port (0 = ephemeral)' })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'interface to listen on' })
      .option('id', { type: 'string', default: 'a', describe: 'backend id, sent as X-Server' })
      .options(BACKEND_FLAGS)
      .parse()
    const port = intOption('port', args.port, { min: 0, max: 65535 })
    const { STATS_TOKEN_ENV } = require('./stats-token')
    const statsToken = process.env[STATS_TOKEN_ENV] || null // from the environment, never argv (ps shows it)
    const backend = createBackend({ id: args.id, ...backendOptionsFromArgs(args), statsToken })
    const { url } = await backend.listen(port, args.host)
    const s = backend.stats()
    const cache = s.cacheBytes ? `${s.cacheBytes} bytes` : `${s.cachePages} pages`
    const workers = s.workers > 0 ? `${s.workers} workers` : 'unlimited workers'
    console.log(`backend ${s.id} listening on ${url} (pid ${process.pid}, cache ${cache}, hit ${s.hitMs} ms, ` +
      `miss ${s.missMs} ms, ${s.service}, ${workers})`)
    exitOnStop(() => backend.close())
    if (process.send) process.send({ type: 'ready', id: s.id, url, port: Number(new URL(url).port) })
  })
}
