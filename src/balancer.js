'use strict'

const { STATUS_CODES } = require('node:http')
const { Pool } = require('./pool/pool')
const { parseBackends } = require('./pool/backend-spec')
const { createProxyEngine, checkEngineTargets, engineTakesFront } = require('./proxy/proxy-engine')
const { createPolicy } = require('./policies')
const { silentLogger } = require('./common/logger')
const { DEFAULTS, validateOptions } = require('./config/defaults')
const { createLifecycle } = require('./front/http-lifecycle')
const { createFrontServer, refuse } = require('./front/front-server')
const { readServerTls, readCa } = require('./front/tls-files')
const { declaresTooLarge, watchBodySize, hasBody } = require('./proxy/body-limit')
const { ProxiedRequest } = require('./proxy/proxied-request')
const { tunnelUpgrade } = require('./proxy/upgrade')
const { checkRequest } = require('./proxy/request-checks')
const { createTrust } = require('./proxy/forwarded')
const { compileRoutingKey, pathOf } = require('./proxy/routing-key')
const { createSticky } = require('./proxy/sticky-cookie')
const { createTelemetry } = require('./observe/telemetry')
const { createAdmin, isAdminPath } = require('./observe/admin')
const { createAdminRouter } = require('./observe/admin-router')
const { createBackendsHandler } = require('./observe/admin-backends')
const { createCounters, snapshotCounters } = require('./observe/counters')
const { createHealthChecker } = require('./pool/health-checker')
const { Resolver } = require('./pool/resolver')
const { reconfigure, checkSettingsFor, RESTART_ONLY } = require('./reconfigure')

