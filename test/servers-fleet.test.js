'use strict'

const net = require('node:net')
const path = require('node:path')
const { fork } = require('node:child_process')
const { startFleet, backendId } = require('../servers/fleet')
const { rawRequest, runNode, RawConnection, waitFor, startCli, request } = require('./helper')
const { statsPath } = require('../servers/stats-token')
const { startBalancer } = require('../src/balancer')
const { resolveConfig } = require('../src/config/config')
const { balancerOptions } = require('../src/run/reload')

const FLEET = path.join(__dirname, '..', 'servers', 'fleet.js')

async function statsOf (backends) {
  return Promise.all(backends.map(async (b) => JSON.parse((await rawRequest(b.url, '/_stats')).body)))
}

test('ids run a..z, then s27, s28, …', () => {
  expect([0, 1, 6, 25, 26, 27].map(backendId)).toEqual(['a', 'b', 'g', 'z', 's27', 's28'])
})

test('a fleet of 7 in one process: ids a..g on distinct ports, each answering with its own X-Server', async () => {
  const fleet = await startFleet({ basePort: 0, missMs: 0 })
  try {
    expect(fleet.backends.map((b) => b.id)).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g'])
    expect(new Set(fleet.backends.map((b) => b.port)).size).toBe(7)
    for (const b of fleet.backends) {
      expect(b.url).toBe(`http://127.0.0.1:${b.port}`)
      const res = await rawRequest(b.url, '/page1.html')
      expect(res.status).toBe(200)
      expect(res.headers['x-server']).toBe(b.id)
    }
  } finally {
    await fleet.close()
  }
})

test('per-backend lists and overrides give each backend its own options', async () => {
  const fleet = await startFleet({
    count: 3,
    basePort: 0,
    cachePages: [2, 4, 8],
    missMs: 0,
    latencyProfiles: [[10, 15, 20, 400], [200], [250]],
    perBackend: [{}, {}, { maxInflight: 5, faults: { errorRate: 1 } }]
  })
  try {
    const stats = await statsOf(fleet.backends)
    expect(stats.map((s) => s.cachePages)).toEqual([2, 4, 8])
    expect(stats.map((s) => s.latencyProfile)).toEqual([[10, 15, 20, 400], [200], [250]])
    expect(stats.map((s) => s.maxInflight)).toEqual([0, 0, 5])
    expect((await rawRequest(fleet.backends[2].url, '/page1.html')).status).toBe(500)
  } finally {
    await fleet.close()
  }
})

test.each([
  [{ count: 0 }, /count/],
  [{ basePort: -1 }, /basePort/],
  [{ count: 3, cachePages: [1, 2] }, /cachePages has 2 values for 3 backends/],
  [{ count: 2, latencyProfiles: [[1], [2], [3]] }, /latencyProfiles/],
  [{ missMs: -1 }, /missMs/],
  [{ errorRate: 2 }, /errorRate/],
  [{ bogus: 1 }, /unknown backend option: bogus/]
])('startFleet(%j) rejects with ERR_POLISTES_BAD_OPTION before starting anything', async (options, message) => {
  await expect(startFleet({ basePort: 0, ...options })).rejects.toMatchObject({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(message) })
})

test('a taken port fails the whole fleet and leaves nothing listening', async () => {
  const first = await startFleet({ count: 1, basePort: 0 })
  try {
    const port = first.backends[0].port
    await expect(startFleet({ count: 2, basePort: port - 1 })).rejects.toMatchObject({ code: 'ERR_POLISTES_PORT_IN_USE' })
    // backend a got port - 1 and was closed again: nothing listens there. (A connect probe, not a
    // listen probe: on a busy machine a client socket may hold port - 1 as its local port, which
    // makes listen fail with EADDRINUSE although no server is left.)
    const refused = await new Promise((resolve) => {
      const socket = net.connect(port - 1, '127.0.0.1')
      socket.once('connect', () => { socket.destroy(); resolve(false) })
      socket.once('error', (err) => resolve(err.code === 'ECONNREFUSED'))
    })
    expect(refused).toBe(true)
  } finally {
    await first.close()
  }
})

