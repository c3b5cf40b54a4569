'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { request, startUpstream, waitFor, startCli } = require('./helper')
const { stickyToken } = require('../src/proxy/sticky-cookie')

/**
 * routingKey, stickyCookie, resolveMs and backups through the real CLI: the config file at start,
 * a SIGHUP that changes them, and the admin API's drain on the admin listener.
 */
describe('routing key, sticky cookie, DNS re-resolution and backend state through the CLI', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-features-'))
  const open = []
  afterEach(async () => {
    for (const x of open.splice(0)) await x.close()
  })
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

  test('a config file with a backup; SIGHUP switches on a header key, a sticky cookie and re-resolution; drain over --admin-port', async () => {
    const ups = {}
    for (const id of ['a', 'b', 'c']) {
      ups[id] = await startUpstream((req, res) => { res.writeHead(200, { 'x-server': id }); res.end(id) })
      open.push(ups[id])
    }
    const port = (id) => new URL(ups[id].url).port
    // a and b by host name (localhost: the OS resolves it), c by address and a backup
    const backends = [{ url: `http://localhost:${port('a')}`, id: 'a' }, { url: `http://localhost:${port('b')}`, id: 'b' }, { url: ups.c.url, id: 'c', backup: true }]
    const file = path.join(tmp, 'features.json')
    fs.writeFileSync(file, JSON.stringify({ algo: 'chash-bounded', port: 0, adminPort: 0, backends }))
    const cli = startCli(['--config', file])
    open.push({ close: async () => { cli.child.kill('SIGTERM'); await cli.exited } })
    const { url } = await cli.ready
    const { adminUrl } = await waitFor(() => cli.lines.find((l) => l.adminUrl && /admin surface/.test(l.msg)))
    const get = (p, headers) => request(`${url}${p}`, { headers })
    const seen = new Set()
    for (let i = 0; i < 12; i++) seen.add((await get(`/p${i}`)).headers['x-server'])
    expect([...seen].sort()).toEqual(['a', 'b']) // the backup waits

    fs.writeFileSync(file, JSON.stringify({ algo: 'chash-bounded', port: 0, adminPort: 0, backends, routingKey: 'header:x-user', stickyCookie: { name: 'srv', maxAgeS: 600 }, resolveMs: 200 }))
    cli.child.kill('SIGHUP')
    const line = await waitFor(() => cli.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('config reloaded (SIGHUP)')))
    expect(line.changed).toEqual(expect.arrayContaining(['routingKey', 'stickyCookie', 'resolveMs']))

    const homes = {}
    for (const user of ['u1', 'u2', 'u3', 'u4', 'u5', 'u6']) {
      const servers = new Set()
      for (let i = 0; i < 3; i++) servers.add((await get(`/q${i}`, { 'x-user': user })).headers['x-server'])
      expect(servers.size).toBe(1) // one user, one backend, whatever the path
      homes[user] = [...servers][0]
    }
    const first = await get('/s')
    expect(first.headers['set-cookie']).toEqual([`srv=${stickyToken(first.headers['x-server'])}; Path=/; Max-Age=600; HttpOnly; SameSite=Lax`])

    // drain a over the admin listener: its sticky clients stay, new ones go to b
    const drained = await request(`${adminUrl}/_polistes/backends/a/state`, { method: 'POST', body: 'drain' })
    expect(drained.status).toBe(200)
    const sticky = { cookie: `srv=${stickyToken('a')}` }
    for (let i = 0; i < 3; i++) expect((await get(`/t${i}`, sticky)).headers['x-server']).toBe('a')
    for (let i = 0; i < 3; i++) expect((await get(`/n${i}`)).headers['x-server']).toBe('b')
    expect((await request(`${url}/_polistes/backends/b/state`, { method: 'POST', body: 'disable' })).status).toBe(404) // never on the public listener
    expect((await request(`${adminUrl}/_polistes/backends/b/state`, { method: 'POST', body: 'disable' })).status).toBe(200)
    expect((await get('/last')).headers['x-server']).toBe('c') // no primary left: the backup
    // the log lines come over the child's stdout, which may arrive after the answers above
    const adminLines = () => cli.lines.filter((l) => /\(admin API\)$/.test(l.msg)).map((l) => l.msg)
    await waitFor(() => adminLines().length >= 2).catch(() => {})
    expect(adminLines()).toEqual(['backend a: ready -> drain (admin API)', 'backend b: ready -> maint (admin API)'])
  })
})
