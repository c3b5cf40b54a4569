'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { startBalancer } = require('../src/balancer')
const { createTrust, parseTrustedProxies } = require('../src/proxy/forwarded')
const { validateOptions } = require('../src/config/defaults')
const { readConfigFile, resolveConfig } = require('../src/config/config')
const { parseArgs } = require('../src/run/cli')
const { rendezvous } = require('../src/policies/ip-hash')
const { forwardingHeaders, requestHeaders } = require('../src/proxy/engines/headers')
const { rawRequest, startUpstream, RawConnection, runNode, startCli, cliEntry } = require('./helper')

/** What a client (or a proxy in front of polistes) claims about earlier hops. */
const CLAIMS = {
  host: 'shop.example:8443',
  'x-forwarded-for': '203.0.113.7, 198.51.100.2',
  'x-forwarded-host': 'evil.example',
  'x-forwarded-proto': 'https',
  'x-forwarded-port': '443',
  forwarded: 'for=203.0.113.7;proto=https;host=evil.example',
  'x-real-ip': '203.0.113.7',
  'x-forwarded-ssl': 'on'
}

/** Every engine, on both fronts where the engine runs behind the fast front. */
const SETUPS = [
  ['direct', 'fast'], ['direct', 'node'],
  ['node-http', 'fast'], ['node-http', 'node'],
  ['undici', 'fast'], ['undici', 'node'],
  ['http-proxy', 'node']
]

describe.each(SETUPS)('engine %s, front %s', (engine, front) => {
  let upstream
  let seen
  const open = []
  beforeAll(async () => {
    upstream = await startUpstream((req, res) => { seen = req.headers; res.end('ok') })
  })
  afterAll(() => upstream.close())
  afterEach(async () => { await Promise.all(open.splice(0).map((lb) => lb.close({ graceMs: 100 }))) })
  const start = async (options) => {
    const lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, engine, front, ...options })
    open.push(lb)
    return lb
  }

  test.each([
    ['no trusted proxies', {}],
    ['a trusted network the peer is not in', { trustedProxies: ['10.0.0.0/8', 'fd00::/8'] }]
  ])('untrusted peer (%s): the upstream sees only our values', async (_name, options) => {
    const lb = await start(options)
    const res = await rawRequest(lb.url, '/x', { headers: CLAIMS })
    expect(res.status).toBe(200)
    expect(seen['x-forwarded-for']).toBe('127.0.0.1')
    expect(seen['x-forwarded-host']).toBe('shop.example:8443') // the Host it sent, not its X-Forwarded-Host
    expect(seen['x-forwarded-proto']).toBe('http') // our listener's scheme
    expect(seen['x-forwarded-port']).toBe('8443') // the port it addressed
    expect(seen.forwarded).toBeUndefined()
    expect(seen['x-real-ip']).toBeUndefined()
    expect(seen['x-forwarded-ssl']).toBeUndefined()
    expect(seen.host).toBe('shop.example:8443')
    expect(seen.via).toBe('1.1 polistes')
  })

  test('trusted peer (127.0.0.1/32): the chain is kept and the peer appended', async () => {
    const lb = await start({ trustedProxies: ['127.0.0.1/32'] })
    const res = await rawRequest(lb.url, '/x', { headers: CLAIMS })
    expect(res.status).toBe(200)
    expect(seen['x-forwarded-for']).toBe('203.0.113.7, 198.51.100.2, 127.0.0.1')
    expect(seen['x-forwarded-host']).toBe('evil.example')
    expect(seen['x-forwarded-proto']).toBe('https')
    expect(seen['x-forwarded-port']).toBe('443')
    expect(seen.forwarded).toBe(CLAIMS.forwarded)
    expect(seen['x-real-ip']).toBe('203.0.113.7')
    expect(seen['x-forwarded-ssl']).toBe('on')
    // a trusted proxy that sent none of them: ours stand in
    await rawRequest(lb.url, '/x', { headers: { host: 'plain.example' } })
    expect(seen['x-forwarded-for']).toBe('127.0.0.1')
    expect(seen['x-forwarded-host']).toBe('plain.example')
    expect(seen['x-forwarded-proto']).toBe('http')
    expect(seen['x-forwarded-port']).toBe('80')
  })
})

