'use strict'

const { Pool } = require('../src/pool/pool')
const { parseBackend, parseBackends } = require('../src/pool/backend-spec')
const { parseStateBody, parseRoute } = require('../src/observe/admin-backends')
const { startBalancer } = require('../src/balancer')
const { request, startUpstream, waitFor } = require('./helper')

const spec = (id, extra = {}) => ({ id, url: `http://127.0.0.1:${id.charCodeAt(0)}`, weight: 1, ...extra })

describe('backup members and administrative states in the pool', () => {
  test('a backup member is offered only while no primary is up', () => {
    let t = 0
    const pool = new Pool([spec('a'), spec('b'), spec('c', { backup: true })], { failTimeoutMs: 100, now: () => t })
    const [a, b, c] = pool.all()
    expect(pool.eligible()).toEqual([a, b])
    pool.fail(a)
    expect(pool.eligible()).toEqual([b])
    pool.fail(b) // every primary ejected: the backup, not the blackout rule's ejected primaries
    expect(pool.eligible()).toEqual([c])
    pool.fail(c) // backups down as well: the primaries again, as before backups existed
    expect(pool.eligible()).toEqual([a, b])
    t = 100
    expect(pool.eligible()).toEqual([a, b])
  })

  test('primaries down by their checks or taken out by the admin leave the backups', () => {
    const pool = new Pool([spec('a'), spec('b', { backup: true }), spec('c', { backup: true })], { now: () => 0 })
    const [a, b, c] = pool.all()
    pool.watch(a, { rise: 1, fall: 1 })
    pool.reportCheck(a, { ok: false })
    expect(pool.eligible()).toEqual([b, c])
    pool.reportCheck(a, { ok: true })
    expect(pool.eligible()).toEqual([a])
    pool.setState('a', 'drain')
    expect(pool.eligible()).toEqual([b, c])
    pool.setState('a', 'ready')
    expect(pool.eligible()).toEqual([a])
  })

  test('drain and maint take a member out whatever its health; ready brings it back, after maint with a slow start', () => {
    let t = 1000
    const pool = new Pool([spec('a'), spec('b'), spec('c')], { slowStartMs: 100, now: () => t, random: () => 0.5 })
    const [a, b, c] = pool.all()
    expect(pool.setState('a', 'drain')).toBe(a)
    expect(pool.setState('b', 'maint')).toBe(b)
    expect(pool.eligible()).toEqual([c])
    expect(a.toJSON()).toMatchObject({ adminState: 'drain', backup: false })
    pool.setState('a', 'maint')
    pool.setState('b', 'maint')
    pool.setState('c', 'maint')
    expect(pool.eligible()).toEqual([]) // nothing to offer: the balancer answers 503
    pool.setState('a', 'ready')
    pool.setState('c', 'ready')
    expect(pool.ramp(a)).toBe(0) // back from maintenance: ramps up
    expect(pool.ramp(c)).toBe(0)
    t = 1200
    expect(pool.eligible()).toEqual([a, c])
    pool.setState('b', 'drain')
    pool.setState('b', 'ready')
    expect(pool.ramp(b)).toBe(1) // from drain: it never stopped serving its own requests
    expect(pool.setState('zz', 'drain')).toBeUndefined()
    expect(() => pool.setState('a', 'off')).toThrow(/unknown state "off"/)
  })

  test('update changes the backup flag and keeps the admin state', () => {
    const pool = new Pool([spec('a'), spec('b')], { now: () => 0 })
    const [a, b] = pool.all()
    pool.setState('a', 'drain')
    pool.update(spec('b', { backup: true }))
    pool.update(spec('a'))
    expect(b.backup).toBe(true)
    expect(a.adminState).toBe('drain')
    expect(pool.eligible()).toEqual([b]) // a drained, b a backup: no primary up
  })
})

describe('backup in backend specs', () => {
  test('the bare fragment word backup, and backup: true in the object form', () => {
    expect(parseBackend('http://127.0.0.1:9101#backup')).toEqual({ id: '127.0.0.1:9101', url: 'http://127.0.0.1:9101', backup: true })
    expect(parseBackend('http://127.0.0.1:9101#eu&backup&w=2')).toMatchObject({ region: 'eu', weight: 2, backup: true })
    expect(parseBackend('http://127.0.0.1:9101#region=backup')).toEqual({ id: '127.0.0.1:9101', url: 'http://127.0.0.1:9101', region: 'backup' })
    expect(parseBackend({ url: 'http://127.0.0.1:9101', backup: true })).toMatchObject({ backup: true })
    expect(parseBackend({ url: 'http://127.0.0.1:9101#backup', backup: false })).not.toHaveProperty('backup')
    expect(parseBackends('http://127.0.0.1:1,http://127.0.0.1:2#backup').map((s) => Boolean(s.backup))).toEqual([false, true])
  })

  test('a backup that is not a boolean is refused', () => {
    expect(() => parseBackend({ url: 'http://127.0.0.1:9101', backup: 'yes' })).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_URL', message: expect.stringContaining('backup must be true or false') }))
  })
})

