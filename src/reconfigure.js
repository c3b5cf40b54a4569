'use strict'

const { validateOptions } = require('./config/defaults')
const { RELOADABLE, RESTART_ONLY } = require('./config/options')
const { compileRoutingKey } = require('./proxy/routing-key')
const { createSticky } = require('./proxy/sticky-cookie')
const { parseBackends } = require('./pool/backend-spec')
const { createPolicy } = require('./policies')
const { createProxyEngine, checkEngineTargets } = require('./proxy/proxy-engine')
const { createTrust } = require('./proxy/forwarded')

/**
 * Hot reload of a running balancer: a new config is checked in full, then applied as a diff.
 * Nothing is closed under a request: removed upstreams keep their in-flight requests (the pool
 * only stops offering them), a replaced proxy engine is closed after its last attempt ends, and a
 * policy whose options change is reconfigured in place when it can be (wasp keeps its thresholds),
 * else replaced for new requests only (requests in flight report to the policy that picked them).
 * `trustedProxies` and `maxEventStreams` apply to the next request (event streams open beyond a
 * lowered cap stay open; new ones are refused until the count is under it).
 * Settings bound to the listening sockets (host, port, the front's limits, TLS files, the admin
 * listener), the upstream CA and the proxy engine need a restart: the option table says which
 * (`reload` in src/config/options.js), and gives the settings a reload compares and replaces.
 */

/** Compared by reconfigure's own rules, not as values: the policy and the backends. */
const OWN_WAY = ['algo', 'policyOptions', 'backends']
/** The settings a reload replaces (the balancer's `settings`, src/balancer.js). */
const SETTINGS = RELOADABLE.filter((key) => key !== 'backends')

/**
 * The active-check settings of one upstream: the balancer's `healthCheck` overridden by its spec's
 * own, or null when checks are off for it (no path, or the spec says `healthCheck: false`).
 * @param {import('./balancer').Balancer} balancer
 * @param {import('./pool/pool').Upstream} upstream
 * @returns {import('./pool/health-checker').HealthCheckSettings | null}
 */
function checkSettingsFor (balancer, upstream) {
  const spec = balancer.specs.get(upstream.id)
  const own = spec && spec.healthCheck
  if (own === false) return null
  const settings = { ...balancer.settings.healthCheck, ...(own || {}) }
  return settings.path ? settings : null
}

/**
 * Check `o` completely, then apply it to `balancer` (see the module comment).
 * @param {import('./balancer').Balancer} balancer
 * @param {object} o the new options, defaults filled in
 * @returns {{ added: string[], removed: string[], updated: string[], changed: string[], restartNeeded: string[] }}
 * @throws {import('./common/errors').PolistesError} when `o` is invalid; then nothing was changed
 */
