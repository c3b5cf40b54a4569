'use strict'

const { ERR_POLISTES_BAD_URL } = require('../common/errors')

/**
 * The pool owns membership and health; policies only ever see `eligible()`.
 *
 * Passive health, as nginx's `max_fails` / `fail_timeout`: an upstream that fails to connect,
 * resets or times out `maxFails` times in a row is left out for `failTimeoutMs`, then gets traffic
 * again (a success clears its record, one more failure ejects it again). When every member that
 * is not down by its active checks is ejected, all of those are eligible: a blackout helps nobody.
 *
 * Active health, as HAProxy's `check rise N fall M`: a member watched by the health checker
 * ({@link Pool#watch}) is taken out after `fall` failed checks in a row and comes back after `rise`
 * passed checks in a row (the checks themselves run in ./health-checker.js, which reports here).
 * A member that is down by its checks gets no traffic, even when every member is down (then the
 * balancer answers 503, as HAProxy does).
 *
 * Slow start, as HAProxy's `slowstart` and nginx's `slow_start`: a member that comes back (checks
 * rose, passive ejection ended) or that was added to a running pool ramps up over `slowStartMs`.
 * HAProxy ramps the effective weight; polistes gates instead, so that the ramp works for every
 * policy, including those that ignore weights (wasp, the latency policies) or route by affinity:
 * at ramp r = elapsed / slowStartMs in [0, 1] the member is offered to the policy on a fraction r of
 * the picks (one draw of the injected `random` per pick decides for every ramping member), so its
 * share of requests is about r times the share it would have. Members present at start do not ramp.
 *
 * Backups, as nginx's and HAProxy's `backup`: a member marked `backup` is offered only while no
 * primary member is up (all down by checks, ejected, drained or in maintenance). Administrative
 * state, as HAProxy's `set server … state`: a member set to `drain` or `maint` ({@link Pool#setState})
 * is never offered, whatever its health.
 */
class Pool {
  /**
   * @param {import('./backend-spec').BackendSpec[]} specs
   * @param {{ maxFails?: number, failTimeoutMs?: number, slowStartMs?: number, now?: () => number, random?: () =>
   * number }} [options]
   */
  constructor (specs, {
    maxFails = 1,
    failTimeoutMs = 5000,
    slowStartMs = 0,
    now = () => performance.now(),
    random = Math.random
  } = {}) {
    this.maxFails = maxFails
    this.failTimeoutMs = failTimeoutMs
    this.slowStartMs = slowStartMs
    this.now = now
    this.random = random
    /** @type {Map<string, Upstream>} */
    this.members = new Map()
    this._eligible = null
    this._ramping = []
    this._variants = []
    this._nextCheck = Infinity
    for (const spec of specs) this.add(spec)
  }

  /**
   * Change the passive-health and slow-start settings (hot reload); records are kept.
   * @param {{ maxFails?: number, failTimeoutMs?: number, slowStartMs?: number }} settings
   */
  configure ({ maxFails = this.maxFails, failTimeoutMs = this.failTimeoutMs, slowStartMs = this.slowStartMs }) {
    this.maxFails = maxFails
    this.failTimeoutMs = failTimeoutMs
    this.slowStartMs = slowStartMs
    this._eligible = null
  }

  /**
   * Add a member (it starts healthy).
   * @param {import('./backend-spec').BackendSpec} spec
   * @param {{ slowStart?: boolean }} [options] `slowStart`: ramp it up (a member added to a running pool)
   * @returns {Upstream}
   */
  add (spec, { slowStart = false } = {}) {
    if (this.members.has(spec.id)) throw new ERR_POLISTES_BAD_URL('pool', `duplicate upstream id "${spec.id}"`)
    const upstream = new Upstream(spec)
    if (slowStart) upstream.upSince = this.now()
    this.members.set(spec.id, upstream)
    this._eligible = null
    return upstream
  }

