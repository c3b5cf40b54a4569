'use strict'

const { createPolicy } = require('../policies')
const { Pool } = require('../pool/pool')
const { DEFAULTS, validateOptions } = require('../config/defaults')
const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')

/**
 * The part every adapter shares: a list of upstreams as a policy sees them (id, origin, in-flight
 * count), the pick of one per request, and the feedback when the request ends (latency, status, the
 * upstream's `X-Cache`). Adapters (src/adapters/*.js) only wire it to a library's hooks. No I/O.
 *
 * Membership and passive health are the balancer's own pool (src/pool/pool.js): an upstream whose
 * attempts fail at the connection level (refused, reset, no response) `maxFails` times in a row is
 * left out of the choice for `failTimeoutMs`, as nginx's `max_fails` / `fail_timeout`; when every
 * upstream is out, all are offered again (a blackout helps nobody).
 */
class PolicyRouter {
  /**
   * @param {Array<string | { url: string, id?: string, weight?: number }>} upstreams origins
   * @param {object} [options]
   * @param {string | object} [options.policy='wasp'] a policy name (src/policies) or a policy object
   * @param {object} [options.policyOptions] options of a named policy
   * @param {(path: string) => string} [options.routingKey] the key a request is routed by (default: path without query)
   * @param {() => number} [options.random] injected into a named policy
   * @param {() => number} [options.now] clock in ms (default performance.now)
   * @param {number} [options.maxFails=1] connection-level failures in a row that leave an upstream out
   * @param {number} [options.failTimeoutMs=5000] how long it is left out
   */
  constructor (upstreams, {
    policy = 'wasp',
    policyOptions = {},
    routingKey = pathKey,
    random = Math.random,
    now = () => performance.now(),
    maxFails = DEFAULTS.maxFails,
    failTimeoutMs = DEFAULTS.failTimeoutMs
  } = {}) {
    if (!Array.isArray(upstreams) || upstreams.length === 0) {
      throw new ERR_POLISTES_BAD_OPTION('a policy router needs at least one upstream URL')
    }
    if (typeof routingKey !== 'function') {
      throw new ERR_POLISTES_BAD_OPTION('routingKey must be a function of the request path')
    }
    validateOptions({ maxFails, failTimeoutMs })
    this.policy = typeof policy === 'string' ? createPolicy(policy, policyOptions, { random, now }) : policy
    if (!this.policy || typeof this.policy.pick !== 'function') {
      throw new ERR_POLISTES_BAD_OPTION('policy must be a policy name or an object with pick()')
    }
    this.routingKey = routingKey
    this.now = now
    this.pool = new Pool([], { maxFails, failTimeoutMs, now, random })
    for (const u of upstreams) this.add(u)
  }

  /** @returns {Array<import('../pool/pool').Upstream & { origin: string }>} every upstream, in the order added */
  get members () {
    return this.pool.all()
  }

  /**
   * Add an upstream; returns the new member, or null when its origin is a member already.
   * @param {string | { url: string, id?: string, weight?: number }} upstream
   * @returns {{ id: string, origin: string, inflight: number, weight?: number } | null}
   */
  add (upstream) {
    const spec = typeof upstream === 'string' ? { url: upstream } : (upstream || {})
    let origin
    try {
      origin = new URL(spec.url).origin
    } catch {
      origin = ''
    }
    if (!/^https?:\/\//.test(origin)) {
      throw new ERR_POLISTES_BAD_OPTION(`upstream must be an http(s) URL, got ${JSON.stringify(spec.url)}`)
    }
    if (this.members.some((m) => m.origin === origin)) return null
    const id = spec.id || origin
    if (this.pool.get(id) !== undefined) {
      throw new ERR_POLISTES_BAD_OPTION(`duplicate upstream id ${JSON.stringify(id)}`)
    }
    const member = this.pool.add({ id, url: origin, weight: spec.weight })
    member.origin = origin
    return member
  }

  /**
   * Remove an upstream (its requests under way still report); returns the member, or null.
   * @param {string} url
   */
  remove (url) {
    const origin = new URL(url).origin
    const member = this.members.find((m) => m.origin === origin)
    if (!member) return null
    this.pool.remove(member.id)
    return member
  }

  /**
   * Pick the upstream of one request among those not left out by their failures, and count it in
   * flight.
   * @param {string} path the request target (its query string is not part of the default key)
   * @param {string} [method]
   * @param {Set<object>} [tried] members not to pick (the attempts of this request that failed)
   * @returns {{ member: { id: string, origin: string }, end: (statusCode?: number, cache?: string, error?: string) =>
   *   void } | null} null when no upstream is left; `end` reports the outcome to the policy, once (later calls are
   *   ignored). An `error` with no `statusCode` is a connection-level failure, counted for passive
   *   health; any status clears the member's record.
   */
  start (path, method = 'GET', tried) {
    const ctx = { key: this.routingKey(path), method }
    let list = this.pool.eligible()
    if (tried !== undefined && tried.size > 0) list = list.filter((m) => !tried.has(m))
    const member = this.policy.pick(list, ctx)
    if (!member) return null
    this.pool.acquire(member)
    if (this.policy.onStart) this.policy.onStart(member, ctx)
    const t0 = this.now()
    let ended = false
    const end = (statusCode, cache, error) => {
      if (ended) return
      ended = true
      this.pool.release(member)
      if (error !== undefined && statusCode === undefined) this.pool.fail(member)
      else this.pool.succeed(member)
      if (this.policy.onEnd) this.policy.onEnd(member, ctx, { latencyMs: this.now() - t0, statusCode, cache, error })
    }
    return { member, end }
  }
}

/**
 * After a failed attempt on `member`: the members tried so far, if another attempt may go out
 * (fewer than `retries` retries made, and an eligible member not tried yet), else null.
 * @param {PolicyRouter} router
 * @param {Set<object> | undefined} tried the members whose attempts failed before
 * @param {object} member the member of the attempt that just failed
 * @param {number} retries
 * @returns {Set<object> | null}
 */
function nextTry (router, tried, member, retries) {
  const failed = new Set(tried)
  failed.add(member)
  return failed.size <= retries && router.pool.eligible().some((m) => !failed.has(m)) ? failed : null
}

/** The default routing key: the path without its query string. */
function pathKey (path) {
  const q = path.indexOf('?')
  return q === -1 ? path : path.slice(0, q)
}

/** The first value of a header as Node gives it (string, array or undefined). */
function headerValue (value) {
  return Array.isArray(value) ? value[0] : value
}

/**
 * `options` with the PolicyRouter as a non-enumerable `policyRouter`, so that spreading the options
 * into a library's own does not hand it an option it does not know.
 * @template T
 * @param {PolicyRouter} router
 * @param {T} options
 * @returns {T & { policyRouter: PolicyRouter }}
 */
function withRouter (router, options) {
  return Object.defineProperty(options, 'policyRouter', { value: router, enumerable: false })
}

module.exports = { PolicyRouter, nextTry, pathKey, headerValue, withRouter }
