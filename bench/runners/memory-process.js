'use strict'

/**
 * `npm run bench:memory -- --process`: the resident memory of the real `npm start` process under
 * many distinct URLs (issue 25). bin/polistes.js runs as a child of this runner with its defaults
 * (wasp, the embedded fleet of 7 page backends, 4-page caches, 20 ms per miss) but ports chosen by
 * the system; a load generator in another process (bench/load/distinct-urls-child.js) sends the
 * URLs step by step; between steps the load stops and the RSS of the polistes process and of its
 * child processes (none unless the fleet runs in processes) is read from /proc (Linux). During each
 * step it is sampled every 250 ms for the step's peak.
 */

const fs = require('node:fs')
const path = require('node:path')
const http = require('node:http')
const { spawn } = require('node:child_process')
const { once } = require('node:events')
const { Child } = require('../children/child')
const { childPids } = require('../peers/peers')
const { DEFAULTS } = require('../../src/config/defaults')

const BIN = path.join(__dirname, '..', '..', 'bin', 'polistes.js')
const LOAD = path.join(__dirname, '..', 'load', 'distinct-urls-child.js')
const START_TIMEOUT_MS = 20000
const STOP_TIMEOUT_MS = 15000
const SAMPLE_MS = 250
const SETTLE_MS = 500

/**
 * Resident set of one process, KiB, from /proc/<pid>/status (0 when it is gone).
 * @param {number} pid
 * @returns {number}
 */
function rssKiB (pid) {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) : 0
  } catch {
    return 0
  }
}

/**
 * RSS of a process and of its descendants, KiB.
 * @param {number} pid
 * @returns {{ own: number, children: number, count: number }} `count`: descendants read
 */
function treeRss (pid) {
  let children = 0
  let count = 0
  const todo = childPids(pid)
  while (todo.length > 0) {
    const p = todo.pop()
    children += rssKiB(p)
    count++
    todo.push(...childPids(p))
  }
  return { own: rssKiB(pid), children, count }
}

/**
 * Start bin/polistes.js and resolve once it listens.
 * @returns {Promise<{ child: import('node:child_process').ChildProcess, url: string }>}
 */