test('processes: true runs one child per backend and close() stops them all', async () => {
  const fleet = await startFleet({ count: 3, basePort: 0, processes: true, missMs: 0, cachePages: [1, 2, 3] })
  const pids = fleet.backends.map((b) => b.pid)
  try {
    expect(fleet.backends.map((b) => b.id)).toEqual(['a', 'b', 'c'])
    expect(new Set(pids).size).toBe(3)
    expect(pids).not.toContain(process.pid)
    const stats = await statsOf(fleet.backends)
    expect(stats.map((s) => s.pid)).toEqual(pids)
    expect(stats.map((s) => s.cachePages)).toEqual([1, 2, 3])
  } finally {
    await fleet.close()
  }
  for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow() // gone
}, 15000)

test('in process: kill() closes one backend\'s listening socket and connections at once (a request in flight is never answered), restart() brings it back cold on its old port', async () => {
  const fleet = await startFleet({ count: 2, basePort: 0, missMs: 300 })
  try {
    const [a] = fleet.backends
    const { port } = a
    expect((await rawRequest(a.url, '/page2.html')).headers['x-cache']).toBe('MISS')
    const inFlight = rawRequest(a.url, '/page1.html') // a miss: 300 ms
    await new Promise((resolve) => setTimeout(resolve, 50))
    await fleet.kill(0)
    await expect(inFlight).rejects.toThrow(/socket hang up|ECONNRESET/)
    await expect(rawRequest(a.url, '/page1.html')).rejects.toThrow(/ECONNREFUSED/)
    expect((await rawRequest(fleet.backends[1].url, '/page1.html')).status).toBe(200) // the other one is untouched
    await expect(fleet.restart(1)).rejects.toThrow(/backend b is still running/)
    const back = await fleet.restart(0)
    expect(back).toEqual({ id: 'a', url: a.url, port })
    expect((await rawRequest(a.url, '/page2.html')).headers['x-cache']).toBe('MISS') // cold: an empty cache
    expect(JSON.parse((await rawRequest(a.url, '/_stats')).body)).toMatchObject({ requests: 1 })
    await expect(fleet.kill(5)).rejects.toThrow(/no backend at index 5/)
  } finally {
    await fleet.close()
  }
})

test('churn: kill() SIGKILLs one backend process, restart() brings it back cold on its old port', async () => {
  const fleet = await startFleet({ count: 2, basePort: 0, processes: true, missMs: 0 })
  try {
    const [a] = fleet.backends
    const { port, pid } = a
    expect((await rawRequest(a.url, '/page1.html')).headers['x-cache']).toBe('MISS')
    expect((await rawRequest(a.url, '/page1.html')).headers['x-cache']).toBe('HIT')
    await fleet.kill(0)
    expect(() => process.kill(pid, 0)).toThrow() // gone, without a goodbye
    await expect(rawRequest(a.url, '/page1.html')).rejects.toThrow(/ECONNREFUSED/)
    expect((await rawRequest(fleet.backends[1].url, '/page1.html')).status).toBe(200) // the other one is untouched
    await expect(fleet.restart(1)).rejects.toThrow(/backend b is still running/)
    const back = await fleet.restart(0)
    expect(back).toMatchObject({ id: 'a', port })
    expect(back.pid).not.toBe(pid)
    expect(fleet.backends[0].pid).toBe(back.pid)
    const res = await rawRequest(`http://127.0.0.1:${port}`, '/page1.html')
    expect(res.headers['x-cache']).toBe('MISS') // cold: a new process, an empty cache
    expect(JSON.parse((await rawRequest(back.url, '/_stats')).body)).toMatchObject({ requests: 1, pid: back.pid })
    await expect(fleet.kill(5)).rejects.toThrow(/no backend at index 5/)
  } finally {
    await fleet.close()
  }
}, 20000)

test('processes: true with a taken port rejects with the child\'s message and stops the others', async () => {
  const taken = await startFleet({ count: 1, basePort: 0 })
  try {
    const port = taken.backends[0].port
    await expect(startFleet({ count: 2, basePort: port - 1, processes: true })).rejects.toMatchObject({
      code: 'ERR_POLISTES_PORT_IN_USE',
      message: expect.stringMatching(/already in use/)
    })
  } finally {
    await taken.close()
  }
}, 15000)