describe('WebSocket upgrade tunnel', () => {
  const UPGRADE = (extra) => `GET /ws HTTP/1.1\r\nHost: shop.example:8443\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${extra}Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`
  const CLAIM_LINES = 'X-Forwarded-For: 203.0.113.7\r\nX-Forwarded-Host: evil.example\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Port: 443\r\nForwarded: for=203.0.113.7\r\nX-Real-IP: 203.0.113.7\r\n'
  let upstream
  const open = []
  beforeAll(async () => {
    // declines the upgrade and reports what it was told
    upstream = await startUpstream((req, res) => {
      const pick = ['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port', 'forwarded', 'x-real-ip']
      res.writeHead(426, { 'content-type': 'application/json' })
      res.end(JSON.stringify(Object.fromEntries(pick.map((h) => [h, req.headers[h] ?? null]))))
    })
  })
  afterAll(() => upstream.close())
  afterEach(async () => { await Promise.all(open.splice(0).map((lb) => lb.close({ graceMs: 100 }))) })

  async function upgradeSeen (options) {
    const lb = await startBalancer({ backends: [upstream.url], algo: 'round-robin', port: 0, ...options })
    open.push(lb)
    const conn = new RawConnection(lb.url)
    try {
      await conn.send(UPGRADE(CLAIM_LINES))
      const { responses } = await conn.read(1)
      expect(responses[0].status).toBe(426)
      return JSON.parse(responses[0].body.toString())
    } finally {
      conn.destroy()
    }
  }

  test('from an untrusted client the upstream sees only our values', async () => {
    expect(await upgradeSeen({})).toEqual({
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-host': 'shop.example:8443',
      'x-forwarded-proto': 'http',
      'x-forwarded-port': '8443',
      forwarded: null,
      'x-real-ip': null
    })
  })

  test('from a trusted peer the chain is kept and the peer appended', async () => {
    expect(await upgradeSeen({ trustedProxies: ['127.0.0.1/32'] })).toEqual({
      'x-forwarded-for': '203.0.113.7, 127.0.0.1',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-proto': 'https',
      'x-forwarded-port': '443',
      forwarded: 'for=203.0.113.7',
      'x-real-ip': '203.0.113.7'
    })
  })
})

describe('ip-hash keys on the client address', () => {
  const ids = ['a', 'b', 'c', 'd', 'e']
  const upstreams = []
  const open = []
  beforeAll(async () => {
    for (const id of ids) upstreams.push(await startUpstream((req, res) => { res.setHeader('x-id', id); res.end(id) }))
  })
  afterAll(() => Promise.all(upstreams.map((u) => u.close())))
  afterEach(async () => { await Promise.all(open.splice(0).map((lb) => lb.close({ graceMs: 100 }))) })

  /** Client addresses whose rendezvous winners differ from each other and from 127.0.0.1's. */
  function addresses () {
    const members = ids.map((id) => ({ id }))
    const home = rendezvous(members, '127.0.0.1').id
    const found = []
    for (let i = 1; found.length < 2 && i < 255; i++) {
      const address = `203.0.113.${i}`
      const winner = rendezvous(members, address).id
      if (winner !== home && !found.some((f) => f.winner === winner)) found.push({ address, winner })
    }
    expect(found).toHaveLength(2)
    return { home, found }
  }

  const start = async (options) => {
    const lb = await startBalancer({ backends: upstreams.map((u, i) => `${u.url}#id=${ids[i]}`), algo: 'ip-hash', port: 0, ...options })
    open.push(lb)
    return lb
  }

  test.each(['direct', 'http-proxy'])('engine %s: behind a trusted proxy, the right-most untrusted X-Forwarded-For address; otherwise the peer', async (engine) => {
    const { home, found } = addresses()
    const trusted = await start({ engine, trustedProxies: ['127.0.0.1/32', '10.0.0.0/8'] })
    for (const { address, winner } of found) {
      // 10.1.2.3 is a trusted hop too; 192.0.2.1 (left of the client) is whatever the client claimed
      const res = await rawRequest(trusted.url, '/p', { headers: { 'x-forwarded-for': `192.0.2.1, ${address}, 10.1.2.3` } })
      expect(res.headers['x-id']).toBe(winner)
    }
    expect(JSON.parse((await rawRequest(trusted.url, '/_polistes/stats')).body).policy.state).toEqual({ hashed: 2, unaddressed: 0 })
    const untrusted = await start({ engine })
    for (const { address } of found) {
      const res = await rawRequest(untrusted.url, '/p', { headers: { 'x-forwarded-for': address } })
      expect(res.headers['x-id']).toBe(home) // a spoofed X-Forwarded-For moves nothing
    }
  })

  test('the upgrade path picks by the same address', async () => {
    const { found } = addresses()
    const lb = await start({ trustedProxies: ['127.0.0.1'] })
    for (const { address, winner } of found) {
      const conn = new RawConnection(lb.url)
      try {
        await conn.send(`GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Forwarded-For: ${address}\r\n\r\n`)
        const { responses } = await conn.read(1)
        expect(responses[0].headers['x-id']).toBe(winner)
      } finally {
        conn.destroy()
      }
    }
  })
})

