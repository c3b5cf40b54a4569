'use strict'

/**
 * Child process holding the Node floor of `npm run bench:engine` (the `relay` arm): not a balancer,
 * the least work any Node proxy can do per request. It listens on `host`:0 and, for each client
 * connection, opens one connection to one backend (round-robin over the backends, per connection)
 * and relays bytes both ways without parsing anything. With wrk's keep-alive connections a request
 * costs it one read and one write each way through libuv and net.Socket, nothing more.
 *
 * Two ways to move the bytes, `mode` of `start`:
 * - `data` (the default): on 'data', write to the other side; pause on a full write buffer, resume on
 *   'drain'; end the other side on 'end'.
 * - `pipe`: `client.pipe(upstream)` and `upstream.pipe(client)`.
 * `data` is the default because it measured the cheaper: `npm run bench:engine -- --engines
 * relay:data,relay:pipe --rounds 3 --duration 8 --warmup 2`, CPU-s per 10k requests (medians),
 * data 0.935 vs pipe 1.002 under the default load and 0.553 vs 0.594 with `--cache-pages 25`
 * (pipe puts its own 'data' handler, pause/resume and 'unpipe' bookkeeping around the same write).
 *
 * Since it does not parse, it cannot route by page: a backend sees every page of the connections
 * it was given, so its cache hit rate is about cachePages / pages, and more requests wait for a miss.
 *
 * Requests: `start { backends: [{ url }], host?, mode? }` -> `{ url, port, pids }`; `cpu` ->
 * `process.cpuUsage()` (bench/children/child.js `serve`); `stats` -> `{ connections, upstreamErrors }`.
 * `close` stops it and exits.
 */

const net = require('node:net')
const { once } = require('node:events')
const { serve } = require('./child')

const MODES = ['data', 'pipe']

let server
const sockets = new Set()
let connections = 0
let upstreamErrors = 0

/** Relay by 'data' events and write(), with back-pressure. */
function relayData (from, to) {
  from.on('data', (chunk) => {
    if (!to.write(chunk)) {
      from.pause()
      to.once('drain', () => from.resume())
    }
  })
  from.on('end', () => to.end())
}

function track (socket) {
  sockets.add(socket)
  socket.on('close', () => sockets.delete(socket))
}

/**
 * @param {{ backends: Array<{ url: string }>, host?: string, mode?: 'data' | 'pipe' }} params
 * @returns {Promise<{ url: string, port: number, pids: number[] }>}
 */
async function start ({ backends, host = '127.0.0.1', mode = 'data' }) {
  if (server) throw new Error('relay already started')
  if (!MODES.includes(mode)) throw new Error(`unknown relay mode "${mode}"; expected one of: ${MODES.join(', ')}`)
  if (!Array.isArray(backends) || backends.length === 0) throw new Error('the relay needs at least one backend')
  const targets = backends.map((b) => {
    const u = new URL(b.url)
    if (u.protocol !== 'http:') throw new Error(`relay backends must be http:// URLs, got ${b.url}`)
    return { host: u.hostname, port: Number(u.port) || 80, noDelay: true }
  })
  let next = 0
  server = net.createServer({ noDelay: true }, (client) => {
    connections++
    const upstream = net.connect(targets[next])
    next = (next + 1) % targets.length
    track(client)
    track(upstream)
    const destroyBoth = () => { client.destroy(); upstream.destroy() }
    client.on('error', destroyBoth)
    upstream.on('error', () => { upstreamErrors++; destroyBoth() })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    if (mode === 'pipe') {
      client.pipe(upstream)
      upstream.pipe(client)
    } else {
      relayData(client, upstream)
      relayData(upstream, client)
    }
  })
  server.listen(0, host)
  await once(server, 'listening')
  const { port } = server.address()
  return { url: `http://${host}:${port}`, port, pids: [process.pid] }
}

serve({
  start,
  stats: () => ({ connections, upstreamErrors })
}, async () => {
  if (!server) return
  const closed = new Promise((resolve) => server.close(resolve))
  for (const s of sockets) s.destroy()
  await closed
})
