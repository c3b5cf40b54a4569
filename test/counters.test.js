'use strict'

const { COUNTERS, createCounters, snapshotCounters } = require('../src/observe/counters')
const { DTS, interfaceKeys } = require('./index-dts')

test('BalancerStats in index.d.ts lists every counter and nothing else beside pid, inflight, upstreams and policy', () => {
  const keys = interfaceKeys('BalancerStats')
  expect(keys.filter((k) => !['pid', 'inflight', 'upstreams', 'policy'].includes(k))).toEqual(COUNTERS.map((c) => c.name))
})

test('BalancerStats gives each counter with kinds exactly those kinds', () => {
  for (const c of COUNTERS.filter((c) => c.kinds)) {
    const m = new RegExp(`^ {2}${c.name}: \\{([^}]*)\\}`, 'm').exec(DTS)
    expect(m).not.toBeNull()
    expect(m[1].split(',').map((s) => s.split(':')[0].trim())).toEqual(c.kinds)
  }
})

test('the counters start at zero and a snapshot does not move with them', () => {
  const counters = createCounters()
  expect(counters).toEqual({ requests: 0, responses: 0, retries: 0, failures: { connect: 0, timeout: 0, stream: 0 }, noUpstream: 0, clientAborts: 0, bodyTooLarge: 0, droppedConnections: 0 })
  counters.requests++
  counters.failures.timeout++
  const snap = snapshotCounters(counters)
  counters.failures.timeout++
  expect(snap.requests).toBe(1)
  expect(snap.failures.timeout).toBe(1)
})

test('every counter is a Prometheus counter of its own, a kind of polistes_failures_total, or in the stats only', () => {
  for (const c of COUNTERS) {
    expect([c.metric, c.failureKind, c.kinds].filter(Boolean).length).toBeLessThanOrEqual(1)
    if (c.metric) expect(c.metric).toMatch(/^polistes_[a-z_]+_total$/)
    expect(typeof c.doc).toBe('string')
  }
})
