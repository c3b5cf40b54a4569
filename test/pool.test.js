'use strict'

const { Pool } = require('../src/pool/pool')
const { mulberry32 } = require('./policy-driver')

const specs = [{ id: 'a', url: 'http://127.0.0.1:1', weight: 1 }, { id: 'b', url: 'http://127.0.0.1:2', weight: 1 }]

describe('the pool owns its members\' records', () => {
  test('acquire counts a request and an in-flight attempt; release ends the attempt', () => {
    const pool = new Pool(specs)
    const [a, b] = pool.all()
    pool.acquire(a)
    pool.acquire(a)
    pool.acquire(b)
    expect([a.inflight, a.requests, b.inflight, b.requests]).toEqual([2, 2, 1, 1])
    expect(pool.inflight()).toBe(3)
    pool.release(a)
    pool.release(b)
    expect([a.inflight, a.requests, b.inflight, b.requests]).toEqual([1, 2, 0, 1])
    expect(pool.inflight()).toBe(1)
    expect(a.toJSON()).toMatchObject({ inflight: 1, requests: 2 })
  })

  test('isHealthy follows ejection: maxFails failures eject for failTimeoutMs', () => {
    let t = 1000
    const pool = new Pool(specs, { maxFails: 2, failTimeoutMs: 500, now: () => t })
    const [a, b] = pool.all()
    pool.fail(a)
    expect(pool.isHealthy(a)).toBe(true)
    pool.fail(a)
    expect(pool.isHealthy(a)).toBe(false)
    expect(pool.isHealthy(b)).toBe(true)
    expect(pool.eligible()).toEqual([b])
    expect(pool.isHealthy(a, 1500)).toBe(true) // an explicit time
    t = 1500
    expect(pool.isHealthy(a)).toBe(true)
    expect(pool.eligible()).toEqual([a, b])
  })

  test('a success clears the failure streak', () => {
    const pool = new Pool(specs, { maxFails: 2, now: () => 0 })
    const [a] = pool.all()
    pool.fail(a)
    pool.succeed(a)
    pool.fail(a)
    expect(pool.isHealthy(a)).toBe(true)
    expect(a.failures).toBe(2)
  })

  test('a duplicate id is refused with a stable code', () => {
    const pool = new Pool(specs)
    expect(() => pool.add(specs[0])).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_URL', message: 'pool: duplicate upstream id "a"' }))
  })
})

describe('active checks: rise and fall as in HAProxy', () => {
  const three = [...specs, { id: 'c', url: 'http://127.0.0.1:3', weight: 1 }]

  test('a watched member goes down after fall failed checks in a row and gets no traffic', () => {
    const pool = new Pool(three, { now: () => 0 })
    const [a, b, c] = pool.all()
    pool.watch(a, { rise: 2, fall: 3 })
    expect(pool.reportCheck(a, { ok: false, error: 'ECONNREFUSED' })).toBeUndefined()
    expect(pool.health(a).state).toBe('falling')
    pool.reportCheck(a, { ok: false })
    expect(pool.reportCheck(a, { ok: true, status: 200 })).toBeUndefined() // a pass breaks the streak
    expect(pool.health(a).state).toBe('up')
    pool.reportCheck(a, { ok: false })
    pool.reportCheck(a, { ok: false })
    expect(pool.eligible()).toEqual([a, b, c])
    expect(pool.reportCheck(a, { ok: false, status: 503 })).toBe('down')
    expect(pool.health(a)).toMatchObject({ state: 'down', healthy: false, check: { passed: 1, failed: 5, downs: 1, last: { ok: false, status: 503 } } })
    expect(pool.eligible()).toEqual([b, c])
  })

  test('a down member comes back after rise passed checks in a row', () => {
    const pool = new Pool(specs, { now: () => 0 })
    const [a, b] = pool.all()
    pool.watch(a, { rise: 2, fall: 1 })
    pool.reportCheck(a, { ok: false })
    expect(pool.reportCheck(a, { ok: true })).toBeUndefined()
    expect(pool.health(a).state).toBe('rising')
    expect(pool.eligible()).toEqual([b])
    pool.reportCheck(a, { ok: false })
    expect(pool.health(a).state).toBe('down')
    pool.reportCheck(a, { ok: true })
    expect(pool.reportCheck(a, { ok: true })).toBe('up')
    expect(pool.eligible()).toEqual([a, b])
  })

  test('when every member is down by its checks, none is eligible (503), unlike a passive blackout', () => {
    const pool = new Pool(specs, { now: () => 0 })
    for (const u of pool.all()) {
      pool.watch(u, { rise: 1, fall: 1 })
      pool.reportCheck(u, { ok: false })
    }
    expect(pool.eligible()).toEqual([])
  })

  test('a member ejected while its checks stay up serves again after rise passes since the ejection', () => {
    let t = 0
    const pool = new Pool(specs, { maxFails: 1, failTimeoutMs: 5000, slowStartMs: 10000, now: () => t })
    const [a, b] = pool.all()
    pool.watch(a, { rise: 2, fall: 2 })
    expect(pool.reportCheck(a, { ok: true })).toBeUndefined() // up and passing: nothing to count
    t = 100
    pool.fail(a) // a crash: refused once, ejected for 5 s; its checks have not failed twice yet
    expect(pool.health(a).state).toBe('ejected')
    expect(pool.eligible()).toEqual([b])
    t = 1100
    expect(pool.reportCheck(a, { ok: true })).toBeUndefined() // restarted: one pass
    expect(pool.eligible()).toEqual([b])
    t = 2100
    expect(pool.reportCheck(a, { ok: true })).toBe('up') // rise passes since the ejection
    expect(pool.health(a).state).toBe('up')
    expect(pool.isHealthy(a)).toBe(true)
    expect(pool.health(a, 2100).ramp).toBeLessThan(1) // slow start from here
    pool.fail(a)
    t = 3100
    pool.reportCheck(a, { ok: true })
    pool.reportCheck(a, { ok: false }) // a failed check breaks the streak
    pool.reportCheck(a, { ok: true })
    expect(pool.isHealthy(a)).toBe(false)
  })

  test('passing checks clear a passive ejection; unwatch makes a down member eligible again', () => {
    let t = 0
    const pool = new Pool(specs, { maxFails: 1, failTimeoutMs: 10000, now: () => t })
    const [a, b] = pool.all()
    pool.watch(a, { rise: 1, fall: 1 })
    pool.watch(b, { rise: 1, fall: 1 })
    pool.fail(a)
    expect(pool.health(a).state).toBe('ejected')
    pool.reportCheck(a, { ok: false })
    t = 100
    pool.reportCheck(a, { ok: true })
    expect(pool.isHealthy(a)).toBe(true)
    pool.reportCheck(b, { ok: false })
    expect(pool.eligible()).toEqual([a])
    pool.unwatch(b)
    expect(pool.eligible()).toEqual([a, b])
  })
})

