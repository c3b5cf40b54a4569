'use strict'

const crypto = require('node:crypto')
const { readResponses, idOf } = require('./wire')
const { connectionBytes } = require('./requests')

/**
 * The invariants of the differential fuzzer (issue 25), as pure functions over what was seen:
 * the bytes each client connection received, the requests the front (polistes' request handler)
 * took, and the requests the upstream parsed. Each returns a list of failures; empty is a pass.
 *
 * Request direction:
 * - every request the upstream parses is one the front took: same method, target and body bytes
 *   (a request the front never took is a smuggled one), and each at most once, with one Host;
 * - a client receives answers to its own requests only, in the order it sent them, each once;
 * - a connection of clean requests gets every answer it asked for, from the upstream, with the
 *   body the client sent (the upstream echoes its hash).
 * Response direction:
 * - no poison response (bytes an upstream sent beyond its answer) ever reaches a client, but in the
 *   one race HTTP/1.1 cannot resolve: a late one may be the answer of a request polistes sent on that
 *   connection after the upstream wrote it (before polistes could read it), and that request's
 *   answer the next one's there, and so on (a raced request: its answer is not checked; whether
 *   polistes retires a connection on which bytes arrive while it is idle is checked by
 *   test/upstream-late-bytes.test.js, with pauses long enough to tell);
 * - the n-th answer on a connection is to the n-th request, or polistes' own error;
 * - a well-formed upstream answer reaches its client whole; a broken one never looks whole;
 * - an HTTP/1.0 client never gets a chunked answer.
 */

/**
 * @typedef {object} Failure
 * @property {string} kind a short class name
 * @property {string} detail
 * @property {string} [id] the request it is about
 * @property {number} [conn] the client connection
 */

/** sha1 hex of bytes (the recording upstream echoes the same of each body it read). */
function hash (bytes) {
  return crypto.createHash('sha1').update(bytes).digest('hex')
}

/** Printable bytes for a report. */
function show (buf, max = 200) {
  const s = Buffer.isBuffer(buf) ? buf.toString('latin1') : String(buf)
  return JSON.stringify(s.length > max ? s.slice(0, max) + '…' : s)
}

/**
 * @typedef {object} SeenRequest what the front or the upstream parsed
 * @property {string} method
 * @property {string} url
 * @property {Buffer} body the body bytes read
 * @property {boolean} complete the whole body was read
 * @property {string[]} [rawHeaders] (upstream) as received
 */

/**
 * Every upstream request must be one the front took, with the same body, at most once.
 * @param {Map<string, SeenRequest[]>} front by url
 * @param {SeenRequest[]} upstream
 * @returns {Failure[]}
 */
function checkForwarded (front, upstream) {
  const failures = []
  const used = new Set()
  for (const u of upstream) {
    const id = idOf(u.url)
    const candidates = (front.get(u.url) || []).filter((f) => f.method === u.method)
    if (candidates.length === 0) {
      failures.push({ kind: 'upstream-request-not-taken-by-front', id, detail: `the upstream parsed ${u.method} ${u.url} (body ${show(u.body)}) and the front never took such a request` })
      continue
    }
    const f = candidates.find((c) => !used.has(c)) || null
    if (f === null) {
      failures.push({ kind: 'forwarded-twice', id, detail: `${u.method} ${u.url} reached the upstream more than once` })
      continue
    }
    used.add(f)
    const same = u.complete ? u.body.equals(f.body) : f.body.subarray(0, u.body.length).equals(u.body)
    if (!same) failures.push({ kind: 'body-differs', id, detail: `${u.method} ${u.url}: the front read body ${show(f.body)}${f.complete ? '' : ' (incomplete)'}, the upstream ${show(u.body)}${u.complete ? '' : ' (incomplete)'}` })
    if (u.rawHeaders) {
      let hosts = 0
      for (let i = 0; i < u.rawHeaders.length; i += 2) if (u.rawHeaders[i].toLowerCase() === 'host') hosts++
      if (hosts !== 1) failures.push({ kind: 'forwarded-host-count', id, detail: `${u.method} ${u.url} reached the upstream with ${hosts} Host headers (${show(JSON.stringify(u.rawHeaders))})` })
    }
  }
  return failures
}

