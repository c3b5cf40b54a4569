'use strict'

/**
 * Shared test helpers. Add to this file; do not rewrite what others use.
 */

const http = require('node:http')
const https = require('node:https')
const net = require('node:net')
const crypto = require('node:crypto')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn, execFileSync } = require('node:child_process')
const { once } = require('node:events')
const { oncePerRun } = require('./once-per-run')

/**
 * One HTTP request with the path sent exactly as given (no URL normalization, so `/../x` and
 * `/%2e%2e/x` reach the server unchanged) and a hard time bound.
 *
 * @param {string} base server origin, e.g. "http://127.0.0.1:1234"
 * @param {string} path raw request target
 * @param {{ method?: string, headers?: object, timeoutMs?: number, agent?: http.Agent|false }} [options]
 * @returns {Promise<{ status: number, headers: object, body: Buffer, ms: number }>} rejects on a
 *   socket error (e.g. a dropped connection) or the timeout
 */
function rawRequest (base, path, { method = 'GET', headers = {}, body, timeoutMs = 3000, agent = false } = {}) {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = http.request({ host: hostname, port, path, method, headers, agent }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => {
        if (!res.complete) return reject(new Error('response incomplete'))
        resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), ms: performance.now() - started })
      })
      res.on('error', reject)
    })
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer from ${base}${path} within ${timeoutMs} ms`)))
    req.on('error', reject)
    req.end(body)
  })
}

/**
 * {@link rawRequest} for a whole URL, with the body as a string. Rejects on a socket error, a
 * response the server broke off, or the time bound (default 5 s).
 * @param {string} url
 * @param {{ method?: string, headers?: object, body?: string, timeoutMs?: number, agent?: http.Agent | false }} [options]
 * @returns {Promise<{ status: number, headers: object, body: string }>}
 */
async function request (url, { timeoutMs = 5000, ...options } = {}) {
  const { origin, pathname, search } = new URL(url)
  const res = await rawRequest(origin, pathname + search, { timeoutMs, ...options })
  return { status: res.status, headers: res.headers, body: res.body.toString() }
}

/**
 * Start an upstream on 127.0.0.1:0 whose behaviour the test scripts: plain, or https with `tls`.
 * @param {(req: http.IncomingMessage, res: http.ServerResponse) => void} handler
 * @param {{ tls?: { cert: Buffer | string, key: Buffer | string } }} [options]
 * @returns {Promise<{ url: string, server: http.Server, sockets: Set<import('net').Socket>, requests: number, connections: number, close: () => Promise<void> }>}
 */
async function startUpstream (handler, { tls } = {}) {
  const sockets = new Set()
  const upstream = { url: '', server: null, sockets, requests: 0, connections: 0 }
  const onRequest = (req, res) => {
    upstream.requests++
    handler(req, res)
  }
  const server = tls ? https.createServer(tls, onRequest) : http.createServer(onRequest)
  server.on('connection', (socket) => {
    upstream.connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  upstream.server = server
  upstream.url = `${tls ? 'https' : 'http'}://127.0.0.1:${server.address().port}`
  upstream.close = () => new Promise((resolve) => {
    server.close(() => resolve())
    for (const s of sockets) s.destroy()
  })
  return upstream
}

/** Where `closedPort` looks: below Linux's ephemeral range (32768-60999), which every listen(0) and
 * every outgoing connection draws from, and clear of the fixed ports the fleet and CLI use (8080, 91xx). */
const CLOSED_FROM = 20000
const CLOSED_SPAN = 10000

/** Whether a connection to 127.0.0.1:`port` is refused. */
function refused (port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', (err) => resolve(err.code === 'ECONNREFUSED'))
  })
}

/**
 * A port where connections are refused. Not a port just released by listen(0): on 4 jest workers a
 * suite in another worker could be given it by its own listen(0) in between (one CI run's "refused"
 * backend answered 431), so it is one of 20000-29999, which no listen(0) ever gets, checked refused.
 */
