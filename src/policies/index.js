'use strict'

const { ERR_POLISTES_UNKNOWN_ALGO } = require('../common/errors')

/**
 * The policies known by name, as `--algo` accepts them, each as a function that loads its factory (a
 * start loads only the policy it runs, and a check of the flags none). Each factory follows the contract in
 * docs/design.md, "The policy contract": `factory(options, { random, now })` returns `{ name, pick, onStart?, onEnd?,
 * snapshot? }`.
 * @type {Record<string, () => (options?: object, deps?: { random?: () => number, now?: () => number }) => object>}
 */
const policies = {
  'round-robin': () => require('./round-robin').createRoundRobin,
  random: () => require('./random').createRandom,
  'weighted-round-robin': () => require('./weighted-round-robin').createWeightedRoundRobin,
  'least-connections': () => require('./least-connections').createLeastConnections,
  'ip-hash': () => require('./ip-hash').createIpHash,
  sma: () => require('./sma').createSma,
  ewma: () => require('./ewma').createEwma,
  'lowest-latency': () => require('./lowest-latency').createLowestLatency,
  'latency-weighted': () => require('./latency-weighted').createLatencyWeighted,
  'equal-regions': () => require('./equal-regions').createEqualRegions,
  'p2c-peak-ewma': () => require('./p2c-peak-ewma').createP2cPeakEwma,
  'chash-bounded': () => require('./chash-bounded').createChashBounded,
  wasp: () => require('./wasp').createWasp
}

/** @returns {string[]} the policy names, in registry order */
function policyNames () {
  return Object.keys(policies)
}

/**
 * Create a policy by name.
 * @param {string} name one of {@link policyNames}
 * @param {object} [options] policy options
 * @param {{ random?: () => number, now?: () => number }} [deps] injected sources
 * @returns {object} the policy
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_UNKNOWN_ALGO when the name is not registered
 */
function createPolicy (name, options, deps) {
  const load = Object.hasOwn(policies, name) ? policies[name] : undefined
  if (!load) {
    throw new ERR_POLISTES_UNKNOWN_ALGO(name, policyNames())
  }
  return load()(options, deps)
}

module.exports = { createPolicy, policyNames }
