'use strict'

const http = require('node:http')
const { Pool } = require('./pool')
const { parseBackends } = require('./backend-spec')
const { createProxyEngine } = require('./proxy-engine')
const { createPolicy } = require('./policies')
const { silentLogger } = require('./logger')
const { DEFAULTS, validateOptions } = require('./defaults')
const { createLifecycle } = require('./http-lifecycle')

/** Methods that RFC 9110 calls idempotent: safe to send again when the first try never got an answer. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'])

/**
 * @typedef {object} BalancerOptions
 * @property {Array<string | object> | string} backends upstream URLs (see backend-spec.js) or specs
 * @property {string} [algo='wasp'] policy name from the registry
 * @property {object} [policyOptions] options passed to the policy factory
 * @property {object} [policy] a ready policy object (overrides `algo`)
 * @property {number} [port=8080] 0 picks a free port
 * @property {string} [host='127.0.0.1']
 * @property {boolean} [keepAlive=true] upstream keep-alive
 * @property {number} [timeoutMs=30000] upstream inactivity timeout, answered with 504
 * @property {number} [retries=2] extra attempts on other upstreams for idempotent bodiless requests
 * @property {number} [maxFails=1] consecutive failures that eject an upstream
 * @property {number} [failTimeoutMs=5000] how long an ejected upstream is left out
 * @property {string | null} [statsPath='/_polistes/stats'] the balancer's own stats endpoint (null: off)
 * @property {'http-proxy' | 'http-proxy-3'} [library] proxy library (for measurement only)
 * @property {import('pino').Logger} [logger] default: silent
 * @property {() => number} [random] injected into the policy
 * @property {() => number} [now] injected into the policy and pool (ms)
 */

/**
 * Create a balancer (not yet listening).
 * @param {BalancerOptions} options
 * @returns {Balancer}
 */
function createBalancer (options) {
  return new Balancer(options)
}

/**
 * Create a balancer and start listening.
 * @param {BalancerOptions} options
 * @returns {Promise<Balancer>}
 */
async function startBalancer (options) {
  const balancer = new Balancer(options)
  await balancer.listen()
  return balancer
}

class Balancer {
  /** @param {BalancerOptions} options */
  constructor (options) {
    const {
      backends, algo, policyOptions, policy, port, host, keepAlive, timeoutMs, retries, maxFails, failTimeoutMs,
      statsPath = '/_polistes/stats', library, logger = silentLogger(),
      random = Math.random, now = () => performance.now()
    } = withDefaults(options)
    validateOptions({ port, host, keepAlive, timeoutMs, retries, maxFails, failTimeoutMs, policyOptions })
    this.port = port
    this.host = host
    this.retries = retries
    this.statsPath = statsPath
    this.logger = logger
    this.debug = logger.isLevelEnabled('debug')
    this.now = now
    this.pool = new Pool(parseBackends(backends), { maxFails, failTimeoutMs, now })
    this.policy = policy || createPolicy(algo, policyOptions, { random, now })
    this.engine = createProxyEngine({ keepAlive, timeoutMs, library })
    this.counters = { requests: 0, responses: 0, retries: 0, failures: { connect: 0, timeout: 0, stream: 0 }, noUpstream: 0, clientAborts: 0 }
    this.server = http.createServer((req, res) => this.handle(req, res))
    this.lifecycle = createLifecycle(this.server, { name: 'balancer' })
    this.server.on('clientError', (err, socket) => {
      if (socket.writable && !socket.destroyed) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')
      else socket.destroy(err)
    })
    this.url = undefined
  }

  /** @returns {Promise<this>} resolves once listening; rejects with ERR_POLISTES_PORT_IN_USE or ERR_POLISTES_BAD_OPTION */
  async listen () {
    try {
      const { port, url } = await this.lifecycle.listen(this.port, this.host)
      this.port = port
      this.url = url
    } catch (err) {
      this.engine.close()
      throw err
    }
    return this
  }

  /** @returns {boolean} true once close() was called */
  get closing () {
    return this.lifecycle.closing
  }

  /**
   * Stop accepting, let in-flight requests finish (at most `graceMs`), then release everything.
   * @param {{ graceMs?: number }} [options]
   * @returns {Promise<void>}
   */
  async close ({ graceMs = DEFAULTS.graceMs } = {}) {
    if (!this._closed) this._closed = this.lifecycle.close({ graceMs }).then(() => this.engine.close())
    return this._closed
  }

  /** @returns {object} the process id (which worker, with --workers), counters, upstreams and the policy's snapshot, as plain JSON */
  stats () {
    const t = this.now()
    return {
      pid: process.pid,
      ...this.counters,
      failures: { ...this.counters.failures },
      inflight: this.pool.inflight(),
      upstreams: this.pool.all().map((u) => ({ ...u.toJSON(), healthy: this.pool.isHealthy(u, t) })),
      policy: { name: this.policy.name, state: this.policy.snapshot ? this.policy.snapshot() : undefined }
    }
  }

