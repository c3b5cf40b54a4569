'use strict'

/**
 * The proxy engines known by name, as `--engine` accepts them: one entry each. Adding an engine is
 * one entry here, its file in this folder, and its name in the `engine` union of src/index.d.ts
 * (test/engine-registry.test.js holds the union to this table).
 * - `create(options)` makes the engine (src/proxy/proxy-engine.js `createProxyEngine` passes
 *   `{ keepAlive, timeoutMs, upstreamCa, lookup }`); an engine's optional library is required only
 *   here, when the engine is created;
 * - `fronts`: the fronts that may hand it a request (src/front/): `fast` only for engines that write
 *   the response through writeHead/write/end, as the fast front's response takes it; with another
 *   engine, `front: 'fast'` serves every request through node:http;
 * - `https`: whether it reaches https:// upstreams (a backend it cannot reach is refused at start and
 *   on a reload: `checkEngineTargets`).
 * @type {Record<string, { create: (options: EngineOptions) => object, fronts: Array<'fast' | 'node'>, https: boolean
 * }>}
 */
const engines = {
  // node-http-proxy's API, on http-proxy-3, with polistes' fixes around it; connections from upstream-agents.js
  'http-proxy': {
    create: (options) => onAgents(options, (o) => require('./http-proxy').createHttpProxyEngine(o)),
    fronts: ['node'],
    https: true
  },
  // node:http's client through a keep-alive Agent, no proxy library
  'node-http': {
    create: (options) => onAgents(options, (o) => require('./node-http').createNodeHttpEngine(o)),
    fronts: ['fast', 'node'],
    https: true
  },
  // one undici Pool per upstream, driven through dispatch(); its pools would take the TLS server name
  // from the client's Host header, not from the backend URL: plain http only
  undici: {
    create: ({ keepAlive, timeoutMs, lookup }) =>
      require('./undici').createUndiciEngine({ keepAlive, timeoutMs, lookup }),
    fronts: ['fast', 'node'],
    https: false
  },
  // polistes' own HTTP/1.1 client: pooled sockets and a strict response parser of its own
  direct: {
    create: ({ keepAlive, timeoutMs, upstreamCa, lookup }) =>
      require('./direct').createDirectEngine({ keepAlive, timeoutMs, ca: upstreamCa, lookup }),
    fronts: ['fast', 'node'],
    https: true
  }
}

/** The engine used unless `engine` names another. */
const DEFAULT_ENGINE = 'direct'

/**
 * @typedef {object} EngineOptions
 * @property {boolean} keepAlive
 * @property {number} timeoutMs
 * @property {Buffer | null} upstreamCa
 * @property {Function} [lookup]
 */

/**
 * An engine on node:http's Agent: its connections from src/proxy/upstream-agents.js (http, and
 * verified https per origin), which a changed address retires.
 * @param {EngineOptions} options
 * @param {(options: { keepAlive: boolean, timeoutMs: number, agents: object }) => object} create
 */
function onAgents ({ keepAlive, timeoutMs, upstreamCa, lookup }, create) {
  // loaded here, as the engines' own files: the default engine (direct) and the config's check of
  // --engine need none of it (node:https and the Agents)
  const { createUpstreamAgents } = require('../upstream-agents')
  const agents = createUpstreamAgents({ keepAlive, ca: upstreamCa, lookup })
  return { ...create({ keepAlive, timeoutMs, agents }), retire: (upstream) => agents.retire(upstream.target) }
}

/** @returns {string[]} the engine names, in registry order */
function engineNames () {
  return Object.keys(engines)
}

/**
 * @param {string} name
 * @returns {{ create: Function, fronts: Array<'fast' | 'node'>, https: boolean } | undefined}
 */
function engineEntry (name) {
  return Object.hasOwn(engines, name) ? engines[name] : undefined
}

module.exports = { engineNames, engineEntry, DEFAULT_ENGINE }
