'use strict'

const http = require('node:http')
const https = require('node:https')
const { attachFastFront } = require('./fast-front')
const { destroyAfterLinger } = require('../common/linger')

/**
 * How often Node looks for requests past `headersTimeoutMs`/`requestTimeoutMs`. Node's default,
 * 30 s, lets a slow client hold its socket up to 30 s beyond the limit; a pass over the open
 * connections once a second costs next to nothing.
 */
const CHECK_INTERVAL_MS = 1000

/** The answers to a request Node could not parse, as Node itself writes them (no body). */
const ANSWERS = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout'
}

/**
 * @typedef {object} FrontLimits
 * @property {number} maxConnections open client connections; beyond, Node closes new ones at once
 * @property {number} headersTimeoutMs a request's headers must be in within this (else 408); also
 *   the TLS handshake timeout
 * @property {number} requestTimeoutMs the whole request, body included, within this (else 408)
 * @property {number} keepAliveTimeoutMs an idle client connection is closed after this
 * @property {number} maxHeaderSize bytes of request line and headers (else 431)
 */

/**
 * Create the server clients talk to: http, or https when `tls` holds a certificate and key, with
 * the client-side limits set. Not listening yet: give it to createLifecycle.
 *
 * With `fast` (plain HTTP only), simple requests are parsed and answered by src/front/fast-front.js and
 * the rest by node:http; the handler sees the same request/response surface either way.
 *
 * @param {(req: http.IncomingMessage, res: http.ServerResponse) => void} handler
 * @param {FrontLimits & { tls?: { cert: Buffer, key: Buffer } | null, fast?: { accepts: (url: string) => boolean,
 *   closing: () => boolean } | null, requireHost?: boolean }} options `requireHost: false`: an HTTP/1.1 request without
 *   Host reaches the handler, which must refuse it
 *   itself (the balancer's request checks do, and then forward nothing pipelined behind it)
 * @returns {http.Server | https.Server}
 */
function createFrontServer (handler, {
  tls = null,
  fast = null,
  requireHost = true,
  maxConnections,
  headersTimeoutMs,
  requestTimeoutMs,
  keepAliveTimeoutMs,
  maxHeaderSize
}) {
  const options = {
    requireHostHeader: requireHost,
    maxHeaderSize,
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    connectionsCheckingInterval: CHECK_INTERVAL_MS
  }
  const server = tls
    ? https.createServer({ ...options, cert: tls.cert, key: tls.key, handshakeTimeout: headersTimeoutMs }, handler)
    : http.createServer(options, handler)
  server.keepAliveTimeout = keepAliveTimeoutMs
  server.maxConnections = maxConnections
  if (fast && !tls) {
    attachFastFront(server, {
      keepAliveTimeoutMs,
      headersTimeoutMs,
      maxHeaderSize,
      accepts: fast.accepts,
      closing: fast.closing,
      refuse
    })
  }
  server.on('clientError', (err, socket) => {
    // bytes after a request that ends the connection (HTTP/1.0 without keep-alive, `Connection:
    // close`): RFC 9112 §9.6, not processed, but that request's answer is still due, and Node
    // closes the connection after it. A 400 here went out before it, in its place (fuzz case 593).
    if (err.code === 'HPE_CLOSED_CONNECTION') return
    refuse(socket, ANSWERS[err.code])
  })
  // CONNECT asks for a forward proxy, which polistes is not: refuse it, as nginx does
  server.on('connect', (req, socket) => refuse(socket))
  return server
}

/**
 * Answer a request polistes does not take with an empty error response and close: one Node could
 * not parse (too-large headers 431, too slow 408, malformed 400), a CONNECT, an upgrade it cannot
 * tunnel. As Node's own default, answered only when nothing was written on the connection yet
 * (never into the middle of a response); the connection is closed either way, at the latest
 * LINGER_MS later (src/common/linger.js).
 * @param {import('node:net').Socket} socket
 * @param {string} [status='400 Bad Request'] e.g. '503 Service Unavailable'
 */
function refuse (socket, status = '400 Bad Request') {
  if (!socket.writable || socket.destroyed || socket.bytesWritten > 0) return socket.destroy()
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
  destroyAfterLinger(socket)
}

module.exports = { createFrontServer, refuse, CHECK_INTERVAL_MS }
