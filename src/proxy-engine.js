'use strict'

/**
 * The proxy engine moves a request's bytes to the upstream the balancer chose, and the response
 * back; it never picks an upstream. Engines (src/engines/):
 * - `http-proxy`: http-proxy 1.18 with polistes' fixes around it (the requested stack);
 * - `http-proxy-3`: the same on http-proxy's API-compatible successor;
 * - `node-http`: node:http's client through a keep-alive Agent, no proxy library;
 * - `undici`: one undici Pool per upstream, driven through `dispatch()`.
 * All of them pass the same pitfall suite (test/proxy-pitfalls.test.js); bench/engine-cpu.js
 * measures their CPU per request.
 */

const { ERR_POLISTES_BAD_OPTION } = require('./errors')

const DEFAULT_ENGINE = 'http-proxy'
const ENGINES = ['http-proxy', 'http-proxy-3', 'node-http', 'undici']

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
 */

/**
 * @typedef {object} ProxyEngine
 * @property {(req: import('http').IncomingMessage, res: import('http').ServerResponse, upstream: { target: URL },
 *   handlers: AttemptHandlers, options?: { replay?: boolean }) => { abort: () => void }} forward
 *   forward one attempt of `req` to `upstream`. Bodiless retries pass `replay: true`: the client's
 *   request stream has been consumed, so an empty body is sent instead. `abort()` drops the upstream
 *   request (the client went away).
 * @property {() => void} close release pooled upstream connections
 * @property {string} name the engine's name
 */

/**
 * Create a proxy engine.
 *
 * @param {object} [options]
 * @param {string} [options.engine='http-proxy'] one of {@link ENGINES}
 * @param {boolean} [options.keepAlive=true] reuse upstream connections; false opens one per request
 *   and sends `Connection: close`
 * @param {number} [options.timeoutMs=30000] upstream inactivity timeout (connect, headers or body)
 * @returns {ProxyEngine}
 * @throws {import('./errors').PolistesError} ERR_POLISTES_BAD_OPTION for an unknown engine
 */
function createProxyEngine ({ engine = DEFAULT_ENGINE, keepAlive = true, timeoutMs = 30000 } = {}) {
  const options = { keepAlive, timeoutMs }
  let created
  if (engine === 'http-proxy' || engine === 'http-proxy-3') {
    created = require('./engines/http-proxy').createHttpProxyEngine({ ...options, library: engine })
  } else if (engine === 'node-http') {
    created = require('./engines/node-http').createNodeHttpEngine(options)
  } else if (engine === 'undici') {
    created = require('./engines/undici').createUndiciEngine(options)
  } else {
    throw new ERR_POLISTES_BAD_OPTION(`unknown proxy engine "${engine}"; expected one of: ${ENGINES.join(', ')}`)
  }
  return { ...created, name: engine }
}

module.exports = { createProxyEngine, DEFAULT_ENGINE, ENGINES }
