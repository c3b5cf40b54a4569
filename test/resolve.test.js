'use strict'

const http = require('node:http')
const { once } = require('node:events')
const { Resolver } = require('../src/pool/resolver')
const { resolveConfig } = require('../src/config/config')
const { parseArgs } = require('../src/run/cli')
const { startBalancer } = require('../src/balancer')
const { ENGINES } = require('../src/proxy/proxy-engine')
const { request, waitFor } = require('./helper')

const NAME = 'backend.polistes.test'

/** A lookup that answers NAME from `table.addresses` (and counts its calls), as node:dns's would. */
function fakeLookup (table) {
  return function lookup (hostname, options, callback) {
    if (typeof options === 'function') { callback = options; options = {} }
    table.calls++
    if (hostname !== NAME || table.fail) return process.nextTick(callback, Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }))
    const list = table.addresses.map((address) => ({ address, family: 4 }))
    if (options.all) process.nextTick(callback, null, list)
    else process.nextTick(callback, null, list[0].address, 4)
  }
}

describe('the resolver (injected lookup)', () => {
  test('watches host names only, tells a changed answer (not the first), keeps the last answer on failure', async () => {
    const table = { addresses: ['127.0.0.1'], calls: 0, fail: false }
    const changes = []
    const errors = []
    const r = new Resolver({ intervalMs: 1000, lookup: fakeLookup(table), onChange: (...args) => changes.push(args), onError: (name) => errors.push(name) })
    r.sync([new URL(`http://${NAME}:1`), new URL('http://127.0.0.1:2'), new URL('http://[::1]:3')])
    expect([...r.hosts.keys()]).toEqual([NAME])
    await r.refresh()
    expect(changes).toEqual([])
    table.addresses = ['127.0.0.2', '127.0.0.3']
    await r.refresh()
    expect(changes).toEqual([[NAME, ['127.0.0.2', '127.0.0.3'], ['127.0.0.1']]])
    table.addresses = ['127.0.0.3', '127.0.0.2']
    await r.refresh() // the same set in another order: no change
    table.fail = true
    await r.refresh()
    expect(errors).toEqual([NAME])
    expect(changes).toHaveLength(1)
    // connections rotate over the last good answer, with or without `all`
    const one = (options) => new Promise((resolve) => r.lookup(NAME, options, (err, address, family) => resolve([err, address, family])))
    const first = await one({})
    const second = await one({})
    expect([first[1], second[1]].sort()).toEqual(['127.0.0.2', '127.0.0.3'])
    const [, all] = await one({ all: true })
    expect(all.map((a) => a.address).sort()).toEqual(['127.0.0.2', '127.0.0.3'])
    expect((await one({ family: 6 }))[0].code).toBe('ENOTFOUND') // no IPv6 answer kept: the real lookup answers
    const throwing = new Resolver({ intervalMs: 1000, lookup: () => { throw new TypeError('bad') }, onChange: () => {}, onError: (name, err) => errors.push(err.message) })
    throwing.sync([new URL(`http://${NAME}:1`)])
    await throwing.refresh()
    expect(errors).toEqual([NAME, 'bad'])
    r.sync([])
    expect(r.hosts.size).toBe(0)
  })

  test('from the config file and --resolve; a bad value is refused', () => {
    expect(resolveConfig({}).resolveMs).toBeNull()
    expect(resolveConfig({}, { resolveMs: 5000 }).resolveMs).toBe(5000)
    expect(resolveConfig(parseArgs(['--resolve', '1000']).flags, { resolveMs: 5000 }).resolveMs).toBe(1000)
    for (const bad of [0, 5, -1, 'x']) expect(() => resolveConfig({ resolveMs: bad })).toThrow(/resolveMs must be a number of ms >= 10/)
  })
})

/** An upstream on `address`:`port` answering with `id`, whose answers `gate.hold` keeps back. */
async function upstreamOn (address, port, id, gate) {
  const sockets = new Set()
  const server = http.createServer((req, res) => {
    const answer = () => { res.writeHead(200, { 'x-server': id }); res.end(id) }
    if (gate.hold) gate.waiting.push(answer)
    else answer()
  })
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)) })
  server.listen(port, address)
  await once(server, 'listening')
  return { port: server.address().port, sockets, close: () => new Promise((resolve) => { server.close(resolve); for (const s of sockets) s.destroy() }) }
}

describe.each(ENGINES)('backend host names resolved again, engine %s', (engine) => {
  let a
  let b
  let lb
  const gate = { hold: false, waiting: [] }
  beforeEach(async () => {
    a = await upstreamOn('127.0.0.1', 0, 'a', gate)
    b = await upstreamOn('127.0.0.2', a.port, 'b', gate) // the same port on another loopback address
  })
  afterEach(async () => {
    gate.hold = false
    for (const answer of gate.waiting.splice(0)) answer()
    if (lb) await lb.close({ graceMs: 100 })
    lb = undefined
    await Promise.all([a.close(), b.close()])
  })
  const serverOf = async () => (await request(`${lb.url}/x`)).headers['x-server']

  test('a changed answer: the request in flight finishes on the old address, its connection closes, new requests go to the new one', async () => {
    const table = { addresses: ['127.0.0.1'], calls: 0 }
    lb = await startBalancer({ backends: [`http://${NAME}:${a.port}`], algo: 'round-robin', port: 0, engine, resolveMs: 20, lookup: fakeLookup(table) })
    expect(await serverOf()).toBe('a')
    gate.hold = true
    const inflight = request(`${lb.url}/slow`)
    await waitFor(() => gate.waiting.length === 1)
    table.addresses = ['127.0.0.2']
    const asked = table.calls
    await waitFor(() => table.calls >= asked + 2) // the resolver asked again since the switch (twice: one full round)
    gate.hold = false
    gate.waiting.shift()()
    const slow = await inflight
    expect([slow.status, slow.headers['x-server']]).toEqual([200, 'a'])
    for (let i = 0; i < 3; i++) expect(await serverOf()).toBe('b')
    await waitFor(() => a.sockets.size === 0) // the pooled connection to the old address is gone
  })

  test('without resolveMs a pooled connection stays on the address it was opened to (the reason for the option); a reload turns it on', async () => {
    const table = { addresses: ['127.0.0.1'], calls: 0 }
    const backends = [`http://${NAME}:${a.port}`]
    lb = await startBalancer({ backends, algo: 'round-robin', port: 0, engine, lookup: fakeLookup(table) })
    expect(await serverOf()).toBe('a')
    table.addresses = ['127.0.0.2']
    expect(await serverOf()).toBe('a') // kept-alive to the old address
    const result = lb.reconfigure({ backends, algo: 'round-robin', engine, resolveMs: 20, lookup: fakeLookup(table) })
    expect(result.changed).toEqual(['resolveMs'])
    await waitFor(async () => (await serverOf()) === 'b')
    await waitFor(() => a.sockets.size === 0)
  })
})
