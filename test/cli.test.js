'use strict'

const path = require('node:path')
const fs = require('node:fs')
const os = require('node:os')
const http = require('node:http')
const https = require('node:https')
const { once } = require('node:events')
const { request, startUpstream, waitFor, runNode, startCli, cliEntry, makeCertificates } = require('./helper')

const CLI = cliEntry()

/** Run the CLI to completion (bounded) and collect its output. */
const run = (args) => runNode(CLI, args, { timeoutMs: 10000 })

const oneLine = (text) => text.trim().split('\n').length === 1 && !/\n\s+at /.test(text)

describe('bad input: one clear line on stderr and exit code 2', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-cli-'))
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

  test.each([
    ['unknown algorithm', ['--algo', 'fastest'], /unknown algorithm "fastest"/],
    ['malformed backend URL', ['--backends', 'http://127.0.0.1:notaport'], /malformed URL/],
    ['unknown flag', ['--colour', 'red'], /Unknown argument/],
    ['non-numeric port', ['--port', 'eighty'], /--port must be a number/],
    ['out-of-range port', ['--port', '70000'], /port must be an integer in \[0, 65535\]/],
    ['bad policy options', ['--policy-options', '{nope'], /--policy-options is not valid JSON/],
    ['unknown policy option (the old --help example)', ['--policy-options', '{"maxRounds":4}'], /^polistes: wasp: unknown option "maxRounds"; known options: .*\brounds\b/],
    ['unknown option of another policy', ['--algo', 'chash-bounded', '--policy-options', '{"rounds":4}'], /chash-bounded: unknown option "rounds"; known options: balanceFactor, replicas/],
    ['health check path without a slash', ['--health-check', 'health'], /healthCheck.path must be a path starting with "\/"/],
    ['bad expected status', ['--health-check', '/h', '--health-expect', 'ok'], /healthCheck.expectStatus must be a status/],
    ['zero rise', ['--health-rise', '0'], /healthCheck.rise must be an integer in \[1, 1000\]/],
    ['negative slow start', ['--slow-start', '-5'], /slowStartMs must be a number of ms >= 0/],
    ['unknown retry condition', ['--retry-on', '503,slow'], /--retry-on must be a comma list of statuses and\/or timeout, e.g. 503,timeout, got "503,slow"/],
    ['zero try timeout', ['--try-timeout', '0'], /tryTimeoutMs must be a positive number, got 0/],
    ['try timeout above the inactivity timeout', ['--try-timeout', '5000', '--timeout', '1000'], /tryTimeoutMs \(5000\) must not exceed timeoutMs \(1000\)/],
    ['--watch without --config', ['--watch'], /--watch needs --config/]
  ])('%s', async (_name, args, message) => {
    const { code, stderr, stdout } = await run(args)
    expect(code).toBe(2)
    expect(stderr).toMatch(message)
    expect(stderr).toMatch(/^polistes: /)
    expect(oneLine(stderr)).toBe(true)
    expect(stdout).toBe('')
  })

  test('malformed JSON config', async () => {
    const file = path.join(tmp, 'broken.json')
    fs.writeFileSync(file, '{ "address": "127.0.0.1:8080", ')
    const { code, stderr } = await run(['--config', file])
    expect(code).toBe(2)
    expect(stderr).toMatch(/is not valid JSON/)
    expect(oneLine(stderr)).toBe(true)
  })

  test('invalid JSON config', async () => {
    const file = path.join(tmp, 'invalid.json')
    fs.writeFileSync(file, JSON.stringify({ address: '127.0.0.1:8080', strategy: 'RoundRobin', backends: ['ftp://127.0.0.1:21'] }))
    const { code, stderr } = await run(['--config', file])
    expect(code).toBe(2)
    expect(stderr).toMatch(/only http:\/\/ and https:\/\/ backends are supported/)
    expect(oneLine(stderr)).toBe(true)
  })

  test('an unreadable or mismatched TLS file', async () => {
    const certs = makeCertificates()
    try {
      const missing = await run(['--backends', 'http://127.0.0.1:9', '--port', '0', '--tls-cert', path.join(certs.dir, 'none.pem'), '--tls-key', certs.key])
      expect(missing.code).toBe(2)
      expect(missing.stderr).toBe(`polistes: --tls-cert ${path.join(certs.dir, 'none.pem')}: cannot read it (ENOENT)\n`)
      const mismatch = await run(['--backends', 'http://127.0.0.1:9', '--port', '0', '--tls-cert', certs.cert, '--tls-key', certs.otherKey])
      expect(mismatch.code).toBe(2)
      expect(mismatch.stderr).toMatch(/^polistes: --tls-key \S+ cannot be used with --tls-cert \S+: .*key values mismatch/)
      expect(oneLine(mismatch.stderr)).toBe(true)
      const alone = await run(['--backends', 'http://127.0.0.1:9', '--tls-cert', certs.cert])
      expect(alone.stderr).toMatch(/^polistes: tlsCert and tlsKey go together/)
      const junkCa = await run(['--backends', 'http://127.0.0.1:9', '--port', '0', '--upstream-ca', certs.key])
      expect(junkCa.stderr).toMatch(/^polistes: --upstream-ca \S+: no PEM certificate in it/)
    } finally {
      certs.remove()
    }
  })

  test('port in use', async () => {
    const blocker = http.createServer()
    blocker.listen(0, '127.0.0.1')
    await once(blocker, 'listening')
    const upstream = await startUpstream((req, res) => res.end('ok'))
    try {
      const { code, stderr } = await run(['--port', String(blocker.address().port), '--backends', upstream.url])
      expect(code).toBe(2)
      expect(stderr).toBe(`polistes: balancer: 127.0.0.1:${blocker.address().port} is already in use (choose another with --port)\n`)
      expect(oneLine(stderr)).toBe(true)
    } finally {
      blocker.close()
      await upstream.close()
    }
  })

  test('embedded fleet port in use', async () => {
    const blocker = http.createServer()
    blocker.listen(0, '127.0.0.1')
    await once(blocker, 'listening')
    try {
      const { code, stderr } = await run(['--port', '0', '--fleet-base-port', String(blocker.address().port)])
      expect(code).toBe(2)
      expect(stderr).toMatch(/already in use \(embedded fleet: choose other ports with --fleet-base-port/)
      expect(oneLine(stderr)).toBe(true)
    } finally {
      blocker.close()
    }
  })

  test('the library CLI without a fleet starter needs --backends', async () => {
    const { main } = require('../src/run/cli')
    await expect(main(['--log-level', 'silent'])).rejects.toMatchObject({ code: 'ERR_POLISTES_NO_BACKENDS', message: /no backends given/ })
  })

  test('--help prints usage and exits 0', async () => {
    const { code, stdout } = await run(['--help'])
    expect(code).toBe(0)
    expect(stdout).toMatch(/--algo/)
    expect(stdout).toMatch(/--no-keep-alive|--keep-alive/)
  })
})

