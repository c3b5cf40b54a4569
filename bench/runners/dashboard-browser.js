'use strict'

/**
 * What the dashboard's browser test and `npm run screenshot` share: the system's Chromium driven
 * by playwright-core, the polistes CLI in a child process, a bounded load from this process, and
 * a read-out of what the page drew. Everything stays on 127.0.0.1.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { spawn } = require('node:child_process')
const { once } = require('node:events')
const { mulberry32 } = require('../../src/common/prng')

const CLI = path.join(__dirname, '..', '..', 'bin', 'polistes.js')
/** The Debian/Ubuntu package's binary (`apt-get install chromium`); CHROMIUM_PATH overrides it. */
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']

/** @returns {string | null} the Chromium executable, or null when none is installed */
function chromiumPath () {
  try {
    fs.accessSync(CHROMIUM, fs.constants.X_OK)
    return CHROMIUM
  } catch {
    return null
  }
}

/**
 * Launch headless Chromium with a fresh profile in a temporary directory.
 * @param {{ width?: number, height?: number, timeoutMs?: number }} [options]
 * @returns {Promise<{ context: import('playwright-core').BrowserContext, close: () => Promise<void> }>}
 */
async function launchBrowser ({ width = 1400, height = 900, timeoutMs = 30000 } = {}) {
  const executablePath = chromiumPath()
  if (!executablePath) throw new Error(`no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`)
  const { chromium } = require('playwright-core')
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-chromium-'))
  let context
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath, headless: true, args: CHROMIUM_ARGS, viewport: { width, height }, timeout: timeoutMs
    })
  } catch (err) {
    fs.rmSync(profile, { recursive: true, force: true })
    throw err
  }
  context.setDefaultTimeout(timeoutMs)
  return {
    context,
    async close () {
      await context.close().catch(() => {})
      fs.rmSync(profile, { recursive: true, force: true })
    }
  }
}

/**
 * Start `polistes` (bin/polistes.js) in a child process on 127.0.0.1 and wait for its URL.
 * @param {string[]} args extra flags; `--port 0` unless a port is given
 * @param {{ timeoutMs?: number }} [options]
 * @returns {Promise<{ url: string, port: number, child: import('node:child_process').ChildProcess, stop: () =>
 *   Promise<void> }>}
 */
async function startCli (args = [], { timeoutMs = 15000 } = {}) {
  const all = ['--log-format', 'json', ...(args.includes('--port') ? [] : ['--port', '0']), ...args]
  const child = spawn(process.execPath, [CLI, ...all], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stdout.on('data', (d) => { out += d })
  child.stderr.on('data', (d) => { err += d })
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => { child.kill('SIGKILL'); reject(new Error(`polistes did not start within ${timeoutMs} ms: ${err}`)) },
      timeoutMs
    )
    const onData = () => {
      const m = /"url":"(http:\/\/[^"]+)"/.exec(out)
      if (m) { clearTimeout(timer); child.stdout.off('data', onData); child.off('exit', onExit); resolve(m[1]) }
    }
    const onExit = (code) => { clearTimeout(timer); reject(new Error(`polistes exited with ${code}: ${err.trim()}`)) }
    child.stdout.on('data', onData)
    child.once('exit', onExit)
  })
  return {
    url,
    port: Number(new URL(url).port),
    child,
    async stop () {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = once(child, 'exit')
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 8000)
      await exited
      clearTimeout(timer)
    }
  }
}

/**
 * Closed-loop load from this process: `connections` keep-alive loops asking for uniformly drawn
 * pages `/page1.html` … until `seconds` have passed and at least `minRequests` were sent (the pages
 * are drawn from a seeded sequence in the order the requests start, so the first N pages are known
 * whatever the machine's speed).
 * @param {string} url the balancer's origin
 * @param {{ seconds: number, connections?: number, pages?: number, seed?: number, minRequests?: number }} options
 * @returns {Promise<{ requests: number, errors: number, statuses: Record<number, number> }>}
 */
