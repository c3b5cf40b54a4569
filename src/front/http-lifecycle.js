'use strict'

const { ERR_POLISTES_PORT_IN_USE, ERR_POLISTES_BAD_OPTION } = require('../common/errors')

const kActive = Symbol('polistes.activeResponses')
const kLifecycle = Symbol('polistes.lifecycle')

/**
 * @typedef {object} Lifecycle
 * @property {(port?: number, host?: string) => Promise<{ port: number, host: string, url: string }>} listen
 *   resolves once listening; rejects with ERR_POLISTES_PORT_IN_USE when the address is taken and
 *   ERR_POLISTES_BAD_OPTION for any other listen error (EADDRNOTAVAIL, EACCES, ENOTFOUND, ...)
 * @property {(options?: { graceMs?: number }) => Promise<void>} close graceful stop, idempotent
 * @property {boolean} closing true once close() was called
 */

/**
 * Own the listen and graceful close of one http.Server or https.Server. Call it right after
 * `http.createServer` (or `https.createServer`), before the server accepts anything: it counts
 * in-flight responses per connection (a number on the socket, no allocation per request) so that
 * close() can end each keep-alive connection as soon as its last response is out, instead of polling.
 * For an https server the connection is the TLS socket (after its handshake), and the URL is https://.
 *
 * close(): stop accepting; end idle connections now and busy ones when their last response ends;
 * requests that arrive meanwhile on an open connection are answered with `Connection: close`;
 * after `graceMs` every remaining connection is destroyed (TLS handshakes still under way too).
 *
 * @param {import('node:http').Server | import('node:https').Server} server
 * @param {{ name: string, backlog?: number }} options `name` starts error messages, e.g. 'balancer' or
 *   'backend a'; `backlog`: the listen queue of connections not yet accepted (default Node's 511; the
 *   kernel caps it at net.core.somaxconn). A connection that finds the queue full has its handshake
 *   dropped and retried by the client's SYN retransmission, 1 s later at best.
 * @returns {Lifecycle}
 */
function createLifecycle (server, { name, backlog }) {
  const sockets = new Set() // HTTP connections: the TLS sockets of an https server
  const raw = new Set() // every accepted TCP socket, TLS handshakes under way included
  const secure = typeof server.setSecureContext === 'function' // a tls.Server, i.e. https
  const scheme = secure ? 'https' : 'http'
  let closePromise = null
  const state = { closing: false }
  server[kLifecycle] = state

  server.on(secure ? 'secureConnection' : 'connection', (socket) => {
    socket[kActive] = 0
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  if (secure) {
    server.on('connection', (socket) => {
      raw.add(socket)
      socket.once('close', () => raw.delete(socket))
    })
  }
  // first, so that a handler answering synchronously already sees shouldKeepAlive = false
  server.prependListener('request', onRequest)

  /**
   * @param {number} [port=0] 0 picks a free port
   * @param {string} [host='127.0.0.1']
   */
  function listen (port = 0, host = '127.0.0.1') {
    return new Promise((resolve, reject) => {
      const onError = (err) => {
        server.off('listening', onListening)
        if (err.code === 'EADDRINUSE') {
          // which port to change
          reject(Object.assign(new ERR_POLISTES_PORT_IN_USE(name, host, port), { listener: name }))
        } else {
          reject(new ERR_POLISTES_BAD_OPTION(`${name}: cannot listen on ${host}:${port}: ${err.code || err.message}`))
        }
      }
      const onListening = () => {
        server.off('error', onError)
        const address = server.address()
        const shown = address.family === 'IPv6' || address.address.includes(':')
          ? `[${address.address}]`
          : address.address
        resolve({ port: address.port, host: address.address, url: `${scheme}://${shown}:${address.port}` })
      }
      server.once('error', onError)
      server.once('listening', onListening)
      server.listen({ port, host, ...(backlog ? { backlog } : {}) })
    })
  }

  /** @param {{ graceMs?: number }} [options] */
  function close ({ graceMs = 10000 } = {}) {
    if (closePromise) return closePromise
    state.closing = true
    closePromise = new Promise((resolve) => {
      if (!server.listening) return resolve()
      const grace = setTimeout(() => {
        server.closeAllConnections()
        for (const socket of raw) socket.destroy()
        for (const socket of sockets) socket.destroy() // connections node:http does not hold (src/front/fast-front.js)
      }, graceMs)
      server.close(() => {
        clearTimeout(grace)
        resolve()
      })
      for (const socket of sockets) if (!socket[kActive]) socket.end()
    })
    return closePromise
  }

  return {
    listen,
    close,
    get closing () { return state.closing }
  }
}

/** @this {import('node:http').Server} */
function onRequest (req, res) {
  const socket = req.socket
  socket[kActive] = (socket[kActive] || 0) + 1 // `|| 0`: a connection accepted before createLifecycle
  if (this[kLifecycle].closing) res.shouldKeepAlive = false
  res.on('close', onResponseClose)
}

/** @this {import('node:http').ServerResponse} */
function onResponseClose () {
  const socket = this.req.socket
  socket[kActive]--
  // after the flush of what was written; a closing server keeps no idle connection
  if (socket[kActive] === 0 && socket.server && socket.server[kLifecycle].closing) socket.end()
}

module.exports = { createLifecycle }
