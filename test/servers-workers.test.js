'use strict'

// Backends with finite capacity (issue 28): the worker pool alone, then over real HTTP, then the
// fleet's and `npm start`'s options that reach it.

const http = require('node:http')
const path = require('node:path')
const { createWorkerPool } = require('../servers/worker-pool')
const { createBackend } = require('../servers/static-server')
const { startFleet } = require('../servers/fleet')
const { main } = require('../src/run/cli')
const { rawRequest, waitFor } = require('./helper')

const PUBLIC = path.join(__dirname, '..', 'public')
const open = []

async function start (options) {
  const backend = createBackend({ root: PUBLIC, ...options })
  const { url } = await backend.listen(0, '127.0.0.1')
  open.push(backend)
  return { backend, url }
}

const statsOf = async (url) => JSON.parse((await rawRequest(url, '/_stats')).body)

/**
 * The stats once no page request is in flight: a client may read a response's last byte before
 * the server has seen its 'finish', which releases the worker and counts the service time.
 */
const settledStats = (url) => waitFor(async () => {
  const s = await statsOf(url)
  return s.inflight === 0 && s.busy === 0 && s
}, { timeoutMs: 5000, stepMs: 5 })

afterAll(async () => {
  await Promise.all(open.map((b) => b.close()))
})

describe('the worker pool', () => {
  test('grants workers at once up to its size, then queues in arrival order', async () => {
    const pool = createWorkerPool(2)
    expect(pool.take()).toBeNull()
    expect(pool.take()).toBeNull()
    const order = []
    const tickets = [1, 2, 3].map((n) => {
      const ticket = pool.take()
      ticket.granted.then((granted) => order.push([n, granted]))
      return ticket
    })
    expect(pool.stats()).toEqual({ workers: 2, busy: 2, queued: 3, maxQueued: 3, waited: 3 })
    pool.release()
    await tickets[0].granted
    expect(order).toEqual([[1, true]])
    expect(pool.stats()).toMatchObject({ busy: 2, queued: 2 })
    // a newcomer does not overtake the queue even when a worker is free in between
    pool.release()
    pool.release()
    const late = pool.take()
    expect(late).not.toBeNull()
    await Promise.all([tickets[1].granted, tickets[2].granted])
    expect(order).toEqual([[1, true], [2, true], [3, true]])
    expect(pool.stats()).toMatchObject({ busy: 2, queued: 1, maxQueued: 3, waited: 4 })
  })

  test('a cancelled ticket leaves the queue and resolves false; a cancel after the grant changes nothing', async () => {
    const pool = createWorkerPool(1)
    expect(pool.take()).toBeNull()
    const first = pool.take()
    const second = pool.take()
    first.cancel()
    expect(await first.granted).toBe(false)
    expect(pool.stats()).toMatchObject({ busy: 1, queued: 1 })
    pool.release()
    expect(await second.granted).toBe(true)
    second.cancel()
    expect(pool.stats()).toMatchObject({ busy: 1, queued: 0 })
    pool.release()
    expect(pool.stats()).toMatchObject({ busy: 0, queued: 0 })
    expect(() => pool.release()).toThrow(/without a held worker/)
  })

  test('size 0 is unlimited: nothing ever queues', () => {
    const pool = createWorkerPool(0)
    for (let i = 0; i < 1000; i++) expect(pool.take()).toBeNull()
    expect(pool.stats()).toEqual({ workers: 0, busy: 1000, queued: 0, maxQueued: 0, waited: 0 })
  })

  test.each([[-1], [1.5], ['2']])('size %j is refused', (size) => {
    expect(() => createWorkerPool(size)).toThrow(/integer >= 0/)
  })
})

/** GET `p`, noting in `done` when its response has ended. */
function getNoting (url, p, done) {
  return rawRequest(url, p, { timeoutMs: 10000 }).then((res) => {
    done.push(p)
    return res
  })
}

