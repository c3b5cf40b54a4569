'use strict'

const { Dispatcher, Pool } = require('undici')
const { createPolicy } = require('../policies')
const { ERR_POLISTES_BAD_OPTION } = require('../errors')

/**
 * `polistes/undici`: an undici Dispatcher, like undici's BalancedPool, whose upstream choice is a
 * polistes policy (wasp by default). One undici Pool per upstream; every request is picked by the
 * policy from its routing key (the path without its query string), counted in flight on its
 * upstream, and reported back when it ends: latency, status, and the upstream's `X-Cache` header,
 * which is what lets wasp learn which upstream holds which page. Usable as the `dispatcher` of
 * undici's `fetch` and `request` (and, not tested yet, of @fastify/reply-from).
 *
 * Handlers of both undici handler interfaces are served (the controller one, `onRequestStart` ...,
 * and the callback one, `onConnect`/`onHeaders` ...): the feedback wrapper takes the caller's.
 */
class PolicyDispatcher extends Dispatcher {
  /**
   * @param {Array<string | { url: string, id?: string, weight?: number }>} upstreams origins, e.g. 'http://10.0.0.1:8080'
   * @param {object} [options]
   * @param {string | object} [options.policy='wasp'] a policy name (src/policies) or a policy object
   * @param {object} [options.policyOptions] options of a named policy
   * @param {(path: string) => string} [options.routingKey] the key a request is routed by (default: path without query)
   * @param {object} [options.poolOptions] options of each upstream's undici Pool
   * @param {() => number} [options.random] injected into a named policy
   * @param {() => number} [options.now] clock in ms (default performance.now)
   */
  constructor (upstreams, { policy = 'wasp', policyOptions = {}, routingKey = pathKey, poolOptions = {}, random = Math.random, now = () => performance.now() } = {}) {
    super()
    if (!Array.isArray(upstreams) || upstreams.length === 0) throw new ERR_POLISTES_BAD_OPTION('PolicyDispatcher needs at least one upstream URL')
    if (typeof routingKey !== 'function') throw new ERR_POLISTES_BAD_OPTION('routingKey must be a function of the request path')
    this.policy = typeof policy === 'string' ? createPolicy(policy, policyOptions, { random, now }) : policy
    if (!this.policy || typeof this.policy.pick !== 'function') throw new ERR_POLISTES_BAD_OPTION('policy must be a policy name or an object with pick()')
    this.routingKey = routingKey
    this.poolOptions = poolOptions
    this.now = now
    /** @type {Array<{ id: string, origin: string, inflight: number, weight?: number, pool: Pool }>} */
    this.members = []
    this.closed = false
    for (const u of upstreams) this.addUpstream(u)
  }

  /**
   * Add an upstream (ignored when its origin is a member already).
   * @param {string | { url: string, id?: string, weight?: number }} upstream
   * @returns {this}
   */
  addUpstream (upstream) {
    const spec = typeof upstream === 'string' ? { url: upstream } : upstream
    let origin
    try {
      origin = new URL(spec.url).origin
    } catch {
      throw new ERR_POLISTES_BAD_OPTION(`upstream must be an http(s) URL, got ${JSON.stringify(spec && spec.url)}`)
    }
    if (!/^https?:/.test(origin)) throw new ERR_POLISTES_BAD_OPTION(`upstream must be an http(s) URL, got ${JSON.stringify(spec.url)}`)
    if (this.members.some((m) => m.origin === origin)) return this
    const member = { id: spec.id || origin, origin, inflight: 0, pool: new Pool(origin, this.poolOptions) }
    if (spec.weight !== undefined) member.weight = spec.weight
    this.members = [...this.members, member]
    return this
  }

  /**
   * Remove an upstream: it gets no new request; its pool closes once its requests have ended.
   * @param {string} url
   * @returns {this}
   */
  removeUpstream (url) {
    const origin = new URL(url).origin
    const member = this.members.find((m) => m.origin === origin)
    if (member) {
      this.members = this.members.filter((m) => m !== member)
      member.pool.close().catch(() => {})
    }
    return this
  }

  /** @returns {string[]} the upstreams' origins */
  get upstreams () {
    return this.members.map((m) => m.origin)
  }

  /**
   * undici's dispatch: pick an upstream with the policy, send the request through its pool.
   * @param {import('undici').Dispatcher.DispatchOptions} opts
   * @param {object} handler
   * @returns {boolean}
   */
  dispatch (opts, handler) {
    const path = typeof opts.path === 'string' ? opts.path : '/'
    const ctx = { key: this.routingKey(path), method: opts.method }
    const member = this.closed ? undefined : this.policy.pick(this.members, ctx)
    if (!member) {
      const err = new Error(this.closed ? 'PolicyDispatcher is closed' : 'no upstream available')
      err.code = 'ERR_POLISTES_NO_UPSTREAM'
      fail(handler, err)
      return false
    }
    member.inflight++
    if (this.policy.onStart) this.policy.onStart(member, ctx)
    const t0 = this.now()
    let reported = false
    const report = (statusCode, cache, error) => {
      if (reported) return
      reported = true
      member.inflight--
      if (this.policy.onEnd) this.policy.onEnd(member, ctx, { latencyMs: this.now() - t0, statusCode, cache, error })
    }
    const wrapped = typeof handler.onRequestStart === 'function' ? new ControllerFeedback(handler, report) : new CallbackFeedback(handler, report)
    return member.pool.dispatch(opts, wrapped)
  }

  /** @returns {Promise<void>} once every pool has closed (requests under way end first) */
  async close () {
    this.closed = true
    await Promise.all(this.members.map((m) => m.pool.close()))
  }

  /** @returns {Promise<void>} every pool destroyed, requests under way aborted */
  async destroy (err) {
    this.closed = true
    await Promise.all(this.members.map((m) => m.pool.destroy(err)))
  }
}

/** The default routing key: the path without its query string. */
function pathKey (path) {
  const q = path.indexOf('?')
  return q === -1 ? path : path.slice(0, q)
}

/** Report an error to a handler of either interface. */
function fail (handler, err) {
  if (typeof handler.onResponseError === 'function') handler.onResponseError(null, err)
  else if (typeof handler.onError === 'function') handler.onError(err)
}

/** Feedback around a handler of the controller interface (`onRequestStart`, `onResponseStart`, ...). */
class ControllerFeedback {
  constructor (handler, report) {
    this.handler = handler
    this.report = report
    this.statusCode = undefined
    this.cache = undefined
  }

  onRequestStart (controller, context) { return this.handler.onRequestStart(controller, context) }
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
    this.report(this.statusCode, this.cache, err.message)
    return this.handler.onResponseError?.(controller, err)
  }
}

/** Feedback around a handler of the callback interface (`onConnect`, `onHeaders`, ...). */
class CallbackFeedback {
  constructor (handler, report) {
    this.handler = handler
    this.report = report
    this.statusCode = undefined
    this.cache = undefined
  }

  onConnect (abort, context) { return this.handler.onConnect?.(abort, context) }
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
    this.report(this.statusCode, this.cache, err.message)
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

module.exports = { PolicyDispatcher, createPolicyDispatcher, pathKey }
