'use strict'

const fs = require('node:fs')
const https = require('node:https')
const { createUpstreamAgents } = require('../src/proxy/upstream-agents')
const { startBalancer } = require('../src/balancer')
const { request, startUpstream, makeCertificates, logSink } = require('./helper')

let certs
let tls
beforeAll(() => {
  certs = makeCertificates()
  tls = { cert: fs.readFileSync(certs.cert), key: fs.readFileSync(certs.key) }
})
afterAll(() => certs.remove())

describe('createUpstreamAgents', () => {
  test('one keep-alive http agent for every http upstream; none without keep-alive', () => {
    const agents = createUpstreamAgents()
    const a = agents.agentFor(new URL('http://127.0.0.1:1'))
    expect(a).toBeInstanceOf(require('node:http').Agent)
    expect(a.keepAlive).toBe(true)
    expect(agents.agentFor(new URL('http://127.0.0.1:2'))).toBe(a)
    agents.close()
    expect(createUpstreamAgents({ keepAlive: false }).agentFor(new URL('http://127.0.0.1:1'))).toBe(false)
  })

  test('one https agent per https origin, named after its host (none for an IP address), verifying', () => {
    const agents = createUpstreamAgents({ ca: Buffer.from('x') })
    const byName = agents.agentFor(new URL('https://localhost:8443'))
    expect(byName).toBeInstanceOf(https.Agent)
    expect(agents.agentFor(new URL('https://localhost:8443'))).toBe(byName)
    expect(byName.options).toMatchObject({ keepAlive: true, servername: 'localhost', rejectUnauthorized: true })
    expect(byName.options.ca.toString()).toBe('x')
    const byIp = agents.agentFor(new URL('https://[::1]:8443'))
    expect(byIp).not.toBe(byName)
    expect(byIp.options.servername).toBe('')
    agents.close()
  })
})

describe.each(['http-proxy', 'node-http', 'direct'])('https upstreams behind the balancer (engine %s)', (engine) => {
  let upstream
  let lb
  afterEach(async () => {
    if (lb) await lb.close()
    if (upstream) await upstream.close()
    lb = upstream = undefined
  })

  test('are proxied over TLS, verified against --upstream-ca, over one kept-alive connection', async () => {
    upstream = await startUpstream((req, res) => res.end(`tls ${req.socket.encrypted} ${req.url}`), { tls })
    lb = await startBalancer({ backends: [upstream.url], port: 0, engine, upstreamCa: certs.ca })
    for (let i = 0; i < 5; i++) {
      const res = await request(`${lb.url}/page${i}.html`)
      expect(res).toMatchObject({ status: 200, body: `tls true /page${i}.html` })
    }
    expect(upstream.connections).toBe(1)
  })

  test('an upstream certificate no trusted CA signed is refused: 502, nothing reaches it', async () => {
    upstream = await startUpstream((req, res) => res.end('should not be reached'), { tls })
    const { logger, lines } = logSink('warn')
    lb = await startBalancer({ backends: [upstream.url], port: 0, engine, retries: 0, logger }) // Node's bundled CAs only
    const res = await request(`${lb.url}/x`)
    expect(res.status).toBe(502)
    expect(res.headers['x-polistes-error']).toBe('connect')
    expect(res.body).not.toMatch(/127\.0\.0\.1|localhost/) // the client is not told where the upstream is
    expect(lines.find((l) => l.msg === 'upstream failed').err).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify/i)
    expect(upstream.requests).toBe(0)
  })

  test('a self-signed upstream is trusted when its own certificate is the CA file', async () => {
    upstream = await startUpstream((req, res) => res.end('self'), { tls: { cert: fs.readFileSync(certs.selfSigned), key: fs.readFileSync(certs.selfSignedKey) } })
    lb = await startBalancer({ backends: [upstream.url], port: 0, engine, upstreamCa: certs.selfSigned })
    expect(await request(`${lb.url}/`)).toMatchObject({ status: 200, body: 'self' })
  })

  test('the name verified and sent as SNI is the backend URL\'s, not the client\'s Host header', async () => {
    upstream = await startUpstream((req, res) => res.end(`sni=${req.socket.servername} host=${req.headers.host}`), { tls })
    const port = new URL(upstream.url).port
    lb = await startBalancer({ backends: [`https://localhost:${port}`], port: 0, engine, upstreamCa: certs.ca })
    const res = await request(`${lb.url}/`, { headers: { host: 'www.example.com' } })
    expect(res).toMatchObject({ status: 200, body: 'sni=localhost host=www.example.com' })
  })

  test('a certificate for another name is refused even when a trusted CA signed it', async () => {
    // the CA's own certificate, served as a server certificate: trusted, but it names no host
    upstream = await startUpstream((req, res) => res.end('should not be reached'), { tls: { cert: fs.readFileSync(certs.ca), key: fs.readFileSync(certs.caKey) } })
    const { logger, lines } = logSink('warn')
    lb = await startBalancer({ backends: [upstream.url], port: 0, engine, retries: 0, upstreamCa: certs.ca, logger })
    const res = await request(`${lb.url}/`)
    expect(res.status).toBe(502)
    expect(lines.find((l) => l.msg === 'upstream failed').err).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID|altnames/i)
    expect(upstream.requests).toBe(0)
  })
})

describe('the undici engine and https upstreams', () => {
  test('are refused at start-up with one clear message, nothing silently ignored', () => {
    const { createBalancer } = require('../src/balancer')
    expect(() => createBalancer({ backends: ['http://127.0.0.1:9', 'https://localhost:9443'], port: 0, engine: 'undici' }))
      .toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(/engine undici does not proxy to https upstreams \(https:\/\/localhost:9443\)/) }))
  })
})
