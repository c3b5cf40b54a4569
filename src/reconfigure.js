'use strict'

const { validateOptions } = require('./config/defaults')
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
 * listener), the upstream CA and the proxy engine need a restart.
 */

/** Settings that cannot change on a running balancer. */
const RESTART_ONLY = ['host', 'port', 'engine', 'front', 'maxConnections', 'headersTimeoutMs', 'requestTimeoutMs', 'keepAliveTimeoutMs',
  'maxHeaderSize', 'tlsCert', 'tlsKey', 'upstreamCa', 'adminPort', 'adminHost']

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
  const { keepAlive, timeoutMs, tryTimeoutMs, retries, retryOn, maxFails, failTimeoutMs, slowStartMs, healthCheck, policyOptions, maxBodySize, maxEventStreams, trustedProxies } = o
  validateOptions({ keepAlive, timeoutMs, tryTimeoutMs, retries, retryOn, maxFails, failTimeoutMs, slowStartMs, healthCheck, policyOptions, maxBodySize, maxEventStreams, trustedProxies })
  const trust = createTrust(trustedProxies)
  validateOptions({ routingKey: o.routingKey, stickyCookie: o.stickyCookie, resolveMs: o.resolveMs })
  const keyOf = compileRoutingKey(o.routingKey) // throws on a bad one
  const stickyChanged = !sameJson(o.stickyCookie, cur.stickyCookie)
  const sticky = stickyChanged ? createSticky(o.stickyCookie) : balancer.sticky
  validateOptions(Object.fromEntries(RESTART_ONLY.filter((key) => o[key] !== undefined).map((key) => [key, o[key]])))
  const specs = parseBackends(o.backends)
  checkEngineTargets(cur.engine, specs.map((s) => new URL(s.url)))
  const restartNeeded = RESTART_ONLY.filter((key) => o[key] !== undefined && o[key] !== cur[key])
  const changed = ['keepAlive', 'timeoutMs', 'tryTimeoutMs', 'retries', 'maxFails', 'failTimeoutMs', 'slowStartMs', 'maxBodySize', 'maxEventStreams'].filter((key) => o[key] !== cur[key])
  if (!sameJson(retryOn, cur.retryOn)) changed.push('retryOn')
  if (!sameJson(trustedProxies, cur.trustedProxies)) changed.push('trustedProxies')
  if (!sameJson(healthCheck, cur.healthCheck)) changed.push('healthCheck')
  if (o.routingKey !== cur.routingKey) changed.push('routingKey')
  if (stickyChanged) changed.push('stickyCookie')
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
  if (resolveMs !== cur.resolveMs) changed.push('resolveMs')
  // resolution turned on or off: the engine's connections take another lookup
  const renewEngine = keepAlive !== cur.keepAlive || timeoutMs !== cur.timeoutMs || (resolveMs === null) !== (cur.resolveMs === null)

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
  const engine = renewEngine ? createProxyEngine({ keepAlive, timeoutMs, engine: cur.engine, upstreamCa: balancer.upstreamCa, lookup: balancer.lookup }) : null
  if (engine) {
    const old = balancer.engine
    balancer.engine = engine
    if (balancer.engineUse.has(old)) balancer.retiredEngines.add(old)
    else old.close()
  }
  balancer.settings = {
    ...cur,
    algo: o.policy ? o.policy.name : o.algo,
    customPolicy: Boolean(o.policy),
    policyOptions,
    keepAlive,
    timeoutMs,
    tryTimeoutMs,
    retries,
    retryOn,
    maxFails,
    failTimeoutMs,
    slowStartMs,
    maxBodySize,
    maxEventStreams,
    trustedProxies,
    healthCheck,
    routingKey: o.routingKey,
    stickyCookie: o.stickyCookie,
    resolveMs
  }
  if (balancer.url !== undefined && !balancer.closing) balancer.checker.sync((u) => checkSettingsFor(balancer, u))
  return { added, removed, updated, changed: [...new Set(changed)], restartNeeded }
}

/** Equality of plain JSON values (config objects), key order included. */
function sameJson (a, b) {
  return JSON.stringify(a) === JSON.stringify(b)
}

module.exports = { reconfigure, checkSettingsFor, RESTART_ONLY }
