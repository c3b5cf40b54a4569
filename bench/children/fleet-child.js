'use strict'

/**
 * Child process holding one fleet of backends (servers/fleet.js), so that the backends' event
 * loop is neither the balancer's nor the load generator's.
 *
 * Requests:
 * - `start { fleet, pages, pageSizes?, pagesDir?, seed?, host }` -> `{ backends: [{ id, url, port }], pageBytes }`:
 *   with other than the 25 committed pages, or with `pageSizes` (bytes per page), the pages are
 *   generated into a temporary directory (removed at close), unless `pagesDir` holds them already
 *   (a sweep generates them once for all its runs, and removes them); `pageBytes` is each page's size.
 * - `stats { keys? }` -> every backend's `GET /_stats` (with `keys`: `?keys=1`, requests per page),
 *   in fleet order. A backend killed by `kill` answers with its last counters until `restart`, and
 *   after it its counters go on from them (the restarted process starts at zero), so deltas between
 *   snapshots stay true across churn.
 * - `kill { index }`: crash one backend (a fleet of processes: SIGKILL; in-process: its listening socket
 *   and connections closed at once); `restart { index }`: start it again, cold, on its old port.
 * - `cpu`: this process's CPU plus its backend processes' (a fleet of processes), `process.cpuUsage()` form.
 * `close` stops the fleet and exits.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { serve } = require('./child')

const DEFAULT_PAGES = 25
const COUNTERS = ['requests', 'hits', 'misses', 'evictions', 'rejected', 'guarded', 'notStored', 'noStoreHits']
const agent = new http.Agent({ keepAlive: true })

let fleet
let tmpDir
const carried = [] // per backend: counters before its last restart
const last = [] // per backend: a promise of its counters when it was killed
const down = new Set()

function getJson (url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, timeout: 10000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { body += chunk })
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${url}: ${res.statusCode}`))
        try { resolve(JSON.parse(body)) } catch (err) { reject(err) }
      })
    })
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timeout`)))
    req.on('error', reject)
  })
}

async function start ({ fleet: fleetOptions, pages = DEFAULT_PAGES, pageSizes, pagesDir, host = '127.0.0.1' }) {
  const { startFleet } = require('../../servers/fleet')
  const options = { ...fleetOptions, basePort: 0, host }
  let root = path.join(__dirname, '..', '..', 'public')
  if (pagesDir) {
    options.root = pagesDir
    root = pagesDir
  } else if (pages !== DEFAULT_PAGES || pageSizes) {
    const { generatePages } = require('../../servers/pages')
    tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-bench-pages-'))
    generatePages({ count: pages, dir: tmpDir, sizes: pageSizes })
    options.root = tmpDir
    root = tmpDir
  }
  fleet = await startFleet(options)
  const pageBytes = []
  for (let n = 1; n <= pages; n++) pageBytes.push(fs.statSync(path.join(root, `page${n}.html`)).size)
  return { backends: fleet.backends.map(({ id, url, port }) => ({ id, url, port })), pageBytes }
}

/** Counters of `now` plus those carried over a restart. */
function withCarried (now, before) {
  if (!before) return now
  const out = { ...now }
  for (const k of COUNTERS) out[k] = (now[k] || 0) + (before[k] || 0)
  if (now.served || before.served) {
    out.served = { ...(before.served || {}) }
    for (const [key, n] of Object.entries(now.served || {})) out.served[key] = (out.served[key] || 0) + n
  }
  return out
}

async function fetchOne (i, keys) {
  const b = fleet.backends[i]
  const { statsPath } = require('../../servers/stats-token')
  // with the fleet's stats token, if it has one
  const s = await getJson(new URL(statsPath(fleet.statsToken, { keys }), b.url).href)
  return withCarried(s, carried[i])
}

async function stats ({ keys = false } = {}) {
  // a snapshot taken while a kill fetches the last counters waits for them
  return Promise.all(fleet.backends.map((b, i) => (down.has(i)
    ? last[i].then((s) => ({ ...s, down: true }))
    : fetchOne(i, keys))))
}

function checkIndex (index) {
  if (!fleet) throw new Error('no fleet started')
  if (!Number.isInteger(index) || index < 0 || index >= fleet.backends.length) {
    throw new Error(`no backend at index ${index}`)
  }
}

async function kill ({ index }) {
  checkIndex(index)
  if (down.has(index)) throw new Error(`backend ${fleet.backends[index].id} is down already`)
  down.add(index) // snapshots from now on see the counters fetched here
  last[index] = fetchOne(index, true)
  await last[index]
  await fleet.kill(index)
  return { id: fleet.backends[index].id, killedAt: Date.now() }
}

async function restart ({ index }) {
  checkIndex(index)
  if (!down.has(index)) throw new Error(`backend ${fleet.backends[index].id} is not down`)
  const t0 = performance.now()
  const b = await fleet.restart(index)
  carried[index] = await last[index]
  down.delete(index)
  // in process a restart takes well under a millisecond: Date.now() would read 0
  return { id: b.id, pid: b.pid, startMs: Math.round((performance.now() - t0) * 1000) / 1000 }
}

/** CPU of this process plus its backend processes (live ones, and those that were killed and reaped). */
function cpu () {
  const own = process.cpuUsage()
  // an in-process fleet (no backend pids) has no processes to add: no /proc read, no getconf
  if (!fleet || !fleet.kill || !fleet.backends.some((b) => b.pid)) return own
  const { procCpu } = require('../peers/peers')
  const add = (c) => { own.user += c.user; own.system += c.system }
  try {
    add(procCpu('self', { children: true }))
    fleet.backends.forEach((b, i) => { if (!down.has(i) && b.pid) add(procCpu(b.pid)) })
  } catch {} // no /proc, or a backend exiting: this process only
  return own
}

serve({ start, stats, kill, restart, cpu }, async () => {
  agent.destroy()
  if (fleet) await fleet.close()
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true })
})
