'use strict'

const { ERR_POLISTES_BAD_URL } = require('./errors')

/**
 * The pool owns membership and health; policies only ever see `eligible()`.
 *
 * Health is passive, as nginx's `max_fails` / `fail_timeout`: an upstream that fails to connect,
 * resets or times out `maxFails` times in a row is left out for `failTimeoutMs`, then gets traffic
 * again (a success clears its record, one more failure ejects it again). When every member is
 * ejected, all of them are eligible: a blackout helps nobody.
 */
class Pool {
  /**
   * @param {import('./backend-spec').BackendSpec[]} specs
   * @param {{ maxFails?: number, failTimeoutMs?: number, now?: () => number }} [options]
   */
  constructor (specs, { maxFails = 1, failTimeoutMs = 5000, now = () => performance.now() } = {}) {
    this.maxFails = maxFails
    this.failTimeoutMs = failTimeoutMs
    this.now = now
    /** @type {Map<string, Upstream>} */
    this.members = new Map()
    this._eligible = null
    this._nextCheck = Infinity
    for (const spec of specs) this.add(spec)
  }

  /**
   * Add a member (it starts healthy).
   * @param {import('./backend-spec').BackendSpec} spec
   * @returns {Upstream}
   */
  add (spec) {
    if (this.members.has(spec.id)) throw new ERR_POLISTES_BAD_URL('pool', `duplicate upstream id "${spec.id}"`)
    const upstream = new Upstream(spec)
    this.members.set(spec.id, upstream)
    this._eligible = null
    return upstream
  }

  /**
   * Remove a member; requests already dispatched to it finish normally.
   * @param {string} id
   * @returns {boolean} whether it was a member
   */
  remove (id) {
    const removed = this.members.delete(id)
    if (removed) this._eligible = null
    return removed
  }

  /** @returns {Upstream[]} every member, in insertion order */
  all () {
    return [...this.members.values()]
  }

  /**
   * The members a policy may pick from now. The same array instance is returned until membership
   * or health changes, so a policy may cache per-list work.
   * @returns {Upstream[]}
   */
  eligible () {
    const t = this.now()
    if (this._eligible === null || t >= this._nextCheck) {
      let next = Infinity
      const up = []
      for (const u of this.members.values()) {
        if (this.isHealthy(u, t)) up.push(u)
        else next = Math.min(next, u.downUntil)
      }
      this._nextCheck = next
      this._eligible = up.length > 0 ? up : this.all()
    }
    return this._eligible
  }

  /**
   * An attempt is dispatched to `upstream`: one more in flight, one more request.
   * @param {Upstream} upstream
   */
  acquire (upstream) {
    upstream.inflight++
    upstream.requests++
  }

  /**
   * The attempt dispatched by {@link Pool#acquire} ended (answered, failed or aborted).
   * @param {Upstream} upstream
   */
  release (upstream) {
    upstream.inflight--
  }

  /**
   * Whether `upstream` is not ejected at time `t`.
   * @param {Upstream} upstream
   * @param {number} [t] now, in the pool's clock
   * @returns {boolean}
   */
  isHealthy (upstream, t = this.now()) {
    return upstream.downUntil <= t
  }

  /** @returns {number} attempts in flight over all members */
  inflight () {
    let sum = 0
    for (const u of this.members.values()) sum += u.inflight
    return sum
  }

  /**
   * Record a connection-level failure (refused, reset, timeout).
   * @param {Upstream} upstream
   */
  fail (upstream) {
    upstream.failures++
    upstream.consecutiveFailures++
    if (upstream.consecutiveFailures >= this.maxFails && this.members.get(upstream.id) === upstream) {
      upstream.downUntil = this.now() + this.failTimeoutMs
      upstream.ejections++
      this._eligible = null
    }
  }

  /**
   * Record a response (any status): the upstream is reachable.
   * @param {Upstream} upstream
   */
  succeed (upstream) {
    if (upstream.consecutiveFailures !== 0) upstream.consecutiveFailures = 0
  }
}

/** One upstream's record: identity, live load and counters. */
class Upstream {
  /** @param {import('./backend-spec').BackendSpec} spec */
  constructor ({ id, url, weight = 1, region }) {
    this.id = id
    this.url = url
    this.target = new URL(url)
    this.weight = weight
    this.region = region
    this.inflight = 0
    this.requests = 0
    this.failures = 0
    this.consecutiveFailures = 0
    this.ejections = 0
    this.downUntil = -Infinity
  }

  /** @returns {object} plain JSON for stats */
  toJSON () {
    return {
      id: this.id,
      url: this.url,
      weight: this.weight,
      region: this.region,
      inflight: this.inflight,
      requests: this.requests,
      failures: this.failures,
      ejections: this.ejections,
      downUntil: Number.isFinite(this.downUntil) ? this.downUntil : null
    }
  }
}

module.exports = { Pool, Upstream }
