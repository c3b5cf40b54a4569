'use strict'

const { parseStickyCookie, stickyToken, setCookieValue, createSticky } = require('../src/proxy/sticky-cookie')
const { resolveConfig } = require('../src/config/config')
const { parseArgs } = require('../src/run/cli')
const { startBalancer } = require('../src/balancer')
const { ENGINES } = require('../src/proxy/proxy-engine')
const { request, startUpstream, closedPort, RawConnection } = require('./helper')

describe('the sticky cookie (pure)', () => {
  test('defaults, a bare name, attributes', () => {
    expect(parseStickyCookie(null)).toBeNull()
    const o = parseStickyCookie('srv')
    expect(o).toEqual({ name: 'srv', path: '/', domain: null, maxAgeS: null, secure: false, httpOnly: true, sameSite: 'Lax' })
    expect(setCookieValue(o, 'T')).toBe('srv=T; Path=/; HttpOnly; SameSite=Lax')
    const full = parseStickyCookie({ name: 'srv', path: '/app', domain: 'example.com', maxAgeS: 3600, secure: true, httpOnly: false, sameSite: 'none' })
    expect(setCookieValue(full, 'T')).toBe('srv=T; Path=/app; Domain=example.com; Max-Age=3600; Secure; SameSite=None')
    expect(parseStickyCookie({}).name).toBe('polistes_upstream')
  })

  test('bad values are clear errors', () => {
    const bad = [{ name: 'a b' }, { name: 'a', path: 'x' }, { name: 'a', path: '/a;b' }, { name: 'a', maxAgeS: 0 }, { name: 'a', secure: 'yes' },
      { name: 'a', sameSite: 'loose' }, { name: 'a', sameSite: 'None' }, { name: 'a', domain: 'a b' }, { name: 'a', expires: 1 }, 42, ['a']]
    for (const value of bad) expect(() => parseStickyCookie(value)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(/^stickyCookie/) }))
  })

  test('the token is opaque and stable: no address in it, the same for the same id', () => {
    const token = stickyToken('127.0.0.1:9101')
    expect(token).toMatch(/^[A-Za-z0-9_-]{16}$/)
    expect(token).not.toContain('127')
    expect(stickyToken('127.0.0.1:9101')).toBe(token)
    expect(stickyToken('127.0.0.1:9102')).not.toBe(token)
    const sticky = createSticky('srv')
    expect(sticky.requested({ cookie: `a=1; srv=${token}` })).toBe(token)
    expect(sticky.header('127.0.0.1:9101')).toBe(`srv=${token}; Path=/; HttpOnly; SameSite=Lax`)
  })

  test('from the flag (a name) and the config (an object); invalid ones refused', () => {
    const { flags } = parseArgs(['--sticky-cookie', 'srv', '--backends', 'http://127.0.0.1:1'])
    expect(resolveConfig(flags).stickyCookie).toBe('srv')
    expect(resolveConfig({}).stickyCookie).toBeNull()
    expect(resolveConfig({}, { stickyCookie: { name: 'srv', secure: true } }).stickyCookie).toEqual({ name: 'srv', secure: true })
    expect(() => resolveConfig({}, { stickyCookie: { name: 'srv', sameSite: 'None' } })).toThrow(/sameSite None needs secure/)
  })
})

/** Upstreams that answer with their id, and (b) with a Set-Cookie of their own. */
async function fleet (ids) {
  const ups = {}
  for (const id of ids) {
    ups[id] = await startUpstream((req, res) => {
      const headers = { 'x-server': id, 'x-cookie-seen': req.headers.cookie || '' }
      if (id === 'b') headers['set-cookie'] = ['app=1; Path=/', 'other=2']
      res.writeHead(200, headers)
      res.end(id)
    })
  }
  return ups
}

const cookieOf = (res, name = 'srv') => [].concat(res.headers['set-cookie'] || []).find((c) => c.startsWith(`${name}=`))
const pair = (setCookie) => setCookie.split(';')[0]

describe.each(ENGINES.flatMap((engine) => (engine === 'http-proxy' || engine === 'http-proxy-3' ? [[engine, 'node']] : [[engine, 'fast'], [engine, 'node']])))('over sockets, engine %s, front %s', (engine, front) => {
  let ups
  let lb
  beforeAll(async () => { ups = await fleet(['a', 'b', 'c']) })
  afterEach(async () => {
    if (lb) await lb.close()
    lb = undefined
  })
  afterAll(() => Promise.all(Object.values(ups).map((u) => u.close())))
  const backends = () => ['a', 'b', 'c'].map((id) => ({ id, url: ups[id].url }))

  test('the first response sets the cookie; requests bearing it stay on that upstream and get no new one; its own cookies are kept', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0, engine, front, stickyCookie: 'srv' })
    for (const start of ['a', 'b', 'c']) {
      const first = await request(`${lb.url}/x`)
      expect(first.headers['x-server']).toBe(start) // round-robin's turn
      const set = cookieOf(first)
      expect(set).toBe(`srv=${stickyToken(start)}; Path=/; HttpOnly; SameSite=Lax`)
      if (start === 'b') expect(first.headers['set-cookie']).toEqual(expect.arrayContaining(['app=1; Path=/', 'other=2', set]))
      for (let i = 0; i < 4; i++) {
        const next = await request(`${lb.url}/y${i}`, { headers: { cookie: `theme=dark; ${pair(set)}` } })
        expect(next.headers['x-server']).toBe(start)
        expect(cookieOf(next)).toBeUndefined()
        expect(next.headers['x-cookie-seen']).toBe(`theme=dark; ${pair(set)}`) // passed on as it came
      }
    }
  })
})