describe('the admin API\'s pure parts', () => {
  test('a state body is a word or { state }', () => {
    expect(parseStateBody('drain')).toEqual({ state: 'drain' })
    expect(parseStateBody(' Disable\n')).toEqual({ state: 'maint' })
    expect(parseStateBody('maint')).toEqual({ state: 'maint' })
    expect(parseStateBody('enable')).toEqual({ state: 'ready' })
    expect(parseStateBody('{"state":"ready"}')).toEqual({ state: 'ready' })
    expect(parseStateBody('{"state":')).toEqual({ error: 'body is not valid JSON' })
    expect(parseStateBody('off').error).toMatch(/state must be one of drain, disable, maint, enable, ready/)
    expect(parseStateBody('{"state":1}').error).toMatch(/got 1/)
  })

  test('routes: the list, one backend\'s state (id URL-decoded), nothing else', () => {
    expect(parseRoute('/_polistes/backends')).toEqual({ list: true })
    expect(parseRoute('/_polistes/backends/?x')).toEqual({ list: true })
    expect(parseRoute('/_polistes/backends/127.0.0.1%3A9101/state')).toEqual({ id: '127.0.0.1:9101' })
    expect(parseRoute('/_polistes/backends/a/state?x=1')).toEqual({ id: 'a' })
    expect(parseRoute('/_polistes/backends/a/b/state')).toBeNull()
    expect(parseRoute('/_polistes/backends//state')).toBeNull()
    expect(parseRoute('/_polistes/backends/%zz/state')).toBeNull()
    expect(parseRoute('/_polistes/stats')).toBeNull()
  })
})

