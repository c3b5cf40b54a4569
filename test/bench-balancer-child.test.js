'use strict'

/**
 * The bench's balancer child with --workers: N workers on one port, CPU summed over all of them,
 * counters summed, and nothing left running after close.
 */

const fs = require('node:fs')
const path = require('node:path')
const { Child } = require('../bench/children/child')
const { request, startUpstream, waitFor, alive } = require('./helper')

describe('bench balancer child', () => {
  let upstream
  beforeAll(async () => {
    upstream = await startUpstream((req, res) => res.end('ok'))
  })
  afterAll(() => upstream.close())

  const linux = process.platform === 'linux' ? test : test.skip
  linux('with workers 2: both serve, requests and CPU are summed over them, close ends them all', async () => {
    const child = new Child(path.join(__dirname, '..', 'bench', 'children', 'balancer-child.js'), { name: 'balancer child' })
    try {
      const { url, pids } = await child.request('start', { backends: [{ id: 'a', url: upstream.url }], algo: 'wasp', workers: 2 })
      expect(pids).toHaveLength(2)
      expect(pids).not.toContain(child.process.pid)
      const seen = new Set()
      for (let i = 0; i < 20; i++) seen.add(JSON.parse((await request(`${url}/_polistes/stats`, { agent: false })).body).pid)
      expect([...seen].sort()).toEqual([...pids].sort())
      for (let i = 0; i < 10; i++) expect((await request(`${url}/p${i}`, { agent: false })).status).toBe(200)
      const stats = await child.request('stats')
      expect(stats.requests).toBe(10)
      expect(stats.pid.sort()).toEqual([...pids].sort())
      // summed CPU: at least what the kernel has counted for the workers alone (utime + stime, in ticks)
      const workersUs = pids.reduce((sum, pid) => {
        const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
        return sum + (Number(fields[11]) + Number(fields[12])) * (1e6 / 100)
      }, 0)
      const cpu = await child.request('cpu')
      expect(workersUs).toBeGreaterThan(0)
      expect(cpu.user + cpu.system).toBeGreaterThanOrEqual(workersUs)
      await child.close()
      await waitFor(() => pids.every((pid) => !alive(pid)), { timeoutMs: 3000 })
    } finally {
      await child.close()
    }
  })
})