describe('slow start: a member that comes back ramps up', () => {
  /** Share of `id` over `n` eligible() calls (each list's members counted once; a policy picks among them). */
  function offered (pool, id, n = 4000) {
    let hits = 0
    for (let i = 0; i < n; i++) if (pool.eligible().some((u) => u.id === id)) hits++
    return hits / n
  }

  test('after an ejection the member is offered on a fraction of picks that grows linearly to 1', () => {
    let t = 0
    const pool = new Pool(specs, { maxFails: 1, failTimeoutMs: 1000, slowStartMs: 10000, now: () => t, random: mulberry32(7) })
    const [a] = pool.all()
    expect(offered(pool, 'a', 100)).toBe(1) // present at start: no ramp
    pool.fail(a)
    t = 500
    expect(offered(pool, 'a', 100)).toBe(0)
    const seen = []
    for (const at of [1000, 3500, 6000, 8500, 11000]) {
      t = at
      seen.push(offered(pool, 'a'))
      expect(pool.ramp(a)).toBeCloseTo(Math.min(1, (at - 1000) / 10000))
    }
    expect(seen[0]).toBe(0)
    expect(seen[1]).toBeCloseTo(0.25, 1)
    expect(seen[2]).toBeCloseTo(0.5, 1)
    expect(seen[3]).toBeCloseTo(0.75, 1)
    expect(seen[4]).toBe(1)
    expect(pool.eligible()).toBe(pool.eligible()) // ramp over: one cached list again
  })

  test('a member added to a running pool ramps; the lists during a ramp are a few cached instances', () => {
    let t = 0
    let x = 0
    const pool = new Pool(specs, { slowStartMs: 1000, now: () => t, random: () => x })
    pool.add({ id: 'c', url: 'http://127.0.0.1:3', weight: 1 }, { slowStart: true })
    t = 400
    x = 0.5
    const without = pool.eligible()
    expect(without.map((u) => u.id)).toEqual(['a', 'b'])
    x = 0.3
    const withC = pool.eligible()
    expect(withC.map((u) => u.id)).toEqual(['a', 'b', 'c'])
    x = 0.9
    expect(pool.eligible()).toBe(without)
    expect(pool.health(pool.get('c')).ramp).toBeCloseTo(0.4)
  })

  test('with every healthy member ramping there is no gate (shares are relative)', () => {
    let t = 0
    const pool = new Pool(specs, { slowStartMs: 1000, now: () => t, random: () => 0.99 })
    pool.add({ id: 'c', url: 'http://127.0.0.1:3', weight: 1 }, { slowStart: true })
    pool.remove('a')
    pool.remove('b')
    t = 10
    expect(pool.eligible().map((u) => u.id)).toEqual(['c'])
  })

  test('a member whose checks rise again ramps from that moment; update changes weight in place', () => {
    let t = 0
    const pool = new Pool(specs, { slowStartMs: 2000, now: () => t, random: () => 0.5 })
    const [a] = pool.all()
    pool.watch(a, { rise: 1, fall: 1 })
    pool.reportCheck(a, { ok: false })
    t = 5000
    pool.reportCheck(a, { ok: true })
    t = 6000
    expect(pool.health(a)).toMatchObject({ state: 'up', ramp: 0.5 })
    expect(pool.update({ id: 'a', weight: 3, region: 'eu' })).toBe(true)
    expect([a.weight, a.region, a.requests]).toEqual([3, 'eu', 0])
    expect(pool.update({ id: 'zz', weight: 1 })).toBe(false)
    pool.configure({ slowStartMs: 0 })
    expect(pool.ramp(a)).toBe(1)
  })
})
