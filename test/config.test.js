'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { readConfigFile, resolveConfig, withFlagNames, normalizeAlgo, parseAddress } = require('../src/config/config')
const { flagNames } = require('../src/run/cli-options')
const { parseBackend, parseBackends } = require('../src/pool/backend-spec')

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-config-'))
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))
const write = (name, text) => {
  const file = path.join(tmp, name)
  fs.writeFileSync(file, text)
  return file
}

describe('config file', () => {
  test("the seed's shape (address, strategy, receiver_addresses) is accepted", () => {
    const file = write('seed.json', JSON.stringify({ address: 'localhost:8090', strategy: 'RoundRobin', receiver_addresses: ['127.0.0.1:9101', '127.0.0.1:9102'] }))
    const config = resolveConfig({}, readConfigFile(file))
    expect(config).toMatchObject({ host: '127.0.0.1', port: 8090, algo: 'round-robin' })
    expect(config.backends.map((b) => b.url)).toEqual(['http://127.0.0.1:9101', 'http://127.0.0.1:9102'])
  })

  test('flags override the file', () => {
    const file = write('f.json', JSON.stringify({ address: '127.0.0.1:8090', strategy: 'random', backends: ['http://127.0.0.1:9101'] }))
    const config = resolveConfig({ port: 9999, algo: 'round-robin' }, readConfigFile(file))
    expect(config).toMatchObject({ port: 9999, algo: 'round-robin' })
  })

  test.each([
    ['missing file', null, /cannot read config file/],
    ['malformed JSON', '{"address": ', /not valid JSON/],
    ['not an object', '[1,2]', /must hold a JSON object/],
    ['unknown key', '{"adress": "x:1"}', /unknown key\(s\) adress/],
    ['bad address', '{"address": "nowhere"}', /address must look like/]
  ])('%s is a clear error', (_name, text, message) => {
    const file = text === null ? path.join(tmp, 'absent.json') : write(`bad-${_name}.json`, text)
    expect(() => readConfigFile(file)).toThrow(message)
    try { readConfigFile(file) } catch (err) { expect(err.code).toBe('ERR_POLISTES_BAD_CONFIG') }
  })

  test('an unknown strategy in the file is rejected with the list of algorithms', () => {
    const file = write('algo.json', JSON.stringify({ strategy: 'Fastest' }))
    expect(() => resolveConfig({}, readConfigFile(file))).toThrow(/unknown algorithm "fastest"; expected one of: .*round-robin/)
  })

  test('nested objects are checked too: an unknown healthCheck key or backend key names the key', () => {
    const hc = write('hc.json', JSON.stringify({ healthCheck: { path: '/h', interval: 5 } }))
    expect(() => readConfigFile(hc)).toThrow(/unknown healthCheck key\(s\) interval; allowed: path, intervalMs, timeoutMs, expectStatus, rise, fall/)
    const backend = write('backend.json', JSON.stringify({ backends: [{ url: 'http://127.0.0.1:9101', wieght: 2 }] }))
    expect(() => resolveConfig({}, readConfigFile(backend))).toThrow('backend #1: unknown key "wieght"; known keys: url, id, weight, region, backup, healthCheck')
    const own = write('own.json', JSON.stringify({ backends: [{ url: 'http://127.0.0.1:9101', healthCheck: { rise: 0 } }] }))
    expect(() => resolveConfig({}, readConfigFile(own))).toThrow('backend #1 healthCheck.rise must be an integer in [1, 1000], got 0')
  })

  test('health checks and slow start: file values under flags, defaults for the rest', () => {
    const file = write('health.json', JSON.stringify({ slowStartMs: 3000, healthCheck: { path: '/health', rise: 4 } }))
    const config = resolveConfig({ healthCheck: { rise: 5, intervalMs: 500 } }, readConfigFile(file))
    expect(config.slowStartMs).toBe(3000)
    expect(config.healthCheck).toEqual({ path: '/health', intervalMs: 500, timeoutMs: 1000, expectStatus: '200-399', rise: 5, fall: 3 })
  })

  test('policy options are checked by the policy when the config is resolved', () => {
    expect(() => resolveConfig({ policyOptions: { maxRounds: 4 } })).toThrow(/^wasp: unknown option "maxRounds"/)
    expect(resolveConfig({ policyOptions: { rounds: 4 } }).policyOptions).toEqual({ rounds: 4 })
  })

  test('out-of-range values are rejected', () => {
    expect(() => resolveConfig({ port: 70000 })).toThrow(/port must be an integer/)
    expect(() => resolveConfig({ timeoutMs: -1 })).toThrow(/timeoutMs must be a positive number/)
    expect(() => resolveConfig({ retries: 1.5 })).toThrow(/retries must be an integer/)
    expect(() => resolveConfig({ keepAlive: 'yes' })).toThrow(/keepAlive must be true or false/)
    expect(() => resolveConfig({ engine: 'nginx' })).toThrow(/unknown proxy engine "nginx"; expected one of: http-proxy, node-http, undici, direct/)
    expect(resolveConfig({ engine: 'undici' }).engine).toBe('undici')
    expect(resolveConfig({}).engine).toBe('direct')
    expect(() => resolveConfig({ maxHeaderSize: 100 })).toThrow(/maxHeaderSize must be an integer in \[1024, 1048576\]/)
    expect(() => resolveConfig({ adminPort: 'eight' })).toThrow(/adminPort must be an integer/)
    expect(() => resolveConfig({ headersTimeoutMs: 5000, requestTimeoutMs: 1000 })).toThrow(/headersTimeoutMs \(5000\) must not exceed requestTimeoutMs \(1000\)/)
    expect(() => resolveConfig({ tlsKey: 'k.pem' })).toThrow(/tlsCert and tlsKey go together/)
  })

  test('the front settings come from the file; TLS paths are read relative to it', () => {
    const front = { maxConnections: 500, headersTimeoutMs: 5000, requestTimeoutMs: 30000, keepAliveTimeoutMs: 65000, maxHeaderSize: 32768, maxBodySize: 0, adminHost: '::1' }
    const file = write('front.json', JSON.stringify({ ...front, tlsCert: 'tls/cert.pem', tlsKey: '/etc/polistes/key.pem', upstreamCa: 'ca.pem', adminPort: 9000 }))
    const config = resolveConfig({ adminPort: 9001 }, readConfigFile(file))
    expect(config).toMatchObject({ ...front, adminPort: 9001 })
    expect([config.tlsCert, config.tlsKey, config.upstreamCa]).toEqual([path.join(tmp, 'tls', 'cert.pem'), '/etc/polistes/key.pem', path.join(tmp, 'ca.pem')])
  })
})

