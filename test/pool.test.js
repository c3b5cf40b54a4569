'use strict'

const { Pool } = require('../src/pool')

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
