'use strict'

/**
 * The steal gate before each cell of a sweep (bench/runners/steal-gate.js), on a simulated host: the
 * hypervisor's steal cannot be made to happen on this machine, so the probe, the clock and the sleep are
 * injected. The real probe is tested in test/bench-host-cpu.test.js, and run by the capacity sweep's
 * end-to-end test before each cell.
 */

const { createStealGate } = require('../bench/runners/steal-gate')
const { parseStealGate } = require('../bench/runners/sweep-options')

/**
 * A host whose probe at second t reads `stealAt(t)` cores, a probe taking `probeS` seconds; the gate's
 * sleep advances the clock.
 */
function simulatedHost (stealAt, probeS = 2) {
  let ms = 0
  const probes = []
  return {
    probe: async () => { const steal = stealAt(ms / 1000); probes.push(ms / 1000); ms += probeS * 1000; return steal },
    now: () => ms,
    sleep: async (d) => { ms += d },
    probes
  }
}

const gateOn = (host, o = {}) => createStealGate({ limit: 0.15, probe: host.probe, now: host.now, sleep: host.sleep, ...o })

test('a quiet host: the cell starts after one probe, with its steal', async () => {
  const host = simulatedHost(() => 0.05)
  await expect(gateOn(host).wait()).resolves.toEqual({ waitedS: 2, steal: 0.05, probes: 1, readings: [0.05], timedOut: false })
})

test('in a wave of steal the cell waits, probing every 10 s, until two probes in a row read the limit or under', async () => {
  // 0.6 cores withheld until second 45, then 0.1
  const host = simulatedHost((t) => t < 45 ? 0.6 : 0.1)
  const result = await gateOn(host).wait()
  expect(host.probes).toEqual([0, 12, 24, 36, 48, 60])
  expect(result).toEqual({ waitedS: 62, steal: 0.1, probes: 6, readings: [0.6, 0.6, 0.6, 0.6, 0.1, 0.1], timedOut: false })
})

test('a dip inside a wave does not let the cell start: after a probe over the limit, two quiet in a row', async () => {
  // the wave of 2026-11-29 13:19: over 0.15, one probe at 0.11, then 0.8 again
  const steal = [0.3, 0.25, 0.11, 0.8, 0.8, 0.05, 0.02]
  const host = simulatedHost(() => steal[host.probes.length])
  const result = await gateOn(host).wait()
  expect(result).toEqual({ waitedS: 74, steal: 0.02, probes: 7, readings: steal, timedOut: false })
})

test('a probe exactly at the limit lets the cell start (at most, not under)', async () => {
  await expect(gateOn(simulatedHost(() => 0.15)).wait()).resolves.toMatchObject({ probes: 1, timedOut: false })
})

test('a host that never quiets: the cell runs anyway after the longest wait, marked timed out', async () => {
  const host = simulatedHost(() => 0.8)
  const result = await gateOn(host, { maxWaitS: 60 }).wait()
  expect(result).toEqual({ waitedS: 62, steal: 0.8, probes: 6, readings: [0.8, 0.8, 0.8, 0.8, 0.8, 0.8], timedOut: true })
})

test('a host without the counters (the probe gives null) never reads as quiet', async () => {
  const host = simulatedHost(() => null)
  await expect(gateOn(host, { limit: 2, maxWaitS: 20, retryS: 5 }).wait())
    .resolves.toEqual({ waitedS: 23, steal: null, probes: 4, readings: [null, null, null, null], timedOut: true })
})

describe('--steal-gate CORES[:SECONDS]', () => {
  const context = { sweep: { rates: [1000] }, cpus: 2, hostCounters: () => true }

  test.each([
    ['0.15', { limit: 0.15, probeS: 2 }],
    ['.2:30', { limit: 0.2, probeS: 30 }],
    ['2', { limit: 2, probeS: 2 }],
    ['1:60', { limit: 1, probeS: 60 }]
  ])('%s', (value, expected) => {
    expect(parseStealGate(value, context)).toEqual(expected)
  })

  test('not given: no gate', () => {
    expect(parseStealGate(undefined, context)).toBeNull()
  })

  test.each(['0', '-0.1', '2.5', 'x', '0.15:0', '0.15:61', '0.15:', ':10', '0.1:2.5', ''])(
    '"%s" is refused with what it must be', (value) => {
      expect(() => parseStealGate(value, context)).toThrow(
        expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(/^--steal-gate must be CORES\[:SECONDS\].*at most this machine's 2.*got "/) }))
    })

  test('only on a sweep of rates', () => {
    expect(() => parseStealGate('0.15', { ...context, sweep: null })).toThrow(/--steal-gate holds the cells of a sweep of rates \(--scenario capacity\)/)
  })

  test('only where /proc/stat gives the counters', () => {
    expect(() => parseStealGate('0.15', { ...context, hostCounters: () => false })).toThrow(/reads the hypervisor's steal from \/proc\/stat \(Linux\); this machine has none/)
  })
})