describe('drain, disable and enable a backend at runtime over the admin listener', () => {
  let ups
  let lb
  const gate = { hold: false, waiting: [] }
  beforeEach(async () => {
    ups = {}
    for (const id of ['a', 'b', 'c']) {
      ups[id] = await startUpstream((req, res) => {
        const answer = () => { res.writeHead(200, { 'x-server': id }); res.end(`${id}\n`) }
        if (gate.hold) gate.waiting.push(answer)
        else answer()
      })
    }
  })
  afterEach(async () => {
    gate.hold = false
    if (lb) await lb.close({ graceMs: 100 })
    lb = undefined
    await Promise.all(Object.values(ups).map((u) => u.close()))
  })

  const backends = () => [{ id: 'a', url: ups.a.url }, { id: 'b', url: ups.b.url }, { id: 'c', url: ups.c.url, backup: true }]
  const servers = async (n) => {
    const seen = []
    for (let i = 0; i < n; i++) seen.push((await request(`${lb.url}/p${i}`)).headers['x-server'])
    return [...new Set(seen)].sort().join(',')
  }
  const setState = (id, body, options = {}) => request(`${lb.adminUrl}/_polistes/backends/${encodeURIComponent(id)}/state`, { method: 'POST', body, ...options })

  test('drain lets the in-flight request finish and sends no new one; disable of every primary leaves the backup; enable brings them back', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0, adminPort: 0 })
    expect(await servers(6)).toBe('a,b') // the backup waits
    gate.hold = true
    const inflight = [request(`${lb.url}/slow1`), request(`${lb.url}/slow2`)]
    await waitFor(() => gate.waiting.length === 2)
    const drained = await setState('a', 'drain')
    expect(drained.status).toBe(200)
    expect(JSON.parse(drained.body)).toMatchObject({ id: 'a', adminState: 'drain', previous: 'ready', backup: false, state: 'up' })
    gate.hold = false
    for (const answer of gate.waiting.splice(0)) answer()
    const finished = await Promise.all(inflight)
    expect(finished.map((r) => `${r.status} ${r.headers['x-server']}`).sort()).toEqual(['200 a', '200 b']) // a's finished too
    expect(await servers(4)).toBe('b')
    expect((await setState('b', '{"state":"disable"}')).status).toBe(200)
    expect(await servers(4)).toBe('c') // no primary up: the backup
    const stats = JSON.parse((await request(`${lb.adminUrl}/_polistes/stats`)).body)
    expect(stats.upstreams.map((u) => [u.id, u.adminState, u.backup])).toEqual([['a', 'drain', false], ['b', 'maint', false], ['c', 'ready', true]])
    const metrics = (await request(`${lb.adminUrl}/_polistes/metrics`)).body
    expect(metrics).toMatch(/polistes_upstream_admin_state\{upstream="a",state="drain"\} 1/)
    expect(metrics).toMatch(/polistes_upstream_admin_state\{upstream="b",state="maint"\} 1/)
    expect(metrics).toMatch(/polistes_upstream_admin_state\{upstream="b",state="ready"\} 0/)
    expect(metrics).toMatch(/polistes_upstream_backup\{upstream="c"\} 1/)
    const list = JSON.parse((await request(`${lb.adminUrl}/_polistes/backends`)).body)
    expect(list.backends.map((u) => u.adminState)).toEqual(['drain', 'maint', 'ready'])
    expect((await setState('a', 'enable')).status).toBe(200)
    expect((await setState('b', 'ready')).status).toBe(200)
    expect(await servers(6)).toBe('a,b')
    expect(JSON.parse((await request(`${lb.adminUrl}/_polistes/backends/b/state`)).body)).toMatchObject({ id: 'b', adminState: 'ready' })
  })

  test('with every backend in maintenance the balancer answers 503', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0, adminPort: 0 })
    for (const id of ['a', 'b', 'c']) expect((await setState(id, 'disable')).status).toBe(200)
    const res = await request(`${lb.url}/x`)
    expect(res.status).toBe(503)
    expect(res.headers['x-polistes-error']).toBe('no-upstream')
  })

  test('bad requests: unknown backend, bad body, other methods, a web page\'s Origin, an oversized body', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0, adminPort: 0 })
    expect((await setState('nope', 'drain')).status).toBe(404)
    expect((await request(`${lb.adminUrl}/_polistes/backends/nope/state`)).status).toBe(404)
    const bad = await setState('a', 'sleep')
    expect(bad.status).toBe(400)
    expect(JSON.parse(bad.body).error).toMatch(/state must be one of/)
    const del = await request(`${lb.adminUrl}/_polistes/backends/a/state`, { method: 'DELETE' })
    expect(del.status).toBe(405)
    expect(del.headers.allow).toBe('GET, HEAD, POST, PUT')
    expect((await request(`${lb.adminUrl}/_polistes/backends`, { method: 'POST', body: 'drain' })).status).toBe(405)
    expect((await setState('a', 'drain', { headers: { origin: 'http://evil.example' } })).status).toBe(403)
    expect((await setState('a', 'x'.repeat(300))).status).toBe(413)
    expect(lb.stats().upstreams.map((u) => u.adminState)).toEqual(['ready', 'ready', 'ready'])
  })

  test('the public listener never changes a state: 403 when it serves the admin surface, 404 with an admin listener', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0 })
    const res = await request(`${lb.url}/_polistes/backends/a/state`, { method: 'POST', body: 'drain' })
    expect(res.status).toBe(403)
    expect(JSON.parse(res.body).error).toMatch(/admin listener only/)
    expect(JSON.parse((await request(`${lb.url}/_polistes/backends/a/state`)).body).adminState).toBe('ready') // reading is fine
    await lb.close()
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0, adminPort: 0 })
    expect((await request(`${lb.url}/_polistes/backends/a/state`, { method: 'POST', body: 'drain' })).status).toBe(404)
    expect(ups.a.requests + ups.b.requests + ups.c.requests).toBe(0) // never proxied
    expect(lb.stats().upstreams[0].adminState).toBe('ready')
  })

  test('a reload keeps the state of the backends that stay, and can make one a backup', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0, adminPort: 0 })
    await setState('a', 'drain')
    const result = lb.reconfigure({ backends: [{ id: 'a', url: ups.a.url }, { id: 'b', url: ups.b.url, backup: true }, { id: 'c', url: ups.c.url }], algo: 'round-robin' })
    expect(result.updated.sort()).toEqual(['b', 'c'])
    expect(lb.stats().upstreams.map((u) => [u.id, u.adminState, u.backup])).toEqual([['a', 'drain', false], ['b', 'ready', true], ['c', 'ready', false]])
    expect(await servers(4)).toBe('c')
  })
})
