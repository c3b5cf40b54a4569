'use strict'

/**
 * One page backend: node-static over `root`, behind guards, with its own bounded in-memory page
 * cache, an emulated miss cost, a latency profile, a max-inflight limit and fault injection.
 * Every page response carries `X-Server: <id>` and `X-Cache: HIT|MISS`; `GET /_stats` reports
 * the counters as JSON.
 *
 * How the cache is filled (the choice the design left open): on a MISS node-static stays the
 * file-serving path and writes the response itself; we tee what it writes for a full 200 into the
 * cache. On a HIT we replay the cached body and entity headers from memory. Reading the file
 * ourselves and serving it would bypass node-static entirely, which is what the experiment
 * replaces; teeing keeps node-static's headers (Content-Type, ETag, Last-Modified) and costs one
 * copy of the body per miss.
 */

const http = require('node:http')
const nodeStatic = require('node-static')
const { createLifecycle } = require('../src/http-lifecycle')
const { normalizeBackendOptions } = require('./backend-options')
const { createPageCache } = require('./page-cache')
const { createLatencyProfile } = require('./latency-profile')
const { createFaults } = require('./faults')
const { wait, burnCpu } = require('./miss-cost')
const { checkMethod, resolvePagePath, guardWriteHead, parseRange } = require('./guards')

/** Entity headers kept with a cached page and replayed on a hit. */
const KEPT_HEADERS = ['content-type', 'etag', 'last-modified']

/** Request headers that would make node-static answer something other than a full 200. */
const STRIPPED_ON_MISS = ['range', 'if-none-match', 'if-modified-since', 'accept-encoding']

/**
 * @typedef {object} BackendStats the body of `GET /_stats`
 * @property {string} id backend id
 * @property {number} pid process id
 * @property {number} requests GET/HEAD page requests that passed the guards
 *   (= hits + misses + rejected + faults.errors + faults.hangs + faults.drops)
 * @property {number} hits served from the page cache
 * @property {number} misses paid the miss cost and went to node-static (404s included)
 * @property {number} evictions pages pushed out of the cache by its capacity
 * @property {string[]} cachedKeys cached page paths, most recently used first
 * @property {number} cachedBytes total bytes of cached bodies
 * @property {number} inflight page requests being handled now (hung ones included)
 * @property {number} cachePages cache capacity in pages
 * @property {number} missMs emulated I/O wait per miss
 * @property {number} missCpuMs emulated CPU work per miss
 * @property {number[]} latencyProfile the repeating extra delays
 * @property {number} latencyIndex index in latencyProfile the next response uses
 * @property {number} maxInflight limit, 0 = unlimited
 * @property {number} rejected answered 503 because of maxInflight
 * @property {number} guarded refused by the guards (400 / 403 / 405); OPTIONS is not counted
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
 * @param {number} [options.missMs=20] I/O wait (timer) paid by each miss, ms
 * @param {number} [options.missCpuMs=0] synchronous CPU work paid by each miss, ms
 * @param {number[]} [options.latencyProfile=[]] extra ms per response, cycling
 * @param {number} [options.maxInflight=0] beyond this many in-flight page requests answer 503 (0 = unlimited)
 * @param {{ errorRate?: number, hangRate?: number, dropRate?: number }} [options.faults] fault probabilities
 * @param {() => number} [options.random=Math.random] randomness for faults
 * @param {number} [options.closeGraceMs=2000] how long close() waits for in-flight requests before destroying them
 * @returns {{ listen: (port?: number, host?: string) => Promise<{ port: number, url: string }>,
 *   stats: () => BackendStats, close: () => Promise<void>, server: import('node:http').Server, id: string }}
 *   throws PolistesError ERR_POLISTES_BAD_OPTION for bad options
 */
