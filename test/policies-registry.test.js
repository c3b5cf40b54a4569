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

describe('policy sources', () => {
  const fs = require('node:fs')
  const path = require('node:path')
  const dir = path.join(__dirname, '..', 'src', 'policies')
  const localRequires = (file) => [...fs.readFileSync(path.join(dir, file), 'utf8').matchAll(/require\('\.\/([^']+)'\)/g)]
    .map((m) => m[1].replace(/\.js$/, '') + '.js')
  const policyFiles = localRequires('index.js')
  const others = fs.readdirSync(dir).filter((f) => f.endsWith('.js') && f !== 'index.js')

  test('the registry requires one file per policy', () => {
    expect(policyFiles).toHaveLength(policyNames().length)
  })

  test.each(others)('%s requires no policy file (helpers come from shared modules)', (file) => {
    expect(localRequires(file).filter((f) => policyFiles.includes(f))).toEqual([])
  })
})