describe('which upstream a cookie may name', () => {
  let ups
  let lb
  beforeEach(async () => { ups = await fleet(['a', 'b', 'c']) })
  afterEach(async () => {
    if (lb) await lb.close()
    lb = undefined
    await Promise.all(Object.values(ups).map((u) => u.close()))
  })
  const backends = (ids = ['a', 'b', 'c']) => ids.map((id) => ({ id, url: ups[id].url }))
  const withCookie = (id, path = '/z') => request(`${lb.url}${path}`, { headers: { cookie: `srv=${stickyToken(id)}` } })

  test('drained: its sticky clients still go there, new ones do not; disabled: the cookie is ignored and re-issued', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0, adminPort: 0, stickyCookie: 'srv' })
    const post = (id, state) => request(`${lb.adminUrl}/_polistes/backends/${id}/state`, { method: 'POST', body: state })
    expect((await post('a', 'drain')).status).toBe(200)
    for (let i = 0; i < 3; i++) expect((await withCookie('a')).headers['x-server']).toBe('a')
    for (let i = 0; i < 4; i++) expect((await request(`${lb.url}/n${i}`)).headers['x-server']).not.toBe('a')
    expect((await post('a', 'disable')).status).toBe(200)
    const moved = await withCookie('a')
    expect(moved.headers['x-server']).not.toBe('a')
    expect(cookieOf(moved)).toBe(`srv=${stickyToken(moved.headers['x-server'])}; Path=/; HttpOnly; SameSite=Lax`)
  })

  test('a removed upstream\'s cookie, an unknown token and a dead upstream\'s cookie are re-issued', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}`
    lb = await startBalancer({ backends: [...backends(), { id: 'd', url: dead }], algo: 'round-robin', port: 0, stickyCookie: 'srv', retries: 2 })
    const fromDead = await withCookie('d') // not yet known dead: the sticky try fails, the retry is the policy's
    expect(fromDead.status).toBe(200)
    expect(cookieOf(fromDead)).toBe(`srv=${stickyToken(fromDead.headers['x-server'])}; Path=/; HttpOnly; SameSite=Lax`)
    const again = await withCookie('d') // ejected now
    expect(again.status).toBe(200)
    expect(cookieOf(again)).toBeDefined()
    const unknown = await request(`${lb.url}/z`, { headers: { cookie: 'srv=forged' } })
    expect(cookieOf(unknown)).toBe(`srv=${stickyToken(unknown.headers['x-server'])}; Path=/; HttpOnly; SameSite=Lax`)
    const result = lb.reconfigure({ backends: backends(['b', 'c']), algo: 'round-robin', stickyCookie: 'srv' })
    expect(result.removed).toEqual(['a', 'd'])
    const removed = await withCookie('a')
    expect(['b', 'c']).toContain(removed.headers['x-server'])
    expect(cookieOf(removed)).toBeDefined()
  })

  test('a WebSocket upgrade bearing the cookie goes to its upstream', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0, stickyCookie: 'srv' })
    for (let i = 0; i < 3; i++) {
      const conn = new RawConnection(lb.url)
      try {
        await conn.send(`GET /ws HTTP/1.1\r\nHost: x\r\nCookie: srv=${stickyToken('b')}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`)
        const { responses } = await conn.read(1)
        expect(responses[0].headers['x-server']).toBe('b')
      } finally {
        conn.destroy()
      }
    }
  })

  test('a reload turns stickiness on, changes its attributes and turns it off', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'round-robin', port: 0 })
    expect(cookieOf(await request(`${lb.url}/z`))).toBeUndefined()
    expect(lb.reconfigure({ backends: backends(), algo: 'round-robin', stickyCookie: { name: 'srv', maxAgeS: 60 } }).changed).toEqual(['stickyCookie'])
    expect(cookieOf(await request(`${lb.url}/z`))).toMatch(/^srv=[\w-]{16}; Path=\/; Max-Age=60; HttpOnly; SameSite=Lax$/)
    for (let i = 0; i < 3; i++) expect((await withCookie('c')).headers['x-server']).toBe('c')
    expect(() => lb.reconfigure({ backends: backends(), stickyCookie: { name: 'bad name' } })).toThrow(/stickyCookie/)
    lb.reconfigure({ backends: backends(), algo: 'round-robin' })
    const seen = new Set()
    for (let i = 0; i < 3; i++) seen.add((await withCookie('c')).headers['x-server'])
    expect(seen.size).toBe(3) // round-robin again
  })
})
