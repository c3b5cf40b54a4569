'use strict'

const { hasBody } = require('./body-limit')
const { canRetry } = require('./retry-rules')
const { insertCookieOnHead, stickyUpstream } = require('./sticky-cookie')

/**
 * One client request on its way to an upstream, once the balancer (src/balancer.js) has taken it:
 * pick, forward through the engine, retry elsewhere when that is safe, and record what happened.
 * The balancer it is given (`lb`) lends its pool, policy, engine, sticky cookie, counters and
 * settings; nothing here reaches back into the front or the admin surface.
 */

/** A client connection's requests whose responses wait behind an earlier one (node:http's pipeline queue). */
const kQueued = Symbol('polistes.queued')

/** What an attempt routed by the sticky cookie reports to: nothing (the policy did not pick it). */
const STICKY_POLICY = Object.freeze({ name: 'sticky-cookie' })

/**
 * What a request takes from the balancer that runs it (src/balancer.js): read at each step, so that
 * a reload's new policy, engine or settings apply to the next attempt.
 * @typedef {object} RequestHost
 * @property {import('../pool/pool').Pool} pool
 * @property {{ name: string, pick: Function, onStart?: Function, onEnd?: Function }} policy
 * @property {import('./proxy-engine').ProxyEngine} engine
 * @property {(req: import('http').IncomingMessage) => string} keyOf the routing key
 * @property {{ trusts: (peer: string | undefined) => boolean, clientAddress: Function } | null} trust
 * @property {ReturnType<typeof import('./sticky-cookie').createSticky>} sticky
 * @property {number} retries
 * @property {number | null} tryTimeoutMs
 * @property {Set<number | 'timeout'>} retryOn
 * @property {Set<number>} retryStatuses
 * @property {number} maxBodySize
 * @property {Record<string, any>} counters
 * @property {() => number} now
 * @property {boolean} debug
 * @property {import('pino').Logger} logger
 * @property {(engine: import('./proxy-engine').ProxyEngine, delta: number) => void} useEngine
 * @property {(res: import('http').ServerResponse, status: number, reason: string, message: string) => void} reply
 * @property {Function} observe
 */

/**
 * One client request on its way through the balancer: its attempts (one per upstream tried), the
 * retries, and what is recorded when it ends. Plain methods rather than closures per request.
 */
class ProxiedRequest {
  /**
   * @param {RequestHost} lb the balancer (src/balancer.js)
   * @param {import('http').IncomingMessage} req
   * @param {import('http').ServerResponse} res
   */
  constructor (lb, req, res) {
    this.lb = lb
    this.req = req
    this.res = res
    this.t0 = lb.now()
    this.bytes0 = req.socket.bytesWritten
    const peer = req.socket.remoteAddress
    /** the peer is a trusted proxy: its forwarding headers go upstream (else ours replace them) */
    this.trusted = false
    this.ctx = { key: lb.keyOf(req), clientAddress: peer, method: req.method }
    if (lb.trust !== null && lb.trust.trusts(peer)) {
      this.trusted = true
      this.ctx.clientAddress = lb.trust.clientAddress(peer, req.headers['x-forwarded-for'])
    }
    this.retryable = canRetry(req)
    /** the sticky cookie (as it was when the request came), the token its cookie holds, the Set-Cookie to add */
    this.sticky = lb.sticky
    this.stickyToken = undefined
    this.setCookie = null
    if (this.sticky !== null) {
      this.stickyToken = this.sticky.requested(req.headers)
      insertCookieOnHead(res, this)
    }
    /** @type {string[]} ids of the upstreams tried (each at most once) */
    this.tried = []
    /** a retry on the same upstream after a stale pooled connection was used (at most one) */
    this.staleRetried = false
    /** @type {Attempt | null} */
    this.current = null
    /** closed() ran: the request is over for the balancer (once, whichever end came first) */
    this.over = false
    res.on('close', () => this.closed())
    // node:http queues the response of a request pipelined behind one still in flight, with no socket:
    // if the connection closes before its turn (the answer before said Connection: close, or the
    // client left), that response never emits 'close', so the connection's own close ends it
    if (!res.socket) queueOnSocket(req.socket, this)
  }

  canRetry () {
    const lb = this.lb
    return this.retryable && this.tried.length <= lb.retries && !this.req.socket.destroyed &&
      lb.pool.eligible().some((u) => !this.tried.includes(u.id))
  }

