'use strict'

/**
 * Issue 25, "beside the peers": the protocol probes of bench/peers/probes.js sent as raw bytes to
 * polistes (every engine, fast front, each a child process of bin/polistes.js) and to nginx and
 * HAProxy (the bench's configurations), each in front of its own recording upstream. polistes must be
 * at least as strict as the peers: where a peer refuses a probe, polistes refuses it too; where
 * polistes forwards, the upstream sees exactly one request with the right framing, and the next
 * client (a plain GET /victim on another connection) gets its own answer.
 * The pure verdicts are tested first, on made-up outcomes, so the comparison itself can fail.
 */

const { describeIfInstalled } = require('./helper')
const { PROBES, SMUGGLED, selectProbes, chunked } = require('../bench/peers/probes')
const { ENGINES, makeTargets, runMatrix } = require('../bench/peers/probe-run')
const { parseResponse, classify, strictnessViolations, describeOutcome } = require('../bench/peers/probe-verdict')
const { parseArgs, formatTables } = require('../bench/peers/probe-peers')

const byName = (name) => PROBES.find((p) => p.name === name)
const VICTIM = { method: 'GET', target: '/victim', httpVersion: '1.1', headers: { host: 'probe.test' }, rawHeaders: ['Host', 'probe.test'], body: '', complete: true }
const request = (method, target, body = '', extra = {}) => ({ method, target, httpVersion: '1.1', headers: { host: 'probe.test', ...extra }, rawHeaders: ['Host', 'probe.test'], body, complete: true })
/** A made-up outcome: the client's raw answer and what the upstream parsed. */
const outcome = (raw, upstream = [], { victim = { status: 200, body: 'GET /victim' }, errors = [], closed = false, timedOut = false, crashed = false } = {}) => ({
  client: { raw: Buffer.from(raw, 'latin1'), closed, timedOut },
  upstream: [...upstream, VICTIM],
  upstreamErrors: errors,
  victim,
  crashed,
  upstreamPort: 4321
})
const OK = (body) => `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`
const REFUSED = 'HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'

describe('probe table', () => {
  test('names are unique, every request probe says what a forward must look like', () => {
    expect(new Set(PROBES.map((p) => p.name)).size).toBe(PROBES.length)
    for (const p of PROBES) {
      expect(typeof p.request).toBe('string')
      expect(Boolean(p.expect) !== (typeof p.upstreamResponse === 'string')).toBe(true)
    }
    expect(SMUGGLED.length).toBe(35)
    expect(byName('conn-content-length').request).toContain(`Content-Length: 35\r\n\r\n${SMUGGLED}`)
    expect(chunked('hello')).toBe('5\r\nhello\r\n0\r\n\r\n')
  })

  test('selectProbes keeps the table order and refuses an unknown name', () => {
    expect(selectProbes(['cl-te', 'control-get']).map((p) => p.name)).toEqual(['control-get', 'cl-te'])
    expect(() => selectProbes(['nope'])).toThrow(/unknown probe "nope"/)
  })

  test('probe-peers options', () => {
    expect(parseArgs([]).engines).toEqual(ENGINES)
    expect(parseArgs(['--peers', 'none', '--engines', 'undici']).peers).toEqual([])
    expect(() => parseArgs(['--engines', 'nope'])).toThrow(/unknown engine/)
    expect(() => parseArgs(['--timeout', '5'])).toThrow(/--timeout/)
    expect(() => parseArgs(['--bogus'])).toThrow(/unknown option/)
  })
})

