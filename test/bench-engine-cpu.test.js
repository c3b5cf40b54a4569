'use strict'

/**
 * `npm run bench:engine` (bench/runners/engine-cpu.js): its reference arms. The relay child (the Node
 * floor) really relays HTTP between a client and an upstream on loopback, keep-alive requests and
 * large bodies included, one upstream connection per client connection, round-robin; the arm
 * parsing accepts the new arms and refuses unknown ones with one line and exit 2; the ratios to the
 * best peer are computed from the medians.
 */

const http = require('node:http')
const path = require('node:path')
const { Child } = require('../bench/children/child')
const { parseArgs, armKind, ratioLines, ARMS } = require('../bench/runners/engine-cpu')
const { request, runNode, startUpstream, describeIfInstalled } = require('./helper')

const RUNNER = path.join(__dirname, '..', 'bench', 'runners', 'engine-cpu.js')
const RELAY = path.join(__dirname, '..', 'bench', 'children', 'relay-child.js')
const BIG = Buffer.alloc(2 * 1024 * 1024, 'x') // more than a socket buffer: the relay must wait for 'drain'

describe.each(['data', 'pipe'])('bench relay child (mode %s)', (mode) => {
  let a, b, relay
  beforeAll(async () => {
    const handler = (name) => (req, res) => {
      if (req.url === '/big') return res.end(BIG)
      res.setHeader('X-Upstream', name)
      res.end(`${name} ${req.method} ${req.url}`)
    }
    a = await startUpstream(handler('a'))
    b = await startUpstream(handler('b'))
  })
  afterAll(async () => {
    await a.close()
    await b.close()
  })
  beforeEach(() => {
    relay = new Child(RELAY, { name: 'relay child' })
  })
  afterEach(() => relay.close())

  test('two keep-alive requests on one client connection both get the upstream\'s answer, over one upstream connection', async () => {
    const { url } = await relay.request('start', { backends: [{ url: a.url }], mode })
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const before = { connections: a.connections, requests: a.requests }
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    try {
      for (const p of ['/page1.html', '/page2.html']) {
        const res = await request(`${url}${p}`, { agent })
        expect(res.status).toBe(200)
        expect(res.headers['x-upstream']).toBe('a')
        expect(res.body).toBe(`a GET ${p}`)
      }
    } finally {
      agent.destroy()
    }
    expect({ connections: a.connections - before.connections, requests: a.requests - before.requests }).toEqual({ connections: 1, requests: 2 })
    expect(await relay.request('stats')).toEqual({ connections: 1, upstreamErrors: 0 })
  })

  test('a 2 MB body arrives whole; connections go round-robin over the backends', async () => {
    const { url } = await relay.request('start', { backends: [{ url: a.url }, { url: b.url }], mode })
    const big = await request(`${url}/big`, { agent: false, timeoutMs: 10000 })
    expect(big.body.length).toBe(BIG.length)
    expect(big.body === BIG.toString()).toBe(true)
    const second = await request(`${url}/x`, { agent: false }) // the next connection: the next backend
    const third = await request(`${url}/y`, { agent: false })
    expect([second.body, third.body]).toEqual(['b GET /x', 'a GET /y'])
  })

  test('an unknown mode or no backend is refused', async () => {
    await expect(relay.request('start', { backends: [{ url: a.url }], mode: 'splice' })).rejects.toThrow('unknown relay mode "splice"; expected one of: data, pipe')
    await expect(relay.request('start', { backends: [] })).rejects.toThrow('the relay needs at least one backend')
  })
})

