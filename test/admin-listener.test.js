'use strict'

const http = require('node:http')
const { once } = require('node:events')
const { isAdminPath } = require('../src/observe/admin')
const { startBalancer, createBalancer } = require('../src/balancer')
const { request, startUpstream } = require('./helper')

test('the admin prefix is /_polistes: the path itself, or under /_polistes/ or /_polistes?', () => {
  expect(isAdminPath('/_polistes/stats?x=1')).toBe(true)
  expect(isAdminPath('/_polistes')).toBe(true)
  expect(isAdminPath('/_polistes?x')).toBe(true)
  expect(isAdminPath('/_polistesque')).toBe(false)
  expect(isAdminPath('/page1.html')).toBe(false)
})

describe('admin listener', () => {
  let upstream
  let lb
  beforeAll(async () => { upstream = await startUpstream((req, res) => res.end(`upstream ${req.url}`)) })
  afterAll(() => upstream.close())
  afterEach(async () => {
    if (lb) await lb.close({ graceMs: 100 })
    lb = undefined
  })

  test('by default it is on the public listener; other /_polistes/ paths are 404, never proxied', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0 })
    expect(lb.adminUrl).toBeUndefined()
    const before = upstream.requests
    const stats = await request(`${lb.url}/_polistes/stats`)
    expect(stats.status).toBe(200)
    expect(JSON.parse(stats.body)).toHaveProperty('upstreams')
    expect((await request(`${lb.url}/_polistes/nothing`)).status).toBe(404)
    expect(upstream.requests).toBe(before)
    expect((await request(`${lb.url}/page1.html`)).body).toBe('upstream /page1.html')
  })

  test('with adminPort it moves to a loopback listener of its own and leaves the public one', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0, adminPort: 0 })
    expect(lb.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(lb.adminPort).toBeGreaterThan(0)
    expect(lb.adminUrl).not.toBe(lb.url)
    const before = upstream.requests
    const stats = await request(`${lb.adminUrl}/_polistes/stats`)
    expect(stats.status).toBe(200)
    expect(JSON.parse(stats.body).requests).toBe(0)
    const pub = await request(`${lb.url}/_polistes/stats`)
    expect(pub.status).toBe(404)
    expect(pub.body).toBe('not found\n')
    expect(upstream.requests).toBe(before)
    expect((await request(`${lb.adminUrl}/page1.html`)).status).toBe(404) // the admin listener proxies nothing
    expect((await request(`${lb.url}/page1.html`)).body).toBe('upstream /page1.html')
  })

  test('added handlers are served where the admin surface is, before the built-in endpoints', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0, adminPort: 0 })
    lb.addAdminHandler((req, res) => {
      if (req.url !== '/_polistes/hello') return false
      res.end('hello admin')
      return true
    })
    expect(await request(`${lb.adminUrl}/_polistes/hello`)).toMatchObject({ status: 200, body: 'hello admin' })
    expect((await request(`${lb.url}/_polistes/hello`)).status).toBe(404)
    expect((await request(`${lb.adminUrl}/_polistes/stats`)).status).toBe(200)
  })

  test('close() closes both listeners, and waits for an admin response in flight', async () => {
    lb = await startBalancer({ backends: [upstream.url], port: 0, adminPort: 0 })
    let arrived
    const inFlight = new Promise((resolve) => { arrived = resolve })
    lb.addAdminHandler((req, res) => {
      if (req.url !== '/_polistes/slow') return false
      arrived(() => res.end('late'))
      return true
    })
    const pending = request(`${lb.adminUrl}/_polistes/slow`)
    const release = await inFlight
    const closed = lb.close({ graceMs: 2000 })
    release()
    expect((await pending).body).toBe('late')
    await closed
    expect(lb.server.listening).toBe(false)
    expect(lb.adminServer.listening).toBe(false)
    await expect(request(`${lb.adminUrl}/_polistes/stats`, { timeoutMs: 1000 })).rejects.toThrow(/ECONNREFUSED/)
    lb = undefined
  })

  test('an admin port in use is ERR_POLISTES_PORT_IN_USE for the admin listener, and the public one is released', async () => {
    const taken = http.createServer()
    taken.listen(0, '127.0.0.1')
    await once(taken, 'listening')
    try {
      const port = taken.address().port
      const balancer = createBalancer({ backends: [upstream.url], port: 0, adminPort: port })
      await expect(balancer.listen()).rejects.toMatchObject({ code: 'ERR_POLISTES_PORT_IN_USE', message: `admin listener: 127.0.0.1:${port} is already in use` })
      expect(balancer.server.listening).toBe(false)
    } finally {
      taken.close()
    }
  })
})
