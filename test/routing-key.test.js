'use strict'

const path = require('node:path')
const fs = require('node:fs')
const os = require('node:os')
const { parseRoutingKey, compileRoutingKey, hostOf, cookieValue, queryValue } = require('../src/proxy/routing-key')
const { resolveConfig, readConfigFile } = require('../src/config/config')
const { parseArgs } = require('../src/run/cli')
const { startBalancer } = require('../src/balancer')
const { request, startUpstream } = require('./helper')

const req = (url, headers = {}) => ({ url, headers })

describe('the routing key of a request (pure)', () => {
  test('path (default) drops the query; url keeps it', () => {
    expect(compileRoutingKey('path')(req('/a/b?x=1'))).toBe('/a/b')
    expect(compileRoutingKey('url')(req('/a/b?x=1'))).toBe('/a/b?x=1')
    expect(compileRoutingKey('path+query')(req('/a/b?x=1'))).toBe('/a/b?x=1')
  })

  test('host: lower-case, without the port; a request without Host goes by its path', () => {
    const key = compileRoutingKey('host')
    expect(key(req('/p', { host: 'Shop.Example:8080' }))).toBe('shop.example')
    expect(key(req('/p', { host: '[::1]:8080' }))).toBe('[::1]')
    expect(key(req('/p?q', {}))).toBe('/p')
    expect(hostOf('')).toBeUndefined()
  })

  test('header:<name> takes its value (name case-insensitive), else the path', () => {
    const key = compileRoutingKey('header:X-User')
    expect(key(req('/p', { 'x-user': 'alice' }))).toBe('alice')
    expect(key(req('/p', { 'x-user': ['a', 'b'] }))).toBe('a, b')
    expect(key(req('/p?z', { 'x-user': '' }))).toBe('/p')
    expect(key(req('/p', {}))).toBe('/p')
  })

  test('cookie:<name> takes that cookie, not one whose name merely ends alike', () => {
    const key = compileRoutingKey('cookie:sid')
    expect(key(req('/p', { cookie: 'xsid=1; sid=abc; other=2' }))).toBe('abc')
    expect(key(req('/p', { cookie: 'sid="q"' }))).toBe('q')
    expect(key(req('/p', { cookie: 'other=2' }))).toBe('/p')
    expect(cookieValue('sid=', 'sid')).toBeUndefined()
    expect(cookieValue(['a=1', 'sid=2'], 'sid')).toBe('2')
  })

  test('param:<name> takes that query parameter as sent', () => {
    const key = compileRoutingKey('param:id')
    expect(key(req('/p?x=1&id=42%20&id=7'))).toBe('42%20')
    expect(key(req('/p?idx=1'))).toBe('/p')
    expect(queryValue('/p?id', 'id')).toBeUndefined()
    expect(queryValue('/p', 'id')).toBeUndefined()
  })

  test('a bad routingKey is a clear error', () => {
    for (const bad of ['', 'query', 'header:', 'header:bad name', 'cookie', 42, null]) {
      expect(() => parseRoutingKey(bad)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringContaining('routingKey') }))
    }
    expect(parseRoutingKey('header:X-A')).toEqual({ kind: 'header', name: 'x-a' })
  })
})

describe('routingKey from the flag, the config file and the defaults', () => {
  test('default path; the flag wins over the file; a bad value is refused', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-rk-'))
    const file = path.join(dir, 'c.json')
    fs.writeFileSync(file, JSON.stringify({ backends: ['http://127.0.0.1:1'], routingKey: 'cookie:sid' }))
    try {
      expect(resolveConfig({}).routingKey).toBe('path')
      expect(resolveConfig({}, readConfigFile(file)).routingKey).toBe('cookie:sid')
      const { flags } = parseArgs(['--routing-key', 'header:x-user', '--backends', 'http://127.0.0.1:1'])
      expect(resolveConfig(flags, readConfigFile(file)).routingKey).toBe('header:x-user')
      expect(() => resolveConfig({ routingKey: 'nope' })).toThrow(/routingKey is not known/)
    } finally {
      fs.rmSync(dir, { recursive: true })
    }
  })
})

describe('over sockets: the same key lands on the same backend', () => {
  let ups
  let lb
  beforeAll(async () => {
    ups = await Promise.all(['a', 'b', 'c', 'd'].map((id) => startUpstream((req, res) => { res.writeHead(200, { 'x-server': id }); res.end(id) })))
  })
  afterEach(async () => {
    if (lb) await lb.close()
    lb = undefined
  })
  afterAll(() => Promise.all(ups.map((u) => u.close())))
  const backends = () => ups.map((u, i) => ({ id: 'abcd'[i], url: u.url }))
  const serverOf = async (url, headers) => (await request(`${lb.url}${url}`, { headers })).headers['x-server']

  test.each([['fast'], ['node']])('chash-bounded with header:x-user (front %s): one user, one backend, whatever the path', async (front) => {
    lb = await startBalancer({ backends: backends(), algo: 'chash-bounded', port: 0, front, routingKey: 'header:x-user' })
    const home = {}
    for (let i = 0; i < 12; i++) {
      const user = `user${i}`
      const seen = new Set()
      for (let j = 0; j < 4; j++) seen.add(await serverOf(`/page${j}?i=${j}`, { 'x-user': user }))
      expect(seen.size).toBe(1)
      home[user] = [...seen][0]
    }
    expect(new Set(Object.values(home)).size).toBeGreaterThan(1) // users spread over the backends
  })

  test('the default key ignores the query; url does not; a reload switches to cookie:sid', async () => {
    lb = await startBalancer({ backends: backends(), algo: 'chash-bounded', port: 0 })
    const paths = Array.from({ length: 16 }, (_, i) => `/p${i}`)
    for (const p of paths) expect(await serverOf(`${p}?a=1`)).toBe(await serverOf(`${p}?b=2`))
    lb.reconfigure({ backends: backends(), algo: 'chash-bounded', routingKey: 'url' })
    let differ = 0
    for (const p of paths) if (await serverOf(`${p}?a=1`) !== await serverOf(`${p}?b=2`)) differ++
    expect(differ).toBeGreaterThan(0) // the query now makes another key
    const result = lb.reconfigure({ backends: backends(), algo: 'chash-bounded', routingKey: 'cookie:sid' })
    expect(result.changed).toEqual(['routingKey'])
    for (const sid of ['s1', 's2', 's3', 's4']) {
      const seen = new Set()
      for (const p of paths.slice(0, 6)) seen.add(await serverOf(p, { cookie: `theme=dark; sid=${sid}` }))
      expect(seen.size).toBe(1)
    }
    expect(() => lb.reconfigure({ backends: backends(), routingKey: 'header:' })).toThrow(/routingKey/)
    expect(lb.settings.routingKey).toBe('cookie:sid')
  })
})