describe('a backend with workers', () => {
  test('workers 1: three misses queue behind each other, /_stats answers meanwhile, all answered 200 in order', async () => {
    // the first request holds the worker 1.5 s (its latency profile's delay): time for the others to queue
    const { url } = await start({ workers: 1, missMs: 20, latencyProfile: [1500, 0, 0] })
    const done = []
    const pages = ['/page1.html', '/page2.html', '/page3.html']
    // sent one by one, each once the backend has it, so that the arrival order is known
    const first = getNoting(url, pages[0], done)
    await waitFor(async () => (await statsOf(url)).busy === 1, { timeoutMs: 5000, stepMs: 5 })
    const second = getNoting(url, pages[1], done)
    await waitFor(async () => (await statsOf(url)).queued === 1, { timeoutMs: 5000, stepMs: 5 })
    const third = getNoting(url, pages[2], done)
    const during = await waitFor(async () => {
      const s = await statsOf(url)
      return s.queued === 2 && s
    }, { timeoutMs: 5000, stepMs: 5 })
    expect(during).toMatchObject({ workers: 1, busy: 1, queued: 2, inflight: 3 })
    const answers = await Promise.all([first, second, third])
    expect(answers.map((r) => [r.status, r.headers['x-cache']])).toEqual([[200, 'MISS'], [200, 'MISS'], [200, 'MISS']])
    expect(done).toEqual(pages)
    const after = await settledStats(url)
    expect(after).toMatchObject({ busy: 0, queued: 0, waited: 2, misses: 3, missServiceCount: 3 })
    expect(after.maxQueued).toBeGreaterThanOrEqual(2)
  })

  test('workers 0 (the default): concurrent misses are all in service at once and nothing queues', async () => {
    const { url } = await start({ missMs: 1000 })
    const pages = [1, 2, 3, 4, 5].map((n) => `/page${n}.html`)
    const answers = Promise.all(pages.map((p) => rawRequest(url, p, { timeoutMs: 10000 })))
    const during = await waitFor(async () => {
      const s = await statsOf(url)
      return s.busy === 5 && s
    }, { timeoutMs: 5000, stepMs: 5 })
    expect(during).toMatchObject({ workers: 0, queued: 0 })
    expect((await answers).map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
    expect(await settledStats(url)).toMatchObject({ workers: 0, busy: 0, queued: 0, maxQueued: 0, waited: 0 })
  })

  test('a client that leaves while queued frees its place: the next request is served, no worker is lost', async () => {
    const { url } = await start({ workers: 1, missMs: 20, latencyProfile: [1500, 0] })
    const first = rawRequest(url, '/page1.html', { timeoutMs: 10000 })
    await waitFor(async () => (await statsOf(url)).busy === 1, { timeoutMs: 5000, stepMs: 5 })
    const leaving = http.get(`${url}/page2.html`)
    leaving.on('error', () => {})
    await waitFor(async () => (await statsOf(url)).queued === 1, { timeoutMs: 5000, stepMs: 5 })
    leaving.destroy()
    await waitFor(async () => (await statsOf(url)).queued === 0, { timeoutMs: 5000, stepMs: 5 })
    expect((await first).status).toBe(200)
    expect((await rawRequest(url, '/page3.html', { timeoutMs: 10000 })).status).toBe(200)
    // page2 never took a worker: its cache lookup never happened
    expect(await settledStats(url)).toMatchObject({ busy: 0, queued: 0, waited: 1, misses: 2, missServiceCount: 2 })
  })

  test('the measured hit and miss service totals grow with each response, and their means follow', async () => {
    const { url } = await start({ workers: 2, hitMs: 3, missMs: 10 })
    const empty = await statsOf(url)
    expect(empty).toMatchObject({ hitMs: 3, missMs: 10, service: 'timer', hitServiceCount: 0, hitServiceTotalMs: 0, hitServiceMs: null, missServiceCount: 0, missServiceMs: null })
    expect((await rawRequest(url, '/page1.html')).headers['x-cache']).toBe('MISS')
    expect((await rawRequest(url, '/page1.html')).headers['x-cache']).toBe('HIT')
    const one = await settledStats(url)
    expect(one).toMatchObject({ hits: 1, misses: 1, hitServiceCount: 1, missServiceCount: 1 })
    expect(one.missServiceTotalMs).toBeGreaterThanOrEqual(9) // a timer may fire up to 1 ms early
    expect(one.hitServiceTotalMs).toBeGreaterThanOrEqual(2)
    for (let i = 0; i < 3; i++) await rawRequest(url, '/page1.html')
    await rawRequest(url, '/page2.html')
    const two = await settledStats(url)
    expect(two).toMatchObject({ hitServiceCount: 4, missServiceCount: 2 })
    expect(two.hitServiceTotalMs - one.hitServiceTotalMs).toBeGreaterThanOrEqual(3 * 2)
    expect(two.missServiceTotalMs - one.missServiceTotalMs).toBeGreaterThanOrEqual(9)
    expect(two.hitServiceMs).toBeCloseTo(two.hitServiceTotalMs / 4, 2)
    expect(two.missServiceMs).toBeCloseTo(two.missServiceTotalMs / 2, 2)
    // /_stats itself is no page request: neither served nor timed
    expect(two.requests).toBe(6)
  })

  test('service cpu spends the miss time as busy work on the event loop', async () => {
    const { url } = await start({ service: 'cpu', missMs: 200 })
    // an interval on the same event loop: its longest gap spans the busy work (a timer would leave it ticking)
    const ticks = []
    const interval = setInterval(() => ticks.push(performance.now()), 5)
    await waitFor(() => ticks.length > 0, { stepMs: 1 })
    const res = await rawRequest(url, '/page1.html', { timeoutMs: 10000 })
    await waitFor(() => ticks.length > 2, { stepMs: 1 })
    clearInterval(interval)
    expect(res.status).toBe(200)
    const longestGap = Math.max(...ticks.slice(1).map((t, i) => t - ticks[i]))
    expect(longestGap).toBeGreaterThanOrEqual(190)
    expect(await settledStats(url)).toMatchObject({ service: 'cpu', missServiceCount: 1 })
  })

  test.each([
    [{ workers: -1 }, /^workers must be an integer >= 0, got -1$/],
    [{ workers: 1.5 }, /^workers must be an integer >= 0/],
    [{ hitMs: -1 }, /^hitMs must be a number >= 0/],
    [{ service: 'gpu' }, /^service must be timer or cpu, got "gpu"$/]
  ])('createBackend(%j) is refused', (options, message) => {
    expect(() => createBackend(options)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(message) }))
  })
})

