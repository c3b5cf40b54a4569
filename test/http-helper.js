'use strict'

const http = require('node:http')
const { once } = require('node:events')

/**
 * One real HTTP request with a hard time bound. Resolves with status, headers and body; rejects
 * on a socket error (e.g. a response the server broke off).
 * @param {string} url
 * @param {{ method?: string, headers?: object, body?: string, timeoutMs?: number, agent?: http.Agent | false }} [options]
 */
function request (url, { method = 'GET', headers = {}, body, timeoutMs = 5000, agent = false } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => {
        if (!res.complete) return reject(new Error('response incomplete'))
        resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() })
      })
      res.on('error', reject)
      res.on('aborted', () => reject(new Error('response aborted')))
    })
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer from ${url} within ${timeoutMs} ms`)))
    req.on('error', reject)
    req.end(body)
  })
}

/**
 * Start a plain upstream on 127.0.0.1:0 whose behaviour the test scripts.
 * @param {(req: http.IncomingMessage, res: http.ServerResponse) => void} handler
 * @returns {Promise<{ url: string, server: http.Server, sockets: Set<import('net').Socket>, requests: number, close: () => Promise<void> }>}
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

module.exports = { request, startUpstream, closedPort, sleep, waitFor }
