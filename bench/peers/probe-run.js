'use strict'

/**
 * Run the probes of bench/peers/probes.js against polistes (each engine, as a child process of
 * bin/polistes.js, so a crash costs the run nothing but a restart) and against nginx and HAProxy
 * (bench/peers/peers.js PeerProcess, with the bench's configurations), each in front of its own
 * recording upstream: node:http on 127.0.0.1 port 0, keep-alive, recording every request it parses
 * (method, target, headers, body) and every one it cannot, and answering `<method> <target>`.
 * A TCP tap in front of it answers the response probes with their raw bytes instead.
 *
 * Each probe is sent as raw bytes on a fresh client connection; then, on a second connection, a
 * plain `GET /victim`, whose answer shows whether the pooled upstream connection was desynchronised.
 * Targets run in parallel (each has its own upstream), probes one after the other.
 */

const http = require('node:http')
const net = require('node:net')
const path = require('node:path')
const { spawn, execFileSync } = require('node:child_process')
const { once } = require('node:events')
const { PeerProcess, findBinary } = require('./peers')
const { parseResponse } = require('./probe-verdict')

const ROOT = path.join(__dirname, '..', '..')
const ENGINES = ['direct', 'node-http', 'undici', 'http-proxy']
const PEER_ARMS = { nginx: 'nginx-rr', haproxy: 'haproxy-rr' }

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The recording upstream.
 * @returns {Promise<{ url: string, port: number, records: object[], errors: object[], setRaw: (bytes: string | null)
 *   => void, close: () => Promise<void> }>}
 */
async function startProbeUpstream () {
  const records = []
  const errors = []
  let rawResponse = null
  const sockets = new Set()
  const track = (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)) }
  const server = http.createServer({ requireHostHeader: false, keepAliveTimeout: 60000 }, (req, res) => {
    const record = {
      method: req.method,
      target: req.url,
      httpVersion: req.httpVersion,
      headers: req.headers,
      rawHeaders: req.rawHeaders,
      body: '',
      complete: false
    }
    records.push(record)
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('error', () => {})
    req.on('end', () => {
      record.body = Buffer.concat(chunks).toString('latin1')
      record.complete = true
      res.end(`${req.method} ${req.url}`)
    })
  })
  server.on('clientError', (err, socket) => {
    errors.push({ code: err.code || 'ERROR', message: err.message })
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
    else socket.destroy()
  })
  server.on('connection', track)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')

  // the tap: pipes to node:http, or answers a response probe's raw bytes per request head
  const tap = net.createServer((client) => {
    track(client)
    let inner = null
    let pending = Buffer.alloc(0)
    client.on('error', () => {})
    client.on('close', () => { if (inner) inner.destroy() })
    client.on('data', (d) => {
      if (rawResponse !== null) {
        pending = Buffer.concat([pending, d])
        let end
        while ((end = pending.indexOf('\r\n\r\n')) !== -1) {
          const lines = pending.subarray(0, end).toString('latin1').split('\r\n')
          pending = pending.subarray(end + 4)
          const [method, target, version] = lines[0].split(' ')
          const headers = {}
          const rawHeaders = []
          for (const l of lines.slice(1)) {
            const i = l.indexOf(':')
            rawHeaders.push(l.slice(0, i).trim(), l.slice(i + 1).trim())
            headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
          }
          records.push({
            method,
            target,
            httpVersion: String(version).replace('HTTP/', ''),
            headers,
            rawHeaders,
            body: '',
            complete: true,
            raw: true
          })
          client.write(rawResponse)
          if (!rawResponse.startsWith('HTTP/')) client.end() // not a response: close after it
        }
        return
      }
      if (!inner) {
        inner = net.connect(server.address().port, '127.0.0.1')
        track(inner)
        inner.on('error', () => client.destroy())
        inner.on('data', (r) => client.write(r))
        inner.on('close', () => client.destroy())
      }
      inner.write(d)
    })
  })
  tap.listen(0, '127.0.0.1')
  await once(tap, 'listening')
  const port = tap.address().port
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    records,
    errors,
    setRaw (bytes) { rawResponse = bytes },
    async close () {
      for (const s of sockets) s.destroy()
      await Promise.all([new Promise((resolve) => server.close(resolve)), new Promise((resolve) => tap.close(resolve))])
    }
  }
}