async function closedPort () {
  for (let i = 0; i < 50; i++) {
    const port = CLOSED_FROM + Math.floor(Math.random() * CLOSED_SPAN)
    if (await refused(port)) return port
  }
  throw new Error(`closedPort: no refused port found in ${CLOSED_FROM}-${CLOSED_FROM + CLOSED_SPAN - 1}`)
}

/** Resolve after `ms`. */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A pino logger whose JSON lines the test can read back.
 * @param {string} [level='debug']
 * @returns {{ logger: import('pino').Logger, lines: object[] }}
 */
function logSink (level = 'debug') {
  const { Writable } = require('node:stream')
  const pino = require('pino')
  const lines = []
  const stream = new Writable({
    write (chunk, _enc, cb) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line))
      cb()
    }
  })
  return { logger: pino({ level }, stream), lines }
}

/**
 * Poll `fn` until it returns truthy or `timeoutMs` passes. The default is generous (it costs nothing
 * when the condition comes): with 3 jest workers on 2 cores a reload's log line once took over 3 s.
 */
async function waitFor (fn, { timeoutMs = 8000, stepMs = 20 } = {}) {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = await fn()
    if (value) return value
    if (Date.now() > end) throw new Error('condition not met in time')
    await sleep(stepMs)
  }
}

/**
 * Run a node script to completion with a time bound.
 *
 * @param {string} script path of the script
 * @param {string[]} args its arguments
 * @param {{ timeoutMs?: number }} [options]
 * @returns {Promise<{ code: number|null, signal: string|null, stdout: string, stderr: string }>}
 */
