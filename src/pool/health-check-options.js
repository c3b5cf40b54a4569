'use strict'

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { checkInteger, checkPositive, badOption } = require('../common/option-checks')

/**
 * The settings of the active health checks (`healthCheck`, the balancer's and a backend spec's
 * own): each key with its check, and the expected-status spec read into a predicate.
 */

/** The keys of a `healthCheck` object, each with its check. */
const HEALTH_CHECK_RULES = {
  path: (v, where) => {
    if (v !== null && !(typeof v === 'string' && v.startsWith('/'))) {
      throw badOption(
        [`${where}.path`],
        `${where}.path must be a path starting with "/" (or null: no active checks), got ${JSON.stringify(v)}`
      )
    }
  },
  intervalMs: (v, where) => checkPositive(`${where}.intervalMs`, v),
  timeoutMs: (v, where) => checkPositive(`${where}.timeoutMs`, v),
  expectStatus: (v, where) => parseExpectStatus(v, `${where}.expectStatus`),
  rise: (v, where) => checkInteger(`${where}.rise`, v, 1, 1000),
  fall: (v, where) => checkInteger(`${where}.fall`, v, 1, 1000)
}

/**
 * Validate a (possibly partial) `healthCheck` object: known keys only, each value in range.
 * @param {unknown} value
 * @param {string} where its name in messages, e.g. "healthCheck" or "backend #2 healthCheck"
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function validateHealthCheck (value, where) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ERR_POLISTES_BAD_OPTION(`${where} must be an object such as { "path": "/health" }, got ` +
      `${JSON.stringify(value)}`)
  }
  for (const key of Object.keys(value)) {
    const rule = HEALTH_CHECK_RULES[key]
    if (!rule) {
      throw new ERR_POLISTES_BAD_OPTION(`${where}: unknown key ${JSON.stringify(key)}; known keys: ` +
      `${Object.keys(HEALTH_CHECK_RULES).join(', ')}`)
    }
    rule(value[key], where)
  }
}

/**
 * Read an expected-status spec into a predicate: a status (`200`), a range (`"200-399"`), a class
 * (`"2xx"`), or a comma-separated list of these (`"200,204,3xx"`).
 * @param {unknown} spec
 * @param {string} [where] its name in messages
 * @returns {(status: number) => boolean}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function parseExpectStatus (spec, where = 'expectStatus') {
  const bad = () => badOption(
    [where],
    `${where} must be a status (200), a range ("200-399"), a class ("2xx") or a comma-separated list of these, got ` +
      `${JSON.stringify(spec)}`
  )
  const text = typeof spec === 'number' ? String(spec) : spec
  if (typeof text !== 'string' || text.trim() === '') throw bad()
  const ranges = text.split(',').map((item) => {
    const m = /^\s*(?:([1-5])xx|([1-5]\d\d)(?:\s*-\s*([1-5]\d\d))?)\s*$/i.exec(item)
    if (!m) throw bad()
    if (m[1]) return [Number(m[1]) * 100, Number(m[1]) * 100 + 99]
    const lo = Number(m[2])
    const hi = m[3] ? Number(m[3]) : lo
    if (hi < lo) throw bad()
    return [lo, hi]
  })
  return (status) => ranges.some(([lo, hi]) => status >= lo && status <= hi)
}

module.exports = { validateHealthCheck, parseExpectStatus }
