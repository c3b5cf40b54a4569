'use strict'

const { createPolicy, policyNames } = require('../src/policies')

describe('policy registry', () => {
  test('lists every algorithm --algo accepts, wasp included', () => {
    expect(policyNames()).toEqual([
      'round-robin', 'random', 'weighted-round-robin', 'least-connections', 'ip-hash', 'sma', 'ewma',
      'lowest-latency', 'latency-weighted', 'equal-regions', 'p2c-peak-ewma', 'chash-bounded', 'wasp'
    ])
  })

  test.each(['nope', '', 'toString', '__proto__', 'Round-Robin'])('unknown name %p throws ERR_POLISTES_UNKNOWN_ALGO', (name) => {
    expect(() => createPolicy(name)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_UNKNOWN_ALGO' }))
  })

  test.each([
    ['weighted-round-robin', { maxFails: 0 }],
    ['sma', { window: 0 }],
    ['ewma', { alpha: 2 }],
    ['lowest-latency', { alpha: 0 }],
    ['latency-weighted', { minLatencyMs: 0 }],
    ['p2c-peak-ewma', { tau: 0 }],
    ['chash-bounded', { balanceFactor: 0.5 }]
  ])('%s refuses %p with ERR_POLISTES_BAD_OPTION', (name, options) => {
    expect(() => createPolicy(name, options)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })

  test.each(policyNames())('%s is created with default options and no deps', (name) => {
    expect(createPolicy(name).name).toBe(name)
  })
})
