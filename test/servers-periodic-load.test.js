'use strict'

const path = require('node:path')
const { createBackend } = require('../servers/static-server')
const { startFleet } = require('../servers/fleet')
const { createPeriodicLoad, periodicDelay, normalizePeriodic, parsePeriodic, formatPeriodic } = require('../servers/periodic-load')
const { rawRequest } = require('./helper')

const PUBLIC = path.join(__dirname, '..', 'public')

describe('periodic load as a function of time', () => {
  const square = normalizePeriodic({ shape: 'square', period: 4000, fast: 20, slow: 3000 })

  test('a square wave is slow in the first half of each period and fast in the second', () => {
    expect([0, 1000, 1999, 2000, 3999, 4000, 6500, -1].map((t) => periodicDelay(square, t)))
      .toEqual([3000, 3000, 3000, 20, 20, 3000, 20, 20])
  })

  test('duty sets the slow fraction and phase shifts the pattern', () => {
    const s = normalizePeriodic({ shape: 'square', period: 1000, fast: 1, slow: 9, duty: 0.25, phase: 500 })
    expect([0, 499, 500, 749, 750].map((t) => periodicDelay(s, t))).toEqual([1, 1, 9, 9, 1])
  })

  test('a sine wave runs between fast and slow, slowest a quarter period in', () => {
    const s = normalizePeriodic({ shape: 'sine', period: 1000, fast: 10, slow: 110 })
    expect(periodicDelay(s, 0)).toBeCloseTo(60)
    expect(periodicDelay(s, 250)).toBeCloseTo(110)
    expect(periodicDelay(s, 750)).toBeCloseTo(10)
  })

  test('createPeriodicLoad reads the injected clock; no spec means no delay', () => {
    let t = 0
    const load = createPeriodicLoad({ shape: 'square', period: 100, fast: 5, slow: 50 }, () => t)
    expect(load.next()).toBe(50)
    t = 60
    expect(load.next()).toBe(5)
    expect(createPeriodicLoad(null).next()).toBe(0)
  })

  test('the text form round-trips and bad text is one clear error', () => {
    const spec = parsePeriodic('square:period=4000,fast=20,slow=3000,phase=2000')
    expect(spec).toEqual({ shape: 'square', period: 4000, fast: 20, slow: 3000, duty: 0.5, phase: 2000 })
    expect(parsePeriodic(formatPeriodic(spec))).toEqual(spec)
    for (const [text, message] of [
      ['square', /must look like/],
      ['saw:period=1,fast=1,slow=1', /shape/],
      ['square:period=0,fast=1,slow=1', /period must be greater than 0/],
      ['square:period=10,fast=-1,slow=1', /fast must be a number/],
      ['square:period=10,fast=1', /slow must be a number/],
      ['square:period=10,fast=1,slow=2,speed=3', /unknown or malformed field "speed=3"/],
      ['square:period=10,fast=1,slow=2,duty=2', /duty must be in \[0, 1\]/]
    ]) {
      expect(() => parsePeriodic(text)).toThrow(message)
    }
  })
})

describe('a backend with a periodic load', () => {
  test('answers slowly in its slow phase and quickly in its fast phase (injected clock)', async () => {
    let t = 0
    const backend = createBackend({ root: PUBLIC, missMs: 0, periodic: { shape: 'square', period: 1000, fast: 0, slow: 300 }, now: () => t })
    const { url } = await backend.listen(0, '127.0.0.1')
    try {
      const slow = await rawRequest(url, '/page1.html')
      t = 700
      const fast = await rawRequest(url, '/page1.html')
      expect(slow.status).toBe(200)
      expect(slow.ms).toBeGreaterThanOrEqual(290)
      expect(fast.ms).toBeLessThan(250)
      expect(backend.stats().periodic).toMatchObject({ shape: 'square', period: 1000, slow: 300 })
    } finally {
      await backend.close()
    }
  })

  test('a fleet of backend processes passes each its own periodic load', async () => {
    const periodic = { shape: 'square', period: 100000, fast: 0, slow: 5000, phase: 0 }
    const fleet = await startFleet({ count: 2, basePort: 0, processes: true, missMs: 0, perBackend: [{ periodic }, { periodic: { ...periodic, phase: 50000 } }] })
    try {
      const stats = await Promise.all(fleet.backends.map(async (b) => JSON.parse((await rawRequest(b.url, '/_stats')).body)))
      expect(stats.map((s) => s.periodic.phase)).toEqual([0, 50000])
    } finally {
      await fleet.close()
    }
  })
})