describe('the fleet', () => {
  test('workers, hitMs and service per backend, as lists or one for all, in this process and in child processes', async () => {
    for (const processes of [false, true]) {
      const fleet = await startFleet({ count: 3, basePort: 0, processes, workers: [2, 3, 4], hitMs: 5, service: ['timer', 'cpu', 'timer'] })
      try {
        const stats = await Promise.all(fleet.backends.map((b) => statsOf(b.url)))
        expect(stats.map((s) => [s.workers, s.hitMs, s.service])).toEqual([[2, 5, 'timer'], [3, 5, 'cpu'], [4, 5, 'timer']])
      } finally {
        await fleet.close()
      }
    }
  })

  test.each([
    [{ count: 3, workers: [1, 2] }, /workers has 2 values for 3 backends/],
    [{ workers: -1 }, /workers must be an integer >= 0/],
    [{ service: 'gpu' }, /service must be timer or cpu/]
  ])('startFleet(%j) is refused before anything starts', async (options, message) => {
    await expect(startFleet({ basePort: 0, ...options })).rejects.toMatchObject({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(message) })
  })
})

describe('npm start: --fleet-workers, --hit-ms, --fleet-service', () => {
  /** The fleet options main() hands to the fleet starter (which stops it there). */
  async function fleetOptionsOf (argv) {
    let seen = null
    const stop = Object.assign(new Error('stopped before the fleet'), { code: 'STOP' })
    await expect(main(['--log-level', 'silent', '--fleet-base-port', '0', ...argv], {
      startFleet: async (fleet) => { seen = fleet; throw stop }
    })).rejects.toBe(stop)
    return seen
  }

  test('a comma list gives one worker count per backend, and the fleet started from it has them', async () => {
    const options = await fleetOptionsOf(['--fleet-size', '2', '--fleet-workers', '2,3', '--hit-ms', '5', '--fleet-service', 'cpu'])
    expect(options).toMatchObject({ count: 2, workers: [2, 3], hitMs: 5, service: 'cpu' })
    const fleet = await startFleet({ ...options, root: PUBLIC })
    try {
      const stats = await Promise.all(fleet.backends.map((b) => statsOf(b.url)))
      expect(stats.map((s) => [s.workers, s.hitMs, s.service])).toEqual([[2, 5, 'cpu'], [3, 5, 'cpu']])
    } finally {
      await fleet.close()
    }
  })

  test('the defaults keep today\'s backends: unlimited workers, hits free, timers', async () => {
    expect(await fleetOptionsOf([])).toMatchObject({ workers: 0, hitMs: 0, service: 'timer' })
    expect(await fleetOptionsOf(['--fleet-workers', '4'])).toMatchObject({ workers: 4 })
  })

  test.each([
    [['--fleet-size', '3', '--fleet-workers', '2,3'], /^--fleet-workers has 2 values for 3 backends \(--fleet-size\): give one per backend, or one number for all$/],
    [['--fleet-workers', '2,x'], /^--fleet-workers must be a number or a comma list of numbers, e\.g\. 2,3, got "2,x"$/],
    [['--fleet-workers', '1.5'], /^--fleet-workers must be an integer in \[0, 100000\], got 1\.5$/],
    [['--fleet-service', 'gpu'], /^--fleet-service must be timer or cpu, got "gpu"$/],
    [['--hit-ms', '-1'], /^--hit-ms must be a non-negative number of ms, got -1$/]
  ])('%j is refused naming the flag', async (argv, message) => {
    await expect(main(['--log-level', 'silent', ...argv], { startFleet: async () => { throw new Error('started') } }))
      .rejects.toMatchObject({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(message) })
  })
})
