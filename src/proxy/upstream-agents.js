'use strict'

const http = require('node:http')
const https = require('node:https')
const net = require('node:net')
const { ResponseParser } = require('./engines/response-parser')

const POOL = { maxFreeSockets: 256, scheduling: 'lifo' }

/** A 'data' listener on a free socket: bytes with no request outstanding; the socket is closed. */
function closeOutOfStep () {
  this.destroy()
}

/**
 * Sockets that read bytes beyond the answer of the request they carried (in the answer's own read,
 * or after it before the socket was free): never pooled. node:http's client drops the start of a
 * second message that comes in the same read as the end of an answer (a partial head it parses,
 * then frees with its parser), pools the socket, and parses the rest, when it comes, as the answer
 * to the next request sent there: a 502 for that request, or another exchange's bytes as its answer.
 */
const outOfStep = new WeakSet()
/** socket -> the 'data' listener that frames its current answer ({@link watchAnswer}) */
const watchers = new WeakMap()

/**
 * Frame the answer to `req` on its socket alongside node:http's client, with the direct engine's
 * parser (src/proxy/engines/response-parser.js): bytes past the end of that answer, or an answer
 * the parser refuses, mark the socket out of step, and the pool closes it instead of keeping it.
 * Call when the request has its socket (its 'socket' event), before any of it is written.
 * @param {import('http').ClientRequest} req
 */
function watchAnswer (req) {
  const socket = req.socket
  if (!socket) return
  const before = watchers.get(socket) // a socket handed from one request to the next without a stay in the pool
  if (before !== undefined) socket.removeListener('data', before)
  const head = req.method === 'HEAD'
  const parser = new ResponseParser({
    onHead: () => head,
    onBody: () => {},
    onComplete: () => {}
  })
  const watch = (data) => {
    if (parser.execute(data) !== null) {
      outOfStep.add(socket)
      socket.removeListener('data', watch)
      watchers.delete(socket)
    }
  }
  watchers.set(socket, watch)
  socket.on('data', watch)
}

/** pooled sockets taken again: socket -> its bytesWritten when it was */
const reusedAt = new WeakMap()
/** pooled sockets taken again: socket -> its bytesRead when it was */
const readAt = new WeakMap()
/** pooled sockets the upstream had already ended (FIN read) or that had closed when taken again */
const deadAtReuse = new WeakSet()

/**
 * How long after a request was written whole a close of its reused connection, with nothing read,
 * still counts as the upstream's close of an idle connection crossing the request (a round trip),
 * rather than an upstream that read the request and gave up on it.
 */
const IMMEDIATE_MS = 250

/**
 * Whether `req` failed on a pooled connection that brought nothing back since it was taken again:
 * the keep-alive race of RFC 9112 §9.3.1 (the upstream closed an idle connection as the request
 * went out on it), which says nothing of the upstream's health.
 * @param {import('http').ClientRequest} req
 * @returns {boolean}
 */
function staleConnection (req) {
  const socket = req.socket
  if (!req.reusedSocket || !socket) return false
  const before = readAt.get(socket)
  return before !== undefined && socket.bytesRead === before
}

/**
 * Whether `req`, which failed before any byte of its answer came back (and not by a timeout), may
 * go once more, whatever its method, on a new connection to the same upstream: it went out on a
 * reused connection that brought nothing back since ({@link staleConnection}), and that connection
 * had been ended by the upstream before it was taken, or closed while the request was being
 * written or within {@link IMMEDIATE_MS} of its end. An upstream does not read what comes on a
 * connection it closed idle (RFC 9112 §9.3.1); one that read a request and then closed without a
 * byte of answer takes longer than a round trip to do so.
 * @param {import('http').ClientRequest} req
 * @param {number | null} writtenAt performance.now() when the request was written whole; null: not yet
 * @param {number} now performance.now() at the failure
 * @returns {boolean}
 */
function resendable (req, writtenAt, now) {
  if (!staleConnection(req)) return false
  return deadAtReuse.has(req.socket) || writtenAt === null || now - writtenAt < IMMEDIATE_MS
}

/**
 * Whether any of the current request went out on `socket` (always, on a socket not taken from
 * the pool). A response that comes before cannot be this request's: a request with a body sends
 * its head with the body's first bytes, and until then the upstream has nothing to answer.
 * @param {import('net').Socket | null} socket
 * @returns {boolean}
 */
function sentSinceReuse (socket) {
  if (!socket) return true
  const before = reusedAt.get(socket)
  return before === undefined || socket.bytesWritten > before
}

/**
 * The connection pools to upstreams: one keep-alive http.Agent shared by every http:// upstream,
 * and one https.Agent per https:// upstream origin.
 *
 * An https upstream is verified like a browser would verify it (certificate chain and name, always
 * on) against the name in its backend URL, never the client's Host header: Node's agent would
 * otherwise take the SNI name and the name it checks from the Host header the proxy forwards,
 * i.e. the balancer's public name. Hence `servername` per agent (empty for an IP address, which
 * SNI cannot carry; the certificate is then checked for that IP).
 *
 * @param {object} [options]
 * @param {boolean} [options.keepAlive=true] false: no http agent (a connection per request, as
 *   `agent: false`) and https agents that do not keep sockets
 * @param {Buffer | null} [options.ca] trusted CA certificates (PEM) for https upstreams, replacing
 *   Node's bundled roots; null: the bundled roots
 * @param {Function} [options.lookup] net.connect's `lookup` for the agents' new connections
 *   (with keepAlive false, none: each request's own agent resolves by node:dns)
 * @returns {{ agentFor: (target: URL) => http.Agent | false, freshAgentFor: (target: URL) => http.Agent,
 *   retire: (target: URL) => void, close: () => void }} `freshAgentFor`: an agent that pools nothing (a new
 *   connection per request); `retire`: close the idle sockets to that origin, and those in use once their request ends
 */
