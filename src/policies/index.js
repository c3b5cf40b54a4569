'use strict'

const { ERR_POLISTES_UNKNOWN_ALGO } = require('../common/errors')

const { createRoundRobin } = require('./round-robin')
const { createRandom } = require('./random')
const { createWeightedRoundRobin } = require('./weighted-round-robin')
const { createLeastConnections } = require('./least-connections')
const { createIpHash } = require('./ip-hash')
const { createSma } = require('./sma')
const { createEwma } = require('./ewma')
const { createLowestLatency } = require('./lowest-latency')
const { createLatencyWeighted } = require('./latency-weighted')
const { createEqualRegions } = require('./equal-regions')
const { createP2cPeakEwma } = require('./p2c-peak-ewma')
const { createChashBounded } = require('./chash-bounded')
const { createWasp } = require('./wasp')

/**
 * The policies known by name, as `--algo` accepts them. Each factory follows the contract in
 * docs/design.md, "The policy contract": `factory(options, { random, now })` returns `{ name, pick, onStart?, onEnd?,
 * snapshot? }`.
 * @type {Record<string, (options?: object, deps?: { random?: () => number, now?: () => number }) => object>}
 */
const policies = {
  'round-robin': createRoundRobin,
  random: createRandom,
  'weighted-round-robin': createWeightedRoundRobin,
  'least-connections': createLeastConnections,
  'ip-hash': createIpHash,
  sma: createSma,
  ewma: createEwma,
  'lowest-latency': createLowestLatency,
  'latency-weighted': createLatencyWeighted,
  'equal-regions': createEqualRegions,
  'p2c-peak-ewma': createP2cPeakEwma,
  'chash-bounded': createChashBounded,
  wasp: createWasp
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
  const factory = Object.hasOwn(policies, name) ? policies[name] : undefined
  if (!factory) {
    throw new ERR_POLISTES_UNKNOWN_ALGO(name, policyNames())
  }
  return factory(options, deps)
}

module.exports = { createPolicy, policyNames }
