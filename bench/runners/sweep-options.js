'use strict'

/**
 * The options of a sweep of offered rates (the capacity scenario, issue 28) and of backends with a
 * finite number of workers, validated for bench/runners/options.js. Bad values throw
 * ERR_POLISTES_BAD_OPTION with the option's name.
 */

const { ERR_POLISTES_BAD_OPTION } = require('../../src/common/errors')
const { defaultSlo, DEFAULT_STOP_AFTER } = require('../reports/capacity')

const bad = (message) => new ERR_POLISTES_BAD_OPTION(message)

/** The highest offered rate a sweep takes, req/s (beyond, the open-loop generator cannot keep up on one core). */
const MAX_RATE = 100000

/**
 * `--rates 1500,2000,2500`: positive integers, distinct, returned ascending.
 * @param {string} value
 * @returns {number[]}
 */
function parseRates (value) {
  const parts = String(value).split(',').map((x) => x.trim())
  const rates = parts.map(Number)
  if (!parts.length || parts.some((p) => !/^\d+$/.test(p)) || rates.some((r) => !(r >= 1 && r <= MAX_RATE))) {
    throw bad(`--rates must be a comma list of offered rates, whole req/s from 1 to ${MAX_RATE}, e.g. ` +
      `1500,2000,2500, got "${value}"`)
  }
  if (new Set(rates).size !== rates.length) throw bad(`--rates lists a rate twice: ${value}`)
  return rates.sort((a, b) => a - b)
}

/**
 * The sweep of a scenario that has one, with its options; null for the others, which then take none
 * of its options.
 * @param {{ rates?: string, slo?: number, 'stop-after'?: number, scenario: string }} args
 * @param {{ sweep?: { rates: number[], stopAfter: number } }} scenario
 * @param {{ hitMs?: number, missMs: number }} service the backends' nominal service times, ms
 * @returns {{ rates: number[], sloMs: number, sloDefault: boolean, stopAfter: number } | null}
 */
function parseSweep (args, scenario, { hitMs, missMs }) {
  if (!scenario.sweep) {
    for (const name of ['rates', 'slo', 'stop-after']) {
      if (args[name] !== undefined) throw bad(`--${name} applies to a sweep of rates (--scenario capacity)`)
    }
    return null
  }
  const rates = args.rates === undefined ? scenario.sweep.rates.slice() : parseRates(args.rates)
  const slo = args.slo
  if (slo !== undefined && !(typeof slo === 'number' && Number.isFinite(slo) && slo > 0)) {
    throw bad(`--slo must be a p99 target in ms, greater than 0, got "${slo}"`)
  }
  const stopAfter = args['stop-after'] ?? scenario.sweep.stopAfter ?? DEFAULT_STOP_AFTER
  if (!(Number.isInteger(stopAfter) && stopAfter >= 1)) {
    throw bad(`--stop-after must be a whole number of rates, at least 1, got "${args['stop-after']}"`)
  }
  return {
    rates,
    sloMs: slo ?? defaultSlo(hitMs ?? 0, missMs),
    sloDefault: slo === undefined,
    stopAfter
  }
}

/** The offered rate of a kill/restart cell when --rates is not given, req/s (about 60 % of the fleet's limit). */
const KILL_RATE = 2000

/** The backend a kill/restart cell stops: a (index 0), the same for every contender. */
const KILL_INDEX = 0

/**
 * `--kill AT:DOWN`: backend a stopped AT seconds into the measured window, started again DOWN seconds
 * later; at least one measured second must follow the restart, to see the capacity come back.
 * @param {string | undefined} value
 * @param {{ duration: number, sweep: object | null, rates?: string }} context the measured window, the
 *   scenario's sweep and --rates as given
 * @returns {{ index: number, at: number, down: number } | null} null when not given
 */
