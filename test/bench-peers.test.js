'use strict'

/**
 * The peers runner: HAProxy and nginx started in front of a real fleet, a few seconds of load
 * through each arm with the bench's own trial, and the process and its directory gone afterwards.
 * The parts that need the programs are skipped, saying so, when they are not installed.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { PeerProcess, findBinary, parseProcStat, parsePpid, childPids, treeCpu, procCpu } = require('../bench/peers/peers')
const { parseOptions } = require('../bench/runners/options')
const { runOnce } = require('../bench/runners/trial')
const { startFleet } = require('../servers/fleet')
const { request, describeIfInstalled } = require('./helper')

jest.setTimeout(30000)

const alive = (pid) => { try { process.kill(pid, 0); return true } catch { return false } }

describe('bench peers runner, without the programs', () => {
  test('CPU time is read from /proc/<pid>/stat in microseconds, also when the name holds spaces and parentheses', () => {
    const stat = '4242 (my (odd) proc) S 1 2 3 4 5 6 7 8 9 10 250 30 7 9 20 0 1 0 100'
    expect(parseProcStat(stat, 100)).toEqual({ user: 2.5e6, system: 0.3e6 })
    expect(parseProcStat(stat, 100, { children: true })).toEqual({ user: 0.07e6, system: 0.09e6 })
    expect(() => parseProcStat('1 (x) S', 100)).toThrow(/unreadable/)
    const self = procCpu('self')
    expect(self.user + self.system).toBeGreaterThan(0)
  })

  test('the parent pid is field 4 of /proc/<pid>/stat, after a name with spaces and parentheses', () => {
    expect(parsePpid('4242 (nginx: worker (x)) S 4200 4200 1 0 -1')).toBe(4200)
    expect(() => parsePpid('1 (x)')).toThrow(/unreadable/)
    expect(parsePpid(fs.readFileSync('/proc/self/stat', 'utf8'))).toBe(process.ppid)
  })

  test('CPU of a process tree: the process, its waited-for children and its live children, nothing else', () => {
    const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-proc-test-'))
    // pid ppid utime stime cutime cstime, in ticks of 100 per second
    const stat = (pid, ppid, ut, st, cut, cst) => `${pid} (nginx: x) S ${ppid} 1 1 0 -1 0 0 0 0 0 ${ut} ${st} ${cut} ${cst} 20 0 1 0`
    try {
      for (const [pid, text] of [[100, stat(100, 1, 10, 5, 3, 1)], [101, stat(101, 100, 200, 100, 0, 0)], [102, stat(102, 100, 50, 20, 0, 0)],
        [103, stat(103, 1, 999, 999, 0, 0)], [104, stat(104, 101, 7, 7, 0, 0)]]) {
        fs.mkdirSync(path.join(proc, String(pid)))
        fs.writeFileSync(path.join(proc, String(pid), 'stat'), text)
      }
      fs.mkdirSync(path.join(proc, 'self'))
      fs.mkdirSync(path.join(proc, '105')) // gone: no stat
      expect(childPids(100, { procDir: proc })).toEqual([101, 102])
      expect(treeCpu(100, { procDir: proc, ticksPerSecond: 100 })).toEqual({ user: (10 + 3 + 200 + 50) * 1e4, system: (5 + 1 + 100 + 20) * 1e4, pids: [100, 101, 102] })
      expect(treeCpu(103, { procDir: proc, ticksPerSecond: 100 })).toEqual({ user: 999e4, system: 999e4, pids: [103] })
    } finally {
      fs.rmSync(proc, { recursive: true, force: true })
    }
  })

  test('programs are found on PATH and in sbin, and only when executable', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-bin-test-'))
    try {
      fs.writeFileSync(path.join(dir, 'fakepeer'), '#!/bin/sh\n', { mode: 0o755 })
      fs.writeFileSync(path.join(dir, 'notexec'), 'x', { mode: 0o644 })
      expect(findBinary('fakepeer', { envPath: dir })).toBe(path.join(dir, 'fakepeer'))
      expect(findBinary('notexec', { envPath: dir })).toBeNull()
      expect(findBinary('no-such-program-here', { envPath: dir })).toBeNull()
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  test('a peer that exits at startup fails with its message, and its directory is removed', async () => {
    const peer = new PeerProcess('haproxy-uri', { binary: '/bin/false' })
    await expect(peer.start({ backends: [{ id: 'a', url: 'http://127.0.0.1:9' }] })).rejects.toThrow(/haproxy-uri exited at startup/)
    expect(fs.existsSync(peer.dir)).toBe(true)
    await peer.close()
    expect(fs.existsSync(peer.dir)).toBe(false)
  })
})

describe.each(['haproxy', 'nginx'])('bench peer %s', (program) => {
  describeIfInstalled([program], `${program} in front of a real fleet`, () => {
    let fleet
    beforeAll(async () => {
      fleet = await startFleet({ count: 3, cachePages: 4, missMs: 2, basePort: 0, host: '127.0.0.1' })
    })
    afterAll(async () => { if (fleet) await fleet.close() })

    test('runs in the foreground with its own files, proxies to the fleet, counts its CPU, and leaves nothing behind', async () => {
      const label = `${program}-uri`
      const peer = new PeerProcess(label)
      let info
      try {
        info = await peer.start({ backends: fleet.backends.map(({ id, url }) => ({ id, url })) })
        expect(fs.readdirSync(peer.dir)).toContain(program === 'haproxy' ? 'haproxy.cfg' : 'nginx.conf')
        expect(info.version).toMatch(program === 'haproxy' ? /^HAProxy version 2\./ : /^nginx\/1\./)
        const servers = new Set()
        for (let i = 0; i < 30; i++) {
          const res = await request(`${info.url}/page${(i % 3) + 1}.html`)
          expect(res.status).toBe(200)
          servers.add(`${(i % 3) + 1}:${res.headers['x-server']}`)
        }
        expect(servers.size).toBe(3) // a consistent hash sends each page to one backend
        expect(alive(info.pid)).toBe(true)
        const cpu = peer.cpu()
        expect(cpu.user + cpu.system).toBeGreaterThanOrEqual(0)
      } finally {
        await peer.close()
      }
      expect(alive(info.pid)).toBe(false)
      expect(fs.existsSync(peer.dir)).toBe(false)
    })

    test('with 2 workers: HAProxy one process of 2 threads, nginx a master and 2 workers, whose CPU is all counted', async () => {
      const peer = new PeerProcess(`${program}-uri`)
      let info, pids
      try {
        info = await peer.start({ backends: fleet.backends.map(({ id, url }) => ({ id, url })), workers: 2 })
        for (let i = 0; i < 20; i++) expect((await request(`${info.url}/page${(i % 3) + 1}.html`)).status).toBe(200)
        if (program === 'haproxy') {
          expect(info.config).toMatch(/nbthread 2/)
          expect(fs.readdirSync(`/proc/${info.pid}/task`)).toHaveLength(2)
        } else {
          expect(info.config).toMatch(/worker_processes 2;/)
          for (let i = 0; i < 40 && childPids(info.pid).length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 25))
        }
        pids = treeCpu(info.pid).pids
        expect(pids).toHaveLength(program === 'haproxy' ? 1 : 3)
        const sum = pids.map((p) => procCpu(p)).reduce((a, c) => a + c.user + c.system, 0)
        const cpu = peer.cpu()
        expect(cpu.user + cpu.system).toBeGreaterThanOrEqual(sum) // the workers', read a moment later
      } finally {
        await peer.close()
      }
      for (const pid of pids) expect(alive(pid)).toBe(false)
    })

    test('killed with SIGKILL, the peer takes its worker processes with it (they would keep the port)', async () => {
      const peer = new PeerProcess(`${program}-uri`)
      try {
        const info = await peer.start({ backends: fleet.backends.map(({ id, url }) => ({ id, url })), workers: 2 })
        const workers = program === 'nginx' ? 2 : 0
        for (let i = 0; i < 40 && childPids(info.pid).length < workers; i++) await new Promise((resolve) => setTimeout(resolve, 25))
        const pids = treeCpu(info.pid).pids
        expect(pids).toHaveLength(1 + workers)
        const exited = new Promise((resolve) => peer.child.once('exit', resolve))
        peer.kill('SIGKILL')
        await exited
        // gone, or a zombie waiting for init to reap it (which holds no port)
        const running = (pid) => { try { return !/^[ZX]$/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0]) } catch { return false } }
        for (let i = 0; i < 40 && pids.some(running); i++) await new Promise((resolve) => setTimeout(resolve, 25))
        expect(pids.filter(running)).toEqual([])
      } finally {
        await peer.close()
      }
    })
  })
})

describe.each(['haproxy', 'nginx'])('bench trial of the %s arms', (program) => {
  describeIfInstalled([program], `${program} arms, 1 s + 2 s of load each on a fresh fleet`, () => {
    // 4 connections, not 8 (the hashing arms' hits are CPU-bound: fewer in flight, less CPU): a round-robin arm,
    // mostly misses of 20 ms, answers about 45 req/s a connection (measured on a loaded machine), 180 against the
    // 50 asserted
    const settings = parseOptions(['--algos', 'round-robin', '--peers', program, '--warmup', '1', '--duration', '2',
      '--jit-warmup', '0', '--connections', '4', '--quiet'])
    const runs = {}
    beforeAll(async () => {
      for (const arm of settings.arms.filter((a) => a.peer)) runs[arm.label] = await runOnce({ arm, trial: 1, settings })
    })

    test('each arm has throughput, latencies, hit rate and the peer\'s CPU per 10k requests, without errors', () => {
      expect(Object.keys(runs).length).toBeGreaterThanOrEqual(2)
      for (const run of Object.values(runs)) {
        expect(run.peer).toMatchObject({ name: program, version: expect.any(String) })
        expect(run).toMatchObject({ errors: 0, non2xx: 0 })
        expect(run.rps).toBeGreaterThan(50)
        expect(run.latency.p50).toBeGreaterThan(0)
        expect(run.latency.p99).toBeGreaterThanOrEqual(run.latency.p50)
        expect(run.hitRate).toBeGreaterThanOrEqual(0)
        expect(run.hitRate).toBeLessThanOrEqual(1)
        expect(run.cpuPer10k).toBeGreaterThan(0)
        expect(run.cpuShare.balancer).toBeGreaterThan(0)
        expect(run.perBackend.reduce((a, b) => a + b.requests, 0)).toBeGreaterThan(0)
      }
    })

    test('hashing the URI keeps caches warm and round-robin does not', () => {
      expect(runs[`${program}-uri`].hitRate).toBeGreaterThan(0.7)
      expect(runs[`${program}-rr`].hitRate).toBeLessThan(0.4)
    })
  })
})
