'use strict'

/**
 * Fuzz of the front end (issue 9): malformed request lines, headers and chunk sizes from
 * fast-check, each case on a fresh connection to the real CLI process in front of a real
 * upstream. Every case must be answered (bytes that start like an HTTP response) or closed
 * within its time bound, and the process must still answer a normal request after every 50 cases.
 * The seed is random per run and printed on failure; POLISTES_FUZZ_SEED=<seed> replays a run. Each
 * engine gets cases of its own (the seed plus the engine's index): a run tries 6,000 different cases,
 * 1,500 on each engine, where it tried the same 3,000 (but for the Host's port) on all four.
 */

const net = require('node:net')
const fc = require('fast-check')
const { startCli, startRecordingUpstream, rawRequest, parseResponses } = require('./helper')

const ENGINES = ['default', 'http-proxy', 'node-http', 'undici']
const engineArgs = (engine) => (engine === 'default' ? [] : ['--engine', engine])

const CASES = 1500
const BATCH = 50
const GRACE_MS = 100
const CASE_TIMEOUT_MS = 3000
const SEED = Number(process.env.POLISTES_FUZZ_SEED) || (Date.now() % 2 ** 31)

const ascii = (maxLength) => fc.string({ unit: 'binary-ascii', maxLength })
/** Mostly `valid`, sometimes `broken`: most cases then get past the parser and reach the proxy. */
const mostly = (valid, broken, weight = 6) => fc.oneof({ weight, arbitrary: valid }, { weight: 1, arbitrary: broken })

const method = mostly(
  fc.constantFrom('GET', 'GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'),
  fc.oneof(fc.constantFrom('TRACE', 'CONNECT', 'PRI', 'M-SEARCH', 'get', 'G ET', ''), ascii(12))
)
const target = mostly(
  fc.stringMatching(/^\/[A-Za-z0-9._~%!$&'()*+,;=:@/?-]{0,40}$/),
  fc.oneof(fc.constantFrom('*', 'http://127.0.0.1/x', '127.0.0.1:80', '//x', '/a#d', '/%00', '/\u00e9', ''), ascii(30))
)
const version = mostly(fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0'), fc.constantFrom('HTTP/0.9', 'HTTP/2.0', 'HTTP/1.1 ', 'http/1.1', 'HTTP/1.10', 'HTTP/', ''))
const space = mostly(fc.constant(' '), fc.constantFrom('  ', '\t', ''), 10)
const eol = mostly(fc.constant('\r\n'), fc.constantFrom('\n', '\r', '', '\r\r\n'), 15)
const headerName = mostly(
  fc.oneof(fc.constantFrom('Connection', 'Upgrade', 'Expect', 'X-Forwarded-For', 'TE', 'Trailer', 'Keep-Alive', 'Range', 'If-None-Match', 'Accept'), fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,16}$/)),
  fc.oneof(fc.constantFrom('Content-Length', 'Transfer-Encoding', 'Host', 'Content-Length ', ' Host', ''), ascii(16))
)
const headerValue = mostly(
  fc.oneof(fc.constantFrom('close', 'keep-alive', 'keep-alive, Upgrade', 'Upgrade', 'websocket', '100-continue', 'trailers', 'bytes=0-1', '"v1"'), fc.stringMatching(/^[\x20-\x7e]{0,30}$/)),
  fc.oneof(fc.constantFrom('chunked', '5', '-1', '5, 5', '99999999999999999999', ' chunked', 'chunked, gzip'), fc.string({ unit: 'binary', maxLength: 30 }))
)
const header = fc.tuple(headerName, mostly(fc.constant(': '), fc.constantFrom(':', ' : ', ':\t', '')), headerValue, eol).map((parts) => parts.join(''))
const chunkSize = mostly(
  fc.nat(64).map((n) => n.toString(16)),
  fc.oneof(fc.constantFrom('ffffffffffffffff', '-1', '1;ext=1', '1 ;x', 'zz', '', ' 5', '5 ', '0x5', '00000000000000000001'), ascii(8)),
  3
)
const data = ascii(40)
/** Body with its framing headers: none, Content-Length right or wrong, chunked with fuzzed sizes, or both. */
const framedBody = fc.oneof(
  fc.constant({ headers: '', body: '' }),
  fc.tuple(data, fc.integer({ min: -2, max: 2 })).map(([d, off]) => ({ headers: `Content-Length: ${Buffer.byteLength(d) + off}\r\n`, body: d })),
  fc.array(fc.tuple(chunkSize, data, eol), { maxLength: 4 }).map((chunks) => ({
    headers: 'Transfer-Encoding: chunked\r\n',
    body: chunks.map(([size, d, end]) => `${size}${end}${d}${end}`).join('') + '0\r\n\r\n'
  })),
  fc.tuple(data, fc.constantFrom('Transfer-Encoding: chunked\r\nContent-Length: 3\r\n', 'Content-Length: 3\r\nContent-Length: 4\r\n')).map(([d, h]) => ({ headers: h, body: d }))
)

/** One request, every part possibly malformed, as bytes. */
const malformedRequest = (host) => fc.record({ method, s1: space, target, s2: space, version, eol, host: mostly(fc.constant(true), fc.constant(false)), headers: fc.array(header, { maxLength: 6 }), framed: framedBody, end: eol })
  .map((r) => Buffer.from(`${r.method}${r.s1}${r.target}${r.s2}${r.version}${r.eol}${r.host ? `Host: ${host}\r\n` : ''}${r.headers.join('')}${r.framed.headers}${r.end}${r.framed.body}`, 'utf8'))
/** Pure noise. */
const noise = fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a))

