'use strict'

const { latencySample, pickLowest, createEwmaTable, checkAlpha } = require('../src/policies/latency')
const { upstreams } = require('./policy-driver')

const samples = [
  { name: 'a success gives its latency', outcome: { latencyMs: 12, statusCode: 200 }, worst: 100, sample: 12 },
  { name: 'a 404 is a success for latency', outcome: { latencyMs: 3, statusCode: 404 }, worst: 100, sample: 3 },
  { name: 'a fast error counts as the worst known', outcome: { latencyMs: 2, error: new Error('reset') }, worst: 100, sample: 100 },
  { name: 'a fast 503 counts as the worst known', outcome: { latencyMs: 2, statusCode: 503 }, worst: 80, sample: 80 },
  { name: 'a slow error keeps its own latency', outcome: { latencyMs: 3000, error: 'timeout' }, worst: 80, sample: 3000 },
  { name: 'an error without latency counts as the worst known', outcome: { error: 'refused' }, worst: 80, sample: 80 },
  { name: 'an error with nothing known is ignored', outcome: { error: 'refused' }, worst: undefined, sample: undefined },
  { name: 'no latency is ignored', outcome: { statusCode: 200 }, worst: 80, sample: undefined },
  { name: 'NaN is ignored', outcome: { latencyMs: NaN }, worst: 80, sample: undefined },
  { name: 'a negative latency is ignored', outcome: { latencyMs: -1 }, worst: 80, sample: undefined },
  { name: 'Infinity is ignored', outcome: { latencyMs: Infinity }, worst: 80, sample: undefined },
  { name: 'no outcome is ignored', outcome: undefined, worst: 80, sample: undefined }
]

describe('latency estimates shared by the latency-driven policies', () => {
  test.each(samples)('latencySample: $name', ({ outcome, worst, sample }) => {
    expect(latencySample(outcome, worst)).toBe(sample)
  })

  test('pickLowest never returns an unsampled member whose probe is out while a sampled one exists', () => {
    const pool = upstreams(['a', { id: 'b', inflight: 1 }])
    expect(pickLowest(pool, (u) => (u.id === 'a' ? 500 : undefined))).toBe(pool[0])
    expect(pickLowest(pool, () => undefined)).toBe(pool[0])
  })

  test('an EWMA table tracks each id apart, reports the worst, and counts failures as at least the worst', () => {
    const table = createEwmaTable(0.5)
    const [a, b] = upstreams(['a', 'b'])
    expect(table.worst()).toBeUndefined()
    table.record(a, { latencyMs: 10, statusCode: 200 })
    table.record(a, { latencyMs: 30, statusCode: 200 })
    table.record(b, { latencyMs: 1, error: new Error('reset') }) // fast failure: counts as a's 20
    expect(table.get('a')).toBe(20)
    expect(table.worst()).toBe(20)
    expect(table.toJSON()).toEqual({ a: { estimateMs: 20, samples: 2 }, b: { estimateMs: 20, samples: 1 } })
    expect(table.get('c')).toBeUndefined()
  })

  test.each([0, -0.1, 1.5, 'x', NaN])('checkAlpha refuses %p with ERR_POLISTES_BAD_OPTION naming the policy', (alpha) => {
    expect(() => checkAlpha(alpha, 'some-policy')).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringContaining('some-policy: alpha') }))
  })
})