/**
 * Send raw bytes on a new connection and read until a whole response, the close, or the time bound.
 * @param {number} port
 * @param {string} bytes latin1
 * @param {{ timeoutMs?: number }} [options]
 * @returns {Promise<{ raw: Buffer, closed: boolean, timedOut: boolean }>}
 */
function rawExchange (port, bytes, { timeoutMs = 1000 } = {}) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    let raw = Buffer.alloc(0)
    let done = false
    const finish = (closed, timedOut) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resolve({ raw, closed, timedOut })
    }
    const timer = setTimeout(() => finish(false, true), timeoutMs)
    socket.on('error', () => {})
    socket.on('connect', () => socket.write(Buffer.from(bytes, 'latin1')))
    socket.on('data', (d) => {
      raw = Buffer.concat([raw, d])
      if (parseResponse(raw).complete) finish(false, false)
    })
    socket.on('close', () => finish(true, false))
  })
}

/** The polistes version and commit, e.g. "polistes 0.1.0 (54538e1)". */
function polistesVersion () {
  const { version } = require(path.join(ROOT, 'package.json'))
  let commit = ''
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 5000,
      stdio: ['ignore', 'pipe', 'ignore']
    }).trim()
  } catch {}
  return `polistes ${version}${commit ? ` (${commit})` : ''}`
}

/** A polistes child process in front of `upstreamUrl`. */
class PolistesTarget {
  constructor ({ engine, front = 'fast' }) {
    this.engine = engine
    this.front = front
    this.name = `polistes ${engine}${front === 'fast' ? '' : ` (${front} front)`}`
    this.child = null
    this.exited = true
    this.restarts = 0
  }

  get args () {
    return [
      '--backends',
      this.upstreamUrl,
      '--port',
      '0',
      '--engine',
      this.engine,
      '--front',
      this.front,
      '--log-format',
      'json',
      '--log-level',
      'info'
    ]
  }

  get config () {
    return `polistes ${this.args.join(' ').replace(this.upstreamUrl, '<upstream>')}`
  }

  async start ({ upstreamUrl, timeoutMs = 20000 }) {
    this.upstreamUrl = upstreamUrl
    this.version = polistesVersion()
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'bin', 'polistes.js'), ...this.args],
      { stdio: ['ignore', 'pipe', 'pipe'] }
    )
    this.child = child
    this.exited = false
    this.stderr = ''
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-4000) })
    child.once('exit', () => { this.exited = true })
    let buffer = ''
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => {
          child.kill('SIGKILL')
          reject(new Error(`${this.name}: not listening within ${timeoutMs} ms: ${this.stderr}`))
        },
        timeoutMs
      )
      child.stdout.setEncoding('utf8')
      child.stdout.on('data', (d) => {
        buffer += d
        const lines = buffer.split('\n')
        buffer = lines.pop()
        for (const line of lines) {
          let entry
          try { entry = JSON.parse(line) } catch { continue }
          if (typeof entry.msg === 'string' && entry.msg.startsWith('polistes listening') && entry.url) {
            clearTimeout(timer)
            resolve(entry.url)
          }
        }
      })
      child.once('exit', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`${this.name} exited at startup (${code ?? signal}): ${this.stderr}`))
      })
    })
    child.stdout.resume()
    this.port = Number(new URL(url).port)
    return { url, port: this.port }
  }

  /** Restart after a crash, on a new port. */
  async restart () {
    this.restarts++
    return this.start({ upstreamUrl: this.upstreamUrl })
  }

  alive () { return !this.exited }

  async close () {
    if (!this.child || this.exited) return
    const exited = once(this.child, 'exit')
    this.child.kill('SIGTERM')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 3000)
    await exited
    clearTimeout(timer)
  }
}

/** nginx or HAProxy with the bench's round-robin configuration over the one upstream. */
class PeerTarget {
  constructor (peer) {
    this.peer = peer
    this.name = peer
    this.process = null
    this.restarts = 0
  }

