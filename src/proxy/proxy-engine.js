'use strict'

/**
 * The proxy engine moves a request's bytes to the upstream the balancer chose, and the response
 * back; it never picks an upstream. The engines are registered in src/proxy/engines/index.js:
 * - `http-proxy`: node-http-proxy's API, on http-proxy-3 (its maintained successor; http-proxy 1.18
 *   itself calls util._extend, deprecated at run time since Node 22), with polistes' fixes around it;
 * - `node-http`: node:http's client through a keep-alive Agent, no proxy library;
 * - `undici`: one undici Pool per upstream, driven through `dispatch()`;
 * - `direct`: polistes' own HTTP/1.1 client: pooled sockets and a strict response parser of its own, no
 *   ClientRequest, IncomingMessage or Agent per request.
 * http-proxy and node-http take their connections from src/proxy/upstream-agents.js (http, and verified
 * https per origin); undici keeps its own pools and speaks plain http only (see checkEngineTargets).
 * All of them pass the same pitfall suite (test/proxy-pitfalls.test.js); bench/runners/engine-cpu.js
 * measures their CPU per request. undici and http-proxy-3 are optional peer dependencies, required
 * only when their engine is created (src/common/optional-package.js).
 */

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { engineNames, engineEntry, DEFAULT_ENGINE } = require('./engines')

/** The engine names, in registry order. */
const ENGINES = Object.freeze(engineNames())

/**
 * How one attempt ended badly.
 * - `connect`: refused, reset or closed before any response byte came back (safe to retry for
 *   idempotent requests);
 * - `timeout`: the upstream said nothing for `timeoutMs`;
 * - `stream`: the upstream broke off after its response had begun.
 * @typedef {'connect' | 'timeout' | 'stream'} FailureKind
 */

/**
 * @typedef {object} AttemptHandlers
 * @property {(statusCode: number, headers: Record<string, string | string[] | undefined>) => void} onResponse
 *   the upstream's response head arrived (headers by lower-case name, hop-by-hop ones removed);
 *   called before the head is written to the client
 * @property {(err: Error, kind: FailureKind) => void} onFailure the attempt failed; called at most once
 * @property {(statusCode: number, headers: Record<string, string | string[] | undefined>) => boolean} [discard]
 *   with `hold`: called when a response's status is among the held ones; true drops the response
 *   (its body is read and thrown away, nothing reaches the client, the attempt ends without
 *   onResponse or onFailure) so the caller can try elsewhere
 */

/**
 * @typedef {object} ProxyEngine
 * @property {(req: import('http').IncomingMessage, res: import('http').ServerResponse, upstream: { target: URL },
 *   handlers: AttemptHandlers, options?: { replay?: boolean, hold?: Set<number>, noStore?: boolean, trusted?: boolean
 *   }) => { abort: () => void }} forward forward one attempt of `req` to `upstream`. Bodiless retries pass `replay:
 *   true`: the client's
 *   request stream has been consumed, so an empty body is sent instead. `hold`: response statuses
 *   offered to `handlers.discard` before anything reaches the client (retry on 503). `noStore`: the
 *   request goes out with `Cache-Control: no-store` (RFC 9111 §5.2.1.5), appended to the client's
 *   Cache-Control (src/proxy/cache-control.js). `trusted`: the client's peer is a trusted proxy,
 *   whose forwarding headers are kept (src/proxy/forwarded.js); otherwise ours replace them. `abort()` drops the
 * upstream request (the client went away).
 * @property {() => void} close release pooled upstream connections
 * @property {(upstream: { target: URL }) => void} retire close the pooled connections to `upstream` (those
 *   carrying a request close when it ends); later attempts open new ones (its address changed)
 * @property {string} name the engine's name
 */

/**
 * Create a proxy engine.
 *
 * @param {object} [options]
 * @param {string} [options.engine='direct'] one of {@link ENGINES}
 * @param {boolean} [options.keepAlive=true] reuse upstream connections; false opens one per request
 *   and sends `Connection: close`
 * @param {number} [options.timeoutMs=30000] upstream inactivity timeout (connect, headers or body)
 * @param {Buffer | null} [options.upstreamCa] CA certificates (PEM) https upstreams are verified
 *   against instead of Node's bundled roots
 * @param {Function} [options.lookup] net.connect's `lookup` for new upstream connections (src/pool/resolver.js);
 *   default: node:dns
 * @returns {ProxyEngine}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION for an unknown engine;
 *   ERR_POLISTES_MISSING_PACKAGE when the engine's library (undici, http-proxy-3) is not installed
 */
function createProxyEngine ({
  engine = DEFAULT_ENGINE,
  keepAlive = true,
  timeoutMs = 30000,
  upstreamCa = null,
  lookup
} = {}) {
  const entry = engineEntry(engine)
  if (entry === undefined) {
    throw new ERR_POLISTES_BAD_OPTION(`unknown proxy engine "${engine}"; expected one of: ${ENGINES.join(', ')}`)
  }
  return { ...entry.create({ keepAlive, timeoutMs, upstreamCa, lookup }), name: engine }
}

/**
 * Refuse upstreams an engine cannot reach: https:// ones for an engine whose entry says `https: false`
 * (undici: its pools would take the TLS server name from the client's Host header, not from the
 * backend URL).
 * @param {string} engine
 * @param {URL[]} targets the upstreams' origins
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function checkEngineTargets (engine, targets) {
  const entry = engineEntry(engine)
  if (entry === undefined || entry.https) return
  const https = targets.find((t) => t.protocol === 'https:')
  if (!https) return
  const able = ENGINES.filter((e) => engineEntry(e).https)
  throw new ERR_POLISTES_BAD_OPTION(`engine ${engine} does not proxy to https upstreams (${https.origin}); use ` +
    `engine ${able.slice(0, -1).join(', ')} or ${able.at(-1)}`)
}

/**
 * Whether the front `front` may hand its requests to `engine` (the registry's `fronts`).
 * @param {string} engine
 * @param {'fast' | 'node'} front
 * @returns {boolean}
 */
function engineTakesFront (engine, front) {
  const entry = engineEntry(engine)
  return entry !== undefined && entry.fronts.includes(front)
}

module.exports = { createProxyEngine, checkEngineTargets, engineTakesFront, DEFAULT_ENGINE, ENGINES }