function reconfigure (balancer, o) {
  const cur = balancer.settings
  // 1. everything that can throw
  const {
    keepAlive,
    timeoutMs,
    tryTimeoutMs,
    retries,
    retryOn,
    maxFails,
    failTimeoutMs,
    slowStartMs,
    policyOptions,
    maxBodySize,
    maxEventStreams,
    trustedProxies
  } = o
  // host and port (and the other settings a reload cannot change) are checked only when given
  validateOptions(Object.fromEntries(
    [...RELOADABLE, ...RESTART_ONLY].filter((key) => o[key] !== undefined).map((key) => [key, o[key]])
  ))
  const trust = createTrust(trustedProxies)
  const keyOf = compileRoutingKey(o.routingKey)
  const stickyChanged = !sameJson(o.stickyCookie, cur.stickyCookie)
  const sticky = stickyChanged ? createSticky(o.stickyCookie) : balancer.sticky
  const specs = parseBackends(o.backends)
  checkEngineTargets(cur.engine, specs.map((s) => new URL(s.url)))
  const restartNeeded = RESTART_ONLY.filter((key) => o[key] !== undefined && o[key] !== cur[key])
  // the policy (algo, policyOptions) and the backends are compared their own way below
  const changed = RELOADABLE.filter((key) => !OWN_WAY.includes(key) && !sameJson(o[key], cur[key]))
  const deps = { random: balancer.random, now: balancer.now }
  let policy = null
  let configurePolicy = false
  if (o.policy) {
    if (o.policy !== balancer.policy) policy = o.policy
  } else if (o.algo !== cur.algo || cur.customPolicy) {
    policy = createPolicy(o.algo, policyOptions, deps)
  } else if (!sameJson(policyOptions, cur.policyOptions)) {
    if (typeof balancer.policy.configure === 'function') {
      createPolicy(o.algo, policyOptions) // the check only: the running policy is configured below
      configurePolicy = true
    } else {
      policy = createPolicy(o.algo, policyOptions, deps)
    }
  }
  if (policy) changed.push('algo')
  if (policy || configurePolicy) changed.push('policyOptions')
  const resolveMs = o.resolveMs
  // resolution turned on or off: the engine's connections take another lookup
  const renewEngine = keepAlive !== cur.keepAlive || timeoutMs !== cur.timeoutMs ||
    (resolveMs === null) !== (cur.resolveMs === null)

  // 2. apply: nothing below throws
  const { pool } = balancer
  const next = new Map(specs.map((s) => [s.id, s]))
  const added = []
  const removed = []
  const updated = []
  for (const id of balancer.specs.keys()) {
    const spec = next.get(id)
    if (spec === undefined || spec.url !== balancer.specs.get(id).url) {
      pool.remove(id)
      balancer.telemetry.retire(id) // its record goes after one window (bounded with a changing fleet)
      removed.push(id)
    }
  }
  for (const spec of specs) {
    const old = balancer.specs.get(spec.id)
    if (old === undefined || old.url !== spec.url) {
      pool.add(spec, { slowStart: true })
      balancer.telemetry.upstream(spec.id) // a column from now (or its old one, if not yet dropped)
      added.push(spec.id)
    } else if (!sameJson(old, spec)) {
      pool.update(spec)
      updated.push(spec.id)
    }
  }
  balancer.specs = next
  pool.configure({ maxFails, failTimeoutMs, slowStartMs })
  balancer.retries = retries
  balancer.tryTimeoutMs = tryTimeoutMs
  balancer.setRetryOn(retryOn)
  balancer.maxBodySize = maxBodySize
  balancer.trust = trust
  balancer.admin.configure({ maxEventStreams })
  balancer.keyOf = keyOf
  balancer.sticky = sticky
  if (configurePolicy) balancer.policy.configure(policyOptions)
  if (policy) balancer.policy = policy
  balancer.setResolveMs(resolveMs)
  if (balancer.resolver !== null) balancer.resolver.sync(pool.all().map((u) => u.target))
  const engine = renewEngine
    ? createProxyEngine({
      keepAlive, timeoutMs, engine: cur.engine, upstreamCa: balancer.upstreamCa, lookup: balancer.lookup
    })
    : null
  if (engine) {
    const old = balancer.engine
    balancer.engine = engine
    if (balancer.engineUse.has(old)) balancer.retiredEngines.add(old)
    else old.close()
  }
  balancer.settings = {
    ...cur,
    ...Object.fromEntries(SETTINGS.map((key) => [key, o[key]])),
    algo: o.policy ? o.policy.name : o.algo,
    customPolicy: Boolean(o.policy)
  }
  if (balancer.url !== undefined && !balancer.closing) balancer.checker.sync((u) => checkSettingsFor(balancer, u))
  return { added, removed, updated, changed: RELOADABLE.filter((key) => changed.includes(key)), restartNeeded }
}

/** Equality of plain JSON values (config objects), key order included. */
function sameJson (a, b) {
  return JSON.stringify(a) === JSON.stringify(b)
}

module.exports = { reconfigure, checkSettingsFor }
