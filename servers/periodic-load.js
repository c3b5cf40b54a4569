'use strict'

/**
 * Periodic server load: the extra service time of a request as a pure function of wall time, to
 * replay docs/experiments.md, B (a server whose load follows a periodic pattern: tens of ms in
 * its fast phase, seconds in its slow phase). Two shapes:
 * - `square`: `slow` ms during the first `duty` fraction of each period, `fast` ms otherwise;
 * - `sine`: between `fast` and `slow` along a sine, slowest a quarter period in.
 * `phase` shifts the pattern (ms), so that two backends can be slow at different times.
 *
 * Text form (the `--periodic` flag): `square:period=4000,fast=20,slow=3000[,duty=0.5][,phase=0]`.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../src/common/errors')

const SHAPES = ['square', 'sine']
const FIELDS = ['period', 'fast', 'slow', 'duty', 'phase']

/**
 * @typedef {object} PeriodicSpec
 * @property {'square' | 'sine'} shape
 * @property {number} period ms, > 0
 * @property {number} fast extra ms in the fast phase, >= 0
 * @property {number} slow extra ms in the slow phase, >= 0
 * @property {number} [duty=0.5] square: fraction of the period spent slow, in [0, 1]
 * @property {number} [phase=0] ms added to the time before taking the position in the period
 */

function bad (message) {
  return new ERR_POLISTES_BAD_OPTION(message)
}

/**
 * Validate a spec and fill its defaults.
 * @param {PeriodicSpec} spec
 * @returns {Required<PeriodicSpec>}
 * @throws {import('../src/common/errors').PolistesError} ERR_POLISTES_BAD_OPTION on a bad field
 */
function normalizePeriodic (spec) {
  if (!spec || typeof spec !== 'object') throw bad('periodic must be an object { shape, period, fast, slow }')
  const s = { duty: 0.5, phase: 0, ...spec }
  if (!SHAPES.includes(s.shape)) {
    throw bad(`periodic shape must be one of ${SHAPES.join(', ')}, got ${JSON.stringify(s.shape)}`)
  }
  for (const name of FIELDS) {
    if (typeof s[name] !== 'number' || !Number.isFinite(s[name]) || s[name] < 0) {
      throw bad(`periodic ${name} must be a number >= 0, got ${JSON.stringify(s[name])}`)
    }
  }
  if (s.period === 0) throw bad('periodic period must be greater than 0')
  if (s.duty > 1) throw bad(`periodic duty must be in [0, 1], got ${s.duty}`)
  return { shape: s.shape, period: s.period, fast: s.fast, slow: s.slow, duty: s.duty, phase: s.phase }
}

/**
 * The extra service time of a request arriving at time `t`.
 * @param {Required<PeriodicSpec>} spec normalized
 * @param {number} t ms (any origin: wall clock, or since the start)
 * @returns {number} ms
 */
function periodicDelay (spec, t) {
  const x = (((t + spec.phase) % spec.period) + spec.period) % spec.period / spec.period // in [0, 1)
  if (spec.shape === 'square') return x < spec.duty ? spec.slow : spec.fast
  return spec.fast + (spec.slow - spec.fast) * (1 + Math.sin(2 * Math.PI * x)) / 2
}

/**
 * Parse the text form, e.g. `square:period=4000,fast=20,slow=3000,phase=2000`.
 * @param {string} text
 * @returns {Required<PeriodicSpec>}
 * @throws {import('../src/common/errors').PolistesError} ERR_POLISTES_BAD_OPTION, one line
 */
function parsePeriodic (text) {
  const m = /^(\w+):(.*)$/.exec(String(text).trim())
  if (!m) throw bad(`--periodic must look like square:period=4000,fast=20,slow=3000, got "${text}"`)
  const spec = { shape: m[1] }
  for (const part of m[2].split(',')) {
    const [key, value, extra] = part.split('=').map((p) => p.trim())
    if (!FIELDS.includes(key) || value === undefined || extra !== undefined) {
      throw bad(`--periodic: unknown or malformed field "${part}" (fields: ${FIELDS.join(', ')})`)
    }
    if (!/^\d+(\.\d+)?$/.test(value)) throw bad(`--periodic: ${key} must be a number >= 0, got "${value}"`)
    spec[key] = Number(value)
  }
  return normalizePeriodic(spec)
}

/**
 * @param {Required<PeriodicSpec>} spec
 * @returns {string} the text form parsePeriodic reads back
 */
function formatPeriodic (spec) {
  return `${spec.shape}:period=${spec.period},fast=${spec.fast},slow=${spec.slow},duty=${spec.duty},phase=${spec.phase}`
}

/**
 * A periodic load bound to a clock.
 * @param {PeriodicSpec | null | undefined} spec null: no periodic load (always 0)
 * @param {() => number} [now=Date.now] wall clock, ms
 * @returns {{ next: () => number }} the extra ms of a request arriving now
 */
function createPeriodicLoad (spec, now = Date.now) {
  if (!spec) return { next: () => 0 }
  const s = normalizePeriodic(spec)
  return { next: () => periodicDelay(s, now()) }
}

module.exports = { createPeriodicLoad, periodicDelay, normalizePeriodic, parsePeriodic, formatPeriodic }
