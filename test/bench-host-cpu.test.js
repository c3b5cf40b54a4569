'use strict'

/**
 * bench/runners/host-cpu.js: the host's CPU from /proc/stat (busy and steal, in cores), which the bench
 * records per run and per second so a window on a shared VM says what the hypervisor took.
 */

const fs = require('node:fs')
const os = require('node:os')
const { parseProcStat, readHostCpu, hostCores, probeSteal } = require('../bench/runners/host-cpu')

const STAT = [
  'cpu  6962663 8226 972534 4596687 25341 0 194584 370175 0 0',
  'cpu0 3481331 4113 486267 2298343 12670 0 97292 185087 0 0',
  'intr 123 4 5'
].join('\n')

test('the aggregate cpu line: busy = user + nice + system + irq + softirq, idle with iowait, steal, every tick in total', () => {
  expect(parseProcStat(STAT)).toEqual({
    busy: 6962663 + 8226 + 972534 + 0 + 194584,
    idle: 4596687 + 25341,
    steal: 370175,
    total: 6962663 + 8226 + 972534 + 4596687 + 25341 + 0 + 194584 + 370175
  })
  expect(parseProcStat('cpu0 1 2 3 4 5 6 7 8')).toBe(null) // no aggregate line
  expect(parseProcStat('cpu  1 2 3 4 5')).toBe(null) // a kernel without steal
  expect(parseProcStat('cpu  1 2 x 4 5 6 7 8')).toBe(null)
})

test('cores between two readings: each counter\'s share of the ticks times the CPUs', () => {
  const a = { busy: 100, idle: 100, steal: 0, total: 200 }
  const b = { busy: 250, idle: 200, steal: 150, total: 600 } // 400 ticks: 150 busy, 100 idle, 150 steal
  expect(hostCores(a, b, 2)).toEqual({ busy: 0.75, steal: 0.75 })
  expect(hostCores(a, a, 2)).toBe(null) // no time passed
  expect(hostCores(null, b, 2)).toBe(null)
})

const linux = fs.existsSync('/proc/stat') ? test : test.skip
linux('on this machine: two readings around a busy loop count the loop as busy time', () => {
  const before = readHostCpu()
  const until = Date.now() + 300
  while (Date.now() < until) Math.sqrt(Math.random())
  const after = readHostCpu()
  const cores = hostCores(before, after)
  expect(cores.busy).toBeGreaterThan(0.2) // the loop held one core for the interval; every CPU counts in total
  expect(cores.steal).toBeGreaterThanOrEqual(0)
})

linux('the probe keeps every CPU busy for its time and reads the steal in cores', async () => {
  const cpus = os.cpus().length
  const before = readHostCpu()
  const t0 = Date.now()
  const steal = await probeSteal(500, cpus)
  const elapsed = Date.now() - t0
  const host = hostCores(before, readHostCpu(), cpus)
  expect(elapsed).toBeGreaterThanOrEqual(490)
  expect(steal).toBeGreaterThanOrEqual(0)
  expect(steal).toBeLessThanOrEqual(cpus)
  // busy or stolen: every CPU was wanted for the probe (a shared host may take some of it back)
  expect(host.busy + host.steal).toBeGreaterThan(cpus * 0.6)
})