function createBackend (options = {}) {
  const o = normalizeBackendOptions(options)
  const files = new nodeStatic.Server(o.root, { cache: false, serverInfo: 'polistes-backend' })
  const cache = createPageCache(o.cachePages)
  const profile = createLatencyProfile(o.latencyProfile)
  const faults = createFaults(o.faults, o.random)
  const startedAt = performance.now()
  const hung = new Set()
  const counters = { requests: 0, rejected: 0, guarded: 0, errors: 0, hangs: 0, drops: 0 }
  let inflight = 0
  let closing = false

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err) => {
      // Nothing may escape as an unhandled rejection (Node 20 would exit).
      if (!res.headersSent) send(res, 500, 'internal error: ' + err.message)
      else res.destroy()
    })
  })
  server.keepAliveTimeout = 5000
  const lifecycle = createLifecycle(server, { name: `backend ${o.id}` })

  function stats () {
    const c = cache.stats()
    return {
      id: o.id,
      pid: process.pid,
      requests: counters.requests,
      hits: c.hits,
      misses: c.misses,
      evictions: c.evictions,
      cachedKeys: c.cachedKeys,
      cachedBytes: c.cachedBytes,
      inflight,
      cachePages: o.cachePages,
      missMs: o.missMs,
      missCpuMs: o.missCpuMs,
      latencyProfile: [...o.latencyProfile],
      latencyIndex: profile.position(),
      maxInflight: o.maxInflight,
      rejected: counters.rejected,
      guarded: counters.guarded,
      faults: { errors: counters.errors, hangs: counters.hangs, drops: counters.drops },
      uptimeMs: Math.round(performance.now() - startedAt)
    }
  }

  function send (res, status, text, headers = {}) {
    const body = text ? text + '\n' : ''
    if (closing) res.setHeader('Connection', 'close')
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), ...headers })
    res.end(body)
  }

  async function handle (req, res) {
    guardWriteHead(res)
    res.setHeader('X-Server', o.id)

    const method = checkMethod(req.method)
    const route = resolvePagePath(req.url, o.root)
    if (route.key === '/_stats' && !method) {
      const body = JSON.stringify(stats())
      if (closing) res.setHeader('Connection', 'close')
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' })
      return res.end(body)
    }
    if (method) {
      if (method.status === 204) {
        if (closing) res.setHeader('Connection', 'close')
        res.writeHead(204, method.headers)
        return res.end()
      }
      counters.guarded++
      return send(res, method.status, method.reason, method.headers)
    }
    if (route.status) {
      counters.guarded++
      return send(res, route.status, route.reason)
    }

    counters.requests++
    if (o.maxInflight > 0 && inflight >= o.maxInflight) {
      counters.rejected++
      return send(res, 503, 'busy', { 'Retry-After': '1' })
    }
    inflight++
    let done = false
    let gone = false
    const release = () => {
      if (!done) { done = true; inflight-- }
      hung.delete(res)
    }
    res.once('finish', release) // 'finish' comes first for a normal response ('close' follows a tick later)
    res.once('close', () => { gone = true; release() }) // client abort, drop, destroyed hang

    const fault = faults.draw()
    if (fault === 'drop') {
      counters.drops++
      return req.socket.destroy()
    }
    if (fault === 'hang') {
      counters.hangs++
      if (closing) return res.destroy() // close() already swept the hung set
      hung.add(res)
      return
    }
    if (fault === 'error') {
      counters.errors++
      return send(res, 500, 'injected error')
    }

    const page = cache.lookup(route.key)
    const extraMs = profile.next()
    if (page) {
      res.setHeader('X-Cache', 'HIT')
      await wait(extraMs)
      if (gone) return
      return sendCached(req, res, page)
    }
    res.setHeader('X-Cache', 'MISS')
    await wait(o.missMs + extraMs)
    if (o.missCpuMs > 0) burnCpu(o.missCpuMs)
    if (gone) return
    return serveMiss(res, req, route)
  }

  function sendCached (req, res, page) {
    const range = parseRange(req.headers.range, page.body.length)
    if (closing) res.setHeader('Connection', 'close')
    if (range) {
      res.writeHead(206, {
        ...page.headers,
        'Content-Range': `bytes ${range.start}-${range.end}/${page.body.length}`,
        'Content-Length': range.end - range.start + 1
      })
      return res.end(page.body.subarray(range.start, range.end + 1))
    }
    res.writeHead(200, { ...page.headers, 'Content-Length': page.body.length })
    res.end(page.body)
  }

  /**
   * Let node-static serve the file, and keep what it writes for a full 200.
   * node-static sees a request view, not `req`: a safe re-encoded URL, method GET (Node still
   * suppresses the body of a HEAD, because the real response belongs to a HEAD request; this avoids
   * node-static's second writeHead for non-GET methods) and no Range / conditional / gzip headers,
   * so that it always produces a full 200 that can be cached (its 206 path crashes on Node 20).
   */
  function serveMiss (res, req, route) {
    const headers = { ...req.headers }
    for (const name of STRIPPED_ON_MISS) delete headers[name]
    const view = { url: route.url, method: 'GET', headers }
    if (closing) res.setHeader('Connection', 'close')
    teeFullBody(res, (body, head) => cache.store(route.key, { body, headers: head }))
    files.serve(view, res, (err) => {
      if (!err) return
      if (res.headersSent) return res.destroy() // a read error mid-stream: the body is truncated
      send(res, err.status || 500, err.message || 'error')
    })
  }

  /**
   * Wrap res so that the body node-static writes for a full 200 is handed to `onFullBody` as soon as
   * its last byte is written (Content-Length reached), before node-static's own `res.end()`, which
   * only comes on the read stream's 'close': a client may already hold the whole page by then.
   */
  function teeFullBody (res, onFullBody) {
    const chunks = []
    let size = 0
    let status = 0
    let expected = -1
    let head = {}
    let kept = false
    const writeHead = res.writeHead
    const write = res.write
    const end = res.end
    const collect = (chunk, encoding) => {
      if (kept || status !== 200 || !chunk || typeof chunk === 'function') return
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8')
      chunks.push(buffer)
      size += buffer.length
      if (size === expected) {
        kept = true
        const headers = Object.fromEntries(KEPT_HEADERS.filter((k) => head[k] !== undefined).map((k) => [k, String(head[k])]))
        onFullBody(Buffer.concat(chunks), headers)
        chunks.length = 0
      }
    }
    res.writeHead = function teeWriteHead (code, ...rest) {
      if (!res.headersSent) {
        status = code
        const h = rest.find((a) => a && typeof a === 'object') || {}
        head = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]))
        expected = Number(head['content-length'])
      }
      return writeHead.call(res, code, ...rest)
    }
    res.write = function teeWrite (chunk, encoding, ...rest) {
      collect(chunk, encoding)
      return write.call(res, chunk, encoding, ...rest)
    }
    res.end = function teeEnd (chunk, encoding, ...rest) {
      collect(chunk, encoding)
      if (!kept && status === 200 && expected === 0) onFullBody(Buffer.alloc(0), {}) // an empty file
      kept = true
      chunks.length = 0
      return end.call(res, chunk, encoding, ...rest)
    }
  }

  /**
   * Start listening.
   *
   * @param {number} [port=0] 0 for an ephemeral port
   * @param {string} [host='127.0.0.1'] interface
   * @returns {Promise<{ port: number, url: string }>} rejects with PolistesError
   *   ERR_POLISTES_PORT_IN_USE when the address is taken
   */
  async function listen (port = 0, host = '127.0.0.1') {
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
  function close () {
    closing = true
    const closed = lifecycle.close({ graceMs: o.closeGraceMs })
    for (const res of hung) res.destroy()
    hung.clear()
    return closed
  }

  return { id: o.id, server, listen, stats, close }
}

