'use strict'

/**
 * The host's CPU as Linux counts it in /proc/stat, so a run can say what the machine itself was doing:
 * `busy`, the time every process of this machine ran (user, nice, system, irq, softirq), and `steal`,
 * the time this virtual machine wanted a CPU and the hypervisor ran another guest instead. On a shared
 * VM a window with steal measures the host as much as the fleet: the fleet's timers fire late, its
 * service times grow, and the same policy saturates at a lower rate. Elsewhere (no /proc/stat) null.
 */

const fs = require('node:fs')
const os = require('node:os')
const { Worker } = require('node:worker_threads')

/**
 * The counters of /proc/stat's aggregate `cpu` line, in clock ticks since boot.
 * @param {string} text the file's content
 * @returns {{ busy: number, idle: number, steal: number, total: number } | null} null when there is no
 *   such line or it has fewer than the 8 fields from user to steal
 */
function parseProcStat (text) {
  const line = String(text).split('\n').find((l) => l.startsWith('cpu '))
  if (!line) return null
  const v = line.trim().split(/\s+/).slice(1, 9).map(Number)
  if (v.length < 8 || v.some((x) => !Number.isFinite(x))) return null
  const [user, nice, system, idle, iowait, irq, softirq, steal] = v
  return {
    busy: user + nice + system + irq + softirq,
    idle: idle + iowait,
    steal,
    total: v.reduce((a, b) => a + b, 0)
  }
}

/**
 * Read the host's CPU counters now.
 * @returns {{ busy: number, idle: number, steal: number, total: number } | null} null off Linux
 */
function readHostCpu () {
  try {
    return parseProcStat(fs.readFileSync('/proc/stat', 'utf8'))
  } catch {
    return null
  }
}

/**
 * What the host did between two readings, in cores (1 = one CPU for the whole interval).
 * @param {ReturnType<typeof parseProcStat>} before
 * @param {ReturnType<typeof parseProcStat>} after
 * @param {number} [cpus] the machine's CPUs
 * @returns {{ busy: number, steal: number } | null} null when a reading is missing or no time passed
 */
function hostCores (before, after, cpus = os.cpus().length) {
  if (!before || !after || !(after.total > before.total)) return null
  const ticks = after.total - before.total
  return { busy: (after.busy - before.busy) / ticks * cpus, steal: (after.steal - before.steal) / ticks * cpus }
}

/**
 * How much of the machine the hypervisor withholds now: every CPU kept busy for `ms` (a spinning worker
 * thread each), and the steal over that time. Steal is only counted while this machine wants a CPU, so an
 * idle machine reads none whatever the other guests do; asked for every CPU, it reads what the hypervisor
 * withheld from a busy machine over those seconds (a wave may still start right after).
 * @param {number} ms
 * @param {number} [cpus] the machine's CPUs
 * @returns {Promise<number | null>} the steal in cores (0 to `cpus`), null off Linux
 */
async function probeSteal (ms, cpus = os.cpus().length) {
  const before = readHostCpu()
  if (!before) return null
  const spin = `const end = Date.now() + ${Number(ms)}; while (Date.now() < end) {}`
  await Promise.all(Array.from({ length: cpus }, () => new Promise((resolve, reject) => {
    new Worker(spin, { eval: true }).once('exit', resolve).once('error', reject)
  })))
  const cores = hostCores(before, readHostCpu(), cpus)
  return cores ? cores.steal : null
}

module.exports = { parseProcStat, readHostCpu, hostCores, probeSteal }
