'use strict'

const path = require('node:path')
const fs = require('node:fs')
const os = require('node:os')
const http = require('node:http')
const https = require('node:https')
const { once } = require('node:events')
const { request, startUpstream, waitFor, runNode, startCli, cliEntry, makeCertificates } = require('./helper')
const { OPTIONS, GROUPS, EXAMPLES } = require('../src/run/cli-options')
const { startBalancer } = require('../src/balancer')
const { readConfigFile, resolveConfig } = require('../src/config/config')
const { balancerOptions } = require('../src/run/reload')

const CLI = cliEntry()

/** Run the CLI to completion (bounded) and collect its output. */
const run = (args) => runNode(CLI, args, { timeoutMs: 10000 })

/** `polistes --help`, run once for the suite's two describes that read it. */
let helpRun
const runHelp = () => (helpRun ??= run(['--help']))

const oneLine = (text) => text.trim().split('\n').length === 1 && !/\n\s+at /.test(text)

describe('bad input: one clear line on stderr and exit code 2', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-cli-'))
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

  test.each([
    ['unknown algorithm', ['--algo', 'fastest'], /unknown algorithm "fastest"/],
    ['malformed backend URL', ['--backends', 'http://127.0.0.1:notaport'], /malformed URL/],
    ['unknown flag, named once as typed', ['--bogus-flag', 'red'], /^polistes: unknown option --bogus-flag \(polistes --help lists them\)$/],
    ['unknown camelCase flag', ['--bogusFlag'], /^polistes: unknown option --bogusFlag /],
    ['unknown short flag', ['-x'], /^polistes: unknown option -x /],
    ['a stray argument', ['8080'], /^polistes: unexpected argument "8080"/],
    ['a bare --port', ['--port'], /^polistes: --port needs a value$/],
    ['a bare -p', ['-p'], /^polistes: -p \(--port\) needs a value$/],
    ['--port followed by another flag', ['--port', '--host', '127.0.0.1'], /^polistes: --port needs a value$/],
    ['--port= with nothing after it', ['--port='], /^polistes: --port needs a value$/],
    ['a bare --host (a string)', ['--host'], /^polistes: --host needs a value$/],
    ['a bare --health-check (nested key)', ['--health-check'], /^polistes: --health-check needs a value$/],
    ['a bad --log-level', ['--log-level', 'loud'], /^polistes: --log-level: got "loud"; expected one of: "fatal", /],
    ['zero timeout: the flag, not the key', ['--timeout', '0'], /^polistes: --timeout must be a positive number of ms, got 0$/],
    ['zero fleet size', ['--fleet-size', '0'], /^polistes: --fleet-size must be an integer in \[1, 1000\], got 0$/],
    ['a fleet workers list of the wrong length', ['--fleet-size', '3', '--fleet-workers', '2,3'], /^polistes: --fleet-workers has 2 values for 3 backends \(--fleet-size\)/],
    ['an unknown fleet service', ['--fleet-service', 'gpu'], /^polistes: --fleet-service must be timer or cpu, got "gpu"$/],
    ['a bad backend weight', ['--backends', 'http://127.0.0.1:9101#w=0'], /^polistes: --backends: backend #1: weight must be a positive number, got "0"$/],
    ['non-numeric port', ['--port', 'eighty'], /^polistes: --port must be a number$/],
    ['out-of-range port', ['--port', '70000'], /^polistes: --port must be an integer in \[0, 65535\], got 70000$/],
    ['bad policy options', ['--policy-options', '{nope'], /--policy-options is not valid JSON/],
    ['unknown policy option (the old --help example)', ['--policy-options', '{"maxRounds":4}'], /^polistes: --policy-options: wasp: unknown option "maxRounds"; known options: .*\brounds\b/],
    ['unknown option of another policy', ['--algo', 'chash-bounded', '--policy-options', '{"rounds":4}'], /chash-bounded: unknown option "rounds"; known options: balanceFactor, replicas/],
    ['health check path without a slash', ['--health-check', 'health'], /^polistes: --health-check must be a path starting with "\/"/],
    ['bad expected status', ['--health-check', '/h', '--health-expect', 'ok'], /^polistes: --health-expect must be a status/],
    ['zero rise', ['--health-rise', '0'], /^polistes: --health-rise must be an integer in \[1, 1000\]/],
    ['negative slow start', ['--slow-start', '-5'], /^polistes: --slow-start must be a number of ms >= 0/],
    ['unknown retry condition', ['--retry-on', '503,slow'], /--retry-on must be a comma list of statuses and\/or timeout, e.g. 503,timeout, got "503,slow"/],
    ['zero try timeout', ['--try-timeout', '0'], /^polistes: --try-timeout must be a positive number of ms, got 0$/],
    ['try timeout above the inactivity timeout', ['--try-timeout', '5000', '--timeout', '1000'], /^polistes: --try-timeout \(5000\) must not exceed --timeout \(1000\)/],
    ['--watch without --config', ['--watch'], /--watch needs --config/]
  ])('%s', async (_name, args, message) => {
    const { code, stderr, stdout } = await run(args)
    expect(code).toBe(2)
    expect(stderr.trimEnd()).toMatch(message)
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
      expect(alone.stderr).toBe('polistes: --tls-cert and --tls-key go together: give both or neither\n')
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

  test('admin port in use: the message names --admin-port', async () => {
    const blocker = http.createServer()
    blocker.listen(0, '127.0.0.1')
    await once(blocker, 'listening')
    const upstream = await startUpstream((req, res) => res.end('ok'))
    try {
      const { code, stderr } = await run(['--port', '0', '--admin-port', String(blocker.address().port), '--backends', upstream.url])
      expect(code).toBe(2)
      expect(stderr).toBe(`polistes: admin listener: 127.0.0.1:${blocker.address().port} is already in use (choose another with --admin-port)\n`)
    } finally {
      blocker.close()
      await upstream.close()
    }
  })

  test.each([
    ['a bad value', { timeoutMs: 0 }, [], 'config file FILE: timeoutMs must be a positive number of ms, got 0'],
    ['a nested key', { healthCheck: { path: '/h', rise: 0 } }, [], 'config file FILE: healthCheck.rise must be an integer in [1, 1000], got 0'],
    ['the seed\'s strategy', { strategy: 'Fastest' }, [], /^config file FILE: strategy: unknown algorithm "fastest"; expected one of: /],
    ['the port of address', { address: '127.0.0.1:70000' }, [], 'config file FILE: the port of address must be an integer in [0, 65535], got 70000'],
    ['a backend', { backends: ['http://127.0.0.1:9101#w=0'] }, [], 'config file FILE: backends: backend #1: weight must be a positive number, got "0"'],
    ['a file value against a flag', { tryTimeoutMs: 5000 }, ['--timeout', '1000'], /^config file FILE: tryTimeoutMs \(5000\) must not exceed --timeout \(1000\)/],
    ['a flag over a good file value', { timeoutMs: 1000 }, ['--timeout', '-1'], '--timeout must be a positive number of ms, got -1']
  ])('a config-file error names the file and the key: %s', async (_name, json, flags, expected) => {
    const file = path.join(tmp, `named-${_name.replace(/\W+/g, '-')}.json`)
    fs.writeFileSync(file, JSON.stringify(json))
    const { code, stderr } = await run(['--config', file, ...flags])
    expect(code).toBe(2)
    const line = stderr.replace(/^polistes: /, '').trimEnd().replace(file, 'FILE')
    if (typeof expected === 'string') expect(line).toBe(expected)
    else expect(line).toMatch(expected)
    expect(oneLine(stderr)).toBe(true)
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
    const { code, stdout } = await runHelp()
    expect(code).toBe(0)
    expect(stdout).toMatch(/--algo/)
    expect(stdout).toMatch(/--no-keep-alive|--keep-alive/)
  })
})

describe('--help', () => {
  let help
  beforeAll(async () => {
    const { code, stdout } = await runHelp()
    expect(code).toBe(0)
    help = stdout
  })

  /** group title → the flags listed under it, in --help's order */
  const sections = () => {
    const groups = {}
    let current = null
    for (const line of help.slice(0, help.indexOf('\nExamples:')).split('\n')) {
      if (/^\S.*:$/.test(line)) current = (groups[line] = [])
      const m = /^ +(?:-\w, +)?--([a-z][a-z-]*)/.exec(line)
      if (m && current) current.push(m[1])
    }
    return groups
  }

  test('every option is listed in exactly one group, the one it is declared in', () => {
    const groups = sections()
    const listed = Object.entries(groups).flatMap(([title, flags]) => flags.map((flag) => ({ flag, title })))
    const expected = [...OPTIONS.map((o) => ({ flag: o.flag, title: GROUPS[o.group] })), { flag: 'help', title: GROUPS.general }, { flag: 'version', title: GROUPS.general }]
    expect(listed.sort((a, b) => a.flag.localeCompare(b.flag))).toEqual(expected.sort((a, b) => a.flag.localeCompare(b.flag)))
    expect(Object.keys(groups).filter((t) => groups[t].length > 0)).toEqual(Object.values(GROUPS)) // in order, none empty, no "Options:"
    expect(Object.keys(GROUPS)).toEqual(['balancing', 'backends', 'health', 'front', 'observability', 'fleet', 'general'])
  })

  test('examples, and where every setting is described', () => {
    const examples = help.slice(help.indexOf('\nExamples:'))
    const flat = examples.replace(/\s+/g, ' ')
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(3)
    for (const [command, description] of EXAMPLES) {
      for (const word of [...command.replace('$0', 'polistes').split(' '), ...description.split(' ')]) expect(examples).toContain(word)
    }
    const docs = /docs\/configuration\.md \((\S+)\)/.exec(flat)
    expect(docs).not.toBeNull()
    expect(fs.readFileSync(docs[1], 'utf8')).toMatch(/^# Configuration/)
  })
})

describe('backends on the schemes\' default ports (:80, :443)', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-cli-ports-'))
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const BACKENDS = ['http://127.0.0.1:80', 'https://127.0.0.1:443#w=2']
  const EXPECTED = [
    { id: '127.0.0.1:80', url: 'http://127.0.0.1:80', weight: 1 },
    { id: '127.0.0.1:443', url: 'https://127.0.0.1:443', weight: 2 }
  ]
  // nothing is sent to them: the balancer's stats show what it targets
  const upstreamsOf = async (base) => JSON.parse((await request(`${base}/_polistes/stats`)).body).upstreams.map(({ id, url, weight }) => ({ id, url, weight }))

  test.each([
    ['--backends', () => ['--backends', BACKENDS.join(',')]],
    ['a config file', () => {
      const file = path.join(tmp, 'ports.json')
      fs.writeFileSync(file, JSON.stringify({ backends: BACKENDS }))
      return ['--config', file]
    }]
  ])('from %s: the CLI starts and targets them', async (_name, args) => {
    const cli = startCli(['--port', '0', ...args()])
    try {
      const ready = await cli.ready
      expect(await upstreamsOf(ready.url)).toEqual(EXPECTED)
      cli.child.kill('SIGTERM')
      expect((await cli.exited).code).toBe(0)
    } finally {
      cli.child.kill('SIGKILL')
    }
  })

  test('through the API: as URLs, and as the config resolves them', async () => {
    for (const backends of [BACKENDS, resolveConfig({}, { backends: BACKENDS }).backends]) {
      const lb = await startBalancer({ backends, port: 0 })
      try {
        expect(await upstreamsOf(lb.url)).toEqual(EXPECTED)
      } finally {
        await lb.close()
      }
    }
    const file = path.join(tmp, 'api.json')
    fs.writeFileSync(file, JSON.stringify({ receiver_addresses: BACKENDS, port: 0 }))
    const lb = await startBalancer(balancerOptions(resolveConfig({}, readConfigFile(file))))
    try {
      expect(await upstreamsOf(lb.url)).toEqual(EXPECTED)
    } finally {
      await lb.close()
    }
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

  test('round-robin honours a backend\'s weight (#w=2): 4, 2, 2 of 8 requests, interleaved as nginx does', async () => {
    const upstreams = await Promise.all(['a', 'b', 'c'].map((name) => startUpstream((req, res) => res.end(name))))
    const cli = startCli(['--port', '0', '--algo', 'round-robin', '--backends', upstreams.map((u, i) => (i === 0 ? `${u.url}#w=2` : u.url)).join(',')])
    try {
      const ready = await cli.ready
      const bodies = []
      for (let i = 0; i < 8; i++) bodies.push((await request(`${ready.url}/x`)).body)
      expect(bodies).toEqual(['a', 'b', 'c', 'a', 'a', 'b', 'c', 'a'])
      cli.child.kill('SIGTERM')
      expect((await cli.exited).code).toBe(0)
    } finally {
      cli.child.kill('SIGKILL')
      await Promise.all(upstreams.map((u) => u.close()))
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