describe('forwardingHeaders and requestHeaders (pure)', () => {
  const req = (headers, socket) => ({ headers, socket: { remoteAddress: '192.0.2.4', encrypted: false, ...socket } })
  const pairs = (flat) => Object.fromEntries(flat.flatMap((v, i) => (i % 2 === 0 ? [[v, flat[i + 1]]] : [])))

  test('an HTTPS listener: proto https, the default port 443 when Host has none', () => {
    expect(pairs(forwardingHeaders(req({ host: 'a.example', 'x-forwarded-proto': 'http' }, { encrypted: true }), false))).toEqual({
      'x-forwarded-for': '192.0.2.4', 'x-forwarded-port': '443', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'a.example'
    })
  })

  test('untrusted: none of the client\'s forwarding headers is left, whatever their number', () => {
    const headers = { host: 'a.example', accept: '*/*', ...Object.fromEntries(Object.keys(CLAIMS).filter((h) => h !== 'host').map((h) => [h, 'x'])), 'x-forwarded-prefix': '/admin', 'x-forwarded-scheme': 'https', 'x-forwarded-server': 'x' }
    const out = pairs(requestHeaders(req(headers), { keepTransferEncoding: true, close: false }))
    expect(out).toEqual({ host: 'a.example', accept: '*/*', 'x-forwarded-for': '192.0.2.4', 'x-forwarded-port': '80', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'a.example', via: '1.1 polistes' })
  })

  test('trusted: kept, X-Forwarded-For appended to', () => {
    const out = pairs(requestHeaders(req({ host: 'a.example', 'x-forwarded-for': '203.0.113.7', forwarded: 'for=203.0.113.7', 'x-forwarded-prefix': '/app' }), { keepTransferEncoding: true, close: false, trusted: true }))
    expect(out).toMatchObject({ 'x-forwarded-for': '203.0.113.7, 192.0.2.4', forwarded: 'for=203.0.113.7', 'x-forwarded-prefix': '/app', 'x-forwarded-host': 'a.example' })
  })
})

describe('createTrust (pure)', () => {
  const trust = createTrust(['127.0.0.1/32', '10.0.0.0/8', '::1/128', 'fd00::/8'])

  test('matches IPv4, IPv6 and IPv4-mapped IPv6 peers', () => {
    expect(trust.trusts('127.0.0.1')).toBe(true)
    expect(trust.trusts('::ffff:127.0.0.1')).toBe(true)
    expect(trust.trusts('10.200.0.1')).toBe(true)
    expect(trust.trusts('::1')).toBe(true)
    expect(trust.trusts('fd12::5')).toBe(true)
    expect(trust.trusts('127.0.0.2')).toBe(false)
    expect(trust.trusts('fe80::1')).toBe(false)
    expect(trust.trusts(undefined)).toBe(false)
    expect(trust.trusts('not-an-ip')).toBe(false)
  })

  test.each([
    ['untrusted peer: its own address, whatever it claims', '192.0.2.9', '203.0.113.7', '192.0.2.9'],
    ['trusted peer without X-Forwarded-For', '127.0.0.1', undefined, '127.0.0.1'],
    ['the right-most untrusted entry', '127.0.0.1', '192.0.2.1, 203.0.113.7, 10.0.0.5', '203.0.113.7'],
    ['all trusted: the left-most', '127.0.0.1', '10.0.0.1, 10.0.0.2', '10.0.0.1'],
    ['IPv6 entries', '::1', '2001:db8::7, fd00::1', '2001:db8::7'],
    ['garbage stops the walk at the last trusted hop', '127.0.0.1', '203.0.113.7, unknown, 10.0.0.3', '10.0.0.3']
  ])('%s', (_name, peer, xff, client) => {
    expect(trust.clientAddress(peer, xff)).toBe(client)
  })

  test('an empty list trusts nobody (null: no check at all)', () => {
    expect(createTrust([])).toBeNull()
  })
})