describe('an error names where the setting came from', () => {
  const message = (fn) => {
    try {
      fn()
    } catch (err) {
      expect(err.code).toMatch(/^ERR_POLISTES_/)
      return err.message
    }
    throw new Error('no error')
  }
  const flags = (object) => withFlagNames(object, flagNames)

  test.each([
    ['a flag by its flag', { timeoutMs: 0 }, {}, '--timeout must be a positive number of ms, got 0'],
    ['a nested flag', { healthCheck: { rise: 0 } }, {}, '--health-rise must be an integer in [1, 1000], got 0'],
    ['a fleet flag', { fleet: { count: 0 } }, {}, '--fleet-size must be an integer in [1, 1000], got 0'],
    ['a file key by the file and the key', {}, { timeoutMs: 0 }, 'config file FILE: timeoutMs must be a positive number of ms, got 0'],
    ['a nested file key', {}, { healthCheck: { fall: 0 } }, 'config file FILE: healthCheck.fall must be an integer in [1, 1000], got 0'],
    ['a fleet file key', {}, { fleet: { missMs: -1 } }, 'config file FILE: fleet.missMs must be a non-negative number of ms, got -1'],
    ['a fleet list of the wrong length', {}, { fleet: { workers: [1, 2] } }, 'config file FILE: fleet.workers has 2 values for 7 backends (fleet.count): give one per backend, or one number for all'],
    ['the seed\'s receiver_addresses', {}, { receiver_addresses: ['127.0.0.1:1', '127.0.0.1:1'] }, 'config file FILE: receiver_addresses: duplicate backend id "127.0.0.1:1"'],
    ['a flag against a file key', { timeoutMs: 1000 }, { tryTimeoutMs: 2000 }, 'config file FILE: tryTimeoutMs (2000) must not exceed --timeout (1000): the inactivity timeout would always fire first'],
    ['a file key against a default, named as a key', {}, { headersTimeoutMs: 70000 }, 'config file FILE: headersTimeoutMs (70000) must not exceed requestTimeoutMs (60000)'],
    ['a flag against a default, named as a flag', { headersTimeoutMs: 70000 }, {}, '--headers-timeout (70000) must not exceed --request-timeout (60000)'],
    ['a flag over the file', { port: 70000 }, { port: 8080 }, '--port must be an integer in [0, 65535], got 70000'],
    ['a message that does not start with the key', { engine: 'nginx' }, {}, '--engine: unknown proxy engine "nginx"; expected one of: http-proxy, node-http, undici, direct']
  ])('%s', (_name, given, json, expected) => {
    const file = write(`origin-${_name.replace(/\W+/g, '-')}.json`, JSON.stringify(json))
    expect(message(() => resolveConfig(flags(given), readConfigFile(file))).replace(file, 'FILE')).toBe(expected)
  })

  test('the API\'s own objects keep the key names', () => {
    expect(message(() => resolveConfig({ timeoutMs: 0 }))).toBe('timeoutMs must be a positive number of ms, got 0')
    expect(message(() => resolveConfig({ policyOptions: { maxRounds: 4 } }))).toMatch(/^wasp: unknown option "maxRounds"/)
  })

  test('the flag map covers every key of a resolved config but graceMs (file only), plus backends and accessLogFile (no default)', () => {
    const keys = (object, prefix = '') => Object.entries(object).flatMap(([k, v]) => (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0 ? keys(v, `${prefix}${k}.`) : [`${prefix}${k}`]))
    expect(Object.keys(flagNames).sort()).toEqual([...keys(resolveConfig({})).filter((k) => k !== 'graceMs'), 'backends', 'accessLogFile'].sort())
  })
})

