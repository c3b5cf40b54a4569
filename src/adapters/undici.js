'use strict'

const { requireOptional } = require('../common/optional-package')
// undici is an optional peer dependency: loading polistes/undici without it is a one-line error
const { Dispatcher, Pool } = requireOptional('undici', 'polistes/undici')
const { PolicyRouter, nextTry, pathKey } = require('./policy-router')
const { DEFAULTS, validateOptions } = require('../config/defaults')
const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')

/**
 * `polistes/undici`: an undici Dispatcher, like undici's BalancedPool, whose upstream choice is a
 * polistes policy (wasp by default). One undici Pool per upstream; every request is picked by the
 * policy from its routing key (the path without its query string), counted in flight on its
 * upstream, and reported back when it ends: latency, status, and the upstream's `X-Cache` header,
 * which is what lets wasp learn which upstream holds which page. Usable as the `dispatcher` of
 * undici's `fetch` and `request`, and of @fastify/reply-from (`replyFromOptions(dispatcher)` below).
 *
 * Handlers of both undici handler interfaces are served (the controller one, `onRequestStart` ...,
 * and the callback one, `onConnect`/`onHeaders` ...): the feedback wrapper takes the caller's.
 *
 * A failed upstream is not a lost request: an attempt that fails before undici started sending it
 * (refused, unreachable, connect timeout: nothing reached the upstream, so any method is safe) is
 * sent again to another upstream, up to `retries` times, when its body can be sent twice (none, a
 * string or bytes). The failing upstream is left out by passive health (`maxFails`, `failTimeoutMs`).
 */
class PolicyDispatcher extends Dispatcher {
  /**
   * @param {Array<string | { url: string, id?: string, weight?: number }>} upstreams origins, e.g. 'http://10.0.0.1:8080'
   * @param {object} [options] those of src/adapters/policy-router.js (`policy`, `policyOptions`,
   *   `routingKey`, `random`, `now`, `maxFails`, `failTimeoutMs`), `retries` (default 2: other
   *   upstreams tried for a request that could not be sent) and `poolOptions`, the options of each
   *   upstream's undici Pool
   */
  constructor (upstreams, options = {}) {
    super()
    const { retries = DEFAULTS.retries, poolOptions, ...routerOptions } = options
    validateOptions({ retries })
    this.retries = retries
    this.router = new PolicyRouter(upstreams, routerOptions)
    this.poolOptions = poolOptions || {}
    /** @type {Map<string, Pool>} by origin */
    this.pools = new Map()
    for (const m of this.router.members) this.pools.set(m.origin, new Pool(m.origin, this.poolOptions))
    this.closed = false
  }

  /** @returns {object} the policy that picks */
  get policy () {
    return this.router.policy
  }

  /** @returns {Array<{ id: string, origin: string, inflight: number }>} the upstreams as the policy sees them */
  get members () {
    return this.router.members
  }

  /** @returns {string[]} the upstreams' origins */
  get upstreams () {
    return this.router.members.map((m) => m.origin)
  }

  /**
   * Add an upstream (ignored when its origin is a member already).
   * @param {string | { url: string, id?: string, weight?: number }} upstream
   * @returns {this}
   */
  addUpstream (upstream) {
    const member = this.router.add(upstream)
    if (member) this.pools.set(member.origin, new Pool(member.origin, this.poolOptions))
    return this
  }

  /**
   * Remove an upstream: it gets no new request; its pool closes once its requests have ended.
   * @param {string} url
   * @returns {this}
   */
  removeUpstream (url) {
    const member = this.router.remove(url)
    if (member) {
      const pool = this.pools.get(member.origin)
      this.pools.delete(member.origin)
      pool.close().catch(() => {})
    }
    return this
  }

  /**
   * undici's dispatch: pick an upstream with the policy, send the request through its pool.
   * @param {import('undici').Dispatcher.DispatchOptions} opts
   * @param {object} handler
   * @returns {boolean}
   */
  dispatch (opts, handler) {
    return this.attempt(opts, handler, typeof opts.path === 'string' ? opts.path : '/', undefined)
  }

  /**
   * One attempt of a request: pick among the upstreams not tried yet, send through its pool.
   * @param {import('undici').Dispatcher.DispatchOptions} opts
   * @param {object} handler the caller's
   * @param {string} path
   * @param {Set<object> | undefined} tried the members whose attempts failed
   * @returns {boolean}
   */
  attempt (opts, handler, path, tried) {
    const ticket = this.closed ? null : this.router.start(path, opts.method, tried)
    if (ticket === null) {
      const err = new Error(this.closed ? 'PolicyDispatcher is closed' : 'no upstream available')
      err.code = 'ERR_POLISTES_NO_UPSTREAM'
      fail(handler, err)
      return false
    }
    // called when the attempt failed before the handler heard of it: true if it went elsewhere
    const retry = () => {
      if (this.closed || !resendable(opts.body)) return false
      const failed = nextTry(this.router, tried, ticket.member, this.retries)
      if (failed === null) return false
      this.attempt(opts, handler, path, failed)
      return true
    }
    const wrapped = typeof handler.onRequestStart === 'function'
      ? new ControllerFeedback(handler, ticket.end, retry)
      : new CallbackFeedback(handler, ticket.end, retry)
    return this.pools.get(ticket.member.origin).dispatch(opts, wrapped)
  }

  /** @returns {Promise<void>} once every pool has closed (requests under way end first) */
  async close () {
    this.closed = true
    await Promise.all([...this.pools.values()].map((p) => p.close()))
  }