describe('bad trustedProxies: a clear error', () => {
  test.each([
    [['10.0.0.0/33'], /trustedProxies: "10.0.0.0\/33" is not a CIDR \(the prefix length must be 0 to 32 for IPv4\)/],
    [['::1/129'], /the prefix length must be 0 to 128 for IPv6/],
    [['10.0.0/8'], /"10.0.0" is not an IP address/],
    [['10.0.0.0/x'], /the prefix length must be 0 to 32/],
    [['example.com'], /"example.com" is not an IP address/],
    [[''], /"" is not an IP address/],
    [[8], /8 is not a CIDR/],
    ['10.0.0.0/8', /trustedProxies must be a list of CIDRs, e.g. \["10.0.0.0\/8", "::1\/128"\], got "10.0.0.0\/8"/]
  ])('%j', (value, message) => {
    expect(() => parseTrustedProxies(value)).toThrow(message)
    expect(() => validateOptions({ trustedProxies: value })).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(message) }))
  })

  test('the balancer and the config resolver refuse them before listening', async () => {
    expect(() => resolveConfig({ trustedProxies: ['300.0.0.1/8'] })).toThrow(/trustedProxies: "300.0.0.1\/8" is not a CIDR/)
    await expect(startBalancer({ backends: ['http://127.0.0.1:9'], port: 0, trustedProxies: ['::1/200'] })).rejects.toThrow(/::1\/200/)
  })

  test('a config file may list them; a string there is refused', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-xfwd-'))
    try {
      const good = path.join(dir, 'good.json')
      fs.writeFileSync(good, JSON.stringify({ trustedProxies: ['10.0.0.0/8', '::1/128'], maxEventStreams: 4 }))
      expect(resolveConfig({}, readConfigFile(good))).toMatchObject({ trustedProxies: ['10.0.0.0/8', '::1/128'], maxEventStreams: 4 })
      const bad = path.join(dir, 'bad.json')
      fs.writeFileSync(bad, JSON.stringify({ trustedProxies: '10.0.0.0/8' }))
      expect(() => resolveConfig({}, readConfigFile(bad))).toThrow(/trustedProxies must be a list of CIDRs/)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('--trusted-proxies on the command line', () => {
  test('a comma list of CIDRs, IPv4 and IPv6', () => {
    expect(parseArgs(['--trusted-proxies', '10.0.0.0/8,::1/128']).flags.trustedProxies).toEqual(['10.0.0.0/8', '::1/128'])
    expect(parseArgs(['--trusted-proxies', '10.0.0.0/8, 192.168.0.0/16']).flags.trustedProxies).toEqual(['10.0.0.0/8', '192.168.0.0/16'])
  })

  test.each([
    [['--trusted-proxies', '10.0.0.0/8,10.0.0.0/40'], /^polistes: --trusted-proxies: "10.0.0.0\/40" is not a CIDR \(the prefix length must be 0 to 32 for IPv4\)/],
    [['--trusted-proxies', 'localhost'], /^polistes: --trusted-proxies: "localhost" is not a CIDR/]
  ])('%j: one line on stderr, exit 2', async (args, message) => {
    const { code, stderr, stdout } = await runNode(cliEntry(), args, { timeoutMs: 10000 })
    expect(code).toBe(2)
    expect(stderr).toMatch(message)
    expect(stderr.trim().split('\n')).toHaveLength(1)
    expect(stdout).toBe('')
  })

  test('the running CLI keeps a trusted peer\'s chain and replaces an untrusted one\'s', async () => {
    let seen
    const upstream = await startUpstream((req, res) => { seen = req.headers; res.end('ok') })
    const trusted = startCli(['--port', '0', '--backends', upstream.url, '--trusted-proxies', '127.0.0.1/32,::1/128'])
    const untrusted = startCli(['--port', '0', '--backends', upstream.url])
    try {
      const [a, b] = await Promise.all([trusted.ready, untrusted.ready])
      await rawRequest(a.url, '/x', { headers: { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' } })
      expect([seen['x-forwarded-for'], seen['x-forwarded-proto']]).toEqual(['203.0.113.7, 127.0.0.1', 'https'])
      await rawRequest(b.url, '/x', { headers: { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https' } })
      expect([seen['x-forwarded-for'], seen['x-forwarded-proto']]).toEqual(['127.0.0.1', 'http'])
    } finally {
      trusted.child.kill('SIGKILL')
      untrusted.child.kill('SIGKILL')
      await upstream.close()
    }
  })
})

describe('reload', () => {
  test('trustedProxies changes on a running balancer, for the next request', async () => {
    let seen
    const upstream = await startUpstream((req, res) => { seen = req.headers; res.end('ok') })
    const lb = await startBalancer({ backends: [upstream.url], port: 0 })
    try {
      await rawRequest(lb.url, '/x', { headers: { 'x-forwarded-for': '203.0.113.7' } })
      expect(seen['x-forwarded-for']).toBe('127.0.0.1')
      const result = lb.reconfigure({ backends: [upstream.url], trustedProxies: ['127.0.0.0/8'] })
      expect(result.changed).toContain('trustedProxies')
      expect(result.restartNeeded).toEqual([])
      await rawRequest(lb.url, '/x', { headers: { 'x-forwarded-for': '203.0.113.7' } })
      expect(seen['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1')
      expect(() => lb.reconfigure({ backends: [upstream.url], trustedProxies: ['bad'] })).toThrow(/"bad" is not a CIDR/)
      await rawRequest(lb.url, '/x', { headers: { 'x-forwarded-for': '203.0.113.7' } })
      expect(seen['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1') // the refused reload changed nothing
    } finally {
      await lb.close({ graceMs: 100 })
      await upstream.close()
    }
  })
})
