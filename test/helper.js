'use strict'

/**
 * Shared test helpers. Add to this file; do not rewrite what others use.
 */

const http = require('node:http')
const { spawn } = require('node:child_process')
const { once } = require('node:events')

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
 * Start a plain upstream on 127.0.0.1:0 whose behaviour the test scripts.
 * @param {(req: http.IncomingMessage, res: http.ServerResponse) => void} handler
 * @returns {Promise<{ url: string, server: http.Server, sockets: Set<import('net').Socket>, requests: number, connections: number, close: () => Promise<void> }>}
 */
async function startUpstream (handler) {
  const sockets = new Set()
  const upstream = { url: '', server: null, sockets, requests: 0, connections: 0 }
  const server = http.createServer((req, res) => {
    upstream.requests++
    handler(req, res)
  })
  server.on('connection', (socket) => {
    upstream.connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  upstream.server = server
  upstream.url = `http://127.0.0.1:${server.address().port}`
  upstream.close = () => new Promise((resolve) => {
    server.close(() => resolve())
    for (const s of sockets) s.destroy()
  })
  return upstream
}

/** A port that was free a moment ago and is now closed (connections to it are refused). */
async function closedPort () {
  const server = http.createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Resolve after `ms`. */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Poll `fn` until it returns truthy or `timeoutMs` passes. */
async function waitFor (fn, { timeoutMs = 3000, stepMs = 20 } = {}) {
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
 * Start `bin/polistes.js` with JSON logs; `ready` resolves with the log line "polistes listening ...".
 * `lines` collects every parsed log line; `exited` resolves with { code, signal }.
 * @param {string[]} args
 * @param {{ timeoutMs?: number }} [options]
 */
function startCli (args, { timeoutMs = 10000 } = {}) {
  const cli = require('node:path').join(__dirname, '..', 'bin', 'polistes.js')
  const child = spawn(process.execPath, [cli, '--log-format', 'json', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
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
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const ready = waitFor(() => lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('polistes listening')), { timeoutMs })
    .catch((err) => { child.kill('SIGKILL'); throw new Error(`${err.message}; stderr: ${stderr}`) })
  return { child, lines, exited, ready, stderr: () => stderr }
}

module.exports = { rawRequest, request, runNode, startUpstream, closedPort, sleep, waitFor, startServerCli, startCli }
