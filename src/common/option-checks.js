'use strict'

const { ERR_POLISTES_BAD_OPTION } = require('./errors')

/**
 * The small checks every option's rule is built from, and the error that names the option at fault
 * (so that the CLI names it as a flag, a config file as its key there: src/config/config.js).
 */

/**
 * An ERR_POLISTES_BAD_OPTION about config keys, which the message names as keys: `options` lists
 * them, the one at fault first, so that a caller that knows where each value came from (the CLI's
 * flags, a config file) can name them its way (config.js `resolveConfig`).
 * @param {string[]} options config key paths, e.g. ['tryTimeoutMs', 'timeoutMs'] or ['healthCheck.rise']
 * @param {string} message
 * @returns {import('./errors').PolistesError}
 */
function badOption (options, message) {
  return Object.assign(new ERR_POLISTES_BAD_OPTION(message), { options })
}

/**
 * Run `fn`; an error it throws that names no config key yet is marked as being about `key`.
 * @template T
 * @param {string} key config key path
 * @param {() => T} fn
 * @returns {T}
 */
function onOption (key, fn) {
  try {
    return fn()
  } catch (err) {
    if (err && typeof err === 'object' && !err.options) err.options = [key]
    throw err
  }
}

/**
 * @param {string} name for the message
 * @param {unknown} value
 * @param {number} min inclusive
 * @param {number} max inclusive
 */
function checkInteger (name, value, min, max) {
  if (!(Number.isInteger(value) && value >= min && value <= max)) {
    throw badOption([name], `${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`)
  }
}

/**
 * A duration: a positive number of ms.
 * @param {string} name for the message
 * @param {unknown} value
 */
function checkPositive (name, value) {
  if (!(Number.isFinite(value) && value > 0)) {
    throw badOption([name], `${name} must be a positive number of ms, got ${JSON.stringify(value)}`)
  }
}

/**
 * @param {string} name for the message
 * @param {unknown} value a file path, or null for none
 */
function checkPath (name, value) {
  if (value !== null && (typeof value !== 'string' || value === '')) {
    throw badOption([name], `${name} must be a file path, got ${JSON.stringify(value)}`)
  }
}

module.exports = { checkInteger, checkPositive, checkPath, badOption, onOption }