function startPolistes () {
  const child = spawn(
    process.execPath,
    [BIN, '--port', '0', '--fleet-base-port', '0', '--log-format', 'json'],
    { stdio: ['ignore', 'pipe', 'pipe'] }
  )
  let stderr = ''
  let pending = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (text) => { stderr = (stderr + text).slice(-4000) })
  child.stdout.setEncoding('utf8')
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`polistes did not listen within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS
    )
    const onExit = (code, signal) => fail(
      new Error(`polistes exited (${signal || code}) before listening: ${stderr.trim().split('\n').pop() || ''}`)
    )
    function fail (err) {
      clearTimeout(timer)
      child.off('exit', onExit)
      child.kill('SIGKILL')
      reject(err)
    }
    function onData (text) {
      pending += text
      let nl
      while ((nl = pending.indexOf('\n')) !== -1) {
        const line = pending.slice(0, nl)
        pending = pending.slice(nl + 1)
        let entry
        try { entry = JSON.parse(line) } catch { continue }
        if (typeof entry.msg === 'string' && entry.msg.startsWith('polistes listening on') && entry.url) {
          clearTimeout(timer)
          child.off('exit', onExit)
          child.stdout.off('data', onData)
          child.stdout.resume() // keep draining the log
          resolve({ child, url: entry.url })
          return
        }
      }
    }
    child.stdout.on('data', onData)
    child.on('exit', onExit)
    child.on('error', fail)
  })
}

/** SIGTERM, then SIGKILL if it has not exited in time. */
async function stopPolistes (child) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
  await exited
  clearTimeout(timer)
}

/** GET a JSON document, or null on any failure. */
function getJson (url) {
  return new Promise((resolve) => {
    http.get(url, { timeout: 5000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d) => { body += d })
      res.on('end', () => { try { resolve(JSON.parse(body)) } catch { resolve(null) } })
    }).on('error', () => resolve(null)).on('timeout', function () { this.destroy() })
  })
}

const mib = (kib) => (kib / 1024).toFixed(1)

/**
 * One run: a fresh polistes, `urls` distinct URLs of about `urlBytes` each, in steps.
 * @param {{ urls: number, step: number, connections: number }} o
 * @param {number} urlBytes
 * @returns {Promise<Array<{ sent: number, own: number, children: number, peak: number, seconds: number, statuses:
 *   Record<string, number> }>>}
 */
async function runOne (o, urlBytes) {
  const { child, url } = await startPolistes()
  const load = new Child(LOAD, { name: 'load generator' })
  const rows = []
  try {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
    const first = treeRss(child.pid)
    rows.push({ sent: 0, ...first, peak: first.own + first.children, seconds: 0, statuses: {}, errors: 0 })
    const statuses = {}
    let errors = 0
    for (let from = 0; from < o.urls; from += o.step) {
      const to = Math.min(o.urls, from + o.step)
      let peak = 0
      const sampler = setInterval(() => {
        const r = treeRss(child.pid)
        peak = Math.max(peak, r.own + r.children)
      }, SAMPLE_MS)
      const t0 = performance.now()
      let result
      try {
        result = await load.request('send', { url, from, to, urlBytes, connections: o.connections })
      } finally {
        clearInterval(sampler)
      }
      const seconds = (performance.now() - t0) / 1000
      for (const [status, n] of Object.entries(result.statuses)) statuses[status] = (statuses[status] || 0) + n
      errors += result.errors
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
      const r = treeRss(child.pid)
      rows.push({
        sent: to,
        ...r,
        peak: Math.max(peak, r.own + r.children),
        seconds,
        statuses: { ...statuses },
        errors
      })
    }
    const stats = await getJson(`${url}/_polistes/stats`)
    const state = stats && stats.policy && stats.policy.state
    rows.waspKeys = state && state.keys !== undefined ? state.keys : 'n/a'
    rows.backendStats = await statusOf(`${url}/_stats`)
    return rows
  } finally {
    await load.close()
    await stopPolistes(child)
  }
}

/** The status code a GET answers (0 on a failure). */
function statusOf (url) {
  return new Promise((resolve) => {
    http.get(url, { timeout: 5000 }, (res) => { res.resume(); resolve(res.statusCode) })
      .on('error', () => resolve(0)).on('timeout', function () { this.destroy() })
  })
}

/**
 * Run the section and print one table per URL length.
 * @param {{ urls: number, step: number, urlBytes: number[], connections: number }} o
 */
async function runProcessSection (o) {
  if (!fs.existsSync('/proc/self/status')) {
    process.stderr.write('bench:memory: --process reads the RSS from /proc (Linux)\n')
    process.exit(2)
  }
  console.log(`node ${process.version}; npm start (bin/polistes.js, defaults, embedded fleet of ` +
    `${DEFAULTS.fleet.count}, ports chosen by the system); ${o.urls.toLocaleString('en')} distinct URLs per ` +
    `run, ${o.connections} keep-alive connections, from another process`)
  for (const urlBytes of o.urlBytes) {
    const rows = await runOne(o, urlBytes)
    const last = rows[rows.length - 1]
    console.log(`\nURLs of ${urlBytes} bytes (3 in 4 answered 404, 1 in 4 a page with a distinct query ` +
      'string); RSS in MiB')
    console.log('| URLs sent | polistes | its children | total | step peak | step s |')
    console.log('| ---: | ---: | ---: | ---: | ---: | ---: |')
    for (const r of rows) {
      console.log(`| ${r.sent.toLocaleString('en')} | ${mib(r.own)} | ` +
        `${r.count > 0 ? mib(r.children) : '-'} | ${mib(r.own + r.children)} | ${mib(r.peak)} | ` +
        `${r.seconds ? r.seconds.toFixed(1) : '-'} |`)
    }
    const grow = rows.length > 2 ? (last.own + last.children) - (rows[1].own + rows[1].children) : 0
    console.log(`statuses ${JSON.stringify(last.statuses)}, errors ${last.errors}; from ` +
      `${rows[1].sent.toLocaleString('en')} to ${last.sent.toLocaleString('en')} URLs: ` +
      `${grow >= 0 ? '+' : ''}${mib(grow)} MiB; wasp keys held ${rows.waspKeys}; GET /_stats through the ` +
      `balancer: ${rows.backendStats}`)
  }
}

module.exports = { runProcessSection }
