'use strict'

const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { parseOptions } = require('../bench/options')
const { rotation } = require('../bench/run')
const { scenarioNames, getScenario } = require('../bench/scenarios')

const RUN = path.join(__dirname, '..', 'bench', 'run.js')

describe('bench options', () => {
  test('defaults give the cache scenario: round-robin vs chash-bounded vs wasp, 3 trials, 5 s + 20 s, 32 connections', () => {
    const s = parseOptions([])
    expect(s).toMatchObject({
      scenario: 'cache',
      algos: ['round-robin', 'chash-bounded', 'wasp'],
      baseline: 'round-robin',
      trials: 3,
      warmup: 5,
      duration: 20,
      jitWarmup: 3,
      connections: 32,
      pages: 25,
      cachePages: 4,
      missMs: 20,
      popularity: { kind: 'uniform' },
      rate: undefined,
      keepAlive: true,
      workers: 1
    })
    expect(s.fleet).toMatchObject({ count: 7, cachePages: 4, missMs: 20 })
    expect(parseOptions(['--workers', '4']).workers).toBe(4)
  })

  test.each(scenarioNames())('scenario %s parses, its baseline among its algorithms, with its own keep-alive variants', (name) => {
    const s = parseOptions(['--scenario', name])
    const scenario = getScenario(name)
    expect(s).toMatchObject({ scenario: name, pages: 25, popularity: { kind: 'uniform' }, baseline: 'round-robin', algos: scenario.algos })
    expect(scenario.algos).toContain(scenario.baseline)
    expect(s.arms).toHaveLength(scenario.algos.length * scenario.keepAliveVariants.length)
    expect(Array.isArray(scenario.targets)).toBe(true)
  })

  test('options override the scenario\'s fleet and load', () => {
    const s = parseOptions(['--algos', 'wasp,random', '--cache-pages', '2', '--miss-ms', '5', '--pages', '40',
      '--popularity', 'zipf:1.0', '--rate', '500', '--no-keep-alive', '--connections', '8', '--policy-options', '{"xi":2}'])
    expect(s.algos).toEqual(['wasp', 'random'])
    expect(s.baseline).toBe('wasp') // round-robin not in the list: the first algorithm
    expect(s.fleet).toMatchObject({ cachePages: 2, missMs: 5 })
    expect(s).toMatchObject({ pages: 40, rate: 500, keepAlive: false, connections: 8, policyOptions: { xi: 2 } })
    expect(s.popularity).toEqual({ kind: 'zipf', s: 1 })
    expect(s.arms).toEqual([{ label: 'wasp', algo: 'wasp', keepAlive: false }, { label: 'random', algo: 'random', keepAlive: false }])
  })

  test.each([
    [['--algos', 'foo'], 'ERR_POLISTES_UNKNOWN_ALGO', /unknown algorithm "foo"/],
    [['--popularity', 'foo'], 'ERR_POLISTES_BAD_OPTION', /--popularity/],
    [['--duration', '-1'], 'ERR_POLISTES_BAD_OPTION', /--duration must be greater than 0/],
    [['--trials', '0'], 'ERR_POLISTES_BAD_OPTION', /--trials/],
    [['--warmup', '-2'], 'ERR_POLISTES_BAD_OPTION', /--warmup/],
    [['--connections', 'x'], 'ERR_POLISTES_BAD_OPTION', /--connections/],
    [['--rate', '0'], 'ERR_POLISTES_BAD_OPTION', /--rate/],
    [['--scenario', 'nope'], 'ERR_POLISTES_BAD_OPTION', /unknown scenario/],
    [['--policy-options', '[1]'], 'ERR_POLISTES_BAD_OPTION', /JSON object/],
    [['--frobnicate'], 'ERR_POLISTES_BAD_OPTION', /frobnicate/],
    [['--workers', '0'], 'ERR_POLISTES_BAD_OPTION', /--workers/],
    [['--workers', '65'], 'ERR_POLISTES_BAD_OPTION', /--workers/]
  ])('%j is rejected with %s', (argv, code, message) => {
    expect(() => parseOptions(argv)).toThrow(expect.objectContaining({ code, message: expect.stringMatching(message) }))
  })

  test('a bad option prints one line and exits 2', () => {
    for (const argv of [['--algos', 'foo'], ['--popularity', 'foo'], ['--duration', '-1']]) {
      const r = spawnSync(process.execPath, [RUN, ...argv], { encoding: 'utf8' })
      expect(r.status).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stderr).toMatch(/^polistes bench: /)
    }
  })

  test('the latency-profiles scenario runs each algorithm with and without keep-alive', () => {
    const s = parseOptions(['--scenario', 'latency-profiles', '--algos', 'round-robin,ewma'])
    expect(s.arms.map((a) => a.label)).toEqual(['round-robin', 'round-robin (no-ka)', 'ewma', 'ewma (no-ka)'])
    expect(s.connections).toBe(100)
  })

  test('trials rotate the starting algorithm', () => {
    expect(rotation(['a', 'b', 'c'], 0)).toEqual(['a', 'b', 'c'])
    expect(rotation(['a', 'b', 'c'], 1)).toEqual(['b', 'c', 'a'])
    expect(rotation(['a', 'b', 'c'], 3)).toEqual(['a', 'b', 'c'])
  })
})
