'use strict'

const { STATUS_CODES } = require('node:http')
const { Pool } = require('./pool/pool')
const { parseBackends } = require('./pool/backend-spec')
const { createProxyEngine, checkEngineTargets, engineTakesFront } = require('./proxy/proxy-engine')
const { createPolicy } = require('./policies')
const { silentLogger } = require('./common/logger')
const { DEFAULTS, validateOptions, withDefaults } = require('./config/defaults')
const { createLifecycle } = require('./front/http-lifecycle')
const { createFrontServer, refuse } = require('./front/front-server')
const { readServerTls, readCa } = require('./front/tls-files')
const { declaresTooLarge, watchBodySize, hasBody } = require('./proxy/body-limit')
const { ProxiedRequest } = require('./proxy/proxied-request')
const { tunnelUpgrade } = require('./proxy/upgrade')
const { checkRequest } = require('./proxy/request-checks')
const { createTrust, clientOf } = require('./proxy/forwarded')
const { compileRoutingKey, pathOf } = require('./proxy/routing-key')
const { createSticky, stickyUpstream } = require('./proxy/sticky-cookie')
const { createTelemetry } = require('./observe/telemetry')
const { createAdmin, isAdminPath } = require('./observe/admin')
const { createAdminRouter } = require('./observe/admin-router')
const { createBackendsHandler } = require('./observe/admin-backends')
const { createCounters, snapshotCounters } = require('./observe/counters')
const { createHealthChecker } = require('./pool/health-checker')
const { Resolver } = require('./pool/resolver')
const { reconfigure, checkSettingsFor } = require('./reconfigure')
const { BALANCER_KEYS, settingsOf } = require('./config/options')

/**
 * The balancer: the assembler at the top of src/, over the rooms it puts together. It builds the
 * front server (front/) and hands each request it takes to a ProxiedRequest (proxy/), which picks
 * through the policy (policies/) among the pool's upstreams (pool/) and forwards through the engine
 * the registry names (proxy/engines/); it counts and records what happened (observe/), serves the
 * admin surface, listens and closes, and applies a reload (src/reconfigure.js). Its options are
 * those of the option table (src/config/options.js) plus the API-only ones of src/index.d.ts.
 */

/** Marks a client connection whose request was refused by src/proxy/request-checks.js. */
const kRefused = Symbol('polistes.refused')