describe('the stats token (issue 25)', () => {
  test('statsToken: true draws a token; /_stats answers only statsPath, and statsKeys reaches every backend', async () => {
    const fleet = await startFleet({ count: 2, basePort: 0, missMs: 0, statsToken: true, statsKeys: [5, 6] })
    try {
      expect(fleet.statsToken).toMatch(/^[0-9a-f]{32}$/)
      expect(fleet.statsPath).toBe(`/_stats?token=${fleet.statsToken}`)
      for (const [i, b] of fleet.backends.entries()) {
        expect((await rawRequest(b.url, '/_stats')).status).toBe(404)
        expect((await rawRequest(b.url, '/_stats?keys=1')).status).toBe(404)
        const res = await rawRequest(b.url, fleet.statsPath)
        expect(res.status).toBe(200)
        expect(JSON.parse(res.body)).toMatchObject({ id: b.id, statsKeys: 5 + i })
      }
    } finally {
      await fleet.close()
    }
    const open = await startFleet({ count: 1, basePort: 0, missMs: 0 })
    try {
      expect(open).toMatchObject({ statsToken: null, statsPath: '/_stats' })
      expect((await rawRequest(open.backends[0].url, '/_stats')).status).toBe(200) // no token: as before
    } finally {
      await open.close()
    }
  })

  test('processes: true hands the token over in the environment, not on the command line', async () => {
    const fleet = await startFleet({ count: 1, basePort: 0, processes: true, missMs: 0, statsToken: 'a-token-of-our-own-0123', statsKeys: 7 })
    try {
      const [b] = fleet.backends
      expect((await rawRequest(b.url, '/_stats')).status).toBe(404)
      const stats = JSON.parse((await rawRequest(b.url, fleet.statsPath)).body)
      expect(stats).toMatchObject({ pid: b.pid, statsKeys: 7 })
      if (require('node:fs').existsSync(`/proc/${b.pid}/cmdline`)) {
        expect(require('node:fs').readFileSync(`/proc/${b.pid}/cmdline`, 'latin1')).not.toContain('a-token-of-our-own')
      }
    } finally {
      await fleet.close()
    }
  }, 15000)

  test.each([['short'], [42], ['has spaces in it, sixteen+']])('statsToken %j is refused before anything starts', async (statsToken) => {
    await expect(startFleet({ count: 1, basePort: 0, statsToken })).rejects.toMatchObject({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(/statsToken/) })
  })

  test('npm start (bin/polistes.js, embedded fleet): GET /_stats on the public port is a 404 while the fleet is health-checked up', async () => {
    const cli = startCli(['--port', '0', '--fleet-base-port', '0', '--health-interval', '100'])
    try {
      const { url } = await cli.ready
      expect((await request(`${url}/page1.html`)).status).toBe(200)
      const conn = new RawConnection(url)
      try {
        for (const target of ['/_stats', '/_stats?keys=1', '/_stats?token=&keys=1']) {
          await conn.send(`GET ${target} HTTP/1.1\r\nHost: lb\r\n\r\n`)
          const { responses } = await conn.read(1)
          expect([target, responses[0].status]).toEqual([target, 404])
        }
      } finally {
        conn.destroy()
      }
      const upstreams = await waitFor(async () => {
        const list = JSON.parse((await request(`${url}/_polistes/stats`)).body).upstreams
        return list.every((u) => u.check && u.check.last) && list
      })
      expect(upstreams).toHaveLength(7)
      for (const u of upstreams) expect(u).toMatchObject({ state: 'up', check: { last: { ok: true, status: 200 } } })
      cli.child.kill('SIGTERM')
      expect((await cli.exited).code).toBe(0)
    } finally {
      cli.child.kill('SIGKILL')
    }
  }, 20000)

  test('through a real balancer in front of the fleet: GET /_stats is a 404, health checks pass with the token, and the per-page counts stay within statsKeys', async () => {
    const fleet = await startFleet({ count: 3, basePort: 0, missMs: 0, cachePages: 2, statsToken: true, statsKeys: 4 })
    let lb
    try {
      const config = resolveConfig({ port: 0, algo: 'round-robin', healthCheck: { intervalMs: 100 } })
      lb = await startBalancer(balancerOptions(config, fleet))
      // the balancer's health checker reads /_stats with the token: every backend is checked up
      const upstreams = await waitFor(() => {
        const list = lb.stats().upstreams
        return list.every((u) => u.check && u.check.last) && list
      })
      for (const u of upstreams) expect(u).toMatchObject({ state: 'up', check: { last: { ok: true, status: 200 } } })
      // GET /_stats through the public port, on a raw socket: the backend's 404, no counters
      const conn = new RawConnection(lb.url)
      try {
        for (const target of ['/_stats', '/_stats?keys=1', '/_stats?token=guess&keys=1']) {
          await conn.send(`GET ${target} HTTP/1.1\r\nHost: lb\r\n\r\n`)
          const { responses } = await conn.read(1)
          expect([target, responses[0].status]).toEqual([target, 404])
          expect(responses[0].body.toString()).not.toMatch(/requests|served/)
        }
      } finally {
        conn.destroy()
      }
      // more distinct pages than statsKeys (25 > 4), each twice, and 100 distinct 404s, through the balancer
      for (let round = 0; round < 2; round++) {
        for (let n = 1; n <= 25; n++) expect((await rawRequest(lb.url, `/page${n}.html?r=${round}`)).status).toBe(200)
      }
      for (let i = 0; i < 100; i++) expect((await rawRequest(lb.url, `/missing-${i}-${'y'.repeat(1000)}`)).status).toBe(404)
      const stats = await Promise.all(fleet.backends.map(async (b) => JSON.parse((await rawRequest(b.url, statsPath(fleet.statsToken, { keys: true }))).body)))
      for (const s of stats) {
        expect(s.statsKeys).toBe(4)
        expect(s.servedKeys).toBeLessThanOrEqual(4)
        expect(Object.keys(s.served).length).toBe(s.servedKeys)
        for (const key of Object.keys(s.served)) expect(key).toMatch(/^\/page\d+\.html$/) // no 404 path is counted
      }
      expect(stats.reduce((n, s) => n + s.servedDropped, 0)).toBeGreaterThan(0)
      expect(stats.reduce((n, s) => n + s.requests, 0)).toBe(150)
    } finally {
      if (lb) await lb.close({ graceMs: 100 })
      await fleet.close()
    }
  })
})

