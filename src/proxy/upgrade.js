'use strict'

const http = require('node:http')
const https = require('node:https')
const net = require('node:net')
const { forwardingHeaders, FRAMING } = require('./engines/headers')
const { CLIENT_FORWARDING } = require('./forwarded')
const { destroyAfterLinger } = require('../common/linger')

/** Headers that concern one hop only (RFC 9110 §7.6.1), never copied onto the upstream hop. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  // the handshake goes up without a body (the balancer refuses one that declares a body): what
  // follows the head is the tunnel's
  'content-length']

/**
 * @typedef {object} TunnelHandlers
 * @property {() => void} onOpen the upstream switched protocols: bytes now flow both ways
 * @property {(err: Error) => void} onFailure no connection or no answer from the upstream (the
 *   client was told 502 or 504)
 * @property {() => void} onClose the tunnel (or the refused attempt) is over; called once
 */

/**
 * Forward an HTTP/1.1 Upgrade request (WebSocket) to `target` and, once it answers 101, splice the
 * two sockets together, as HAProxy's tunnel mode does. An upstream that declines (any other
 * status) has its response relayed and the client connection closed. Independent of the proxy
 * engine: a tunnel owns one upstream connection for its whole life.
 *
 * @param {import('http').IncomingMessage} req the upgrade request (its `upgrade` event)
 * @param {import('net').Socket} socket the client connection
 * @param {Buffer} head bytes the client sent after the request head
 * @param {URL} target upstream origin
 * @param {{ timeoutMs: number, ca?: Buffer | null, trusted?: boolean } & TunnelHandlers} options `timeoutMs` bounds the
 *   wait for the upstream's answer, not the tunnel's life; `ca`: trusted CAs of an https upstream (default: Node's
 *   roots), verified against the name in its URL as the proxy engine does; `trusted`: the client's
 *   peer is a trusted proxy, whose forwarding headers are kept (default: replaced by ours)
 */
