'use strict'

const { OPTIONS, flagsToConfig, missingValue, unknownFlags } = require('../src/run/cli-options')

describe('the option table', () => {
  test('flags, aliases and config keys are unique; every option has a known group and a description', () => {
    const names = OPTIONS.flatMap((o) => [o.flag, ...(o.alias ? [o.alias] : [])])
    expect(new Set(names).size).toBe(names.length)
    const keys = OPTIONS.filter((o) => o.key).map((o) => o.key)
    expect(new Set(keys).size).toBe(keys.length)
    for (const o of OPTIONS) {
      expect(['balancing', 'backends', 'health', 'front', 'observability', 'fleet', 'general']).toContain(o.group)
      expect(typeof o.describe).toBe('string')
    }
  })
})

describe('flagsToConfig', () => {
  test('given flags become config keys, nested where the key is dotted; the rest stay unset', () => {
    expect(flagsToConfig({ _: [], timeout: 500, 'health-rise': 4, 'health-check': '/h', 'fleet-size': 3, 'retry-on': '503,timeout', 'policy-options': '{"rounds":2}', 'keep-alive': false, 'log-level': 'info' }))
      .toEqual({ timeoutMs: 500, healthCheck: { rise: 4, path: '/h' }, fleet: { count: 3 }, retryOn: [503, 'timeout'], policyOptions: { rounds: 2 }, keepAlive: false })
  })

  test.each([
    [{ port: NaN }, '--port must be a number'],
    [{ 'retry-on': '503,slow' }, '--retry-on must be a comma list of statuses and/or timeout, e.g. 503,timeout, got "503,slow"'],
    [{ 'policy-options': '{nope' }, /^--policy-options is not valid JSON: /]
  ])('%j is refused naming the flag', (argv, message) => {
    expect(() => flagsToConfig(argv)).toThrow(message)
  })
})

describe('missingValue', () => {
  test.each([
    [['--port'], { typed: '--port', flag: '--port' }],
    [['-p'], { typed: '-p', flag: '--port' }],
    [['--port', '--host', 'x'], { typed: '--port', flag: '--port' }],
    [['--port='], { typed: '--port', flag: '--port' }],
    [['--port', ''], { typed: '--port', flag: '--port' }],
    [['--algo', 'wasp', '--backends'], { typed: '--backends', flag: '--backends' }],
    [['--health-expect'], { typed: '--health-expect', flag: '--health-expect' }]
  ])('%j lacks a value', (argv, expected) => {
    expect(missingValue(argv)).toEqual(expected)
  })

  test.each([
    [['--port', '8080']], [['--port=8080']], [['-p', '0']], [['--slow-start', '-5']], [['--watch', '--config', 'x.json']],
    [['--keep-alive']], [['--no-keep-alive']], [['--', '--port']], [['--bogus']], [[]]
  ])('%j does not', (argv) => {
    expect(missingValue(argv)).toBeUndefined()
  })
})

describe('unknownFlags', () => {
  test('each unknown name once, as typed; known names, aliases and negations pass', () => {
    const raw = ['--bogus-flag', 'x', '--bogusFlag=2', '-x', '--no-colour', '--fleet.count', '3', '-p', '0', '--no-keep-alive']
    const argv = { _: [], $0: 'polistes', 'bogus-flag': 'x', bogusFlag: 2, x: true, colour: false, 'fleet.count': 3, p: 0, port: 0, 'keep-alive': false }
    expect(unknownFlags(argv, raw)).toEqual(['--bogus-flag', '--bogusFlag', '-x', '--no-colour', '--fleet.count'])
  })
})
