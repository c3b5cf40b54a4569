'use strict'

const { ERR_POLISTES_BAD_OPTION } = require('./errors')

/**
 * The one source of default option values: the balancer's constructor, the config resolver and the
 * CLI's help text all read them here.
 */
const DEFAULTS = Object.freeze({
  algo: 'wasp',
  host: '127.0.0.1',
  port: 8080,
  keepAlive: true,
  timeoutMs: 30000,
  retries: 2,
  maxFails: 1,
  failTimeoutMs: 5000,
  graceMs: 10000,
  policyOptions: {},
  workers: 1,
  fleet: { count: 7, basePort: 9101, cachePages: 4, missMs: 20 }
})

/** One check per option, the same wherever the option comes from (flag, config file, API). */
const RULES = {
  port: (v) => checkInteger('port', v, 0, 65535),
  host: (v) => { if (typeof v !== 'string' || v === '') throw new ERR_POLISTES_BAD_OPTION('host must be a non-empty string') },
  keepAlive: (v) => { if (typeof v !== 'boolean') throw new ERR_POLISTES_BAD_OPTION(`keepAlive must be true or false, got ${JSON.stringify(v)}`) },
  timeoutMs: (v) => checkPositive('timeoutMs', v),
  failTimeoutMs: (v) => checkPositive('failTimeoutMs', v),
  graceMs: (v) => checkPositive('graceMs', v),
  retries: (v) => checkInteger('retries', v, 0, 100),
  maxFails: (v) => checkInteger('maxFails', v, 1, 1000),
  workers: (v) => checkInteger('workers', v, 1, 256),
  policyOptions: (v) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ERR_POLISTES_BAD_OPTION('policyOptions must be a JSON object')
  }
}

/**
 * Validate the balancer options present in `options` (port, host, keepAlive, timeoutMs,
 * failTimeoutMs, graceMs, retries, maxFails, workers, policyOptions); other keys are left alone.
 * @param {object} options
 * @throws {import('./errors').PolistesError} ERR_POLISTES_BAD_OPTION on the first bad value
 */
function validateOptions (options) {
  for (const key of Object.keys(RULES)) {
    if (Object.hasOwn(options, key)) RULES[key](options[key])
  }
}

/**
 * @param {string} name for the message
 * @param {unknown} value
 * @param {number} min inclusive
 * @param {number} max inclusive
 */
function checkInteger (name, value, min, max) {
  if (!(Number.isInteger(value) && value >= min && value <= max)) throw new ERR_POLISTES_BAD_OPTION(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`)
}

/**
 * @param {string} name for the message
 * @param {unknown} value
 */
function checkPositive (name, value) {
  if (!(Number.isFinite(value) && value > 0)) throw new ERR_POLISTES_BAD_OPTION(`${name} must be a positive number, got ${JSON.stringify(value)}`)
}

module.exports = { DEFAULTS, validateOptions, checkInteger }