describe('probe verdicts (pure)', () => {
  test('parseResponse: length, chunked with a trailer, close-delimited', () => {
    expect(parseResponse(Buffer.from(OK('hi')))).toMatchObject({ complete: true, status: 200, framing: 'length' })
    const c = parseResponse(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Foo: bar\r\n\r\n'))
    expect(c).toMatchObject({ complete: true, framing: 'chunked', trailers: ['X-Foo: bar'] })
    expect(c.body.toString()).toBe('hello')
    expect(parseResponse(Buffer.from('HTTP/1.0 200 OK\r\n\r\nhel')).complete).toBe(false)
    expect(parseResponse(Buffer.from('HTTP/1.0 200 OK\r\n\r\nhel'), { ended: true })).toMatchObject({ complete: true, framing: 'close' })
  })

  test('a smuggled second request at the upstream is a fault, one well-framed forward is not', () => {
    const probe = byName('conn-content-length')
    const smuggled = classify(probe, outcome(OK('POST /a'), [request('POST', '/a'), request('GET', '/SMUGGLED')]))
    expect(smuggled.outcome).toBe('forwarded')
    expect(smuggled.faults.join('; ')).toMatch(/2 requests: POST \/a, GET \/SMUGGLED/)
    const good = classify(probe, outcome(OK('POST /a'), [request('POST', '/a', SMUGGLED, { 'content-length': '35' })]))
    expect(good.faults).toEqual([])
    expect(describeOutcome(probe, outcome(OK('POST /a'), [request('POST', '/a', SMUGGLED, { 'content-length': '35' })])).cell).toBe('200 / POST /a CL 35')
  })

  test('a desynchronised next client, a crash, an unparsable forward and a missing Host are faults', () => {
    const probe = byName('control-get')
    const desync = classify(probe, outcome(OK('GET /control-get'), [request('GET', '/control-get')], { victim: { status: 200, body: 'GET /SMUGGLED' } }))
    expect(desync.faults.join('; ')).toMatch(/GET \/victim got 200 "GET \/SMUGGLED"/)
    expect(classify(probe, outcome('', [], { closed: true, crashed: true })).faults).toContain('the process exited')
    expect(classify(probe, outcome(REFUSED, [], { errors: [{ code: 'HPE_INVALID_METHOD' }] })).faults.join('; ')).toMatch(/could not parse/)
    const hostless = { ...request('GET', '/control-get'), rawHeaders: [] }
    expect(classify(probe, outcome(OK('x'), [hostless])).faults).toContain('an HTTP/1.1 request with 0 Host headers')
    expect(classify(probe, outcome(REFUSED)).faults).toContain('a plain request was not forwarded')
  })

  test('where a peer refuses, polistes must refuse: a forward or a hold is a violation', () => {
    const probe = byName('host-duplicate')
    const refusedByPeer = { nginx: outcome(REFUSED), haproxy: outcome(OK('GET /host-duplicate'), [request('GET', '/host-duplicate')]) }
    expect(strictnessViolations(probe, outcome(REFUSED), refusedByPeer)).toEqual([])
    expect(strictnessViolations(probe, outcome(OK('GET /host-duplicate'), [request('GET', '/host-duplicate')]), refusedByPeer))
      .toEqual(['nginx refuses it (HTTP/1.1 400 Bad Request), polistes forwards it'])
    expect(strictnessViolations(probe, outcome('', [], { timedOut: true }), refusedByPeer)).toEqual(['nginx refuses it (HTTP/1.1 400 Bad Request), polistes holds it'])
    // forwarding what every peer forwards is fine, when the forward is right
    const forwardedByAll = { nginx: outcome(OK('x'), [request('GET', '/host-duplicate')]) }
    expect(strictnessViolations(probe, outcome(OK('x'), [request('GET', '/host-duplicate')]), forwardedByAll)).toEqual([])
  })

  test('response probes: the client must get the body without trailer bytes, no chunking for HTTP/1.0, no upstream address', () => {
    const trailer = byName('trailer-http10')
    const chunkedTo10 = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Foo: bar\r\n\r\n'
    expect(classify(trailer, outcome(chunkedTo10, [request('GET', '/trailer-http10')])).faults).toEqual(['chunked response to an HTTP/1.0 client'])
    expect(classify(trailer, outcome('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello', [request('GET', '/trailer-http10')], { closed: true })).faults).toEqual([])
    const bad = byName('bad-gateway-body')
    expect(classify(bad, outcome('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 28\r\n\r\nupstream 127.0.0.1:4321 died', [])).faults).toEqual(['the body reveals "4321"'])
  })

  test('formatTables prints one row per probe and the shown headers', () => {
    const probes = [byName('control-get'), byName('connection-host')]
    const results = [{ name: 'x', outcomes: { 'control-get': outcome(OK('a'), [request('GET', '/control-get')]), 'connection-host': outcome(REFUSED) } }]
    const text = formatTables(probes, results, { markdown: true })
    expect(text).toContain('| control-get | 200 / GET /control-get |')
    expect(text).toContain('| connection-host | 400 / - |')
    expect(text).toContain('| connection-host: host | (none) |')
  })
})

describeIfInstalled(['nginx', 'haproxy'], 'polistes beside nginx and HAProxy: the probes', () => {
  let results
  const peersOf = (probe) => Object.fromEntries(results.filter((r) => !r.name.startsWith('polistes')).map((r) => [r.name, r.outcomes[probe.name]]))

  beforeAll(async () => {
    const { targets, missing } = makeTargets()
    expect(missing).toEqual([])
    results = await runMatrix({ probes: PROBES, targets, timeoutMs: 2000 })
  }, 60000)

  test('every target started and answered every probe', () => {
    expect(results.map((r) => r.name)).toEqual([...ENGINES.map((e) => `polistes ${e}`), 'nginx', 'haproxy'])
    for (const r of results) {
      expect(r.error).toBeUndefined()
      expect(Object.keys(r.outcomes)).toEqual(PROBES.map((p) => p.name))
    }
  })

  test('the comparison is not empty: the peers refuse what they have long refused', () => {
    for (const peer of ['nginx', 'haproxy']) {
      const r = results.find((x) => x.name === peer)
      for (const name of ['host-duplicate', 'cl-duplicate', 'te-chunked-gzip']) {
        expect([peer, name, classify(byName(name), r.outcomes[name]).outcome]).toEqual([peer, name, 'refused'])
      }
    }
  })

  describe.each(ENGINES)('polistes %s (fast front)', (engine) => {
    test.each(PROBES.map((p) => [p.name, p.title, p]))('%s: %s', (name, title, probe) => {
      const mine = results.find((r) => r.name === `polistes ${engine}`).outcomes[name]
      expect(strictnessViolations(probe, mine, peersOf(probe))).toEqual([])
    })
  })
})
