'use strict'

const { badOption, onOption } = require('../common/option-checks')
const { OPTIONS, TOP_KEYS, BALANCER_KEYS } = require('./options')

/**
 * The defaults and the validation of the options, both read from the one option table
 * (src/config/options.js): the balancer's constructor, the config resolver, the adapters and the
 * CLI's help text all take them here.
 */

/**
 * Every default, members of an object option nested in it (`healthCheck`, `fleet`); options without
 * a default (`backends`, `accessLogFile`) are absent.
 */
const DEFAULTS = Object.freeze(defaultsOf(OPTIONS))

/** @param {import('./options').OptionEntry[]} options */
function defaultsOf (options) {
  const out = {}
  for (const o of options) {
    if (o.default === undefined) continue
    const [group, member] = o.key.split('.')
    if (member === undefined) out[group] = o.default
    else (out[group] ||= {})[member] = o.default
  }
  // the health-check defaults are shared by every balancer: nobody may change them
  out.healthCheck = Object.freeze(out.healthCheck)
  return out
}

/** The check of each top-level option, in table order. */
const CHECKS = OPTIONS.filter((o) => o.check && TOP_KEYS.includes(o.key)).map((o) => [o.key, o.check])

/** Rules between options, checked once each single option is valid. */
function checkCombinations (o) {
  if ((o.tlsCert == null) !== (o.tlsKey == null) && Object.hasOwn(o, 'tlsCert') && Object.hasOwn(o, 'tlsKey')) {
    const given = o.tlsCert == null ? 'tlsKey' : 'tlsCert'
    throw badOption(
      [given, given === 'tlsCert' ? 'tlsKey' : 'tlsCert'],
      'tlsCert and tlsKey go together: give both or neither'
    )
  }
  if (Number.isFinite(o.headersTimeoutMs) && Number.isFinite(o.requestTimeoutMs) &&
    o.headersTimeoutMs > o.requestTimeoutMs) {
    throw badOption(
      ['headersTimeoutMs', 'requestTimeoutMs'],
      `headersTimeoutMs (${o.headersTimeoutMs}) must not exceed requestTimeoutMs (${o.requestTimeoutMs})`
    )
  }
  if (Number.isFinite(o.tryTimeoutMs) && Number.isFinite(o.timeoutMs) && o.tryTimeoutMs > o.timeoutMs) {
    throw badOption(
      ['tryTimeoutMs', 'timeoutMs'],
      `tryTimeoutMs (${o.tryTimeoutMs}) must not exceed timeoutMs (${o.timeoutMs}): the inactivity timeout would ` +
        'always fire first'
    )
  }
}

/**
 * Validate the options present in `options` with their checks of the option table (members of an
 * object option: see `checkMembers`), then the rules between them (tlsCert with tlsKey,
 * headersTimeoutMs ≤ requestTimeoutMs, tryTimeoutMs ≤ timeoutMs); other keys are left alone.
 * @param {object} options
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION on the first bad value
 */
function validateOptions (options) {
  for (const [key, check] of CHECKS) {
    if (Object.hasOwn(options, key)) onOption(key, () => check(options[key], key))
  }
  checkCombinations(options)
}

/**
 * Validate the members of the object option `group` (e.g. `fleet`) that have a check in the table.
 * @param {string} group
 * @param {object} value
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION on the first bad member
 */
function checkMembers (group, value) {
  for (const o of OPTIONS) {
    if (!o.check || !o.key.startsWith(`${group}.`)) continue
    const member = o.key.slice(group.length + 1)
    onOption(o.key, () => o.check(value[member], o.key))
  }
}

/**
 * The balancer's options with the defaults filled in (an explicit `undefined` takes the default
 * too; `healthCheck` merged over its defaults); other keys are kept as they are.
 * @param {object} options
 * @returns {object}
 */
function withDefaults (options) {
  const o = { ...options }
  for (const key of BALANCER_KEYS) {
    if (o[key] === undefined) o[key] = DEFAULTS[key]
  }
  o.healthCheck = { ...DEFAULTS.healthCheck, ...(o.healthCheck || {}) }
  return o
}

module.exports = { DEFAULTS, validateOptions, checkMembers, withDefaults }