function createUpstreamAgents ({ keepAlive = true, ca = null, lookup } = {}) {
  const resolve = lookup ? { lookup } : {}
  /** sockets in use when their origin was retired: closed instead of pooled once free */
  const retired = new WeakSet()
  // A free (pooled) socket has no request outstanding: a byte from the upstream then (the rest of
  // an answer that was longer than it said, a second answer) means the connection is out of step,
  // and the next request would take those bytes for its answer. node:http's client leaves no
  // listener on a free socket (such bytes are dropped unseen), so the pool keeps a guard there
  // that closes it, and takes it off when the socket carries a request again (reuseSocket).
  const keepSocketAlive = function (socket) {
    const watch = watchers.get(socket)
    if (watch !== undefined) {
      socket.removeListener('data', watch)
      watchers.delete(socket)
    }
    if (outOfStep.has(socket)) return false // bytes past its last answer: out of step
    if (retired.has(socket) || socket.readableLength > 0) return false // bytes already waiting: out of step
    if (!Object.getPrototypeOf(this).keepSocketAlive.call(this, socket)) return false
    socket.on('data', closeOutOfStep)
    if (socket.isPaused()) socket.resume() // read (and so see) whatever comes while it waits
    return true
  }
  const reuseSocket = function (socket, req) {
    socket.removeListener('data', closeOutOfStep)
    reusedAt.set(socket, socket.bytesWritten)
    readAt.set(socket, socket.bytesRead)
    // the upstream's FIN read while the socket waited (its 'close' not yet here): the request sent
    // on it fails at once, and was read by no one
    if (socket.readableEnded || socket.destroyed || !socket.writable) deadAtReuse.add(socket)
    Object.getPrototypeOf(this).reuseSocket.call(this, socket, req)
  }
  const httpAgent = keepAlive ? new http.Agent({ keepAlive: true, ...POOL, ...resolve }) : false
  if (httpAgent) {
    httpAgent.keepSocketAlive = keepSocketAlive
    httpAgent.reuseSocket = reuseSocket
  }
  const httpsAgents = new Map()
  // agents that keep no socket, for the one resend of a request whose pooled connection was stale:
  // a new connection, verified as the pooled ones are
  const freshHttp = new http.Agent({ keepAlive: false, ...resolve })
  const freshHttps = new Map()

  /** The agent for one upstream, from its origin URL (`http:` or `https:`). */
  function agentFor (target) {
    if (target.protocol !== 'https:') return httpAgent
    let agent = httpsAgents.get(target.host)
    if (!agent) {
      const hostname = target.hostname.replace(/^\[(.*)\]$/, '$1') // URL keeps IPv6 brackets
      agent = new https.Agent({
        keepAlive,
        ...POOL,
        ...(ca ? { ca } : {}),
        rejectUnauthorized: true, // an agent's options override the request's: on whatever the proxy library sets
        servername: net.isIP(hostname) ? '' : hostname,
        ...resolve
      })
      agent.keepSocketAlive = keepSocketAlive
      agent.reuseSocket = reuseSocket
      httpsAgents.set(target.host, agent)
    }
    return agent
  }

  /**
   * An agent for `target` that opens a new connection for every request (none is pooled).
   * @param {URL} target
   * @returns {http.Agent}
   */
  function freshAgentFor (target) {
    if (target.protocol !== 'https:') return freshHttp
    let agent = freshHttps.get(target.host)
    if (!agent) {
      const hostname = target.hostname.replace(/^\[(.*)\]$/, '$1')
      agent = new https.Agent({
        keepAlive: false,
        ...(ca ? { ca } : {}),
        rejectUnauthorized: true,
        servername: net.isIP(hostname) ? '' : hostname,
        ...resolve
      })
      freshHttps.set(target.host, agent)
    }
    return agent
  }

  function retire (target) {
    const agent = agentFor(target)
    if (!agent) return
    const secure = target.protocol === 'https:'
    const prefix = `${target.hostname.replace(/^\[(.*)\]$/, '$1')}:${target.port || (secure ? 443 : 80)}:`
    for (const [name, sockets] of Object.entries(agent.freeSockets)) {
      if (name.startsWith(prefix)) for (const socket of [...sockets]) socket.destroy()
    }
    for (const [name, sockets] of Object.entries(agent.sockets)) {
      if (name.startsWith(prefix)) for (const socket of sockets) retired.add(socket)
    }
  }

  function close () {
    if (httpAgent) httpAgent.destroy()
    for (const agent of httpsAgents.values()) agent.destroy()
    httpsAgents.clear()
    freshHttp.destroy()
    for (const agent of freshHttps.values()) agent.destroy()
    freshHttps.clear()
  }

  return { agentFor, freshAgentFor, retire, close }
}

module.exports = { createUpstreamAgents, sentSinceReuse, staleConnection, resendable, watchAnswer }
