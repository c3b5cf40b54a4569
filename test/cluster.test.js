'use strict'

const path = require('node:path')
const net = require('node:net')
const { once } = require('node:events')
const { request, startUpstream, waitFor, runNode, startCli, alive } = require('./helper')
const { workerConfig } = require('../src/run/cluster')

const CLI = path.join(__dirname, '..', 'bin', 'polistes.js')

/** The pids that answered `n` stats requests, each on a new connection. */
async function answeringPids (url, n) {
  const pids = new Set()
  for (let i = 0; i < n; i++) {
    const res = await request(`${url}/_polistes/stats`, { agent: false })
    pids.add(JSON.parse(res.body).pid)
  }
  return pids
}

describe('polistes --workers N (node:cluster)', () => {
  let upstream
  beforeAll(async () => {
    upstream = await startUpstream((req, res) => res.end(`page ${req.url}`))
  })
  afterAll(() => upstream.close())

  // whatever a failed test left running is killed: primary and workers
  const started = []
  const killAll = async (clis) => {
    for (const cli of clis.splice(0)) {
      if (cli.child.exitCode === null && cli.child.signalCode === null) {
        cli.child.kill('SIGKILL')
        await cli.exited
      }
      for (const line of cli.lines) if (line.pid && line.pid !== cli.child.pid && alive(line.pid)) process.kill(line.pid, 'SIGKILL')
    }
  }
  afterEach(() => killAll(started))

  const start = (extra = []) => {
    const cli = startCli(['--workers', '2', '--port', '0', '--backends', upstream.url, ...extra])
    started.push(cli)
    return cli
  }

  // One cluster for the SIGHUP test and the SIGTERM test after it (a reload that changes nothing leaves the
  // same two workers, which the SIGTERM test then stops): one start of three processes fewer. Started by
  // whichever of the two runs first; what is left of it is killed after the suite.
  let shared = null
  const sharedCluster = () => (shared ??= startCli(['--workers', '2', '--port', '0', '--backends', upstream.url]))
  afterAll(() => killAll(shared ? [shared] : []))

  test('SIGHUP to the primary reaches every worker, which keeps serving', async () => {
    const cli = sharedCluster()
    const ready = await cli.ready
    cli.child.kill('SIGHUP')
    await waitFor(() => cli.lines.filter((l) => /SIGHUP/.test(l.msg) && ready.pids.includes(l.pid)).length === 2, { timeoutMs: 3000 })
    // the same config re-read: nothing changes (the workers' balanced rule and the backends hold)
    expect(cli.lines.filter((l) => /SIGHUP/.test(l.msg) && ready.pids.includes(l.pid)).map((l) => l.msg))
      .toEqual(['config reloaded (SIGHUP): no changes', 'config reloaded (SIGHUP): no changes'])
    expect(ready.pids.every(alive)).toBe(true)
    expect((await request(`${ready.url}/x`, { agent: false })).status).toBe(200)
    // the next test stops this cluster with SIGTERM and expects exit code 0
  })

  test('requests are served by more than one worker; SIGTERM stops every worker and the primary exits 0', async () => {
    const cli = sharedCluster() // after the SIGHUP above: the same two workers
    const ready = await cli.ready
    expect(ready.workers).toBe(2)
    expect(ready.pids).toHaveLength(2)
    const pids = await answeringPids(ready.url, 20)
    expect([...pids].sort()).toEqual([...ready.pids].sort())
    expect(pids.has(cli.child.pid)).toBe(false) // the primary never proxies
    const res = await request(`${ready.url}/page1.html`, { agent: false })
    expect(res.status).toBe(200)
    expect(res.body).toBe('page /page1.html')

    cli.child.kill('SIGTERM')
    const { code, signal } = await cli.exited
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    await waitFor(() => ready.pids.every((pid) => !alive(pid)), { timeoutMs: 3000 })
    expect(cli.lines.filter((l) => l.msg === 'stopped')).toHaveLength(3) // two workers and the primary
  })

  test('a worker that dies is restarted, and the new one serves', async () => {
    const cli = start()
    const ready = await cli.ready
    const [victim, survivor] = ready.pids
    process.kill(victim, 'SIGKILL')
    const died = await waitFor(() => cli.lines.find((l) => l.msg === 'a worker died: restarting it'), { timeoutMs: 5000 })
    expect(died.pid).toBe(victim)
    const restarted = await waitFor(() => cli.lines.find((l) => /^polistes worker \d+ listening/.test(l.msg) && !ready.pids.includes(l.pid)), { timeoutMs: 5000 })
    const pids = await answeringPids(ready.url, 20)
    expect([...pids].sort()).toEqual([restarted.pid, survivor].sort())
    cli.child.kill('SIGINT')
    expect((await cli.exited).code).toBe(0)
    await waitFor(() => !alive(restarted.pid) && !alive(survivor), { timeoutMs: 3000 })
  })

  test('a port in use: the first worker prints one line on stderr, and the primary exits 2', async () => {
    const holder = net.createServer().listen(0, '127.0.0.1')
    await once(holder, 'listening')
    try {
      const { code, stderr } = await runNode(CLI, ['--workers', '3', '--port', String(holder.address().port), '--backends', upstream.url, '--log-level', 'silent'], { timeoutMs: 10000 })
      expect(code).toBe(2)
      expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/^polistes: balancer: 127\.0\.0\.1:\d+ is already in use/)])
    } finally {
      holder.close()
    }
  })

  test.each([['0'], ['1.5'], ['many']])('--workers %s: one line, exit 2, before any fork', async (value) => {
    const { code, stderr } = await runNode(CLI, ['--workers', value, '--backends', upstream.url])
    expect(code).toBe(2)
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/^polistes: --workers must be (an integer in \[1, 256\]|a number)/)])
  })

  test('workers give wasp a balanced packing to agree on unless policyOptions sets it', () => {
    const base = { algo: 'wasp', policyOptions: {}, workers: 2 }
    expect(workerConfig(base).policyOptions).toEqual({ balanced: 16 })
    expect(workerConfig({ ...base, policyOptions: { balanced: 0 } }).policyOptions).toEqual({ balanced: 0 })
    expect(workerConfig({ ...base, policyOptions: { phi: 5 } }).policyOptions).toEqual({ phi: 5, balanced: 16 })
    expect(workerConfig({ ...base, workers: 1 })).toEqual({ ...base, workers: 1 })
    expect(workerConfig({ ...base, algo: 'round-robin' }).policyOptions).toEqual({})
  })
})
