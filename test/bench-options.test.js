'use strict'

const path = require('node:path')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const { parseOptions, peerArms, FULL_PLAN } = require('../bench/runners/options')
const { findBinary } = require('../bench/peers/peers')
const { rotation } = require('../bench/runners/run')
const { scenarioNames, getScenario } = require('../bench/workloads/scenarios')
const { describeIfInstalled } = require('./helper')
const { parsePopularity } = require('../bench/workloads/popularity')
const { DEFAULT_ENGINE } = require('../src/proxy/proxy-engine')

const RUN = path.join(__dirname, '..', 'bench', 'runners', 'run.js')

describe('bench options', () => {
  test('a run that changes the scenario\'s workload says so beside the scenario\'s description', () => {
    const own = getScenario('capacity').description
    expect(parseOptions(['--scenario', 'capacity']).description).toBe(own)
    expect(parseOptions(['--scenario', 'capacity', '--zipf', '0.8', '--backend-workers', '2,3,4,5,6,7,8']).description)
      .toBe(`${own}; this run's options changed: --zipf 0.8, --backend-workers 2,3,4,5,6,7,8`)
    expect(parseOptions(['--pages', '20000', '--cache-pages', '8']).description).toMatch(/; this run's options changed: --pages 20000, --cache-pages 8$/)
  })

  test('a scenario\'s own arms carry their retry-on and source addresses; --retry-on and --sources set them for all', () => {
    const b = parseOptions(['--scenario', 'periodic', '--peers', 'none'])
    expect(b).toMatchObject({ rate: 50, load: 'open-loop', baseline: 'random' })
    expect(b.arms.find((a) => a.label === 'least-connections +retry 503')).toMatchObject({ algo: 'least-connections', retryOn: [503] })
    const d = parseOptions(['--scenario', 'many-clients', '--peers', 'none'])
    expect(d).toMatchObject({ load: 'node', sources: 1000, connections: 1000 })
    expect(d.arms.find((a) => a.sources === 1)).toMatchObject({ algo: 'ip-hash', label: 'ip-hash (1 client address)' })
    const all = parseOptions(['--algos', 'random,wasp', '--retry-on', '503', '--sources', '20', '--peers', 'none'])
    expect(all.arms.map((a) => a.retryOn)).toEqual([[503], [503]])
    expect(all).toMatchObject({ sources: 20, load: 'node' })
    expect(() => parseOptions(['--retry-on', '404'])).toThrow(/--retry-on must be a comma list of 5xx statuses/)
    expect(() => parseOptions(['--retry-on', '503,slow'])).toThrow(/--retry-on must be a comma list of 5xx statuses and\/or timeout/)
    expect(() => parseOptions(['--sources', '20', '--load', 'wrk'])).toThrow(/--sources needs the Node generator/)
  })

  test('B retries on a timeout in arms of its own, with a try timeout and a short ejection; --retry-on timeout and --try-timeout set them for all', () => {
    const b = parseOptions(['--scenario', 'periodic', '--peers', 'none'])
    expect(b.arms.find((a) => a.label === 'least-connections +retry 503,timeout (try 250 ms)')).toMatchObject({ algo: 'least-connections', retryOn: [503, 'timeout'], tryTimeoutMs: 250 })
    expect(b.arms.filter((a) => a.tryTimeoutMs).map((a) => a.algo)).toEqual(['random', 'round-robin', 'least-connections', 'p2c-peak-ewma', 'ewma', 'latency-weighted'])
    expect(b.balancerOptions).toEqual({ failTimeoutMs: 1000 })
    const all = parseOptions(['--scenario', 'periodic', '--algos', 'random', '--retry-on', '503,timeout', '--try-timeout', '200', '--peers', 'none'])
    expect(all.arms).toEqual([expect.objectContaining({ label: 'random', retryOn: [503, 'timeout'], tryTimeoutMs: 200 })])
    expect(() => parseOptions(['--try-timeout', '0'])).toThrow(/--try-timeout must be greater than 0/)
  })

  test('D measures 100,000 requests, as ApacheBench -n; --requests changes the count, 0 measures --duration seconds; only the Node generator counts', () => {
    expect(parseOptions(['--scenario', 'many-clients', '--peers', 'none'])).toMatchObject({ requests: 100000, load: 'node' })
    expect(parseOptions(['--scenario', 'many-clients', '--requests', '5000', '--peers', 'none']).requests).toBe(5000)
    expect(parseOptions(['--scenario', 'many-clients', '--requests', '0', '--peers', 'none']).requests).toBeUndefined()
    expect(parseOptions(['--peers', 'none']).requests).toBeUndefined()
    expect(() => parseOptions(['--requests', '1000', '--peers', 'none'])).toThrow(/--requests counts requests of the closed-loop Node generator/)
    expect(() => parseOptions(['--scenario', 'many-clients', '--requests', '2.5', '--peers', 'none'])).toThrow(/--requests must be an integer/)
  })

  test('no arguments: the quick plan of the cache scenario, round-robin vs wasp, 3 trials of 5 s + 7 s, 32 connections', () => {
    const s = parseOptions([])
    expect(s).toMatchObject({
      scenario: 'cache',
      plan: 'quick',
      algos: ['round-robin', 'wasp'],
      baseline: 'round-robin',
      trials: 3,
      warmup: 5,
      duration: 7,
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
    // the best peer of the README's headline when nginx is installed, none otherwise; a line says which
    const nginx = Boolean(findBinary('nginx'))
    expect(s.arms.map((a) => a.label)).toEqual(['round-robin', 'wasp', ...(nginx ? ['nginx-uri'] : [])])
    expect(s.notes.filter((n) => n.startsWith('peer: '))).toEqual([nginx ? expect.stringMatching(/^peer: nginx-uri, the best peer/) : expect.stringMatching(/^peer: none, nginx not found on PATH/)])
    // the ratio targets hold: round-robin is in the plan
    expect(s.targets.some((t) => t.ratio)).toBe(true)
    expect(parseOptions(['--workers', '4']).workers).toBe(4)
    expect(parseOptions(['--peers', 'none']).peerWorkers).toBe(1)
    expect(parseOptions(['--workers', '4', '--peers', 'none']).peerWorkers).toBe(4)
    expect(parseOptions(['--workers', '4', '--peer-workers', '2', '--peers', 'none'])).toMatchObject({ workers: 4, peerWorkers: 2 })
  })

  test('the quick plan\'s peer: nginx-uri when nginx is found, else none with a line saying why; the full matrix notes each missing program', () => {
    const quick = { peers: ['nginx-uri'] }
    let notes = []
    expect(peerArms(undefined, quick, notes, { quick: true, find: () => '/usr/sbin/nginx' })).toEqual(['nginx-uri'])
    expect(notes).toEqual(['peer: nginx-uri, the best peer of the README\'s headline (--full runs every installed peer arm)'])
    notes = []
    expect(peerArms(undefined, quick, notes, { quick: true, find: () => null })).toEqual([])
    expect(notes).toEqual(['peer: none, nginx not found on PATH, so no nginx-uri arm (install: apt-get install nginx-light; --peers none hides this note)'])
    notes = []
    const full = { peers: ['haproxy', 'nginx'] }
    expect(peerArms(undefined, full, notes, { find: (p) => (p === 'haproxy' ? '/usr/sbin/haproxy' : null) })).toEqual(['haproxy-uri', 'haproxy-uri-bounded', 'haproxy-rr'])
    expect(notes).toEqual([expect.stringMatching(/^note: nginx not found on PATH, its arms are left out/)])
    // explicit --peers: exactly those, each program required, no line
    notes = []
    expect(peerArms('haproxy-uri', quick, notes, { quick: true, find: () => '/x' })).toEqual(['haproxy-uri'])
    expect(notes).toEqual([])
    expect(() => peerArms('nginx', quick, notes, { find: () => null })).toThrow(/--peers: nginx not found on PATH/)
    expect(peerArms('none', quick, notes, { quick: true, find: () => '/x' })).toEqual([])
  })

  test('--full gives the whole matrix of before: round-robin, chash-bounded, wasp, 3 trials of 5 s + 20 s', () => {
    const s = parseOptions(['--full', '--peers', 'none'])
    expect(s).toMatchObject({ plan: 'full', algos: ['round-robin', 'chash-bounded', 'wasp'], trials: 3, warmup: 5, duration: 20, jitWarmup: 3, connections: 32 })
    expect(FULL_PLAN).toEqual({ trials: 3, warmup: 5, duration: 20 })
    expect(s.arms.map((a) => a.label)).toEqual(['round-robin', 'chash-bounded', 'wasp'])
    // the peers of the full matrix are every installed arm of both programs, a note for each missing one
    const withPeers = parseOptions(['--full'])
    for (const program of ['haproxy', 'nginx']) {
      const arms = withPeers.arms.filter((a) => a.peer === program)
      if (findBinary(program)) expect(arms.length).toBeGreaterThanOrEqual(2)
      else expect(withPeers.notes.join('\n')).toMatch(new RegExp(`note: ${program} not found on PATH`))
    }
    expect(withPeers.notes.some((n) => n.startsWith('peer: '))).toBe(false)
    // scenarios without a quick plan are their full matrix either way
    expect(parseOptions(['--scenario', 'zipf', '--peers', 'none'])).toMatchObject({ plan: 'full', trials: 3, warmup: 5, duration: 20 })
    expect(parseOptions(['--scenario', 'zipf', '--peers', 'none', '--full']).algos).toEqual(['chash-bounded', 'wasp'])
  })

  test('options given explicitly override the quick plan and the full matrix alike', () => {
    for (const plan of [[], ['--full']]) {
      const s = parseOptions([...plan, '--algos', 'wasp,round-robin', '--trials', '2', '--duration', '4', '--warmup', '1', '--peers', 'none'])
      expect(s).toMatchObject({ algos: ['wasp', 'round-robin'], trials: 2, duration: 4, warmup: 1, peers: [], notes: [] })
    }
    // --algos alone keeps the quick plan's trials and peer
    const algos = parseOptions(['--algos', 'chash-bounded'])
    expect(algos).toMatchObject({ plan: 'quick', algos: ['chash-bounded'], trials: 3, duration: 7, peers: findBinary('nginx') ? ['nginx-uri'] : [] })
  })

  test('README.md states the plans as they are: the quick default and --full', () => {
    const readme = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8').replace(/\s+/g, ' ')
    const quick = parseOptions(['--peers', 'none'])
    const full = parseOptions(['--full', '--peers', 'none'])
    expect(readme).toContain(`${quick.algos.join(' against ')} (plus nginx-uri when nginx is installed), ${quick.trials} trials of ${quick.warmup} s learning + ${quick.duration} s measured`)
    expect(readme).toContain(`\`--full\` runs the whole matrix: ${full.algos.join(', ')} and every installed peer arm, ${full.trials} trials of ${full.warmup} s learning + ${full.duration} s measured`)
  })

  test.each(scenarioNames())('scenario %s parses (--full), its baseline among its algorithms, with its own keep-alive variants', (name) => {
    const s = parseOptions(['--scenario', name, '--full'])
    const scenario = getScenario(name)
    expect(s).toMatchObject({ scenario: name, pages: scenario.pages, popularity: parsePopularity(scenario.popularity), baseline: scenario.baseline, algos: scenario.algos })
    expect(scenario.algos).toContain(scenario.baseline)
    expect(s.arms.filter((arm) => !arm.peer)).toHaveLength(scenario.arms ? scenario.arms.length : scenario.algos.length * scenario.keepAliveVariants.length)
    expect(Array.isArray(scenario.targets)).toBe(true)
  })

  test('ratio targets (against the baseline) are dropped when the run leaves the scenario\'s baseline out; the others stay', () => {
    const all = parseOptions(['--full'])
    expect(all.targets.some((t) => t.ratio)).toBe(true)
    const alone = parseOptions(['--algos', 'wasp'])
    expect(alone.baseline).toBe('wasp')
    expect(alone.targets.some((t) => t.ratio)).toBe(false)
    expect(alone.targets).toEqual(all.targets.filter((t) => !t.ratio))
  })

  test('options override the scenario\'s fleet and load', () => {
    const s = parseOptions(['--algos', 'wasp,random', '--cache-pages', '2', '--miss-ms', '5', '--pages', '40',
      '--popularity', 'zipf:1.0', '--rate', '500', '--no-keep-alive', '--connections', '8', '--policy-options', '{"xi":2}', '--peers', 'none', '--engine', 'node-http'])
    expect(s.algos).toEqual(['wasp', 'random'])
    expect(s.baseline).toBe('wasp') // round-robin not in the list: the first algorithm
    expect(s.fleet).toMatchObject({ cachePages: 2, missMs: 5 })
    expect(s).toMatchObject({ pages: 40, rate: 500, keepAlive: false, connections: 8, policyOptions: { xi: 2 } })
    expect(s.popularity).toEqual({ kind: 'zipf', s: 1 })
    expect(s.arms).toEqual([{ label: 'wasp', algo: 'wasp', keepAlive: false, engine: 'node-http' }, { label: 'random', algo: 'random', keepAlive: false, engine: 'node-http' }])
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
    [['--peers', 'squid'], 'ERR_POLISTES_BAD_OPTION', /unknown peer "squid"/],
    [['--load', 'ab'], 'ERR_POLISTES_BAD_OPTION', /--load must be/],
    [['--load', 'wrk', '--rate', '100'], 'ERR_POLISTES_BAD_OPTION', /--rates\) runs the open-loop generator; --load wrk is closed loop only/],
    [['--load', 'autocannon', '--rate', '100'], 'ERR_POLISTES_BAD_OPTION', /--load autocannon is closed loop only/],
    [['--load', 'node', '--rate', '100'], 'ERR_POLISTES_BAD_OPTION', /--load node is closed loop only/],
    [['--scenario', 'capacity', '--load', 'autocannon'], 'ERR_POLISTES_BAD_OPTION', /closed loop only/],
    [['--workers', '0'], 'ERR_POLISTES_BAD_OPTION', /--workers/],
    [['--workers', '65'], 'ERR_POLISTES_BAD_OPTION', /--workers/],
    [['--peer-workers', '0'], 'ERR_POLISTES_BAD_OPTION', /--peer-workers must be at least 1/],
    [['--peer-workers', '1.5'], 'ERR_POLISTES_BAD_OPTION', /--peer-workers must be an integer/],
    [['--peer-workers', '65'], 'ERR_POLISTES_BAD_OPTION', /--peer-workers must be at most 64/],
    [['--engine', 'nginx'], 'ERR_POLISTES_BAD_OPTION', /unknown --engine "nginx"/],
    [['--pages', '0'], 'ERR_POLISTES_BAD_OPTION', /--pages must be an integer from 1 to 100000, got 0/],
    [['--pages', '100001'], 'ERR_POLISTES_BAD_OPTION', /--pages must be an integer from 1 to 100000/],
    [['--page-size', 'huge'], 'ERR_POLISTES_BAD_OPTION', /--page-size must be/],
    [['--page-size', 'uniform:80k,20k'], 'ERR_POLISTES_BAD_OPTION', /MIN <= MAX/],
    [['--cache-bytes', '10'], 'ERR_POLISTES_BAD_OPTION', /--cache-bytes must be a size of at least 1k/],
    [['--cache-bytes', '1m', '--cache-pages', '4'], 'ERR_POLISTES_BAD_OPTION', /exclude each other/],
    [['--shift', '10'], 'ERR_POLISTES_BAD_OPTION', /--shift rotates the popularity ranking/],
    [['--scenario', 'zipf', '--shift', '0'], 'ERR_POLISTES_BAD_OPTION', /--shift must be SECONDS\[,STEP\]/],
    [['--scenario', 'zipf', '--shift', '5,200'], 'ERR_POLISTES_BAD_OPTION', /STEP < pages \(200\)/],
    [['--scenario', 'many-clients', '--churn'], 'ERR_POLISTES_BAD_OPTION', /--churn .* cannot be timed in --requests/],
    [['--kill', '3:2'], 'ERR_POLISTES_BAD_OPTION', /--kill runs a kill\/restart cell of a sweep of rates/],
    [['--scenario', 'capacity', '--kill', '3'], 'ERR_POLISTES_BAD_OPTION', /--kill must be AT:DOWN, whole seconds of at least 1/],
    [['--scenario', 'capacity', '--kill', '0:2', '--duration', '9'], 'ERR_POLISTES_BAD_OPTION', /--kill must be AT:DOWN/],
    [['--scenario', 'capacity', '--kill', '2:1'], 'ERR_POLISTES_BAD_OPTION', /restarts backend a at second 3 of a 3 s window: give a longer --duration/],
    [['--scenario', 'capacity', '--kill', '1:1', '--rates', '1500,2000'], 'ERR_POLISTES_BAD_OPTION', /one offered rate; --rates lists 2/],
    [['--scenario', 'capacity', '--kill', '1:1', '--churn'], 'ERR_POLISTES_BAD_OPTION', /--kill and --churn exclude each other/],
    [['--steal-gate', '0.15'], 'ERR_POLISTES_BAD_OPTION', /--steal-gate holds the cells of a sweep of rates/],
    [['--scenario', 'capacity', '--steal-gate', '999'], 'ERR_POLISTES_BAD_OPTION', /--steal-gate must be CORES\[:SECONDS\]/],
    [['--algos', 'wasp,clairvoyant'], 'ERR_POLISTES_BAD_OPTION', /clairvoyant: a reference of the capacity scenario only/],
    [['--scenario', 'capacity', '--algos', 'counting', '--cache-bytes', '1m'], 'ERR_POLISTES_BAD_OPTION', /counting: the references count caches in pages/],
    [['--scenario', 'capacity', '--algos', 'clairvoyant', '--workers', '2'], 'ERR_POLISTES_BAD_OPTION', /a reference runs in one balancer process/],
    [['--scenario', 'capacity', '--algos', 'clairvoyant', '--shift', '5'], 'ERR_POLISTES_BAD_OPTION', /clairvoyant: its placement is static/]
  ])('%j is rejected with %s', (argv, code, message) => {
    expect(() => parseOptions(argv)).toThrow(expect.objectContaining({ code, message: expect.stringMatching(message) }))
  })

  test('the zipf scenario: issue 18\'s workload, the same workload options as bench:model', () => {
    const s = parseOptions(['--scenario', 'zipf', '--peers', 'none'])
    expect(s).toMatchObject({ pages: 200, popularity: { kind: 'zipf', s: 1 }, cachePages: 24, fleet: { count: 7, cachePages: 24, processes: true } })
    expect(s.workload.pageSizes).toEqual({ kind: 'uniform', min: 20480, max: 81920 })
    expect(s.pageSizes).toHaveLength(200)
    expect(s.pageSizes.every((b) => b >= 20480 && b <= 81920)).toBe(true)
    const more = parseOptions(['--scenario', 'zipf', '--peers', 'none', '--pages', '2000', '--churn', '--shift', '10', '--cache-bytes', '1.5m', '--popularity', 'zipf:0.8'])
    expect(more.workload).toMatchObject({ pages: 2000, churn: true, shift: { seconds: 10, step: 200 }, cacheBytes: 1572864, popularity: { kind: 'zipf', s: 0.8 } })
    expect(more.fleet).toMatchObject({ cacheBytes: 1572864 })
    // churn needs backends as processes: the cache scenario's in-process fleet becomes one
    const churn = parseOptions(['--churn', '--peers', 'none'])
    expect(churn.fleet.processes).toBe(true)
    expect(churn.notes.join('\n')).toMatch(/--churn runs each backend as a process/)
    // the default scenario keeps its lorem pages and in-process fleet
    const plain = parseOptions(['--peers', 'none'])
    expect(plain.pageSizes).toBeUndefined()
    expect(plain.fleet).toEqual({ count: 7, cachePages: 4, missMs: 20 })
  })

  test('the capacity scenario runs the model\'s references as contenders, marked as such; counting also with --shift', () => {
    const s = parseOptions(['--scenario', 'capacity', '--algos', 'wasp,clairvoyant,counting', '--peers', 'none'])
    expect(s.arms.map((a) => [a.label, Boolean(a.reference)])).toEqual([['wasp', false], ['clairvoyant', true], ['counting', true]])
    expect(s.peers).toEqual([]) // a reference is never the best peer the targets compare with
    expect(parseOptions(['--scenario', 'capacity', '--algos', 'counting', '--shift', '5', '--peers', 'none']).arms[0])
      .toMatchObject({ algo: 'counting', reference: true })
  })

  test('--kill AT:DOWN: one cell per contender at 2,000 req/s unless --rates gives one rate, backend a, the sweep\'s fleet', () => {
    const s = parseOptions(['--scenario', 'capacity', '--kill', '2:2', '--duration', '10', '--peers', 'none'])
    expect(s).toMatchObject({ kill: { index: 0, at: 2, down: 2 }, duration: 10, sweep: { rates: [2000], sloMs: 40 } })
    expect(s.fleet.processes).toBeUndefined() // one process, as the sweep's: the backend crashes in it
    expect(parseOptions(['--scenario', 'capacity', '--kill', '1:1', '--rates', '2500', '--peers', 'none']).sweep.rates).toEqual([2500])
    expect(parseOptions(['--scenario', 'capacity', '--peers', 'none'])).toMatchObject({ kill: null, fleet: { workers: 4 } })
    expect(parseOptions(['--scenario', 'capacity', '--peers', 'none']).fleet.processes).toBeUndefined()
  })

  test('--steal-gate CORES[:SECONDS]: the gate of each cell of the sweep, none unless given', () => {
    expect(parseOptions(['--scenario', 'capacity', '--peers', 'none', '--steal-gate', '0.15']).stealGate)
      .toEqual({ limit: 0.15, probeS: 2 })
    expect(parseOptions(['--scenario', 'capacity', '--peers', 'none', '--steal-gate', '0.3:5']).stealGate)
      .toEqual({ limit: 0.3, probeS: 5 })
    expect(parseOptions(['--scenario', 'capacity', '--peers', 'none']).stealGate).toBeNull()
  })

  test('a bad option prints one line and exits 2', () => {
    for (const argv of [['--algos', 'foo'], ['--popularity', 'foo'], ['--duration', '-1'], ['--scenario', 'zipf', '--page-size', 'lognormal:1k'], ['--scenario', 'zipf', '--pages', '-3']]) {
      const r = spawnSync(process.execPath, [RUN, ...argv], { encoding: 'utf8' })
      expect(r.status).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stderr).toMatch(/^polistes bench: /)
    }
  })

  describe('--out and --results-dir are checked before anything runs', () => {
    let tmp
    beforeAll(() => {
      tmp = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'polistes-bench-out-'))
      fs.writeFileSync(path.join(tmp, 'file.json'), '{}\n')
    })
    afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

    test('a directory as --out: one line, exit 2, nothing run (no plan line, no results written)', () => {
      const r = spawnSync(process.execPath, [RUN, '--out', tmp, '--peers', 'none', '--results-dir', tmp], { encoding: 'utf8' })
      expect(r.status).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toBe(`polistes bench: --out ${tmp} is a directory; give the JSON file's path, e.g. ${path.join(tmp, 'run.json')}\n`)
      expect(fs.readdirSync(tmp)).toEqual(['file.json'])
    })

    test('a path under a file, a file as --results-dir: rejected; a new file in folders yet to be made: accepted', () => {
      const file = path.join(tmp, 'file.json')
      expect(() => parseOptions(['--out', path.join(file, 'run.json')])).toThrow(expect.objectContaining({
        code: 'ERR_POLISTES_BAD_OPTION', message: `--out ${path.join(file, 'run.json')}: ${file} is not a directory`
      }))
      expect(() => parseOptions(['--results-dir', file])).toThrow(`--results-dir ${file} is not a directory`)
      expect(() => parseOptions(['--out', ''])).toThrow('--out needs a path')
      const deep = path.join(tmp, 'new', 'deeper', 'run.json')
      expect(parseOptions(['--out', deep, '--peers', 'none']).out).toBe(deep)
      expect(parseOptions(['--out', file, '--peers', 'none']).out).toBe(file) // overwritten at the end
      expect(fs.existsSync(path.join(tmp, 'new'))).toBe(false) // parsing creates nothing
    })

    // root may write anywhere: the check of a folder without write permission needs another user
    const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
    (asRoot ? test.skip : test)('a folder the run cannot write in is rejected', () => {
      const locked = path.join(tmp, 'locked')
      fs.mkdirSync(locked, { mode: 0o500 })
      try {
        expect(() => parseOptions(['--out', path.join(locked, 'run.json')])).toThrow(`cannot write in ${locked}`)
      } finally {
        fs.chmodSync(locked, 0o700)
      }
    })
  })

  test('the latency-profiles scenario runs each algorithm with and without keep-alive', () => {
    const s = parseOptions(['--scenario', 'latency-profiles', '--algos', 'round-robin,ewma'])
    expect(s.arms.map((a) => a.label)).toEqual(['round-robin', 'round-robin (no-ka)', 'ewma', 'ewma (no-ka)'])
    expect(s.connections).toBe(100)
  })

  test('--peers none runs the algorithms alone, with autocannon; --rate makes it an open loop with tail columns', () => {
    const s = parseOptions(['--full', '--peers', 'none'])
    expect(s.arms.map((a) => a.label)).toEqual(['round-robin', 'chash-bounded', 'wasp'])
    expect(s).toMatchObject({ peers: [], load: 'autocannon', notes: [] })
    const open = parseOptions(['--peers', 'none', '--rate', '800'])
    expect(open).toMatchObject({ rate: 800, load: 'open-loop' })
    expect(open.columns).toEqual(expect.arrayContaining(['p50', 'p99', 'p999', 'max', 'errors']))
  })

  test('scenarios without peers run none by default', () => {
    expect(parseOptions(['--scenario', 'regions']).peers).toEqual([])
  })

  describeIfInstalled(['haproxy', 'nginx', 'wrk'], 'with the peers installed', () => {
    test('--peers names programs or arms; peers run in the rotation beside the algorithms, with wrk by default', () => {
      const s = parseOptions(['--algos', 'wasp', '--peers', 'nginx,haproxy-uri'])
      expect(s.arms).toEqual([
        { label: 'wasp', algo: 'wasp', keepAlive: true, engine: DEFAULT_ENGINE },
        { label: 'haproxy-uri', algo: 'haproxy-uri', keepAlive: true, peer: 'haproxy', mode: 'uri', workers: 1 },
        { label: 'nginx-uri', algo: 'nginx-uri', keepAlive: true, peer: 'nginx', mode: 'uri', workers: 1 },
        { label: 'nginx-rr', algo: 'nginx-rr', keepAlive: true, peer: 'nginx', mode: 'rr', workers: 1 }
      ])
      expect(s.load).toBe('wrk')
      expect(parseOptions(['--algos', 'wasp', '--peers', 'haproxy', '--load', 'autocannon']).load).toBe('autocannon')
      // the peers get as many threads / worker processes as polistes has workers, unless told otherwise
      const two = parseOptions(['--algos', 'wasp', '--peers', 'haproxy-uri,nginx-uri', '--workers', '2'])
      expect(two).toMatchObject({ workers: 2, peerWorkers: 2 })
      expect(two.arms.filter((a) => a.peer).map((a) => a.workers)).toEqual([2, 2])
      const own = parseOptions(['--algos', 'wasp', '--peers', 'nginx-uri', '--workers', '2', '--peer-workers', '1'])
      expect(own.arms.map((a) => [a.label, a.workers])).toEqual([['wasp', undefined], ['nginx-uri', 1]])
      // the full matrix of the cache scenario includes every installed peer; its quick plan the best one
      expect(parseOptions(['--full']).peers).toEqual(['haproxy-uri', 'haproxy-uri-bounded', 'haproxy-rr', 'nginx-uri', 'nginx-rr'])
      expect(parseOptions([]).peers).toEqual(['nginx-uri'])
      expect(parseOptions(['--peers', 'haproxy-uri']).peers).toEqual(['haproxy-uri'])
    })
  })

  test('trials rotate the starting algorithm', () => {
    expect(rotation(['a', 'b', 'c'], 0)).toEqual(['a', 'b', 'c'])
    expect(rotation(['a', 'b', 'c'], 1)).toEqual(['b', 'c', 'a'])
    expect(rotation(['a', 'b', 'c'], 3)).toEqual(['a', 'b', 'c'])
  })
})