function runNode (script, args = [], { timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${script} did not exit within ${timeoutMs} ms`)) }, timeoutMs)
    child.on('error', (err) => { clearTimeout(timer); reject(err) })
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }) })
  })
}

/**
 * Start a server script (static-server.js, fleet.js) and resolve `url` with the first URL it prints
 * after "listening on"; `url` rejects if the process exits first.
 * @param {string} script
 * @param {string[]} args
 * @returns {{ child: import('node:child_process').ChildProcess, url: Promise<string> }}
 */
function startServerCli (script, args) {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  const url = new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m) resolve(m[1])
    })
    child.once('exit', (code) => reject(new Error(`exited with ${code}`)))
  })
  return { child, url }
}

/**
 * Test-only TLS material, made with `openssl` once per jest run and copied into a fresh temporary
 * directory (made there when run outside this jest config): a private CA (and its key), a
 * server certificate it signed for localhost and 127.0.0.1 (valid 2 days), that certificate's key,
 * a second unrelated key, a self-signed certificate no CA vouches for (all EC P-256: fast to make), and
 * a self-signed RSA certificate (`rsaCert`).
 * @returns {{ dir: string, rsaCert: string, ca: string, caKey: string, cert: string, key: string, otherKey: string, selfSigned: string, selfSignedKey: string, remove: () => void }} file paths
 */
function makeCertificates () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-tls-'))
  const f = (name) => path.join(dir, name)
  // made once per jest run (test/once-per-run.js) and copied: each caller has its own folder to write in
  const made = oncePerRun('certificates', (run) => {
    const folder = path.join(run, 'certificates')
    fs.mkdirSync(folder)
    generateCertificates(folder)
    return folder
  })
  if (made) fs.cpSync(made, dir, { recursive: true })
  else generateCertificates(dir)
  return {
    dir,
    rsaCert: f('rsa.pem'),
    ca: f('ca.pem'),
    caKey: f('ca.key'),
    cert: f('cert.pem'),
    key: f('key.pem'),
    otherKey: f('other.key'),
    selfSigned: f('self.pem'),
    selfSignedKey: f('self.key'),
    remove: () => fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** The files makeCertificates names, made with openssl in `dir`. */
function generateCertificates (dir) {
  const f = (name) => path.join(dir, name)
  const openssl = (...args) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10000 })
  const newKey = (file) => openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file)
  newKey(f('ca.key'))
  openssl('req', '-x509', '-new', '-key', f('ca.key'), '-days', '2', '-subj', '/CN=polistes test CA', '-out', f('ca.pem'))
  newKey(f('key.pem'))
  openssl('req', '-new', '-key', f('key.pem'), '-subj', '/CN=localhost', '-out', f('server.csr'))
  fs.writeFileSync(f('ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n')
  openssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial',
    '-days', '2', '-extfile', f('ext.cnf'), '-out', f('cert.pem'))
  newKey(f('other.key'))
  newKey(f('self.key'))
  openssl('req', '-x509', '-new', '-key', f('self.key'), '-days', '2', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-out', f('self.pem'))
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('rsa.key'), '-days', '2', '-subj', '/CN=localhost', '-out', f('rsa.pem'))
}

/**
 * The polistes CLI entry: bin/polistes.js when it exists, else src/run/cli.js.
 * @returns {string}
 */
function cliEntry () {
  const bin = path.join(__dirname, '..', 'bin', 'polistes.js')
  return fs.existsSync(bin) ? bin : path.join(__dirname, '..', 'src', 'run', 'cli.js')
}

/**
 * Start the polistes CLI as a server with JSON logs; `ready` resolves with the log line that says
 * where it listens (its `url` field), `lines` collects every parsed log line, `exited` resolves
 * with the exit code and signal.
 * @param {string[]} args
 * @param {{ timeoutMs?: number }} [options]
 * @returns {{ child: import('node:child_process').ChildProcess, lines: object[], exited: Promise<{ code: number|null, signal: string|null }>, ready: Promise<{ url: string }>, stderr: () => string }}
 */
function startCli (args, { timeoutMs = 10000 } = {}) {
  const child = spawn(process.execPath, [cliEntry(), '--log-format', 'json', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  const lines = []
  let buffer = ''
  child.stdout.on('data', (d) => {
    buffer += d
    const parts = buffer.split('\n')
    buffer = parts.pop()
    for (const part of parts) if (part.trim()) lines.push(JSON.parse(part))
  })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal }))
  const ready = waitFor(() => lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('polistes listening')), { timeoutMs })
    .catch((err) => { child.kill('SIGKILL'); throw new Error(`${err.message}; stderr: ${stderr}`) })
  return { child, lines, exited, ready, stderr: () => stderr }
}

/**
 * Parse the HTTP/1.1 responses at the start of `buffer`, in order. `methods[i]` is the method of
 * the request the i-th final response answers (a HEAD response has no body); 1xx interim
 * responses are returned too (with `interim: true`) and do not consume a method.
 * @param {Buffer} buffer
 * @param {string[]} [methods]
 * @param {{ ended?: boolean }} [options] `ended`: the connection closed (a body without length ends there)
 * @returns {{ responses: Array<{ status: number, reason: string, rawHeaders: string[], headers: object, body: Buffer, interim: boolean }>, rest: Buffer }}
 */
function parseResponses (buffer, methods = [], { ended = false } = {}) {
  const responses = []
  let pos = 0
  let finals = 0
  for (;;) {
    const headEnd = buffer.indexOf('\r\n\r\n', pos)
    if (headEnd === -1) break
    const lines = buffer.subarray(pos, headEnd).toString('latin1').split('\r\n')
    const m = /^HTTP\/1\.[01] (\d{3}) ?(.*)$/.exec(lines[0])
    if (!m) throw new Error(`not a status line: ${JSON.stringify(lines[0])}`)
    const status = Number(m[1])
    const rawHeaders = []
    const headers = {}
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':')
      const name = line.slice(0, colon).trim()
      const value = line.slice(colon + 1).trim()
      rawHeaders.push(name, value)
      const key = name.toLowerCase()
      headers[key] = key in headers ? `${headers[key]}, ${value}` : value
    }
    let cursor = headEnd + 4
    const interim = status >= 100 && status < 200 && status !== 101
    const method = methods[finals] || 'GET'
    let body = Buffer.alloc(0)
    if (interim || status === 101 || status === 204 || status === 304 || method === 'HEAD') {
      // no body
    } else if (/chunked/i.test(headers['transfer-encoding'] || '')) {
      const chunks = []
      let done = false
      for (;;) {
        const lineEnd = buffer.indexOf('\r\n', cursor)
        if (lineEnd === -1) break
        const size = parseInt(buffer.subarray(cursor, lineEnd).toString('latin1'), 16)
        if (Number.isNaN(size)) throw new Error('bad chunk size')
        if (size === 0) {
          const trailerEnd = buffer.indexOf('\r\n\r\n', lineEnd) // "0\r\n\r\n" or trailers then an empty line
          if (trailerEnd !== -1) {
            cursor = trailerEnd + 4
            done = true
          }
          break
        }
        if (buffer.length < lineEnd + 2 + size + 2) break
        chunks.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size))
        cursor = lineEnd + 2 + size + 2
      }
      if (!done) break
      body = Buffer.concat(chunks)
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length'])
      if (buffer.length < cursor + length) break
      body = buffer.subarray(cursor, cursor + length)
      cursor += length
    } else {
      if (!ended) break
      body = buffer.subarray(cursor)
      cursor = buffer.length
    }
    responses.push({ status, reason: m[2], rawHeaders, headers, body, interim })
    if (!interim) finals++
    pos = cursor
    if (status === 101) break // the rest belongs to the upgraded protocol
  }
  return { responses, rest: buffer.subarray(pos) }
}

/**
 * A raw TCP connection to an HTTP server, for bytes no HTTP client would send (pipelining,
 * smuggling attempts, malformed request lines). Every wait is bounded.
 */
class RawConnection {
  /** @param {string} url server origin */
  constructor (url) {
    const { hostname, port } = new URL(url)
    this.socket = net.connect({ host: hostname, port: Number(port) })
    this.socket.on('error', () => {}) // a reset shows as `closed`
    this.received = Buffer.alloc(0)
    this.consumed = 0
    this.ended = false
    this.socket.on('data', (d) => { this.received = Buffer.concat([this.received, d]) })
    this.closed = new Promise((resolve) => this.socket.once('close', () => { this.ended = true; resolve() }))
    this.connected = once(this.socket, 'connect')
  }

  /** @param {string | Buffer} bytes */
  async send (bytes) {
    await this.connected
    this.socket.write(bytes)
  }

  /**
   * Wait until `count` final responses (for requests with these `methods`) have arrived after the
   * ones already read, the connection closes, or `timeoutMs` passes.
   * @param {number} count
   * @param {{ methods?: string[], timeoutMs?: number }} [options]
   * @returns {Promise<{ responses: object[], closed: boolean, timedOut: boolean }>} the interim and
   *   final responses read (fewer finals than `count` when it closed or timed out)
   */
  async read (count, { methods = [], timeoutMs = 3000 } = {}) {
    const end = Date.now() + timeoutMs
    for (;;) {
      const { responses, rest } = parseResponses(this.received.subarray(this.consumed), methods, { ended: this.ended })
      const finals = responses.filter((r) => !r.interim).length
      if (finals >= count || this.ended || Date.now() > end) {
        this.consumed = this.received.length - rest.length
        return { responses, closed: this.ended, timedOut: finals < count && !this.ended }
      }
      await this.next(end - Date.now())
    }
  }

  /**
   * Resolve at the next bytes or the close (the constructor's listeners, added first, have taken
   * them in by then), or after `ms`: a read waits for what it waits on, not for a polling step.
   * @param {number} ms
   */
  next (ms) {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.socket.off('data', done)
        this.socket.off('close', done)
        resolve()
      }
      const timer = setTimeout(done, Math.max(0, ms) + 1)
      this.socket.on('data', done)
      this.socket.on('close', done)
    })
  }

  /** Bytes received and not yet parsed as responses. */
  unread () {
    return this.received.subarray(this.consumed)
  }

  /** Resolve true once the server closed the connection, false after `timeoutMs`. */
  waitClosed (timeoutMs = 3000) {
    let timer
    const late = new Promise((resolve) => { timer = setTimeout(resolve, timeoutMs, false) })
    return Promise.race([this.closed.then(() => true), late]).finally(() => clearTimeout(timer))
  }

  destroy () {
    this.socket.destroy()
  }
}

/**
 * An upstream that records exactly what reached it: each request's method, target, raw headers
 * and body (with its sha256), and, below HTTP, every byte received on every connection (a TCP
 * tap in front of the HTTP server), so a test can count request lines the way a smuggled request
 * would show. `handler` answers; the default echoes `method url` as text. Replace it per test.
 * @param {(req: http.IncomingMessage, res: http.ServerResponse, record: object) => void} [handler]
 * @returns {Promise<{ url: string, records: object[], handler: Function, raw: () => Buffer, requestLines: () => string[], connections: () => number, reset: () => void, server: http.Server, close: () => Promise<void> }>}
 */
async function startRecordingUpstream (handler) {
  const echo = (req, res) => res.end(`${req.method} ${req.url}`)
  const upstream = { url: '', records: [], handler: handler || echo, server: null }
  let rawChunks = []
  let connections = 0
  const sockets = new Set()
  const server = http.createServer((req, res) => {
    const record = { method: req.method, url: req.url, httpVersion: req.httpVersion, rawHeaders: req.rawHeaders, headers: req.headers, body: null, sha256: null, complete: false }
    upstream.records.push(record)
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      record.body = Buffer.concat(chunks)
      record.sha256 = crypto.createHash('sha256').update(record.body).digest('hex')
      record.complete = true
    })
    upstream.handler(req, res, record)
  })
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)) })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const tap = net.createServer((client) => {
    connections++
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    const inner = net.connect(server.address().port, '127.0.0.1')
    sockets.add(inner)
    inner.on('close', () => sockets.delete(inner))
    client.on('data', (d) => rawChunks.push(d))
    client.pipe(inner).pipe(client)
    client.on('error', () => inner.destroy())
    inner.on('error', () => client.destroy())
    client.on('close', () => inner.destroy())
    inner.on('close', () => client.destroy())
  })
  tap.listen(0, '127.0.0.1')
  await once(tap, 'listening')
  upstream.server = server
  upstream.url = `http://127.0.0.1:${tap.address().port}`
  upstream.raw = () => Buffer.concat(rawChunks)
  /** Lines of the raw input that look like an HTTP request line. */
  upstream.requestLines = () => upstream.raw().toString('latin1').split('\r\n').filter((l) => /^[A-Z]+ \S+ HTTP\/\d\.\d$/.test(l))
  upstream.connections = () => connections
  upstream.reset = () => {
    upstream.records.length = 0
    rawChunks = []
    upstream.handler = handler || echo
  }
  upstream.close = async () => {
    for (const s of sockets) s.destroy()
    await Promise.all([new Promise((resolve) => server.close(resolve)), new Promise((resolve) => tap.close(resolve))])
  }
  return upstream
}

/**
 * `describe` when every program is installed (bench/peers/peers.js findBinary), else `describe.skip`
 * with what is missing and how to install it in the title, so the skip says why.
 * @param {string[]} programs e.g. ['haproxy', 'wrk']
 * @param {string} title
 * @param {() => void} fn
 */
function describeIfInstalled (programs, title, fn) {
  const { findBinary } = require('../bench/peers/peers')
  const missing = programs.filter((p) => !findBinary(p))
  if (missing.length === 0) return describe(title, fn)
  const install = missing.map((p) => (p === 'nginx' ? 'nginx-light' : p)).join(' ')
  return describe.skip(`${title} [skipped: ${missing.join(', ')} not installed; apt-get install ${install}]`, fn)
}

/**
 * Whether a process id is alive (signal 0 only checks).
 * @param {number} pid
 * @returns {boolean}
 */
function alive (pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

module.exports = { logSink, alive, describeIfInstalled, rawRequest, request, runNode, startUpstream, closedPort, sleep, waitFor, startServerCli, cliEntry, startCli, parseResponses, RawConnection, startRecordingUpstream, makeCertificates }