/** Marks a client connection whose request was refused by src/proxy/request-checks.js. */
const kRefused = Symbol('polistes.refused')

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
 * @property {number | null} [tryTimeoutMs=null] ms an attempt may wait for its response head once the
 *   request has been sent (Envoy's per-try timeout); then it is abandoned as a `timeout` failure
 *   (504, or a retry with `retryOn` 'timeout'); null: only `timeoutMs` bounds the wait
 * @property {number} [retries=2] extra attempts on other upstreams for idempotent bodiless requests
 * @property {Array<number | 'timeout'>} [retryOn=[]] what else counts as a failed attempt of such a
 *   request, retried elsewhere while retries remain: upstream response statuses (5xx, e.g. 503, as
 *   nginx's `proxy_next_upstream http_503` or HAProxy's `retry-on 503`) and 'timeout', an upstream
 *   that sent no response head in time (nginx's `proxy_next_upstream timeout`, HAProxy's
 *   `retry-on response-timeout`)
 * @property {number} [maxFails=1] consecutive failures that eject an upstream
 * @property {number} [failTimeoutMs=5000] how long an ejected upstream is left out
 * @property {'direct' | 'http-proxy' | 'node-http' | 'undici'} [engine='direct'] what moves the bytes (src/proxy/proxy-engine.js)
 * @property {number} [maxConnections=10000] open client connections; beyond, new ones are closed at once
 * @property {number} [headersTimeoutMs=10000] a request's headers must arrive within this (else 408)
 * @property {number} [requestTimeoutMs=60000] the whole request, body included, within this (else 408)
 * @property {number} [keepAliveTimeoutMs=5000] idle client connections are closed after this
 * @property {number} [maxHeaderSize=16384] bytes of request line and headers (else 431)
 * @property {number} [maxBodySize=1048576] bytes of request body (else 413); 0: no limit
 * @property {'fast' | 'node'} [front='fast'] 'fast': simple GET/HEAD requests are parsed and answered by
 *   src/front/fast-front.js, the rest by node:http (engines direct, node-http and undici; plain HTTP only);
 *   'node': node:http for every request
 * @property {string | null} [tlsCert] PEM certificate file: with `tlsKey`, the front speaks HTTPS
 * @property {string | null} [tlsKey] PEM private key file
 * @property {string | null} [upstreamCa] PEM CA file https upstreams are verified against (default: Node's roots)
 * @property {number | null} [adminPort] serve `/_polistes/*` on a listener of its own (0: any free port)
 *   and no longer on the public one; null: on the public listener
 * @property {string} [adminHost='127.0.0.1'] the admin listener's address
 * @property {number} [maxEventStreams=16] dashboards' event streams (`/_polistes/events`) open at once;
 *   one more is answered 503 with Retry-After (0: none)
 * @property {string[]} [trustedProxies=[]] CIDRs (IPv4, IPv6) of proxies in front of the balancer: from
 *   such a peer the client's X-Forwarded-*, Forwarded and X-Real-IP are kept (X-Forwarded-For appended
 *   to) and the client address (ip-hash's key) is the right-most untrusted X-Forwarded-For entry;
 *   from any other peer they are replaced by the balancer's own (src/proxy/forwarded.js)
 * @property {boolean} [admin=true] serve `/_polistes/*` (stats, metrics, dashboard) on the public listener;
 *   false: that prefix is proxied like any other path (ignored with `adminPort`, where it is always served)
 * @property {import('./observe/telemetry').Telemetry} [telemetry] default: a new one (per-request aggregates)
 * @property {import('./observe/access-log').AccessLog | null} [accessLog=null] one line per finished request
 * @property {number} [slowStartMs=0] ms over which an upstream that comes back (or is added) ramps up
 * @property {Partial<import('./pool/health-checker').HealthCheckSettings> & { path?: string | null }} [healthCheck]
 *   active checks (off while `path` is null); a backend spec's own `healthCheck` overrides it
 * @property {import('pino').Logger} [logger] default: silent
 * @property {() => number} [random] injected into the policy
 * @property {() => number} [now] injected into the policy and pool (ms)
 * @property {string} [routingKey='path'] what the keyed policies route by: 'path', 'url', 'host',
 *   'header:<name>', 'cookie:<name>' or 'param:<name>' (src/proxy/routing-key.js)
 * @property {string | object | null} [stickyCookie=null] cookie stickiness: a cookie name or
 *   `{ name, path, domain, maxAgeS, secure, httpOnly, sameSite }` (src/proxy/sticky-cookie.js); null: off
 * @property {number | null} [resolveMs=null] look backend host names up again every this many ms; a changed
 *   answer retires the pooled connections to that backend (src/pool/resolver.js); null: the OS resolves each new connection
 * @property {typeof import('node:dns').lookup} [lookup] the lookup of backend host names (default node:dns's)
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
    const o = withDefaults(options)
    const {
      backends, algo, policyOptions, policy, port, host, keepAlive, timeoutMs, tryTimeoutMs, retries, retryOn, maxFails, failTimeoutMs,
      slowStartMs, healthCheck, admin = true, telemetry = createTelemetry(), accessLog = null, engine, logger = silentLogger(),
      random = Math.random, now = () => performance.now()
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
    /** what reconfigure() compares a new config with */
    this.settings = { algo: policy ? policy.name : algo, policyOptions, keepAlive, timeoutMs, tryTimeoutMs, retries, retryOn, maxFails, failTimeoutMs, slowStartMs, healthCheck, host, port, customPolicy: Boolean(policy), maxBodySize: o.maxBodySize, maxEventStreams: o.maxEventStreams, trustedProxies: o.trustedProxies, ...Object.fromEntries(RESTART_ONLY.map((key) => [key, o[key]])) }
    this.specs = new Map(specs.map((s) => [s.id, s]))
    /** the request's routing key (ctx.key), as `routingKey` says */
    this.keyOf = compileRoutingKey(o.routingKey)
    this.settings.routingKey = o.routingKey
    /** the sticky cookie, or null (off) */
    this.sticky = createSticky(o.stickyCookie)
    this.settings.stickyCookie = o.stickyCookie
    this.pool = new Pool(specs, { maxFails, failTimeoutMs, slowStartMs, now, random })
    for (const u of this.pool.all()) telemetry.upstream(u.id) // columns in pool order
    this.policy = policy || createPolicy(algo, policyOptions, { random, now })
    const limits = { maxConnections: o.maxConnections, headersTimeoutMs: o.headersTimeoutMs, requestTimeoutMs: o.requestTimeoutMs, keepAliveTimeoutMs: o.keepAliveTimeoutMs, maxHeaderSize: o.maxHeaderSize }
    const tls = o.tlsCert ? readServerTls(o.tlsCert, o.tlsKey) : null
    /** trusted CAs of https upstreams (PEM), kept for engines made by a reload and for WebSocket tunnels */
    this.upstreamCa = o.upstreamCa ? readCa(o.upstreamCa) : null
    if (o.lookup !== undefined && typeof o.lookup !== 'function') throw new TypeError('lookup must be a function like node:dns lookup')
    /** the injected lookup (tests), or undefined: node:dns */
    this.injectedLookup = o.lookup
    /** @type {Resolver | null} backend host names looked up again every `resolveMs` */
    this.resolver = null
    /** net.connect's `lookup` for the engines: the resolver's answers, else the injected one */
    this.lookup = o.lookup
    this.setResolveMs(o.resolveMs)
    this.settings.resolveMs = o.resolveMs
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
      onError: (hostname, err) => this.logger.warn({ hostname, err: err.message }, `backend host ${hostname} did not resolve; its last addresses stay`)
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
    this.logger.info({ hostname, addresses, previous, upstreams: ids }, `backend host ${hostname} now resolves to ${addresses.join(', ')} (was ${previous.join(', ')}): pooled connections renewed`)
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

  /** @returns {object} the process id (which worker, with --workers), counters, upstreams and the policy's snapshot, as plain JSON */
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
    if (req.url[0] !== '/') return this.reply(res, 400, 'request-target', 'only origin-form request targets (/path) are served')
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
    const { trusted, clientAddress } = this.client(req)
    const token = this.sticky !== null ? this.sticky.requested(req.headers) : undefined
    const upstream = (token !== undefined && this.stickyUpstream(this.sticky, token)) ||
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

  /**
   * Who sent `req`: whether its peer is a trusted proxy, and the client's address (the peer's, or
   * with a trusted peer the right-most untrusted X-Forwarded-For entry).
   * @param {import('http').IncomingMessage} req
   * @returns {{ trusted: boolean, clientAddress: string | undefined }}
   */
  client (req) {
    const peer = req.socket.remoteAddress
    const trust = this.trust
    if (trust === null || !trust.trusts(peer)) return { trusted: false, clientAddress: peer }
    return { trusted: true, clientAddress: trust.clientAddress(peer, req.headers['x-forwarded-for']) }
  }

  /**
   * The upstream a sticky cookie's token names, if it may take the request: not down by its checks,
   * not ejected, not in maintenance (a drained one keeps its sticky clients).
   * @param {NonNullable<Balancer['sticky']>} sticky
   * @param {string} token
   * @returns {import('./pool/pool').Upstream | null}
   */
  stickyUpstream (sticky, token) {
    for (const u of this.pool.members.values()) {
      if (sticky.tokenOf(u.id) === token) return u.adminState !== 'maint' && this.pool.isHealthy(u) ? u : null
    }
    return null
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
    if (!this.adminRouter.handle(req, res) && !this.backendsAdmin(req, res, onAdminListener) && !this.admin.handle(req, res)) this.reply(res, 404, 'not-found', 'not found')
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

/** The options of DEFAULTS that the balancer takes (the CLI's `graceMs` and `fleet` are not). */
const BALANCER_KEYS = ['algo', 'policyOptions', 'port', 'host', 'keepAlive', 'engine', 'timeoutMs', 'tryTimeoutMs', 'retries', 'retryOn', 'maxFails', 'failTimeoutMs',
  'slowStartMs', 'healthCheck',
  'maxConnections', 'headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs', 'maxHeaderSize', 'maxBodySize', 'front',
  'tlsCert', 'tlsKey', 'upstreamCa', 'adminPort', 'adminHost', 'maxEventStreams', 'trustedProxies',
  'routingKey', 'stickyCookie', 'resolveMs']

/** Options with the defaults filled in (an explicit `undefined` takes the default too). */
function withDefaults (options) {
  const o = { ...options }
  for (const key of BALANCER_KEYS) {
    if (o[key] === undefined) o[key] = DEFAULTS[key]
  }
  o.healthCheck = { ...DEFAULTS.healthCheck, ...(o.healthCheck || {}) }
  return o
}

/** The default routing key: the URL path without its query string (src/proxy/routing-key.js). */
const routingKey = pathOf

module.exports = { createBalancer, startBalancer, Balancer, routingKey }