function tunnelUpgrade (req, socket, head, target, {
  timeoutMs,
  ca = null,
  trusted = false,
  lookup,
  onOpen,
  onFailure,
  onClose
}) {
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    onClose()
  }
  socket.on('close', close)
  socket.on('error', () => socket.destroy())

  const headers = forwardedHeaders(req, target, trusted)
  const hostname = target.hostname.replace(/^\[(.*)\]$/, '$1') // URL keeps IPv6 brackets
  const options = {
    host: hostname,
    port: target.port,
    method: req.method,
    path: req.url,
    headers,
    agent: false,
    setHost: false,
    ...(lookup ? { lookup } : {})
  }
  let proxyReq
  try {
    proxyReq = target.protocol === 'https:'
      ? https.request({
        ...options,
        ...(ca ? { ca } : {}),
        rejectUnauthorized: true,
        servername: net.isIP(hostname) ? '' : hostname
      })
      : http.request(options)
  } catch (err) {
    // node:http refuses to build the request (a header it will not send): never a crash
    onFailure(err)
    lastAnswer(socket)
    socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
    return
  }
  proxyReq.setTimeout(
    timeoutMs,
    () => proxyReq.destroy(Object.assign(new Error(`upstream timed out after ${timeoutMs} ms`), { code: 'ETIMEDOUT' }))
  )
  proxyReq.on('error', (err) => {
    if (socket.destroyed) return
    onFailure(err)
    const status = err.code === 'ETIMEDOUT' ? '504 Gateway Timeout' : '502 Bad Gateway'
    lastAnswer(socket)
    socket.end(`HTTP/1.1 ${status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)
  })
  proxyReq.on('upgrade', (proxyRes, upstreamSocket, upstreamHead) => {
    proxyReq.setTimeout(0)
    if (socket.destroyed) return upstreamSocket.destroy()
    socket.write(statusHead(proxyRes))
    if (upstreamHead.length) socket.write(upstreamHead)
    // the client's bytes after its head belong to the tunnel: they go up only now (see below)
    if (head.length) upstreamSocket.write(head)
    splice(socket, upstreamSocket, timeoutMs)
    onOpen()
  })
  proxyReq.on('response', (proxyRes) => {
    // the upstream declined the upgrade: relay its answer, then close (the client's
    // connection is in an undefined state for HTTP)
    proxyReq.setTimeout(0)
    lastAnswer(socket)
    socket.write(statusHead(proxyRes, { close: true }))
    proxyRes.pipe(socket)
    proxyRes.on('error', () => socket.destroy())
  })
  // The handshake goes up alone. Bytes the client sent after its head are held until the upstream
  // switches protocols: sent with the handshake, an upstream that declines (and stays in HTTP)
  // parses them as its next request, one that passed none of the balancer's checks (Host, framing,
  // forwarding headers) - a request smuggled behind a refused upgrade.
  proxyReq.end()
}

/**
 * The client connection of a handshake that gets no tunnel carries nothing more once the balancer's
 * answer is out. node:http hands the upgrade over paused, and a paused socket never sees the
 * client's FIN (or reset) behind bytes it has not read: whatever the client sent after its head
 * kept the socket open, and the attempt in flight on its upstream, for good (fuzz seed 20261142,
 * case 136821). So what the client sends from here on is read and dropped, and the socket is
 * destroyed at the latest LINGER_MS (src/common/linger.js) after the balancer's end went out.
 * @param {import('net').Socket} socket
 */
function lastAnswer (socket) {
  socket.resume()
  socket.once('finish', () => destroyAfterLinger(socket))
}

/**
 * Pipe two sockets into each other. A close or error on either side closes both; an end (FIN) on
 * one side is passed on, and whatever is still open `finMs` later is closed (HAProxy's
 * `timeout client-fin`), so a peer that never closes its half cannot hold the tunnel open.
 * @param {import('net').Socket} a
 * @param {import('net').Socket} b
 * @param {number} finMs
 */
function splice (a, b, finMs) {
  let timer = null
  const destroy = () => {
    clearTimeout(timer)
    a.destroy()
    b.destroy()
  }
  const onEnd = () => {
    if (!timer) timer = setTimeout(destroy, finMs).unref()
  }
  for (const [from, to] of [[a, b], [b, a]]) {
    from.on('error', destroy)
    from.on('close', destroy)
    from.on('end', onEnd)
    from.pipe(to)
  }
}

/**
 * The client's headers for the upstream hop: hop-by-hop removed, the upgrade kept, the forwarding
 * headers of the proxy engines (src/proxy/engines/headers.js forwardingHeaders).
 */
function forwardedHeaders (req, target, trusted) {
  const headers = { ...req.headers }
  for (const name of (req.headers.connection || '').split(',')) {
    const header = name.trim().toLowerCase()
    if (!FRAMING.has(header)) delete headers[header] // `Connection: host` does not take the Host away
  }
  for (const name of HOP_BY_HOP) delete headers[name]
  headers.connection = 'upgrade'
  if (!headers.host) headers.host = target.host // an HTTP/1.0 client may send none; HTTP/1.1 upstreams require one
  headers.upgrade = req.headers.upgrade
  if (!trusted) for (const name of CLIENT_FORWARDING) delete headers[name]
  const forwarding = forwardingHeaders(req, trusted)
  for (let i = 0; i < forwarding.length; i += 2) headers[forwarding[i]] = forwarding[i + 1]
  return headers
}

/** Status line and headers of an upstream response, as bytes for the client socket. */
function statusHead (res, { close = false } = {}) {
  let text = `HTTP/1.1 ${res.statusCode} ${res.statusMessage}\r\n`
  const raw = res.rawHeaders
  for (let i = 0; i < raw.length; i += 2) {
    // the body is relayed decoded, ended by the close
    if (close && /^(connection|transfer-encoding)$/i.test(raw[i])) continue
    text += `${raw[i]}: ${raw[i + 1]}\r\n`
  }
  if (close) text += 'Connection: close\r\n'
  return text + '\r\n'
}

module.exports = { tunnelUpgrade }