async function driveLoad (url, { seconds, connections = 6, pages = 25, seed = 1, minRequests = 0 }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections })
  const random = mulberry32(seed)
  const { hostname, port } = new URL(url)
  const end = Date.now() + seconds * 1000
  const result = { requests: 0, errors: 0, statuses: {} }
  let started = 0
  const one = () => new Promise((resolve) => {
    const req = http.get({
      host: hostname,
      port,
      path: `/page${1 + Math.floor(random() * pages)}.html`,
      agent
    }, (res) => {
      res.resume()
      res.on('end', () => {
        result.requests++
        result.statuses[res.statusCode] = (result.statuses[res.statusCode] || 0) + 1
        resolve()
      })
      res.on('error', () => { result.errors++; resolve() })
    })
    req.setTimeout(5000, () => req.destroy(new Error('timeout')))
    req.on('error', () => { result.errors++; setTimeout(resolve, 50) })
  })
  await Promise.all(Array.from({ length: connections }, async () => {
    while (Date.now() < end || started < minRequests) { started++; await one() }
  }))
  agent.destroy()
  return result
}

/**
 * Open the dashboard and wait until it has absorbed `minFrames` frames with at least `minSeconds`
 * seconds of series.
 * @param {import('playwright-core').BrowserContext} context
 * @param {string} url the balancer's origin
 * @param {{ minFrames?: number, minSeconds?: number, timeoutMs?: number }} [options]
 * @returns {Promise<import('playwright-core').Page>}
 */
async function openDashboard (context, url, { minFrames = 2, minSeconds = 2, timeoutMs = 15000 } = {}) {
  const page = await context.newPage()
  await page.goto(`${url}/_polistes/`, { waitUntil: 'load', timeout: timeoutMs })
  await waitForFrames(page, { minFrames, minSeconds, timeoutMs })
  return page
}

/** Wait until the page's dashboard has `minFrames` frames and `minSeconds` seconds of data. */
async function waitForFrames (page, { minFrames = 1, minSeconds = 0, timeoutMs = 15000 } = {}) {
  await page.waitForFunction(
    ([f, s]) => window.polistes && window.polistes.frames >= f && window.polistes.t.length >= s,
    [minFrames, minSeconds],
    { timeout: timeoutMs, polling: 100 }
  )
}

/**
 * What the page shows: frames absorbed, per chart the number of points and of non-empty series
 * and the share of canvas pixels painted, and the heat map's cells.
 * @param {import('playwright-core').Page} page
 */
function readDashboard (page) {
  return page.evaluate(() => {
    const s = window.polistes
    const charts = {}
    for (const [name, u] of Object.entries(s.charts)) {
      const canvas = u.ctx.canvas
      const { data } = u.ctx.getImageData(0, 0, canvas.width, canvas.height)
      let painted = 0
      for (let i = 3; i < data.length; i += 4) if (data[i] !== 0) painted++
      charts[name] = {
        points: u.data[0].length,
        series: u.data.length - 1,
        seriesWithData: u.data.slice(1).filter((ys) => ys.some((y) => y != null && y > 0)).length,
        painted: painted / (canvas.width * canvas.height)
      }
    }
    const cells = [...document.querySelectorAll('#heat td.cell')].map((td) => ({
      page: td.dataset.page,
      upstream: td.dataset.upstream,
      share: Number(td.dataset.share)
    }))
    return {
      frames: s.frames,
      status: document.getElementById('status').dataset.state,
      policy: document.getElementById('policy').textContent,
      charts,
      cells,
      pages: [...new Set(cells.map((c) => c.page))],
      upstreams: [...new Set(cells.map((c) => c.upstream))]
    }
  })
}

module.exports = {
  CHROMIUM,
  chromiumPath,
  launchBrowser,
  startCli,
  driveLoad,
  openDashboard,
  waitForFrames,
  readDashboard
}