/**
 * The request id the head at the start of `bytes` names (its `X-Fuzz-Id`), read as far as the head
 * goes: the head of an answer cut short may itself be cut.
 * @param {Buffer} bytes
 * @returns {string | undefined}
 */
function namedId (bytes) {
  let end = bytes.indexOf('\r\n\r\n')
  if (end === -1) end = bytes.length
  const m = /\r\nx-fuzz-id:[ \t]*([^\s]+)\r\n/i.exec(bytes.toString('latin1', 0, end + 2))
  return m === null ? undefined : m[1]
}

/** Order key of an id on its connection: n, and a request carried in n's body right after n. */
function orderKey (id) {
  const m = /\.(\d+)(s?)$/.exec(id)
  return Number(m[1]) * 2 + (m[2] ? 1 : 0)
}

/**
 * The answers one client connection got, in the request direction.
 * @param {import('./requests').RequestCase} c
 * @param {import('./requests').ClientConnection} conn
 * @param {{ received: Buffer, closed: boolean, hung: boolean }} seen `hung`: it neither answered nor
 *   closed in time
 * @param {{ front: Map<string, SeenRequest[]>, upstream: Map<string, SeenRequest[]> }} records by url
 * @returns {Failure[]}
 */
function checkRequestConnection (c, conn, seen, records) {
  const failures = []
  const fail = (kind, detail, id) => failures.push({ kind, detail, id, conn: conn.index })
  const byId = new Map(conn.requests.map((q) => [q.id, q]))
  // a HEAD's answer has no body: which request an answer is to, by the id the upstream echoes (an
  // embedded request the front took as one of its own is not in conn.requests: its method is read
  // from the bytes the client sent), by its place for polistes' own answers
  // (less the embedded ones answered before it)
  let sent = null
  let embedded = 0
  const isHead = (i, headers, rest) => {
    const id = headers['x-fuzz-id']
    if (id === undefined) { // polistes' own answer: a body follows unless the next answer does
      if (rest.length === 0 || rest.toString('latin1', 0, 7) === 'HTTP/1.') return true
      if (headers['transfer-encoding'] !== undefined && /^[0-9a-fA-F]+\r\n/.test(rest.toString('latin1', 0, 20))) return false
      const q = conn.requests[i - embedded]
      return q !== undefined && q.method === 'HEAD'
    }
    const q = byId.get(id)
    if (q !== undefined) return q.method === 'HEAD'
    embedded++
    if (sent === null) sent = connectionBytes(conn).toString('latin1')
    return sent.includes(`HEAD /id/${id} `)
  }
  if (seen.hung) fail('connection-hung', 'the connection was neither answered nor closed in time, even after the client ended its side')
  const { responses, error } = readResponses(seen.received, isHead, seen.closed)
  if (error !== null && !error.startsWith('cut')) fail('client-got-bad-bytes', `${error} in ${show(seen.received, 400)}`)
  const finals = responses.filter((r) => !r.interim)
  const prefix = `${c.index}.${conn.index}.`
  let last = -1
  const answered = []
  for (const res of finals) {
    const id = res.headers['x-fuzz-id']
    if (id === undefined) {
      answered.push(null)
      continue
    }
    if (!id.startsWith(prefix) || !/^\d+s?$/.test(id.slice(prefix.length))) {
      fail('answer-to-another-client', `connection ${conn.index} of case ${c.index} got the answer to ${id}`, id)
      continue
    }
    const key = orderKey(id)
    if (key <= last) fail('answer-out-of-order', `answer to ${id} after the answer to a later or the same request`, id)
    last = Math.max(last, key)
    answered.push(id)
    const q = byId.get(id)
    if (q !== undefined && q.version === '1.0' && res.chunked) fail('chunked-to-http10', `the answer to HTTP/1.0 request ${id} was chunked`, id)
  }
  if (!conn.clean) return failures
  // every request up to the first that asked for the end of the connection is answered, in turn
  const expected = []
  for (const q of conn.requests) {
    expected.push(q)
    if (q.closeAfter) break
  }
  for (let i = 0; i < expected.length; i++) {
    const q = expected[i]
    // polistes may end the connection after any answer that says so (node:http does after a
    // response it cannot frame for keep-alive, e.g. to HTTP/1.0): what was pipelined behind it is lost
    if (i > 0 && finals[i - 1] !== undefined && /\bclose\b/i.test(finals[i - 1].headers.connection || '')) break
    const f = (records.front.get(q.target) || [])[0]
    if (f === undefined) fail('clean-request-not-taken', `the front did not take clean request ${show(q.bytes)}`, q.id)
    else if (f.method !== q.method || !f.body.equals(Buffer.from(q.body, 'latin1'))) fail('clean-request-misread', `the front read ${f.method} body ${show(f.body)} of ${show(q.bytes)}`, q.id)
    const res = finals[i]
    if (res === undefined) { fail('clean-request-unanswered', `no answer to clean request ${show(q.bytes)} (answers: ${finals.map((r) => `${r.status} ${r.headers['x-fuzz-id'] || r.headers['x-polistes-error'] || ''}`).join('; ')})`, q.id); continue }
    if (res.headers['x-fuzz-id'] !== q.id || res.status !== 200) { fail('clean-request-wrong-answer', `clean request ${show(q.bytes)} got ${res.status} ${res.headers['x-fuzz-id'] || ''} ${res.headers['x-polistes-error'] || ''} ${show(res.body)}`, q.id); continue }
    if (res.headers['x-fuzz-hash'] !== hash(Buffer.from(q.body, 'latin1'))) fail('clean-request-body-changed', `the upstream read another body for ${show(q.bytes)}: ${show((records.upstream.get(q.target) || [{ body: '' }])[0].body)}`, q.id)
  }
  return failures
}