  /**
   * Change a member's weight, region and backup flag in place (its counters and health are kept).
   * @param {import('./backend-spec').BackendSpec} spec a spec whose id is a member
   * @returns {boolean} whether it was a member
   */
  update ({ id, weight, region, backup = false }) {
    const upstream = this.members.get(id)
    if (upstream === undefined) return false
    upstream.weight = weight
    upstream.region = region
    upstream.backup = backup
    this._eligible = null
    return true
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
   * @param {string} id
   * @returns {Upstream | undefined}
   */
  get (id) {
    return this.members.get(id)
  }

  /**
   * The members a policy may pick from now. While no member is ramping up, the same array
   * instance is returned until membership or health changes, so a policy may cache per-list work;
   * during a slow start it is one of a few nested lists (with the ramping members that this pick's
   * draw let in), each also kept until the next change.
   * @returns {Upstream[]}
   */
  eligible () {
    const t = this.now()
    if (this._eligible === null || t >= this._nextCheck) this._recompute(t)
    const ramping = this._ramping
    if (ramping.length === 0) return this._eligible
    const x = this.random()
    let admitted = 0
    while (admitted < ramping.length && this.ramp(ramping[admitted], t) > x) admitted++
    let list = this._variants[admitted]
    if (list === undefined) {
      const out = new Set(ramping.slice(admitted))
      list = this._eligible.filter((u) => !out.has(u))
      this._variants[admitted] = list
    }
    return list
  }

  _recompute (t) {
    let next = Infinity
    // primaries first; backups (nginx's and HAProxy's `backup`) only when no primary is up
    const up = []
    const alive = []
    const upBackup = []
    const aliveBackup = []
    const ramping = []
    for (const u of this.members.values()) {
      if (u.adminState !== 'ready') continue // drained or in maintenance: no new requests
      if (u.check !== null && !u.check.up) continue
      ;(u.backup ? aliveBackup : alive).push(u)
      if (!this.isHealthy(u, t)) {
        next = Math.min(next, u.downUntil)
        continue
      }
      ;(u.backup ? upBackup : up).push(u)
      if (this.ramp(u, t) < 1) {
        ramping.push(u)
        next = Math.min(next, rampFrom(u) + this.slowStartMs)
      }
    }
    this._nextCheck = next
    const list = up.length > 0 ? up : upBackup.length > 0 ? upBackup : alive.length > 0 ? alive : aliveBackup
    this._eligible = list
    // ramping only matters beside members at full share; oldest ramp (highest) first
    const rampingIn = list === up || list === upBackup ? ramping.filter((u) => u.backup === (list === upBackup)) : []
    this._ramping = list.length > rampingIn.length ? rampingIn.sort((a, b) => rampFrom(a) - rampFrom(b)) : []
    this._variants = []
  }

  /**
   * Set a member's administrative state, as HAProxy's `set server <b>/<s> state ready|drain|maint`:
   * `drain` takes no new requests (those in flight finish; a sticky client may still come back, see
   * the balancer's `stickyCookie`), `maint` takes no traffic at all, `ready` serves again (after
   * `maint`, with a slow start). Health checks go on in every state. The state stays through a
   * reload for as long as the member stays.
   * @param {string} id
   * @param {'ready' | 'drain' | 'maint'} state
   * @returns {Upstream | undefined} the member, or undefined when there is none with that id
   */
  setState (id, state) {
    const upstream = this.members.get(id)
    if (upstream === undefined) return undefined
    if (!ADMIN_STATES.includes(state)) {
      throw new TypeError(`unknown state ${JSON.stringify(state)}; expected one of ${ADMIN_STATES.join(', ')}`)
    }
    if (state === 'ready' && upstream.adminState === 'maint') upstream.upSince = this.now()
    upstream.adminState = state
    this._eligible = null
    return upstream
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
   * Whether `upstream` may get traffic at time `t`: not down by its active checks, not ejected.
   * @param {Upstream} upstream
   * @param {number} [t] now, in the pool's clock
   * @returns {boolean}
   */
  isHealthy (upstream, t = this.now()) {
    return (upstream.check === null || upstream.check.up) && upstream.downUntil <= t
  }

  /**
   * The slow-start ramp of `upstream` at time `t`: 0 just back, 1 at full share (and always 1
   * with `slowStartMs` 0 or for a member that never went away).
   * @param {Upstream} upstream
   * @param {number} [t]
   * @returns {number} in [0, 1]
   */
  ramp (upstream, t = this.now()) {
    if (this.slowStartMs <= 0) return 1
    const r = (t - rampFrom(upstream)) / this.slowStartMs
    return r >= 1 ? 1 : (r > 0 ? r : 0)
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
      if (upstream.check !== null) upstream.check.okStreak = 0 // checks count their passes from here
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

  /**
   * Start tracking active checks of `upstream` with HAProxy's `rise` / `fall` counts (it starts up,
   * as HAProxy's servers do), or change the counts of one already watched (its state is kept).
   * @param {Upstream} upstream
   * @param {{ rise: number, fall: number }} counts
   */
  watch (upstream, { rise, fall }) {
    if (upstream.check === null) {
      upstream.check = new CheckState(rise, fall)
    } else {
      upstream.check.rise = rise
      upstream.check.fall = fall
    }
  }

  /**
   * Stop tracking active checks of `upstream`: it counts as up again.
   * @param {Upstream} upstream
   */
  unwatch (upstream) {
    if (upstream.check === null) return
    if (!upstream.check.up) upstream.upSince = this.now()
    upstream.check = null
    this._eligible = null
  }

  /**
   * One active check's result. `fall` failures in a row take a watched upstream down; `rise`
   * passes in a row bring it back, with a slow start, and clear its passive ejection (also one that
   * took it out while its checks stayed up: `rise` passes since the ejection).
   * @param {Upstream} upstream a watched member
   * @param {{ ok: boolean, status?: number, ms?: number, error?: string }} result
   * @returns {'up' | 'down' | undefined} the transition this result caused, if any
   */
  reportCheck (upstream, { ok, status, ms, error }) {
    const c = upstream.check
    if (c === null) return undefined
    const t = this.now()
    c.last = { ok, status: status ?? null, ms: ms ?? null, error: error ?? null, at: t }
    if (ok) {
      c.passed++
      c.failStreak = 0
      // up by its checks and not ejected: nothing changes; passively ejected (fail) while its checks
      // stay up: `rise` passes in a row since the ejection clear it, as HAProxy's `on-error
      // mark-down` then `rise` does (a crashed backend restarted within failTimeoutMs serves again
      // as soon as its checks say so, not failTimeoutMs after the crash)
      if (c.up && !(upstream.downUntil > t)) return undefined
      if (++c.okStreak < c.rise) return undefined
      if (!c.up) upstream.upSince = t
      c.up = true
      c.okStreak = 0
      upstream.consecutiveFailures = 0
      if (upstream.downUntil > t) upstream.downUntil = t
      this._eligible = null
      return 'up'
    }
    c.failed++
    c.okStreak = 0
    if (!c.up) return undefined
    if (++c.failStreak < c.fall) return undefined
    c.up = false
    c.failStreak = 0
    c.downs++
    this._eligible = null
    return 'down'
  }

  /**
   * What stats show about a member's health at time `t`.
   * @param {Upstream} upstream
   * @param {number} [t]
   * @returns {{ state: 'up' | 'falling' | 'down' | 'rising' | 'ejected', healthy: boolean, ramp: number, check: object
   * | null }}
   */
  health (upstream, t = this.now()) {
    const c = upstream.check
    let state = 'up'
    if (c !== null && !c.up) state = c.okStreak > 0 ? 'rising' : 'down'
    else if (upstream.downUntil > t) state = 'ejected'
    else if (c !== null && c.failStreak > 0) state = 'falling'
    return {
      state,
      healthy: this.isHealthy(upstream, t),
      ramp: this.ramp(upstream, t),
      check: c === null
        ? null
        : {
            rise: c.rise,
            fall: c.fall,
            passed: c.passed,
            failed: c.failed,
            downs: c.downs,
            last: c.last
          }
    }
  }
}

/** The administrative states of a member (HAProxy's ready, drain, maint). */
const ADMIN_STATES = ['ready', 'drain', 'maint']

/** When a member's slow start began: it came back from a check-down or from an ejection, or was added. */
function rampFrom (upstream) {
  return upstream.upSince > upstream.downUntil ? upstream.upSince : upstream.downUntil
}

/** The active-check record of a watched member. */
class CheckState {
  /**
   * @param {number} rise passed checks in a row that bring it back
   * @param {number} fall failed checks in a row that take it down
   */
  constructor (rise, fall) {
    this.up = true
    this.rise = rise
    this.fall = fall
    this.okStreak = 0
    this.failStreak = 0
    this.passed = 0
    this.failed = 0
    this.downs = 0
    /** @type {{ ok: boolean, status: number | null, ms: number | null, error: string | null, at: number } | null} */
    this.last = null
  }
}

/** One upstream's record: identity, live load, counters and health. */
class Upstream {
  /** @param {import('./backend-spec').BackendSpec} spec */
  constructor ({ id, url, weight, region, backup = false }) {
    this.id = id
    this.url = url
    this.target = new URL(url)
    /** the weight given, undefined when none was (the policies read 1; wasp learns one from the queue) */
    this.weight = weight
    this.region = region
    /** used only while no primary (non-backup) member is up */
    this.backup = backup
    /** @type {'ready' | 'drain' | 'maint'} set through the admin API (Pool#setState) */
    this.adminState = 'ready'
    this.inflight = 0
    this.requests = 0
    this.failures = 0
    this.consecutiveFailures = 0
    this.ejections = 0
    this.downUntil = -Infinity
    /** when it last came back up or was added to a running pool (slow start), -Infinity: never */
    this.upSince = -Infinity
    /** @type {CheckState | null} null: no active checks */
    this.check = null
  }

  /** @returns {object} plain JSON for stats */
  toJSON () {
    return {
      id: this.id,
      url: this.url,
      weight: this.weight ?? 1,
      region: this.region,
      backup: this.backup,
      adminState: this.adminState,
      inflight: this.inflight,
      requests: this.requests,
      failures: this.failures,
      ejections: this.ejections,
      downUntil: Number.isFinite(this.downUntil) ? this.downUntil : null
    }
  }
}

module.exports = { Pool, Upstream }
