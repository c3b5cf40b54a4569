'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { request, startUpstream, waitFor, sleep, startCli } = require('./helper')

/** An upstream answering after `delayMs` with X-Server: id; `inflight` counts requests not yet answered. */
async function slowUpstream (id, delayMs) {
  const upstream = await startUpstream((req, res) => {
    upstream.inflight++
    setTimeout(() => { upstream.inflight--; res.writeHead(200, { 'x-server': id }); res.end(`${id}\n`) }, delayMs)
  })
  upstream.inflight = 0
  return upstream
}

const reloaded = (lines, reason, after = 0) => lines.slice(after).find((l) => typeof l.msg === 'string' && l.msg.startsWith(`config reloaded (${reason})`))

/**
 * `concurrency` loops of keep-alive requests until `until()` is true (and at most `maxMs`):
 * answers by server, and every failure (socket error or non-200).
 */
async function load (url, { concurrency = 8, until, maxMs = 10000 }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency })
  const served = {}
  const failures = []
  const end = Date.now() + maxMs
  let sent = 0
  await Promise.all(Array.from({ length: concurrency }, async (_, k) => {
    while (!until() && Date.now() < end) {
      try {
        const res = await request(`${url}/page${(sent++ % 25) + 1}.html`, { agent })
        if (res.status === 200) served[res.headers['x-server']] = (served[res.headers['x-server']] || 0) + 1
        else failures.push(`status ${res.status}: ${res.body.trim()}`)
      } catch (err) {
        failures.push(err.message)
      }
    }
  }))
  agent.destroy()
  return { served, failures, sent }
}

describe('hot reload through the real CLI', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-reload-'))
  const open = []
  afterEach(async () => {
    for (const x of open.splice(0)) await x.close()
  })
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

  const writeConfig = (file, backends, extra = {}) => fs.writeFileSync(file, JSON.stringify({ algo: 'round-robin', port: 0, backends, ...extra }))

  test('SIGHUP under continuous load removes one upstream and adds another with zero failed requests', async () => {
    const a = await slowUpstream('a', 2)
    const b = await slowUpstream('b', 150) // slow: requests are in flight on it when it is removed
    const c = await slowUpstream('c', 2)
    open.push(a, b, c)
    const file = path.join(tmp, 'sighup.json')
    writeConfig(file, [{ url: a.url, id: 'a' }, { url: b.url, id: 'b' }])
    const cli = startCli(['--config', file])
    open.push({ close: async () => { cli.child.kill('SIGTERM'); await cli.exited } })
    const { url } = await cli.ready

    let done = false
    const run = load(url, { until: () => done })
    await waitFor(() => b.requests >= 10 && b.inflight >= 2)
    writeConfig(file, [{ url: a.url, id: 'a' }, { url: c.url, id: 'c' }])
    const bInflightAtReload = b.inflight
    cli.child.kill('SIGHUP')
    const line = await waitFor(() => reloaded(cli.lines, 'SIGHUP'))
    await sleep(100) // requests dispatched to b before the reload have reached it by now
    const bAfterReload = b.requests
    const reloadedAt = Date.now()
    await waitFor(() => c.requests >= 50 && Date.now() - reloadedAt >= 500, { timeoutMs: 8000 })
    done = true
    const { served, failures, sent } = await run
    if (process.env.POLISTES_SHOW_RELOAD) console.log({ sent, served, failures: failures.length, bInflightAtReload, bReceived: bAfterReload })

    expect(failures).toEqual([])
    expect(sent).toBeGreaterThan(100)
    expect(line.msg).toMatch(/added c; removed b/)
    expect(line).toMatchObject({ added: ['c'], removed: ['b'] })
    expect(served.b).toBe(bAfterReload) // every request b received, in flight at the reload or not, was answered
    expect(served.c).toBeGreaterThanOrEqual(50)
    expect(b.requests).toBe(bAfterReload)
    const stats = JSON.parse((await request(`${url}/_polistes/stats`)).body)
    expect(stats.upstreams.map((u) => u.id)).toEqual(['a', 'c'])
  })

  test('an invalid config is refused with one log line and the old one keeps serving', async () => {
    const a = await slowUpstream('a', 0)
    open.push(a)
    const file = path.join(tmp, 'invalid.json')
    writeConfig(file, [{ url: a.url, id: 'a' }])
    const cli = startCli(['--config', file])
    open.push({ close: async () => { cli.child.kill('SIGTERM'); await cli.exited } })
    const { url } = await cli.ready
    for (const [content, code] of [
      ['{ "backends": [', 'ERR_POLISTES_BAD_CONFIG'],
      [JSON.stringify({ backends: [a.url], healthCheck: { path: '/h', every: 3 } }), 'ERR_POLISTES_BAD_CONFIG'],
      [JSON.stringify({ backends: [a.url], policyOptions: { maxRounds: 4 } }), 'ERR_POLISTES_BAD_OPTION'],
      [JSON.stringify({ backends: [] }), 'ERR_POLISTES_NO_BACKENDS']
    ]) {
      const before = cli.lines.length
      fs.writeFileSync(file, content)
      cli.child.kill('SIGHUP')
      const refusal = await waitFor(() => cli.lines.slice(before).find((l) => /refused/.test(l.msg)))
      expect(refusal).toMatchObject({ level: 50, code })
      expect(refusal.msg).toMatch(new RegExp(`^config reload \\(SIGHUP\\) refused, the previous config keeps serving: ${code}: `))
      expect(cli.lines.slice(before).filter((l) => l.level >= 40)).toHaveLength(1)
      const res = await request(`${url}/page1.html`)
      expect([res.status, res.headers['x-server']]).toEqual([200, 'a'])
    }
  })

  test('with --watch a change of the file reloads it; settings that need a restart are named in one line', async () => {
    const a = await slowUpstream('a', 0)
    const b = await slowUpstream('b', 0)
    open.push(a, b)
    const file = path.join(tmp, 'watched.json')
    writeConfig(file, [{ url: a.url, id: 'a' }])
    const cli = startCli(['--config', file, '--watch'])
    open.push({ close: async () => { cli.child.kill('SIGTERM'); await cli.exited } })
    const { url } = await cli.ready
    // an editor's save: write a new file, rename it over the old one
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ algo: 'weighted-round-robin', port: 1, backends: [{ url: a.url, id: 'a' }, { url: b.url, id: 'b', weight: 2 }] }))
    fs.renameSync(`${file}.tmp`, file)
    const line = await waitFor(() => reloaded(cli.lines, 'watch'))
    expect(line.added).toEqual(['b'])
    const warning = await waitFor(() => cli.lines.find((l) => l.level === 40 && /restart/.test(l.msg)))
    expect(warning.msg).toBe('config reload: port cannot change on a running balancer; restart to apply')
    const served = []
    for (let i = 0; i < 6; i++) served.push((await request(`${url}/page${i}.html`)).headers['x-server'])
    expect(served.filter((s) => s === 'b')).toHaveLength(4)
  })
})