  /**
   * The attempt is over: its upstream and engine released, the policy told.
   * @param {Attempt} attempt
   * @param {{ latencyMs: number, statusCode?: number, cache?: string, error?: string }} outcome latencyMs is filled in
   * here
   */
  finish (attempt, outcome) {
    if (attempt.done) return
    const lb = this.lb
    attempt.done = true
    if (attempt.timer !== undefined) clearTimeout(attempt.timer)
    lb.pool.release(attempt.upstream)
    lb.useEngine(attempt.engine, -1)
    const latencyMs = lb.now() - attempt.t0
    outcome.latencyMs = latencyMs
    if (attempt.policy.onEnd) attempt.policy.onEnd(attempt.upstream, this.ctx, outcome)
    if (lb.debug) {
      lb.logger.debug(
        {
          method: this.req.method,
          url: this.req.url,
          upstream: attempt.upstream.id,
          status: outcome.statusCode,
          cache: outcome.cache,
          ms: Math.round(latencyMs * 100) / 100,
          error: outcome.error
        },
        'request'
      )
    }
  }

  /** The client's response closed, finished or not. */
  closed () {
    if (this.over) return
    this.over = true
    const queued = this.req.socket[kQueued]
    if (queued !== undefined) queued.delete(this)
    const lb = this.lb
    const current = this.current
    lb.observe(
      this.req, this.res, this.ctx.key, current, this.tried.length, lb.now() - this.t0,
      this.req.socket.bytesWritten - this.bytes0
    )
    if (!current || current.done) return
    if (this.res.writableFinished) {
      lb.counters.responses++
      this.finish(current, { latencyMs: 0, statusCode: current.statusCode, cache: current.cache })
    } else {
      lb.counters.clientAborts++
      current.handle.abort()
      this.finish(current, {
        latencyMs: 0,
        statusCode: current.statusCode,
        cache: current.cache,
        error: 'client aborted'
      })
    }
  }

  /**
   * Pick an upstream not tried yet and forward the request to it (or answer 503). A pick that sets
   * `ctx.noStore = true` sends the request with `Cache-Control: no-store` (the upstream should not
   * keep the page); a retry follows its own pick's word, never an earlier one's.
   */
  dispatch () {
    if (this.over) return // the client's connection closed already: nothing to forward
    const lb = this.lb
    const req = this.req
    const eligible = lb.pool.eligible()
    const tried = this.tried
    const ctx = this.ctx
    let candidates = eligible
    if (tried.length > 0) {
      candidates = eligible.filter((u) => !tried.includes(u.id))
      if (ctx.noStore !== undefined) ctx.noStore = undefined // the earlier pick's hint was for its upstream
    }
    let policy = lb.policy
    // a valid sticky cookie decides the first attempt; a retry goes where the policy says
    let upstream = tried.length === 0 && this.stickyToken !== undefined
      ? stickyUpstream(lb.pool, this.sticky, this.stickyToken)
      : null
    if (upstream !== null) policy = STICKY_POLICY
    else upstream = policy.pick(candidates, ctx)
    if (!upstream) {
      lb.counters.noUpstream++
      return lb.reply(this.res, 503, 'no-upstream', 'no upstream available')
    }
    tried.push(upstream.id)
    lb.pool.acquire(upstream)
    if (policy.onStart) policy.onStart(upstream, ctx)
    const attempt = new Attempt(this, upstream, policy, lb.engine, lb.now())
    this.current = attempt
    lb.useEngine(attempt.engine, 1)
    attempt.handle = attempt.engine.forward(req, this.res, upstream, attempt, {
      replay: tried.length > 1,
      hold: this.retryable ? lb.retryStatuses : undefined,
      noStore: ctx.noStore === true,
      trusted: this.trusted
    })
    if (lb.tryTimeoutMs !== null && !attempt.done) {
      // the per-try timeout runs from when the request is sent: at once without a body, else from
      // the end of the client's body (a slow upload is not the upstream's delay)
      const ms = lb.tryTimeoutMs
      const arm = () => {
        if (attempt.done || attempt.statusCode !== undefined) return
        attempt.timer = setTimeout(() => {
          attempt.handle.abort()
          this.failed(attempt, new Error(`upstream sent no response head within ${ms} ms`), 'timeout')
        }, ms)
      }
      if (!hasBody(req) || req.complete) arm()
      else req.once('end', arm)
    }
  }