  /**
   * Handle one client request: pick, forward, retry when that is safe.
   * @param {import('http').IncomingMessage} req
   * @param {import('http').ServerResponse} res
   */
  handle (req, res) {
    if (this.statsPath && req.url === this.statsPath && req.method === 'GET') return this.serveStats(res)
    this.counters.requests++
    const ctx = { key: routingKey(req.url), clientAddress: req.socket.remoteAddress, method: req.method }
    const retryable = IDEMPOTENT.has(req.method) && !hasBody(req)
    const tried = new Set()
    let current = null

    const finish = (attempt, outcome) => {
      if (attempt.done) return
      attempt.done = true
      this.pool.release(attempt.upstream)
      const latencyMs = this.now() - attempt.t0
      if (this.policy.onEnd) this.policy.onEnd(attempt.upstream, ctx, { latencyMs, ...outcome })
      if (this.debug) this.logger.debug({ method: req.method, url: req.url, upstream: attempt.upstream.id, status: outcome.statusCode, cache: outcome.cache, ms: Math.round(latencyMs * 100) / 100, error: outcome.error }, 'request')
    }

    res.on('close', () => {
      if (!current || current.done) return
      if (res.writableFinished) {
        this.counters.responses++
        finish(current, { statusCode: current.statusCode, cache: current.cache })
      } else {
        this.counters.clientAborts++
        current.handle.abort()
        finish(current, { statusCode: current.statusCode, cache: current.cache, error: 'client aborted' })
      }
    })

    const dispatch = () => {
      const eligible = this.pool.eligible()
      const candidates = tried.size === 0 ? eligible : eligible.filter((u) => !tried.has(u.id))
      const upstream = this.policy.pick(candidates, ctx)
      if (!upstream) {
        this.counters.noUpstream++
        return this.reply(res, 503, 'no-upstream', 'no upstream available')
      }
      tried.add(upstream.id)
      this.pool.acquire(upstream)
      if (this.policy.onStart) this.policy.onStart(upstream, ctx)
      const attempt = { upstream, t0: this.now(), done: false, statusCode: undefined, cache: undefined, handle: null }
      current = attempt
      attempt.handle = this.engine.forward(req, res, upstream, {
        onResponse: (proxyRes) => {
          attempt.statusCode = proxyRes.statusCode
          attempt.cache = proxyRes.headers['x-cache']
          this.pool.succeed(upstream)
        },
        onFailure: (err, kind) => {
          if (attempt.done) return
          this.counters.failures[kind]++
          finish(attempt, { statusCode: attempt.statusCode, error: err.message })
          if (kind !== 'stream') this.pool.fail(upstream)
          this.logger.warn({ upstream: upstream.id, kind, err: err.message, method: req.method, url: req.url }, 'upstream failed')
          if (res.headersSent || res.destroyed) {
            res.destroy() // the client must see a broken response, never a truncated one that looks whole
          } else if (kind === 'timeout') {
            this.reply(res, 504, 'timeout', `upstream ${upstream.id} timed out`)
          } else if (retryable && tried.size <= this.retries && !req.socket.destroyed && this.pool.eligible().some((u) => !tried.has(u.id))) {
            this.counters.retries++
            dispatch()
          } else {
            this.reply(res, 502, 'connect', `upstream ${upstream.id} failed: ${err.code || err.message}`)
          }
        }
      }, { replay: tried.size > 1 })
    }
    dispatch()
  }

  /** Write the balancer's own error response (never after headers went out). */
  reply (res, statusCode, reason, message) {
    if (res.headersSent || res.destroyed) return
    res.writeHead(statusCode, { 'content-type': 'text/plain; charset=utf-8', 'x-polistes-error': reason })
    res.end(message + '\n')
  }

  serveStats (res) {
    const body = JSON.stringify(this.stats())
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
    res.end(body)
  }
}

/** Options with the defaults filled in (an explicit `undefined` takes the default too). */
function withDefaults (options) {
  const o = { ...options }
  for (const key of ['algo', 'policyOptions', 'port', 'host', 'keepAlive', 'timeoutMs', 'retries', 'maxFails', 'failTimeoutMs']) {
    if (o[key] === undefined) o[key] = DEFAULTS[key]
  }
  return o
}

/** The routing key: the URL path without its query string. */
function routingKey (url) {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/** Whether the request announces a body (then it cannot be replayed on another upstream). */
function hasBody (req) {
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

module.exports = { createBalancer, startBalancer, Balancer, routingKey }