describe('names and addresses', () => {
  test.each([['RoundRobin', 'round-robin'], ['IpHash', 'ip-hash'], ['round-robin', 'round-robin'], ['LeastConnections', 'least-connections'], ['wasp', 'wasp']])('%s normalizes to %s', (input, output) => {
    expect(normalizeAlgo(input)).toBe(output)
  })

  test.each([['localhost:80', { host: '127.0.0.1', port: 80 }], ['[::1]:8080', { host: '::1', port: 8080 }], [':8080', { host: '127.0.0.1', port: 8080 }]])('address %s', (input, output) => {
    expect(parseAddress(input, 'x')).toEqual(output)
  })
})

describe('backend URLs', () => {
  test('fragment carries region, weight and id', () => {
    expect(parseBackend('http://127.0.0.1:9101#eu&w=3')).toEqual({ id: '127.0.0.1:9101', url: 'http://127.0.0.1:9101', weight: 3, region: 'eu' })
    expect(parseBackend('http://127.0.0.1:9101#region=asia&id=tokyo')).toEqual({ id: 'tokyo', url: 'http://127.0.0.1:9101', region: 'asia' }) // no weight given: none (wasp learns one)
    expect(parseBackend({ url: 'http://[::1]:9101', weight: 2, region: 'us' })).toMatchObject({ url: 'http://[::1]:9101', weight: 2, region: 'us' })
  })

  test('https:// backends are accepted, and a port equal to the scheme\'s default counts as explicit', () => {
    expect(parseBackend('https://127.0.0.1:8443#eu')).toEqual({ id: '127.0.0.1:8443', url: 'https://127.0.0.1:8443', region: 'eu' })
    expect(parseBackend('https://localhost:443')).toEqual({ id: 'localhost:443', url: 'https://localhost:443' })
    expect(parseBackend('http://[::1]:80')).toEqual({ id: '[::1]:80', url: 'http://[::1]:80' })
    expect(() => parseBackend('https://localhost')).toThrow(/explicit host and port/)
  })

  test.each([
    'http://127.0.0.1:80', 'https://127.0.0.1:443', 'http://[::1]:80#eu&w=2', 'http://127.0.0.1:9101#id=web1',
    { url: 'https://localhost:443', weight: 3, region: 'us', healthCheck: { path: '/ready' } }
  ])('a parsed spec reads back as itself (%j): the config resolves a list, the balancer reads it again', (input) => {
    const spec = parseBackend(input)
    expect(parseBackend(spec)).toEqual(spec)
    expect(parseBackends(parseBackends([input]))).toEqual([spec])
  })

  test('backends on the schemes\' default ports, from a config file: resolved with their port, kept by a reload\'s second read', () => {
    const file = write('default-ports.json', JSON.stringify({ backends: ['http://127.0.0.1:80', 'https://127.0.0.1:443#w=2'] }))
    const config = resolveConfig({}, readConfigFile(file))
    expect(config.backends).toEqual([
      { id: '127.0.0.1:80', url: 'http://127.0.0.1:80' },
      { id: '127.0.0.1:443', url: 'https://127.0.0.1:443', weight: 2 }
    ])
    expect(resolveConfig({}, { backends: config.backends }).backends).toEqual(config.backends)
  })

  test.each([
    ['http://x:abc', /malformed URL/],
    ['ftp://127.0.0.1:9101', /only http:\/\/ and https:\/\//],
    ['http://127.0.0.1', /explicit host and port/],
    ['http://127.0.0.1:9101/path', /must be an origin/],
    ['http://127.0.0.1:9101#w=0', /weight must be a positive number/],
    ['http://127.0.0.1:9101#colour=red', /unknown fragment token/],
    ['', /expected a URL/]
  ])('%s is rejected', (input, message) => {
    expect(() => parseBackend(input)).toThrow(message)
  })

  test('a list is comma-separated; duplicates and empty lists are rejected', () => {
    expect(parseBackends('http://127.0.0.1:1,http://127.0.0.1:2')).toHaveLength(2)
    expect(() => parseBackends('http://127.0.0.1:1,http://127.0.0.1:1')).toThrow(/duplicate backend id/)
    expect(() => parseBackends([])).toThrow(/no backends given/)
  })
})