function parseKill (value, { duration, sweep, rates }) {
  if (value === undefined) return null
  if (!sweep) throw bad('--kill runs a kill/restart cell of a sweep of rates (--scenario capacity)')
  const m = /^(\d+):(\d+)$/.exec(String(value).trim())
  const at = m ? Number(m[1]) : NaN
  const down = m ? Number(m[2]) : NaN
  if (!(at >= 1 && down >= 1)) {
    throw bad('--kill must be AT:DOWN, whole seconds of at least 1 (stop backend a AT s into the measured ' +
      `window, start it again DOWN s later), e.g. 3:2, got "${value}"`)
  }
  if (at + down >= duration) {
    throw bad(`--kill ${value} restarts backend a at second ${at + down} of a ${duration} s window: give a longer ` +
      '--duration, so that the window goes on after the restart')
  }
  if (rates !== undefined && sweep.rates.length !== 1) {
    throw bad(`--kill runs one cell per contender at one offered rate; --rates lists ${sweep.rates.length}`)
  }
  return { index: KILL_INDEX, at, down }
}

/**
 * `--backend-workers 4` or `2,3,4,5,6,7,8` (one per backend): the fleet's `workers` option.
 * @param {string | undefined} value
 * @param {{ count: number }} fleet the scenario's fleet
 * @returns {number | number[] | undefined} undefined when not given
 */
function backendWorkers (value, fleet) {
  if (value === undefined) return undefined
  const parts = String(value).split(',').map((x) => x.trim())
  const counts = parts.map(Number)
  if (parts.some((p) => !/^\d+$/.test(p)) || counts.some((n) => !(n >= 1 && n <= 1000))) {
    throw bad('--backend-workers must be a whole number of workers from 1 to 1000, or one per backend ' +
      `(e.g. 2,3,4,5,6,7,8), got "${value}"`)
  }
  if (counts.length === 1) return counts[0]
  if (counts.length !== fleet.count) {
    throw bad(`--backend-workers lists ${counts.length} backends; the fleet has ${fleet.count}`)
  }
  return counts
}

/** The probe of `--steal-gate CORES` without `:SECONDS`, seconds. */
const STEAL_PROBE_S = 2

/**
 * `--steal-gate CORES[:SECONDS]`: before each cell of a sweep, every CPU asked for SECONDS (default 2), and
 * the cell held until the hypervisor withheld at most CORES of them (bench/runners/steal-gate.js).
 * @param {string | number | undefined} value
 * @param {{ sweep: object | null, cpus: number, hostCounters: () => boolean }} context the scenario's sweep,
 *   the machine's CPUs, and whether it has the counters the gate reads (/proc/stat; asked only when given)
 * @returns {{ limit: number, probeS: number } | null} null when not given
 */
function parseStealGate (value, { sweep, cpus, hostCounters }) {
  if (value === undefined) return null
  if (!sweep) throw bad('--steal-gate holds the cells of a sweep of rates (--scenario capacity)')
  const m = /^(\d+(?:\.\d+)?|\.\d+)(?::(\d+))?$/.exec(String(value).trim())
  const limit = m ? Number(m[1]) : NaN
  const probeS = m && m[2] !== undefined ? Number(m[2]) : STEAL_PROBE_S
  if (!(limit > 0 && limit <= cpus) || !(probeS >= 1 && probeS <= 60)) {
    throw bad('--steal-gate must be CORES[:SECONDS]: the most steal, in cores (over 0, at most this machine\'s ' +
      `${cpus}), the hypervisor may withhold while every CPU is asked for SECONDS (1 to 60, default ` +
      `${STEAL_PROBE_S}) for a cell to start, e.g. 0.15 or 0.15:5, got "${value}"`)
  }
  if (!hostCounters()) {
    throw bad('--steal-gate reads the hypervisor\'s steal from /proc/stat (Linux); this machine has none')
  }
  return { limit, probeS }
}

module.exports = { parseSweep, parseKill, parseStealGate, backendWorkers, KILL_RATE }