  async start ({ upstreamUrl }) {
    this.upstreamUrl = upstreamUrl
    this.process = new PeerProcess(PEER_ARMS[this.peer])
    const info = await this.process.start({ backends: [{ id: 'upstream', url: upstreamUrl }] })
    this.version = info.version
    this.config = info.config.replaceAll(this.process.dir, '<dir>').replace(
      /127\.0\.0\.1:\d+/g,
      (s) => s === `127.0.0.1:${info.port}` ? '127.0.0.1:<port>' : '127.0.0.1:<upstream>'
    )
    this.port = info.port
    return info
  }

  async restart () {
    this.restarts++
    await this.process.close()
    return this.start({ upstreamUrl: this.upstreamUrl })
  }

  alive () { return Boolean(this.process && !this.process.exited) }

  async close () {
    if (this.process) await this.process.close()
  }
}

/**
 * The targets: polistes with each engine (fast front), then the installed peers.
 * @param {{ engines?: string[], fronts?: string[], peers?: string[] }} [options]
 * @returns {{ targets: Array<PolistesTarget | PeerTarget>, missing: string[] }}
 */
function makeTargets ({ engines = ENGINES, fronts = ['fast'], peers = Object.keys(PEER_ARMS) } = {}) {
  const targets = []
  for (const front of fronts) for (const engine of engines) targets.push(new PolistesTarget({ engine, front }))
  const missing = []
  for (const peer of peers) {
    if (!PEER_ARMS[peer]) throw new Error(`unknown peer "${peer}"; expected ${Object.keys(PEER_ARMS).join(', ')}`)
    if (findBinary(peer)) targets.push(new PeerTarget(peer))
    else missing.push(peer)
  }
  return { targets, missing }
}

/**
 * Run one probe on one started target.
 * @param {PolistesTarget | PeerTarget} target
 * @param {object} upstream from startProbeUpstream
 * @param {object} probe
 * @param {{ timeoutMs?: number, settleMs?: number }} [options]
 * @returns {Promise<object>} the outcome bench/peers/probe-verdict.js classifies
 */
async function runProbe (target, upstream, probe, { timeoutMs = 1000, settleMs = 40 } = {}) {
  if (!target.alive()) await target.restart()
  const firstRecord = upstream.records.length
  const firstError = upstream.errors.length
  if (typeof probe.upstreamResponse === 'string') upstream.setRaw(probe.upstreamResponse)
  let client
  try {
    client = await rawExchange(target.port, probe.request, { timeoutMs })
    await sleep(settleMs)
  } finally {
    upstream.setRaw(null)
  }
  let crashed = !target.alive()
  if (crashed) await target.restart()
  const victimExchange = await rawExchange(
    target.port,
    'GET /victim HTTP/1.1\r\nHost: probe.test\r\n\r\n',
    { timeoutMs }
  )
  const v = parseResponse(victimExchange.raw, { ended: victimExchange.closed })
  const victim = v.status ? { status: v.status, body: v.body ? v.body.toString('latin1') : '' } : null
  await sleep(settleMs)
  if (!target.alive()) { crashed = true; await target.restart() }
  return {
    client,
    upstream: upstream.records.slice(firstRecord),
    upstreamErrors: upstream.errors.slice(firstError),
    victim,
    crashed,
    upstreamPort: upstream.port
  }
}

/**
 * Start every target in front of its own upstream, run the probes on each (targets in parallel),
 * stop everything.
 * @param {{ probes: object[], targets: Array<PolistesTarget | PeerTarget>, timeoutMs?: number }} params
 * @returns {Promise<Array<{ name: string, version: string, config: string, restarts: number, outcomes: { [probe:
 *   string]: object }, error?: string }>>}
 */
async function runMatrix ({ probes, targets, timeoutMs = 1000 }) {
  return Promise.all(targets.map(async (target) => {
    const upstream = await startProbeUpstream()
    const result = { name: target.name, version: '', config: '', restarts: 0, outcomes: {} }
    try {
      await target.start({ upstreamUrl: upstream.url })
      result.version = target.version
      result.config = target.config
      for (const probe of probes) result.outcomes[probe.name] = await runProbe(target, upstream, probe, { timeoutMs })
      result.restarts = target.restarts
    } catch (err) {
      result.error = err.message
    } finally {
      await target.close().catch(() => {})
      await upstream.close()
    }
    return result
  }))
}

module.exports = { ENGINES, PEER_ARMS, makeTargets, runMatrix }