describe('running', () => {
  test('serves through external backends and stops cleanly on SIGTERM, finishing in-flight requests', async () => {
    const upstream = await startUpstream((req, res) => setTimeout(() => res.end('slow'), 300))
    const cli = startCli(['--port', '0', '--backends', upstream.url, '--algo', 'round-robin'])
    try {
      const ready = await cli.ready
      expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const pending = request(`${ready.url}/x`)
      await waitFor(() => upstream.requests === 1)
      cli.child.kill('SIGTERM')
      const res = await pending
      expect(res.status).toBe(200)
      expect(res.body).toBe('slow')
      const { code } = await cli.exited
      expect(code).toBe(0)
      expect(cli.lines.map((l) => l.msg)).toContain('stopped')
    } finally {
      cli.child.kill('SIGKILL')
      await upstream.close()
    }
  })

  test('with --tls-cert/--tls-key and --admin-port it serves HTTPS and the admin surface on loopback only', async () => {
    const certs = makeCertificates()
    const upstream = await startUpstream((req, res) => res.end(`proto=${req.headers['x-forwarded-proto']}`))
    const cli = startCli(['--port', '0', '--backends', upstream.url, '--tls-cert', certs.cert, '--tls-key', certs.key, '--admin-port', '0'])
    try {
      const ready = await cli.ready
      expect(ready.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
      expect(ready.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const body = await new Promise((resolve, reject) => {
        https.get(`${ready.url}/x`, { ca: fs.readFileSync(certs.ca) }, (res) => {
          let text = ''
          res.on('data', (d) => { text += d })
          res.on('end', () => resolve(text))
        }).on('error', reject)
      })
      expect(body).toBe('proto=https')
      expect((await request(`${ready.adminUrl}/_polistes/stats`)).status).toBe(200)
      cli.child.kill('SIGTERM')
      expect((await cli.exited).code).toBe(0)
    } finally {
      cli.child.kill('SIGKILL')
      await upstream.close()
      certs.remove()
    }
  })

  test('without --backends it starts the embedded fleet of seven and serves pages', async () => {
    const cli = startCli(['--port', '0', '--fleet-base-port', '0', '--algo', 'round-robin'])
    try {
      const ready = await cli.ready
      const servers = new Set()
      for (let i = 0; i < 7; i++) {
        const res = await request(`${ready.url}/page1.html`)
        expect(res.status).toBe(200)
        servers.add(res.headers['x-server'])
      }
      expect(servers.size).toBe(7)
      // the fleet is health-checked on its /_stats path (checks start at once)
      const upstreams = await waitFor(async () => {
        const list = JSON.parse((await request(`${ready.url}/_polistes/stats`)).body).upstreams
        return list.every((u) => u.check && u.check.last) && list
      })
      for (const u of upstreams) expect(u).toMatchObject({ state: 'up', check: { last: { ok: true, status: 200 } } })
      cli.child.kill('SIGINT')
      expect((await cli.exited).code).toBe(0)
    } finally {
      cli.child.kill('SIGKILL')
    }
  })
})
