'use strict'

/**
 * A gate before each cell of a sweep (`--steal-gate CORES[:SECONDS]`): on a shared virtual machine the
 * hypervisor's steal comes and goes (waves of minutes, bench/runners/host-cpu.js), and a cell that runs
 * in one measures the host: the fleet's timers fire late and every contender saturates early. Steal is
 * only counted while this machine wants a CPU, so an idle machine reads none in the middle of a wave:
 * the gate asks for every CPU for SECONDS (a probe, host-cpu.js `probeSteal`) and lets the cell start when
 * the hypervisor withheld at most CORES of them; else it probes again `RETRY_S` later, and once a probe read
 * over the limit the cell waits for `QUIET_AFTER_WAVE` quiet probes in a row (a wave has dips: on
 * 2026-11-29 one probe read 0.11 cores after eleven over 0.15, and the cell it let start lost 0.80). It
 * decides on what the host did before the cell, never on the cell's own result, and holds every
 * contender's cells alike, so it selects no contender's outcome. After `maxWaitS` it lets the cell run
 * anyway and says so (each cell's own steal is recorded beside it either way).
 *
 * The probe, the clock and the sleep are injected: the gate itself touches no CPU, file or timer.
 */

/** The longest the gate holds one cell, seconds: past it the cell runs anyway, marked `timedOut`. */
const MAX_WAIT_S = 900

/** Seconds between two probes while the host is stealing. */
const RETRY_S = 10

/** Quiet probes in a row a cell waits for once a probe before it read over the limit. */
const QUIET_AFTER_WAVE = 2

/**
 * @typedef {object} StealGateResult
 * @property {number} waitedS seconds the cell waited at the gate, its probes included
 * @property {number | null} steal the hypervisor's steal in the last probe, cores (null: no reading)
 * @property {number} probes probes taken
 * @property {(number | null)[]} readings every probe's steal, cores to 3 decimals, in order
 * @property {boolean} timedOut true when the cell started after `maxWaitS` with the host still not quiet
 */

/**
 * Create a gate.
 * @param {object} o
 * @param {number} o.limit the most steal, in cores, a probe may read for a cell to start
 * @param {() => Promise<number | null>} o.probe the steal, in cores, while every CPU is asked for (null:
 *   the host gives no reading)
 * @param {() => number} o.now a clock, ms
 * @param {(ms: number) => Promise<void>} o.sleep
 * @param {number} [o.maxWaitS] see MAX_WAIT_S
 * @param {number} [o.retryS] see RETRY_S
 * @returns {{ wait: () => Promise<StealGateResult> }} `wait()` resolves when a cell may start
 */
function createStealGate ({ limit, probe, now, sleep, maxWaitS = MAX_WAIT_S, retryS = RETRY_S }) {
  async function wait () {
    const start = now()
    const readings = []
    let quiet = 0 // quiet probes in a row
    let held = false // a probe read over the limit: the cell now waits for QUIET_AFTER_WAVE in a row
    for (;;) {
      const steal = await probe()
      readings.push(steal === null ? null : Math.round(steal * 1000) / 1000)
      if (steal !== null && steal <= limit) quiet++
      else { quiet = 0; held = true }
      const waitedS = Math.round((now() - start) / 100) / 10
      const result = { waitedS, steal, probes: readings.length, readings }
      if (quiet >= (held ? QUIET_AFTER_WAVE : 1)) return { ...result, timedOut: false }
      if (waitedS >= maxWaitS) return { ...result, timedOut: true }
      await sleep(retryS * 1000)
    }
  }
  return { wait }
}

module.exports = { createStealGate, MAX_WAIT_S, RETRY_S, QUIET_AFTER_WAVE }