describe('bench:engine arms', () => {
  test('the relay and the peers are arms next to the engines', () => {
    expect(ARMS).toEqual(expect.arrayContaining(['direct', 'undici', 'relay', 'nginx', 'haproxy']))
    const o = parseArgs(['--engines', 'relay,relay:pipe,nginx,haproxy,nginx-uri-buffered,direct:node', '--cache-pages', '25'])
    expect(o.engines).toEqual(['relay', 'relay:pipe', 'nginx', 'haproxy', 'nginx-uri-buffered', 'direct:node'])
    expect(o.cachePages).toBe(25)
    expect(o.engines.map(armKind)).toEqual([
      { kind: 'relay', mode: 'data' },
      { kind: 'relay', mode: 'pipe' },
      { kind: 'peer', label: 'nginx-uri' },
      { kind: 'peer', label: 'haproxy-uri' },
      { kind: 'peer', label: 'nginx-uri-buffered' },
      { kind: 'engine', engine: 'direct', front: 'node', dir: undefined }
    ])
  })

  test.each([
    [['--engines', 'relay,bogus'], 'engine-cpu: unknown engine "bogus"; expected one of: http-proxy, node-http, undici, direct, relay, nginx, haproxy (or a peer arm: '],
    [['--engines', 'relay:splice'], 'engine-cpu: unknown relay mode "splice" in "relay:splice"; expected one of: data, pipe'],
    [['--engines', 'nginx:fast'], 'engine-cpu: "nginx:fast": a peer arm takes no front nor @DIR'],
    [['--engines', 'relay@/tmp'], 'engine-cpu: "relay@/tmp": the relay takes no @DIR'],
    [['--cache-pages', '26'], 'engine-cpu: --cache-pages must be an integer from 0 to 25, got "26"'],
    [['--cache-pages', ''], 'engine-cpu: --cache-pages must be an integer from 0 to 25, got ""']
  ])('%j: one line, exit 2', async (args, message) => {
    const { code, stdout, stderr } = await runNode(RUNNER, args)
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr.startsWith(message)).toBe(true)
    expect(stderr.trim().split('\n')).toHaveLength(1)
  })

  test('--help names the new arms', async () => {
    const { code, stdout } = await runNode(RUNNER, ['--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('relay:data, relay:pipe')
    expect(stdout).toContain('nginx, haproxy: the bench\'s nginx-uri and haproxy-uri peers')
  })

  test('ratios: every non-peer arm over the best peer, CPU by the lowest median and req/s by the highest', () => {
    const summary = {
      relay: { cpuPer10k: 0.5, rps: 9000 },
      direct: { cpuPer10k: 1.2, rps: 6000 },
      nginx: { cpuPer10k: 0.4, rps: 7000 },
      haproxy: { cpuPer10k: 0.6, rps: 8000 }
    }
    expect(ratioLines(['relay', 'direct', 'nginx', 'haproxy'], summary)).toEqual([
      'CPU per request / best peer (nginx, 0.400 CPU-s/10k, medians): relay / nginx = 1.25x, direct / nginx = 3.00x',
      'req/s / best peer (haproxy, 8000 req/s, medians): relay / haproxy = 1.13x, direct / haproxy = 0.75x'
    ])
    expect(ratioLines(['relay', 'direct'], summary)).toEqual([])
    expect(ratioLines(['nginx', 'haproxy'], summary)).toEqual([])
  })
})

describeIfInstalled(['wrk', 'nginx'], 'bench:engine with the relay and nginx arms', () => {
  test('one short round prints both rows, no errors, and the ratio line', async () => {
    const { code, stdout, stderr } = await runNode(RUNNER, ['--engines', 'relay,nginx', '--rounds', '1', '--duration', '1', '--warmup', '0'], { timeoutMs: 30000 })
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const rows = stdout.split('\n').filter((l) => /^\| (relay|nginx) \|/.test(l)).map((l) => l.split('|').map((c) => c.trim()))
    expect(rows.map((r) => r[1])).toEqual(['relay', 'nginx'])
    for (const r of rows) {
      expect(Number(r[3])).toBeGreaterThan(0) // CPU-s / 10k
      expect(r[12]).toBe('0') // errors
    }
    expect(stdout).toMatch(/CPU per request \/ best peer \(nginx, [\d.]+ CPU-s\/10k, medians\): relay \/ nginx = [\d.]+x/)
  }, 40000)
})
