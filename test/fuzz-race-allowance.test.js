'use strict'

/**
 * The differential fuzzer's race allowance (test/fuzz/check.js, issue 25) for an answer cut short.
 * From a trace of seed 20261130, http-proxy, cases 1,000-1,999: on one upstream connection a late
 * poison answered request 1374.1.0 (raced); 1374.1.0's own answer (`Transfer-Encoding: chunked,
 * gzip`: its body runs to the connection's end, RFC 9112 §6.3) then answered 1375.0.1, sent there
 * before it came, and took every later byte on the connection as its body: 1375.0.1's own answer
 * and its own poison, until polistes' upstream timeout broke it off. The client of 1375.0.1 holds
 * that cut answer; its poison is its own exchange's, in the answer to a raced request.
 */

const { checkResponseConnection } = require('./fuzz/check')

/** A plain GET of the response direction, with the answer spec the checks read. */
function request (id, check = 'exact') {
  return {
    id,
    method: 'GET',
    version: '1.1',
    body: '',
    closeAfter: false,
    bytes: Buffer.from(`GET /id/${id} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, 'latin1'),
    response: { id, writes: [], close: null, status: 404, body: Buffer.alloc(0), check, mutations: [] }
  }
}

const own502 = 'HTTP/1.1 502 Bad Gateway\r\nx-polistes-error: connect\r\nConnection: keep-alive\r\n' +
  'Transfer-Encoding: chunked\r\n\r\n10\r\nupstream failed\n\r\n0\r\n\r\n'
/** One chunk of polistes' chunked body to the client. */
const chunk = (text) => `${Buffer.byteLength(text, 'latin1').toString(16)}\r\n${text}\r\n`
/** polistes' chunks of a body read to the connection's end: the raced answer, then the upstream's next bytes */
const runOn = 'HTTP/1.1 404 Not Found\r\nx-fuzz-id: 1374.1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n' +
  chunk('2\r\nm4\r\n0\r\n\r\n') +
  chunk('HTTP/1.1 404 Not Found\r\nX-Fuzz-Id: 1375.0.1\r\nContent-Length: 0\r\n\r\n' +
    'HTTP/1.1 200 OK\r\nX-Fuzz-Id: poison.1375.0.1\r\nContent-Length: 6\r\n\r\npoison')

const conn = { index: 0, requests: [request('1375.0.0', 'none'), request('1375.0.1', 'delivered')] }
const seen = { received: Buffer.from(own502 + runOn, 'latin1'), closed: true, hung: false }
const c = { index: 1375, connections: [conn] }
const kinds = (failures) => failures.map((f) => f.kind)

test('a cut answer to a raced request may carry poison that came after it on its connection', () => {
  const raced = new Set(['1374.1.0', '1375.0.1'])
  expect(kinds(checkResponseConnection(c, conn, seen, raced, new Set(), new Set()))).toEqual([])
})

test('a cut answer that names a raced request is allowed whole, whichever request it answers', () => {
  const raced = new Set(['1374.1.0'])
  expect(kinds(checkResponseConnection(c, conn, seen, raced, new Set(), new Set()))).toEqual([])
})

test('the same cut answer to a request no race touched still fails: poison reached a client', () => {
  const failures = checkResponseConnection(c, conn, seen, new Set(['9.9.9']), new Set(), new Set())
  expect(kinds(failures)).toContain('poison-delivered')
})

test('the cut answer allows its own bytes only: poison in the whole answer before it still fails', () => {
  const body = 'X-Fuzz-Id: poison.1374.1.0\r\n\r\npo'
  const carrying = `HTTP/1.1 200 OK\r\nx-fuzz-id: 1375.0.0\r\nContent-Length: ${body.length}\r\n\r\n${body}`
  const before = { received: Buffer.from(carrying + runOn, 'latin1'), closed: true, hung: false }
  const failures = checkResponseConnection(c, conn, before, new Set(['1374.1.0', '1375.0.1']), new Set(), new Set())
  expect(failures.filter((f) => f.kind === 'poison-delivered').map((f) => f.detail)).toEqual([
    expect.stringContaining('poison.1374.1.0')
  ])
})