  /** @returns {Promise<void>} every pool destroyed, requests under way aborted */
  async destroy (err) {
    this.closed = true
    await Promise.all([...this.pools.values()].map((p) => p.destroy(err)))
  }
}

/** Whether a request body can be sent again: none, a string or bytes (not a stream or iterable). */
function resendable (body) {
  return body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array
}

/** Report an error to a handler of either interface. */
function fail (handler, err) {
  if (typeof handler.onResponseError === 'function') handler.onResponseError(null, err)
  else if (typeof handler.onError === 'function') handler.onError(err)
}

/**
 * What both feedback wrappers keep: the caller's handler, the report to the policy (once), the retry
 * of an attempt the handler never heard of, and the final status and `X-Cache` seen.
 */
class Feedback {
  constructor (handler, report, retry) {
    this.handler = handler
    this.report = report
    this.retry = retry
    this.started = false
    this.statusCode = undefined
    this.cache = undefined
  }

  /**
   * The attempt failed: report it, then send it elsewhere if the handler never saw it start.
   * @returns {boolean} whether it went elsewhere (the error is then not the caller's)
   */
  failed (err) {
    this.report(this.statusCode, this.cache, err.message)
    return !this.started && this.retry()
  }
}

/** Feedback around a handler of the controller interface (`onRequestStart`, `onResponseStart`, ...). */
class ControllerFeedback extends Feedback {
  onRequestStart (controller, context) {
    this.started = true
    return this.handler.onRequestStart(controller, context)
  }

  onRequestUpgrade (controller, statusCode, headers, socket) {
    this.report(statusCode, undefined, undefined)
    return this.handler.onRequestUpgrade?.(controller, statusCode, headers, socket)
  }

  onResponseStart (controller, statusCode, headers, statusMessage) {
    if (statusCode >= 200) {
      this.statusCode = statusCode
      const cache = headers && headers['x-cache']
      this.cache = Array.isArray(cache) ? cache[0] : cache
    }
    return this.handler.onResponseStart?.(controller, statusCode, headers, statusMessage)
  }

  onResponseData (controller, chunk) { return this.handler.onResponseData?.(controller, chunk) }
  onResponseEnd (controller, trailers) {
    this.report(this.statusCode, this.cache, undefined)
    return this.handler.onResponseEnd?.(controller, trailers)
  }

  onResponseError (controller, err) {
    if (this.failed(err)) return
    return this.handler.onResponseError?.(controller, err)
  }
}

/** Feedback around a handler of the callback interface (`onConnect`, `onHeaders`, ...). */
class CallbackFeedback extends Feedback {
  onConnect (abort, context) {
    this.started = true
    return this.handler.onConnect?.(abort, context)
  }

  onUpgrade (statusCode, rawHeaders, socket) {
    this.report(statusCode, undefined, undefined)
    return this.handler.onUpgrade?.(statusCode, rawHeaders, socket)
  }

  onResponseStarted () { return this.handler.onResponseStarted?.() }
  onHeaders (statusCode, rawHeaders, resume, statusText) {
    if (statusCode >= 200) {
      this.statusCode = statusCode
      for (let i = 0; i < rawHeaders.length; i += 2) {
        if (String(rawHeaders[i]).toLowerCase() === 'x-cache') {
          this.cache = String(rawHeaders[i + 1])
          break
        }
      }
    }
    return this.handler.onHeaders ? this.handler.onHeaders(statusCode, rawHeaders, resume, statusText) : true
  }

  onData (chunk) { return this.handler.onData ? this.handler.onData(chunk) : true }
  onComplete (trailers) {
    this.report(this.statusCode, this.cache, undefined)
    return this.handler.onComplete?.(trailers)
  }

  onError (err) {
    if (this.failed(err)) return
    return this.handler.onError?.(err)
  }

  onBodySent (chunk) { return this.handler.onBodySent?.(chunk) }
}

/**
 * Create a PolicyDispatcher.
 * @param {ConstructorParameters<typeof PolicyDispatcher>[0]} upstreams
 * @param {ConstructorParameters<typeof PolicyDispatcher>[1]} [options]
 * @returns {PolicyDispatcher}
 */
function createPolicyDispatcher (upstreams, options) {
  return new PolicyDispatcher(upstreams, options)
}

/**
 * The options of @fastify/reply-from that send every `reply.from(request.url)` through `dispatcher`:
 * `{ undici: dispatcher, base }`. reply-from makes each request's URL from `base` (or from an absolute
 * `source`) before any dispatcher sees it, so `{ undici: dispatcher }` alone turns a path into an invalid
 * URL (every request 500 `ERR_INVALID_URL`). `base` is the first upstream's origin: the dispatcher
 * ignores it and picks the upstream itself; it only sets the `Host` header reply-from sends.
 *
 *   await app.register(require('@fastify/reply-from'), replyFromOptions(dispatcher))
 *   app.get('/*', (request, reply) => reply.from(request.url))
 *
 * @param {PolicyDispatcher} dispatcher
 * @param {object} [options] more options of @fastify/reply-from, merged in (e.g. `retryMethods`)
 * @returns {{ base: string, undici: PolicyDispatcher }}
 */
function replyFromOptions (dispatcher, options = {}) {
  if (!(dispatcher instanceof PolicyDispatcher)) {
    throw new ERR_POLISTES_BAD_OPTION('replyFromOptions takes a PolicyDispatcher')
  }
  return { base: dispatcher.upstreams[0], ...options, undici: dispatcher }
}

module.exports = { PolicyDispatcher, createPolicyDispatcher, replyFromOptions, pathKey }