/**
 * Send one case on a fresh connection. A complete request is answered while the connection is
 * open; after `GRACE_MS` without an answer the client half-closes (a request still waiting for
 * body bytes is then over), and from there the server must answer or close.
 * @returns {Promise<{ closed: boolean, received: Buffer }>}
 */
function runCase (url, bytes) {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const chunks = []
    const socket = net.connect({ host: hostname, port: Number(port) })
    const done = (closed) => {
      clearTimeout(timer)
      clearTimeout(grace)
      socket.destroy()
      resolve({ closed, received: Buffer.concat(chunks) })
    }
    const timer = setTimeout(() => done(false), CASE_TIMEOUT_MS)
    const grace = setTimeout(() => socket.end(), GRACE_MS)
    socket.on('data', (d) => {
      chunks.push(d)
      if (answered(Buffer.concat(chunks), false)) done(false)
    })
    socket.on('error', () => {}) // a reset is a close
    socket.on('close', () => done(true))
    socket.write(bytes)
  })
}

/** Whether the bytes hold at least one complete HTTP response. */
function answered (received, ended = true) {
  try {
    return parseResponses(received, [], { ended }).responses.some((r) => !r.interim)
  } catch {
    return false
  }
}

describe.each(ENGINES)('front-end fuzz (engine %s)', (engine) => {
  let upstream
  let cli
  let base

  beforeAll(async () => {
    upstream = await startRecordingUpstream()
    cli = startCli(['--port', '0', '--backends', upstream.url, '--algo', 'round-robin', ...engineArgs(engine)])
    base = (await cli.ready).url
  })
  afterAll(async () => {
    cli.child.kill('SIGKILL')
    await cli.exited
    await upstream.close()
  })

  test(`${CASES} malformed requests: each answered or closed, the process never dies (seed printed on failure)`, async () => {
    const host = new URL(base).host
    const cases = fc.sample(fc.oneof({ weight: 9, arbitrary: malformedRequest(host) }, { weight: 1, arbitrary: noise }), { seed: SEED + ENGINES.indexOf(engine), numRuns: CASES })
    const failures = []
    // BATCH cases in flight at all times (a case that waits out GRACE_MS holds up no other); after
    // each BATCH cases done, while the next ones run, the process must be alive and answer normally
    const checks = []
    const check = async (index) => {
      if (cli.child.exitCode !== null || cli.child.signalCode !== null) failures.push({ index, why: `the process exited (${cli.child.exitCode ?? cli.child.signalCode}) by case ${index}`, stderr: cli.stderr() })
      else {
        const alive = await rawRequest(base, '/alive').catch((err) => ({ status: err.message }))
        if (alive.status !== 200) failures.push({ index, why: `a normal request after case ${index} got ${alive.status}`, stderr: cli.stderr().slice(0, 2000) })
      }
    }
    let next = 0
    let done = 0
    const worker = async () => {
      while (next < cases.length && failures.length === 0) {
        const index = next++
        const r = await runCase(base, cases[index])
        const why = !r.closed && !answered(r.received)
          ? `neither answered nor closed within ${CASE_TIMEOUT_MS} ms`
          : r.received.length > 0 && !r.received.subarray(0, 7).equals(Buffer.from('HTTP/1.'))
            ? `answered with bytes that are not HTTP: ${JSON.stringify(r.received.subarray(0, 40).toString('latin1'))}`
            : null
        if (why) failures.push({ index, why, bytes: JSON.stringify(cases[index].toString('latin1')) })
        if (++done % BATCH === 0) {
          upstream.reset()
          checks.push(check(index))
        }
      }
    }
    await Promise.all(Array.from({ length: BATCH }, worker))
    await Promise.all(checks)
    if (failures.length === 0) await check(cases.length - 1)
    if (failures.length) throw new Error(`fuzz failed with seed ${SEED} (replay: POLISTES_FUZZ_SEED=${SEED}):\n${JSON.stringify(failures.slice(0, 5), null, 1)}`)
  }, 60000)
})