/** @typedef {import('./index').BalancerOptions} BalancerOptions the options, each described in src/index.d.ts and in
 * the option table (src/config/options.js) */

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
    const o = withDefaults(options)
    const {
      backends, algo, policyOptions, policy, port, host, keepAlive, timeoutMs, tryTimeoutMs, retries, retryOn, maxFails,
      failTimeoutMs, slowStartMs, admin = true, telemetry = createTelemetry(), accessLog = null, engine,
      logger = silentLogger(), random = Math.random, now = () => performance.now()
    } = o
    validateOptions(Object.fromEntries(BALANCER_KEYS.map((key) => [key, o[key]])))
    const specs = parseBackends(backends)
    checkEngineTargets(engine, specs.map((s) => new URL(s.url)))
    this.port = port
    this.host = host
    this.retries = retries
    this.tryTimeoutMs = tryTimeoutMs
    this.setRetryOn(retryOn)
    this.maxBodySize = o.maxBodySize
    this.telemetry = telemetry
    this.accessLog = accessLog
    this.mountAdmin = admin
    this.admin = createAdmin({ stats: () => this.stats(), telemetry, logger }, { maxEventStreams: o.maxEventStreams })
    /** who may tell us the client's address (trustedProxies), null: nobody */
    this.trust = createTrust(o.trustedProxies)
    /** handlers added with addAdminHandler, tried before the built-in endpoints */
    this.adminRouter = createAdminRouter()
    this.logger = logger
    this.debug = logger.isLevelEnabled('debug')
    this.now = now
    this.random = random
    /** what reconfigure() compares a new config with: every option of the table the balancer takes */
    this.settings = { ...settingsOf(o), algo: policy ? policy.name : algo, customPolicy: Boolean(policy) }
    this.specs = new Map(specs.map((s) => [s.id, s]))
    /** the request's routing key (ctx.key), as `routingKey` says */
    this.keyOf = compileRoutingKey(o.routingKey)
    /** the sticky cookie, or null (off) */
    this.sticky = createSticky(o.stickyCookie)
    this.pool = new Pool(specs, { maxFails, failTimeoutMs, slowStartMs, now, random })
    for (const u of this.pool.all()) telemetry.upstream(u.id) // columns in pool order
    this.policy = policy || createPolicy(algo, policyOptions, { random, now })
    const limits = {
      maxConnections: o.maxConnections,
      headersTimeoutMs: o.headersTimeoutMs,
      requestTimeoutMs: o.requestTimeoutMs,
      keepAliveTimeoutMs: o.keepAliveTimeoutMs,
      maxHeaderSize: o.maxHeaderSize
    }
    const tls = o.tlsCert ? readServerTls(o.tlsCert, o.tlsKey) : null
    /** trusted CAs of https upstreams (PEM), kept for engines made by a reload and for WebSocket tunnels */
    this.upstreamCa = o.upstreamCa ? readCa(o.upstreamCa) : null
    if (o.lookup !== undefined && typeof o.lookup !== 'function') {
      throw new TypeError('lookup must be a function like node:dns lookup')
    }
    /** the injected lookup (tests), or undefined: node:dns */
    this.injectedLookup = o.lookup
    /** @type {Resolver | null} backend host names looked up again every `resolveMs` */
    this.resolver = null
    /** net.connect's `lookup` for the engines: the resolver's answers, else the injected one */
    this.lookup = o.lookup
    this.setResolveMs(o.resolveMs)
    this.engine = createProxyEngine({ keepAlive, timeoutMs, engine, upstreamCa: this.upstreamCa, lookup: this.lookup })
    /** engines replaced by a reload, closed once their last attempt ends: engine → attempts in flight */
    this.engineUse = new Map()
    this.retiredEngines = new Set()
    this.checker = createHealthChecker(this.pool, { logger, ca: this.upstreamCa })
    /** /_polistes/backends: drain, disable, enable a backend at runtime */
    this.backendsAdmin = createBackendsHandler(this.pool, {
      onChange: (id, from, to) => logger.info({ upstream: id, from, to }, `backend ${id}: ${from} -> ${to} (admin API)`)
    })
    /** the request counters (src/observe/counters.js) */
    this.counters = createCounters()

    this.adminPort = o.adminPort
    this.adminHost = o.adminHost
    this.adminServer = null
    this.adminLifecycle = null
    if (o.adminPort !== null) {
      this.adminServer = createFrontServer((req, res) => this.handleAdmin(req, res, true), limits)
      this.adminLifecycle = createLifecycle(this.adminServer, { name: 'admin listener' })
    }

    // the fast front answers simple requests itself, for the engines whose registry entry takes it
    // (http-proxy streams into a real ServerResponse)
    const fast = o.front === 'fast' && engineTakesFront(engine, 'fast')
      ? { accepts: (url) => !isAdminPath(url), closing: () => this.lifecycle.closing }
      : null
    // requireHost false: src/proxy/request-checks.js answers a request without Host, on both fronts
    this.server = createFrontServer((req, res) => this.handle(req, res), { ...limits, tls, fast, requireHost: false })
    // HAProxy's rule: the listen queue as long as the connection limit (the kernel caps it at
    // net.core.somaxconn), so a burst of new connections is not left to SYN retransmits
    this.lifecycle = createLifecycle(this.server, { name: 'balancer', backlog: o.maxConnections })
    this.server.on('drop', () => this.counters.droppedConnections++)
    // Expect: 100-continue: no "100 Continue" for a body that will be refused (it is not sent at all)
    this.server.on('checkContinue', (req, res) => {
      if (!declaresTooLarge(req, this.maxBodySize)) res.writeContinue()
      this.server.emit('request', req, res)
    })
    this.server.on('upgrade', (req, socket, head) => this.handleUpgrade(req, socket, head))
    this.timeoutMs = timeoutMs
    this.url = undefined
    this.adminUrl = undefined
  }

  /**
   * Add a handler to the admin surface (`/_polistes/*`), tried after those added before it and
   * before the built-in endpoints (stats, metrics, dashboard), so it may also replace one of them.
   * @param {(req: import('http').IncomingMessage, res: import('http').ServerResponse) => boolean} handler
   *   answers and returns true, or returns false without writing anything
   * @returns {this}
   */
  addAdminHandler (handler) {
    this.adminRouter.add(handler)
    return this
  }

  /**
   * Set what is retried besides refused connections (`retryOn`, validated already).
   * @param {Array<number | 'timeout'>} retryOn
   */
  setRetryOn (retryOn) {
    this.retryOn = new Set(retryOn)
    /** statuses the engine holds back for `discard` (a retry elsewhere) */
    this.retryStatuses = new Set(retryOn.filter((s) => s !== 'timeout'))
  }

  /**
   * @returns {Promise<this>} resolves once listening (and the admin listener too, when there is one);
   *   rejects with ERR_POLISTES_PORT_IN_USE or ERR_POLISTES_BAD_OPTION
   */
  async listen () {
    try {
      const { port, url } = await this.lifecycle.listen(this.port, this.host)
      this.port = port
      this.url = url
      if (this.adminLifecycle) {
        const admin = await this.adminLifecycle.listen(this.adminPort, this.adminHost)
        this.adminPort = admin.port
        this.adminUrl = admin.url
      }
    } catch (err) {
      await this.lifecycle.close({ graceMs: 0 })
      this.engine.close()
      throw err
    }
    this.checker.sync((u) => checkSettingsFor(this, u))
    if (this.resolver !== null) {
      this.resolver.sync(this.pool.all().map((u) => u.target))
      this.resolver.start()
    }
    return this
  }

  /**
   * Turn the re-resolution of backend host names on (`ms`), off (null) or change its interval.
   * Turning it on or off changes `this.lookup`: the caller renews the engine (see reconfigure.js).
   * @param {number | null} ms
   */
  setResolveMs (ms) {
    if (ms === null) {
      if (this.resolver !== null) this.resolver.stop()
      this.resolver = null
      this.lookup = this.injectedLookup
      return
    }
    if (this.resolver !== null) return this.resolver.configure(ms)
    this.resolver = new Resolver({
      intervalMs: ms,
      lookup: this.injectedLookup,
      onChange: (hostname, addresses, previous) => this.addressesChanged(hostname, addresses, previous),
      onError: (hostname, err) => this.logger.warn(
        { hostname, err: err.message },
        `backend host ${hostname} did not resolve; its last addresses stay`
      )
    })
    this.lookup = this.resolver.lookup
    if (this.url !== undefined && !this.closing) {
      this.resolver.sync(this.pool.all().map((u) => u.target))
      this.resolver.start()
    }
  }

  /** A backend host name resolves to other addresses: its pooled connections go, new ones follow the answer. */
  addressesChanged (hostname, addresses, previous) {
    const ids = []
    for (const u of this.pool.all()) {
      if (u.target.hostname.replace(/^\[|\]$/g, '') !== hostname) continue
      ids.push(u.id)
      if (typeof this.engine.retire === 'function') this.engine.retire(u)
    }
    this.logger.info(
      { hostname, addresses, previous, upstreams: ids },
      `backend host ${hostname} now resolves to ${addresses.join(', ')} (was ${previous.join(', ')}): pooled ` +
        'connections renewed'
    )
  }

  /**
   * Apply a new config to the running balancer without dropping a connection or a request:
   * backends added, removed (their in-flight requests finish) or re-weighted, policy options,
   * timeouts, retries, passive and active health settings changed. The policy keeps its memory
   * when only its options change (wasp: thresholds of the upstreams that stay). Everything is
   * validated before anything changes, so an invalid config throws and leaves the old one serving.
   * @param {BalancerOptions} options a complete config, as for the constructor (settings left out take
   *   their defaults, except host and port, which cannot change without a restart)
   * @returns {{ added: string[], removed: string[], updated: string[], changed: string[], restartNeeded: string[] }}
   * @throws {import('./common/errors').PolistesError} on an invalid config (nothing applied)
   */
  reconfigure (options) {
    // host and port are compared only when given: a config without them does not ask for a move
    return reconfigure(this, { ...withDefaults(options), host: options.host, port: options.port })
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
    if (!this._closed) {
      this.admin.close() // event streams would otherwise hold their connections open
      this.checker.stop()
      if (this.resolver !== null) this.resolver.stop()
      const listeners = [this.lifecycle, this.adminLifecycle].filter(Boolean)
      this._closed = Promise.all(listeners.map((l) => l.close({ graceMs }))).then(() => {
        this.engine.close()
        for (const engine of this.retiredEngines) engine.close()
        this.retiredEngines.clear()
      })
    }
    return this._closed
  }

  /** @returns {object} the process id (which worker, with --workers), counters, upstreams and the policy's snapshot, as
   * plain JSON */
  stats () {
    const t = this.now()
    return {
      pid: process.pid,
      ...snapshotCounters(this.counters),
      inflight: this.pool.inflight(),
      upstreams: this.pool.all().map((u) => ({ ...u.toJSON(), ...this.pool.health(u, t) })),
      policy: { name: this.policy.name, state: this.policy.snapshot ? this.policy.snapshot() : undefined }
    }
  }

  /**
   * Handle one client request: pick, forward, retry when that is safe.
   * @param {import('http').IncomingMessage} req
   * @param {import('http').ServerResponse} res
   */
  handle (req, res) {
    const socket = req.socket
    // a request pipelined behind a refused one (node:http parsed it already): the connection is
    // closing, as nginx's after a 400, and nothing more of it is forwarded
    if (socket[kRefused] === true) return res.destroy()
    const refused = checkRequest(req)
    if (refused !== null) {
      socket[kRefused] = true
      res.shouldKeepAlive = false // the body, if any, is not read: the connection cannot carry another request
      return this.reply(res, refused.status, refused.reason, refused.message)
    }
    if (isAdminPath(req.url)) {
      // the prefix stays the balancer's wherever the admin surface is served: never proxied
      if (this.adminServer) return this.reply(res, 404, 'not-found', 'not found')
      if (this.mountAdmin) return this.handleAdmin(req, res, false)
    }
    if (req.url[0] !== '/') {
      return this.reply(res, 400, 'request-target', 'only origin-form request targets (/path) are served')
    }
    this.counters.requests++
    if (declaresTooLarge(req, this.maxBodySize)) {
      this.counters.bodyTooLarge++
      res.shouldKeepAlive = false // the body is not read: the connection cannot carry another request
      return this.reply(res, 413, 'body-too-large', `request body larger than ${this.maxBodySize} bytes`)
    }
    const run = new ProxiedRequest(this, req, res)
    run.dispatch()
    // After dispatch, not before: a 'data' listener added first would start the body flowing before
    // the upstream request has its socket, and its headers would go out before the engine edits them.
    if (hasBody(req)) watchBodySize(req, this.maxBodySize, () => run.bodyTooLarge())
  }

  /**
   * Tunnel an Upgrade request (WebSocket) to one upstream the policy picks. The tunnel counts as
   * in flight on its upstream while it is open; it feeds no latency to the policy (a session's
   * length is not a response time) and is never retried.
   * @param {import('http').IncomingMessage} req
   * @param {import('net').Socket} socket
   * @param {Buffer} head
   */
  handleUpgrade (req, socket, head) {
    // behind a refused request (node:http parsed the upgrade already) nothing more is forwarded
    if (this.closing || req.url[0] !== '/' || socket[kRefused] === true) return refuse(socket)
    const refused = checkRequest(req)
    if (refused !== null) return refuse(socket, `${refused.status} ${STATUS_CODES[refused.status]}`)
    // A WebSocket handshake has no body (RFC 6455 §4.1); the bytes after the head are the
    // tunnel's, so a declared body would be framed one way here and another upstream.
    if (hasBody(req)) return refuse(socket)
    this.counters.requests++
    const { trusted, clientAddress } = clientOf(this.trust, req)
    const token = this.sticky !== null ? this.sticky.requested(req.headers) : undefined
    const upstream = (token !== undefined && stickyUpstream(this.pool, this.sticky, token)) ||
      this.policy.pick(this.pool.eligible(), { key: this.keyOf(req), clientAddress, method: req.method })
    if (!upstream) {
      this.counters.noUpstream++
      return refuse(socket, '503 Service Unavailable')
    }
    this.pool.acquire(upstream)
    tunnelUpgrade(req, socket, head, upstream.target, {
      timeoutMs: this.timeoutMs,
      ca: this.upstreamCa,
      trusted,
      lookup: this.lookup,
      onOpen: () => this.pool.succeed(upstream),
      onFailure: (err) => {
        this.counters.failures[err.code === 'ETIMEDOUT' ? 'timeout' : 'connect']++
        this.pool.fail(upstream)
        this.logger.warn({ upstream: upstream.id, err: err.message, url: req.url }, 'upgrade failed')
      },
      onClose: () => this.pool.release(upstream)
    })
  }

  /** Count the attempts on an engine; a retired one (replaced by a reload) is closed after its last. */
  useEngine (engine, delta) {
    const n = (this.engineUse.get(engine) || 0) + delta
    if (n > 0) {
      this.engineUse.set(engine, n)
      return
    }
    this.engineUse.delete(engine)
    if (this.retiredEngines.delete(engine)) engine.close()
  }

  /** Write the balancer's own error response (never after headers went out). */
  reply (res, statusCode, reason, message) {
    if (res.headersSent || res.destroyed) return
    res.writeHead(statusCode, { 'content-type': 'text/plain; charset=utf-8', 'x-polistes-error': reason })
    res.end(message + '\n')
  }

  /**
   * The admin surface, on whichever listener serves it: added handlers, then the built-in endpoints.
   * `onAdminListener`: the request came in on the `adminPort` listener (backend state changes are
   * taken there only).
   */
  handleAdmin (req, res, onAdminListener) {
    if (!this.adminRouter.handle(req, res) && !this.backendsAdmin(req, res, onAdminListener) &&
      !this.admin.handle(req, res)) {
      this.reply(res, 404, 'not-found', 'not found')
    }
  }

  /**
   * One finished request, for the telemetry and the access log. A client that left before any
   * response header counts as 499 (nginx's "client closed request").
   */
  observe (req, res, key, attempt, attempts, ms, bytes) {
    /** @type {import('./observe/telemetry').RequestRecord} */
    const record = {
      method: req.method,
      path: req.url,
      key,
      status: res.headersSent ? res.statusCode : 499,
      upstream: attempt ? attempt.upstream.id : null,
      attempts,
      ms,
      cache: attempt ? attempt.cache : undefined,
      bytes
    }
    this.telemetry.record(record)
    if (this.accessLog) this.accessLog.write(record)
  }
}

/** The default routing key: the URL path without its query string (src/proxy/routing-key.js). */
const routingKey = pathOf

module.exports = { createBalancer, startBalancer, Balancer, routingKey }