  /**
   * An attempt failed: count it, then retry elsewhere, or answer 502/504, or break the response.
   * @param {Attempt} attempt
   * @param {Error} err
   * @param {import('./proxy-engine').FailureKind} kind
   */
  failed (attempt, err, kind) {
    if (attempt.done) return
    const lb = this.lb
    const res = this.res
    const upstream = attempt.upstream
    lb.counters.failures[kind]++
    // a cookie for this attempt's upstream never goes on the balancer's 502/504 or on a retry's answer
    this.setCookie = null
    this.finish(attempt, { latencyMs: 0, statusCode: attempt.statusCode, error: err.message })
    // a timeout while the client's body is still coming in is the client's delay as much as the
    // upstream's (an upstream waiting for a stalled upload is not failing): not charged to it, or
    // one slow client could eject every upstream in turn
    const clientSlow = kind === 'timeout' && !this.req.complete && hasBody(this.req)
    // a pooled connection the upstream closed as the request went out on it, nothing received (the
    // engines on node:http's Agent say so; the direct engine resends such a request itself): the
    // keep-alive race of RFC 9112 §9.3.1, no failure of the upstream, which may take the request
    // again, once, on another connection
    const stale = err.staleConnection === true && !this.staleRetried && this.retryable && !this.req.socket.destroyed
    if (kind !== 'stream' && !clientSlow && !stale) lb.pool.fail(upstream)
    lb.logger.warn(
      { upstream: upstream.id, kind, err: err.message, method: this.req.method, url: this.req.url },
      'upstream failed'
    )
    // a timeout is retried only when asked (the upstream may have acted) and before any response byte
    const retry = stale ||
      ((kind !== 'timeout' || (lb.retryOn.has('timeout') && attempt.statusCode === undefined)) && this.canRetry())
    if (res.headersSent || res.destroyed) {
      res.destroy() // the client must see a broken response, never a truncated one that looks whole
    } else if (retry) {
      lb.counters.retries++
      if (stale) {
        this.staleRetried = true
        this.tried.pop() // its connection failed, not the upstream: it stays a candidate
      }
      this.dispatch()
    } else if (kind === 'timeout') {
      // the client is told what went wrong, never where: the upstream's address stays in the log
      lb.reply(res, 504, 'timeout', 'upstream timed out')
    } else {
      lb.reply(res, 502, 'connect', 'upstream failed')
    }
  }

  /**
   * A held response status (retryOn): retry elsewhere while that is allowed.
   * @returns {boolean} true: the response is dropped and the request sent elsewhere
   */
  discarded (attempt, statusCode, headers) {
    if (!this.canRetry()) return false // the last attempt's answer goes to the client as it is
    this.lb.counters.retries++
    this.finish(attempt, { latencyMs: 0, statusCode, cache: headers['x-cache'] })
    this.dispatch()
    return true
  }

  /** The request body passed maxBodySize while streaming: 413, or a broken response. */
  bodyTooLarge () {
    const { lb, req, res, current } = this
    if (res.writableEnded) return // answered already (503, or an upstream that did not wait for the body)
    lb.counters.bodyTooLarge++
    if (current && !current.done) {
      current.handle.abort()
      this.finish(current, { latencyMs: 0, statusCode: current.statusCode, error: 'request body too large' })
    }
    if (res.headersSent) return res.destroy()
    req.resume() // read the rest and drop it (bounded by requestTimeoutMs), so that the client reads its 413
    lb.reply(res, 413, 'body-too-large', `request body larger than ${lb.maxBodySize} bytes`)
  }
}

/**
 * Have `run` closed when `socket` closes, if its response has not closed by then: one 'close'
 * listener per connection, however many requests wait in its pipeline.
 * @param {import('net').Socket} socket
 * @param {ProxiedRequest} run
 */
function queueOnSocket (socket, run) {
  let queued = socket[kQueued]
  if (queued === undefined) {
    queued = socket[kQueued] = new Set()
    socket.once('close', () => {
      for (const r of queued) r.closed()
    })
  }
  queued.add(run)
  if (socket.destroyed) run.closed() // closed already: no 'close' to come
}

/**
 * One attempt of a request on one upstream; the engine's AttemptHandlers (src/proxy/proxy-engine.js).
 */
class Attempt {
  /**
   * @param {ProxiedRequest} run
   * @param {import('../pool/pool').Upstream} upstream
   * @param {object} policy the policy that picked it (a reload may replace the balancer's)
   * @param {import('./proxy-engine').ProxyEngine} engine
   * @param {number} t0 when it started (ms)
   */
  constructor (run, upstream, policy, engine, t0) {
    this.run = run
    this.upstream = upstream
    this.policy = policy
    this.engine = engine
    this.t0 = t0
    this.done = false
    /** @type {number | undefined} */
    this.statusCode = undefined
    /** @type {string | undefined} */
    this.cache = undefined
    /** @type {{ abort: () => void } | null} */
    this.handle = null
    /** @type {NodeJS.Timeout | undefined} */
    this.timer = undefined
  }

  onResponse (statusCode, headers) {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.statusCode = statusCode
    this.cache = headers['x-cache']
    const run = this.run
    run.lb.pool.succeed(this.upstream)
    // the response names its upstream in the cookie, unless the client's cookie does already
    if (run.sticky !== null && run.sticky.tokenOf(this.upstream.id) !== run.stickyToken) {
      run.setCookie = run.sticky.header(this.upstream.id)
    }
  }

  onFailure (err, kind) {
    this.run.failed(this, err, kind)
  }

  discard (statusCode, headers) {
    return this.run.discarded(this, statusCode, headers)
  }
}

module.exports = { ProxiedRequest }
