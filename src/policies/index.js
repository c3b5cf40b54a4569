'use strict'

const { createRoundRobin } = require('./round-robin')
const { createRandom } = require('./random')
const { createWasp } = require('./wasp')

/**
 * The policies known by name, as `--algo` accepts them. Each factory follows the contract in
 * DESIGN.md: `factory(options, { random, now })` returns `{ name, pick, onStart?, onEnd?, snapshot? }`.
 * @type {Record<string, (options?: object, deps?: { random?: () => number, now?: () => number }) => object>}
 */
const policies = {
  'round-robin': createRoundRobin,
  random: createRandom,
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
 * @throws {Error} with code ERR_POLISTES_UNKNOWN_ALGO when the name is not registered
 */
function createPolicy (name, options, deps) {
  const factory = Object.hasOwn(policies, name) ? policies[name] : undefined
  if (!factory) {
    const err = new Error(`unknown algorithm "${name}"; expected one of: ${policyNames().join(', ')}`)
    err.code = 'ERR_POLISTES_UNKNOWN_ALGO'
    throw err
  }
  return factory(options, deps)
}

module.exports = { createPolicy, policyNames, policies }