/**
 * The answers one client connection got, in the response direction.
 * @param {import('./responses').ResponseCase} c
 * @param {{ index: number, requests: import('./responses').PlainRequest[] }} conn
 * @param {{ received: Buffer, closed: boolean, hung: boolean }} seen
 * @param {Set<string> | null} [raced] ids of the requests polistes sent on an upstream connection
 *   after late bytes were written on it (harness.js): the race HTTP/1.1 cannot resolve may give each
 *   any answer (the poison, an earlier request's answer, an error, a cut)
 * @param {Set<string>} [closeRaced] ids of requests that reached an upstream connection after the
 *   upstream had ended it (the keep-alive race of RFC 9112 §9.3.1): a request polistes cannot send
 *   again (a body, or not idempotent) may get polistes' own 502 instead of its answer
 * @param {Set<string> | null} [unread] in a batch where late bytes raced, the ids of the requests no
 *   upstream read: one polistes sent on a raced connection that the upstream then ended (or that
 *   polistes closed, out of step) was never read there, so nothing tells it from a raced one; it may
 *   get polistes' own error, or lose its answer, but never another's
 * @returns {Failure[]}
 */
function checkResponseConnection (c, conn, seen, raced = null, closeRaced = new Set(), unread = null) {
  const failures = []
  const fail = (kind, detail, id) => failures.push({ kind, detail, id, conn: conn.index })
  if (seen.hung) fail('connection-hung', 'the connection was neither answered nor closed in time, even after the client ended its side')
  const { responses, rest, error } = readResponses(seen.received, (i) => conn.requests[i] !== undefined && conn.requests[i].method === 'HEAD', seen.closed)
  if (error !== null && !error.startsWith('cut')) fail('client-got-bad-bytes', `${error} in ${show(seen.received, 400)}`)
  const finals = responses.filter((r) => !r.interim)
  // The one race HTTP/1.1 cannot resolve (harness.js): a raced request may get any answer; and an
  // answer that is a poison or names a raced request exists only on a connection that carried late
  // bytes, so whichever request gets it was sent there in that race (the upstream may never have
  // read it: polistes closes the connection at the first bytes out of step, and an upstream loses
  // what it had not read yet when that close resets it). A poison anywhere else is a failure.
  const isRaced = (q) => q !== undefined && raced !== null && raced.has(q.id)
  const racedAnswer = (res) => {
    const id = res === undefined ? undefined : res.headers['x-fuzz-id']
    return raced !== null && id !== undefined && (id.startsWith('poison.') || raced.has(id))
  }
  // a raced answer is allowed whole: a poison, or whatever bytes it carries (an answer that runs to
  // the connection's end takes every later byte on it, late poison included)
  const allowed = finals.filter((res, i) => isRaced(conn.requests[i]) || racedAnswer(res))
  // An answer cut by the end of what the client received (polistes broke it off, or the client
  // stopped reading) is not among the answers read, yet it is the answer to the next request, and a
  // raced one is allowed whole just the same: a raced answer that runs to the connection's end (a
  // Transfer-Encoding not ending in chunked, RFC 9112 §6.3) takes every later byte the upstream
  // writes there, its own request's answer and late poison included, until polistes gives it up.
  const cutFrom = rest.length > 0 && (error === null || error.startsWith('cut')) ? seen.received.length - rest.length : -1
  if (cutFrom !== -1 && (isRaced(conn.requests[finals.length]) || racedAnswer({ headers: { 'x-fuzz-id': namedId(rest) } }))) {
    allowed.push({ from: cutFrom, to: seen.received.length })
  }
  for (let at = seen.received.indexOf('poison.'); at !== -1; at = seen.received.indexOf('poison.', at + 1)) {
    if (allowed.some((res) => at >= res.from && at < res.to)) continue
    fail('poison-delivered', `bytes an upstream sent after its answer reached a client: ${show(seen.received.subarray(Math.max(0, at - 60), at + 40))}`)
    break
  }
  let exact = true
  conn.requests.forEach((q, i) => {
    const spec = q.response
    const res = finals[i]
    // polistes may end the connection after an answer that says so (an HTTP/1.0 client's answer
    // without a length): what was pipelined behind it is lost
    if (i > 0 && finals[i - 1] !== undefined && /\bclose\b/i.test(finals[i - 1].headers.connection || '')) exact = false
    const lostInRace = unread !== null && unread.has(q.id) && (res === undefined || res.headers['x-polistes-error'] !== undefined)
    const inRace = isRaced(q) || racedAnswer(res) || lostInRace
    const mustArrive = exact && spec.check === 'exact' && !inRace
    exact = exact && spec.check === 'exact' && !q.closeAfter && !inRace
    if (res === undefined) {
      if (mustArrive) fail('good-answer-lost', `the well-formed answer ${show(Buffer.concat(spec.writes.filter(Buffer.isBuffer)))} to ${show(q.bytes)} did not reach the client${error ? ` (${error})` : ''}`, q.id)
      return
    }
    const id = res.headers['x-fuzz-id']
    if (inRace) return // the raced exchange (above): any answer may reach it
    if (id !== undefined && id !== q.id) return fail('answer-to-another-request', `answer ${i} on the connection names ${id}, the request was ${q.id}`, q.id)
    if (id === undefined && res.headers['x-polistes-error'] === undefined && !spec.mutations.includes('connection-names-framing')) {
      fail('answer-of-unknown-origin', `answer ${i} (${res.status}) to ${q.id} names no request and is not polistes' own`, q.id)
    }
    if (q.version === 'HTTP/1.0' || q.version === '1.0') {
      if (res.chunked) fail('chunked-to-http10', `the answer to HTTP/1.0 request ${q.id} was chunked`, q.id)
    }
    const whole = id === q.id && res.status === spec.status
    if (closeRaced.has(q.id) && id === undefined && res.status === 502 && res.headers['x-polistes-error'] === 'connect') return
    if (mustArrive && !(whole && res.body.equals(spec.body))) {
      fail('good-answer-changed', `${q.id}: upstream sent ${show(Buffer.concat(spec.writes.filter(Buffer.isBuffer)))}, client got ${res.status} ${id || res.headers['x-polistes-error'] || ''} body ${show(res.body)}`, q.id)
    } else if (spec.check === 'delivered' && whole && !res.closeDelimited && !res.body.equals(spec.body)) {
      fail('broken-answer-looks-whole', `${q.id}: upstream sent ${show(Buffer.concat(spec.writes.filter(Buffer.isBuffer)))}, client got a whole ${res.status} with body ${show(res.body)}`, q.id)
    }
  })
  if (finals.length > conn.requests.length) fail('more-answers-than-requests', `${finals.length} answers to ${conn.requests.length} requests`)
  return failures
}

module.exports = { checkForwarded, checkRequestConnection, checkResponseConnection, hash, show, orderKey }