describe('CLI', () => {
  test('prints one line per backend, reports ready over IPC and stops on SIGTERM', async () => {
    const child = fork(FLEET, ['--count', '3', '--base-port', '0', '--cache-pages', '2,4,8', '--latency-profiles', '1;2;3', '--miss-ms', '0'], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    try {
      const msg = await new Promise((resolve, reject) => {
        child.once('message', resolve)
        child.once('exit', (code) => reject(new Error(`exited ${code}`)))
      })
      expect(msg.type).toBe('ready')
      expect(msg.backends.map((b) => b.id)).toEqual(['a', 'b', 'c'])
      const stats = await statsOf(msg.backends)
      expect(stats.map((s) => s.cachePages)).toEqual([2, 4, 8])
      expect(stats.map((s) => s.latencyProfile)).toEqual([[1], [2], [3]])
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(out.trim().split('\n')).toHaveLength(3)
      expect(out).toMatch(/^backend a http:\/\/127\.0\.0\.1:\d+$/m)
    } finally {
      const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
      child.kill('SIGTERM')
      expect(await exited).toBe(0)
    }
  })

  test.each([
    [['--count', '0'], /--count/],
    [['--count', '3', '--cache-pages', '1,2'], /cachePages has 2 values for 3 backends/],
    [['--count', '2', '--latency-profiles', '1;2;3'], /latencyProfiles/],
    [['--latency-profile', '1', '--latency-profiles', '1;2'], /not both/],
    [['--error-rate', '1.5'], /--error-rate/],
    [['--base-port', 'abc'], /--base-port/],
    [['--unknown-flag'], /Unknown argument/]
  ])('bad input %j: exit 2 and one line on stderr', async (args, message) => {
    const run = await runNode(FLEET, args)
    expect(run.code).toBe(2)
    expect(run.stderr.trim().split('\n')).toHaveLength(1)
    expect(run.stderr).toMatch(message)
    expect(run.stderr).not.toMatch(/\n\s+at /)
  })
})