module.exports = { createBackend }

if (require.main === module) {
  const { runCli, yargsFor, intOption } = require('./cli-support')
  const { BACKEND_FLAGS, backendOptionsFromArgs } = require('./backend-options')
  runCli('static-server', async (argv) => {
    const args = yargsFor(argv, 'One page backend: node-static + bounded page cache + emulated miss cost.')
      .option('port', { type: 'string', default: '9101', describe: 'port (0 = ephemeral)' })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'interface to listen on' })
      .option('id', { type: 'string', default: 'a', describe: 'backend id, sent as X-Server' })
      .options(BACKEND_FLAGS)
      .parse()
    const port = intOption('port', args.port, { min: 0, max: 65535 })
    const backend = createBackend({ id: args.id, ...backendOptionsFromArgs(args) })
    const { url } = await backend.listen(port, args.host)
    const s = backend.stats()
    console.log(`backend ${s.id} listening on ${url} (pid ${process.pid}, cache ${s.cachePages} pages, miss ${s.missMs} ms)`)
    if (process.send) {
      process.send({ type: 'ready', id: s.id, url, port: Number(new URL(url).port) })
      process.on('disconnect', stop) // the parent is gone: do not linger as an orphan
    }
    let stopping = false
    function stop () {
      if (stopping) return
      stopping = true
      backend.close().then(() => process.exit(0))
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
}
