'use strict'

const { caseRandom } = require('./random')

/**
 * The request direction of the differential fuzzer (issue 25): seeded client byte streams. A case
 * is a few client connections, each with one or more requests pipelined on it. Every request names
 * its id in its target (`/id/<case>.<conn>.<n>`), so whatever answers it can be traced back; a
 * request that a body carries inside it (bytes that look like a request, for a desync to find)
 * has the id of its carrier with an `s` appended.
 *
 * A request is *clean* when its bytes are plain, unambiguous HTTP/1.1 (or 1.0): for those the
 * fuzzer knows what the front must parse (method, target, body) and that an answer must come
 * back. A *dirty* request has one or more of the mutations below (framing variants, Connection
 * tokens, obs-fold, bare LF, odd chunk sizes, Host trouble, ...): polistes may refuse it or take
 * it, but whatever it takes must reach the upstream exactly as it took it.
 *
 * Pure: no I/O; the same (seed, index) always gives the same bytes.
 */

/** Methods of clean requests; the body-carrying ones get bodies. */
const METHODS = ['GET', 'GET', 'GET', 'HEAD', 'POST', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH'])
/** Body bytes: printable ASCII plus CR, LF and a few bytes above 0x7f. */
const BODY_ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:/-_=+&%\r\n\t\xe9\xff'

/**
 * @typedef {object} Header
 * @property {string} name
 * @property {string} sep what stands between name and value (': ')
 * @property {string} value
 * @property {string} eol the line's end ('\r\n')
 */

/**
 * @typedef {object} Chunk
 * @property {string} size the size as written (hex)
 * @property {string} ext chunk extension, with its ';'
 * @property {string} data
 * @property {string} eol after the size line and after the data
 */

/**
 * @typedef {object} RequestSpec
 * @property {string} id
 * @property {string} method
 * @property {string} target
 * @property {string} version '1.0' or '1.1'
 * @property {boolean} clean
 * @property {string[]} mutations names of the mutations applied (empty when clean)
 * @property {string} body the body the client means (latin1; for a clean request, what the front must read)
 * @property {boolean} closeAfter the client asked for the connection to end after this response
 * @property {Buffer} bytes the request on the wire
 */

/**
 * One request as parts, so mutations can change any of them before it is written out.
 */
class Draft {
  constructor (id, host) {
    this.id = id
    this.host = host
    this.method = 'GET'
    this.target = `/id/${id}`
    this.version = '1.1'
    this.lineEol = '\r\n'
    this.sp1 = ' '
    this.sp2 = ' '
    /** @type {Header[]} */
    this.headers = []
    this.endEol = '\r\n'
    /** 'none' | 'length' | 'chunked' */
    this.framing = 'none'
    this.body = ''
    /** @type {Chunk[] | null} */
    this.chunks = null
    this.lastChunk = '0'
    /** @type {Header[]} */
    this.trailers = []
    /** the whole body on the wire, when a mutation wrote it itself */
    this.rawBody = null
    this.mutations = []
  }

  add (name, value, at = this.headers.length) {
    this.headers.splice(at, 0, { name, sep: ': ', value, eol: '\r\n' })
  }

  /** A header to mutate (one is added when the request has none). */
  any (r) {
    if (this.headers.length === 0) this.add('X-Pad', 'x')
    return r.pick(this.headers)
  }

  find (lower) {
    return this.headers.find((h) => h.name.trim().toLowerCase() === lower)
  }

  remove (lower) {
    this.headers = this.headers.filter((h) => h.name.trim().toLowerCase() !== lower)
  }

  /** Content-Length of the body as it is now */
  get length () {
    return Buffer.byteLength(this.body, 'latin1')
  }

  wireBody () {
    if (this.rawBody !== null) return this.rawBody
    if (this.framing !== 'chunked') return this.body
    let s = ''
    for (const c of this.chunks) s += c.size + c.ext + c.eol + c.data + c.eol
    s += this.lastChunk + '\r\n'
    for (const t of this.trailers) s += t.name + t.sep + t.value + t.eol
    return s + '\r\n'
  }

  render () {
    let s = this.method + this.sp1 + this.target + this.sp2 + 'HTTP/' + this.version + this.lineEol
    for (const h of this.headers) s += h.name + h.sep + h.value + h.eol
    return Buffer.from(s + this.endEol + this.wireBody(), 'latin1')
  }
}

/** Split `body` into chunks of random sizes, sizes written plainly. */
function chunk (r, body) {
  const chunks = []
  let at = 0
  while (at < body.length) {
    const n = Math.min(body.length - at, r.int(1, 16))
    chunks.push({ size: n.toString(16), ext: '', data: body.slice(at, at + n), eol: '\r\n' })
    at += n
  }
  return chunks
}

/** Change the framing of `d` to `framing`, keeping its body. */
function frame (r, d, framing) {
  d.remove('content-length')
  d.remove('transfer-encoding')
  d.framing = framing
  d.chunks = null
  if (framing === 'length') d.add('Content-Length', String(d.length))
  if (framing === 'chunked') {
    d.add('Transfer-Encoding', 'chunked')
    d.chunks = chunk(r, d.body)
  }
}

/** The bytes of a request hidden in a body: what a desync would make a second request of. */
function embedded (r, id, host) {
  const target = `/id/${id}s`
  return r.pick([
    () => `GET ${target} HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
    () => `POST ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 3\r\n\r\nabc`,
    () => `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    () => `0\r\n\r\nGET ${target} HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
    () => `\r\n\r\nGET ${target} HTTP/1.1\r\nHost: ${host}\r\nX: `,
    () => 'G'
  ])()
}

/**
 * Benign variations every request may get (valid HTTP: the request stays clean): header name
 * case, optional whitespace, harmless extra headers, a query string, chunk extensions, upper-case
 * hex and leading zeros in chunk sizes, trailers.
 */
function vary (r, d) {
  if (r.chance(0.2)) d.target += `?q=${r.text(r.int(0, 8))}`
  if (r.chance(0.4)) d.add(r.pick(['Accept', 'User-Agent', 'X-Pad', 'Cache-Control', 'Accept-Language']), r.text(r.int(0, 20), 'abcdefghij*/;=, -'), r.int(0, d.headers.length))
  for (const h of d.headers) {
    if (r.chance(0.15)) h.name = r.mixCase(h.name)
    if (r.chance(0.15)) h.sep = r.pick([':', ':\t', ':  ', ': '])
    // llhttp refuses a tab after a Content-Length or Transfer-Encoding value (a space it takes)
    if (r.chance(0.1)) h.value += /^(content-length|transfer-encoding)$/i.test(h.name) ? ' ' : r.pick([' ', '\t'])
  }
  if (d.chunks !== null) {
    for (const c of d.chunks) {
      if (r.chance(0.2)) c.size = '0'.repeat(r.int(1, 4)) + c.size
      if (r.chance(0.2)) c.size = c.size.toUpperCase()
      if (r.chance(0.15)) c.ext = r.pick([';a=b', ';ext', ';x="y z"', ';a=1;b=2'])
    }
    if (r.chance(0.15)) d.trailers.push({ name: r.pick(['X-Trailer', 'Digest', 'X-Checksum']), sep: ': ', value: r.text(6), eol: '\r\n' })
  }
}

/** Values a Connection header lists (framing names among them: they must never strip framing). */
const CONNECTION_VALUES = ['close', 'keep-alive', 'content-length', 'transfer-encoding', 'host', 'te', 'upgrade',
  'Content-Length', 'TRANSFER-ENCODING', 'x-foo', 'keep-alive, content-length', 'close, transfer-encoding',
  'te, host', 'keep-alive,Transfer-Encoding', 'x-fuzz-id', 'accept, x-pad', 'cookie']
const CL_VARIANTS = [(n) => `0${n}`, (n) => `+${n}`, (n) => ` ${n} `, (n) => `${n}, ${n}`, (n) => `${n},${n + 1}`,
  (n) => String(n + 1), (n) => String(Math.max(0, n - 1)), (n) => `0x${n.toString(16)}`, (n) => `${n}\t`, () => '',
  (n) => `${n}.0`, (n) => `-${n}`, () => '99999999999999999999', (n) => `${n};`]
const TE_VARIANTS = ['Chunked', 'CHUNKED', ' chunked', 'chunked ', 'chunked, identity', 'identity, chunked',
  'gzip, chunked', 'chunked, chunked', 'x-chunked', 'chunked\x0b', 'identity', 'chunked;q=1', 'chunk', '"chunked"', 'gzip', ',chunked']

/**
 * The mutations that make a request dirty; each takes the draft and a random source.
 * @type {Record<string, (r: import('./random').Rand, d: Draft) => void>}
 */
const MUTATIONS = {
  'content-length-variant' (r, d) {
    if (d.framing !== 'length') frame(r, d, 'length')
    // an earlier mutation may have renamed the header (a space in its name, a bad character)
    const cl = d.find('content-length')
    if (cl !== undefined) cl.value = r.pick(CL_VARIANTS)(d.length)
    else d.add('Content-Length', r.pick(CL_VARIANTS)(d.length), r.int(0, d.headers.length))
  },
  'content-length-twice' (r, d) {
    if (d.framing !== 'length') frame(r, d, 'length')
    d.add(r.pick(['Content-Length', 'content-length']), r.chance(0.5) ? String(d.length) : String(d.length + r.int(1, 3)), r.int(0, d.headers.length))
  },
  'transfer-encoding-variant' (r, d) {
    if (d.framing !== 'chunked') frame(r, d, 'chunked')
    const te = d.find('transfer-encoding') // as above
    if (te !== undefined) te.value = r.pick(TE_VARIANTS)
    else d.add('Transfer-Encoding', r.pick(TE_VARIANTS), r.int(0, d.headers.length))
  },
  'transfer-encoding-twice' (r, d) {
    if (d.framing !== 'chunked') frame(r, d, 'chunked')
    d.add('Transfer-Encoding', r.pick(['chunked', 'identity', 'gzip']), r.int(0, d.headers.length))
  },
  'both-framings' (r, d) {
    if (d.framing === 'chunked') d.add('Content-Length', String(r.chance(0.5) ? d.length : Buffer.byteLength(d.wireBody(), 'latin1')), r.int(0, d.headers.length))
    else {
      if (d.framing !== 'length') frame(r, d, 'length')
      d.add('Transfer-Encoding', r.pick(['chunked', 'chunked', ...TE_VARIANTS]), r.int(0, d.headers.length))
    }
  },
  'no-framing-with-body' (r, d) {
    d.remove('content-length')
    d.remove('transfer-encoding')
    d.framing = 'none'
    d.chunks = null
    if (d.body === '') d.body = r.text(r.int(1, 10))
  },
  connection (r, d) {
    d.remove('connection')
    const value = r.pick(CONNECTION_VALUES)
    d.add(r.pick(['Connection', 'connection', 'CONNECTION']), value, r.int(0, d.headers.length))
    if (/upgrade/i.test(value) && r.chance(0.5)) d.add('Upgrade', r.pick(['websocket', 'h2c', 'foo']))
    if (/\bte\b/i.test(value)) d.add('TE', 'trailers')
    if (r.chance(0.3)) d.add('Connection', r.pick(CONNECTION_VALUES))
  },
  'space-before-colon' (r, d) {
    const h = d.any(r)
    h.sep = r.pick([' : ', ' :', '\t:', ' ', ''])
  },
  'name-whitespace' (r, d) {
    const h = d.any(r)
    h.name = r.pick([' ', '\t']) + h.name
  },
  'obs-fold' (r, d) {
    const h = d.any(r)
    h.value = r.chance(0.5) ? `${h.value}\r\n ${r.text(3)}` : `\r\n\t${h.value}`
  },
  'bare-lf' (r, d) {
    const all = r.chance(0.3)
    if (all || r.chance(0.3)) d.lineEol = '\n'
    for (const h of d.headers) if (all || r.chance(0.3)) h.eol = '\n'
    if (all || r.chance(0.3)) d.endEol = '\n'
    if (d.chunks !== null) for (const c of d.chunks) if (all || r.chance(0.3)) c.eol = '\n'
  },
  'bare-cr' (r, d) {
    d.any(r).eol = '\r'
  },
  'chunk-size' (r, d) {
    if (d.framing !== 'chunked') frame(r, d, 'chunked')
    if (d.chunks.length === 0) d.chunks.push({ size: '1', ext: '', data: 'x', eol: '\r\n' })
    const c = r.pick(d.chunks)
    const n = parseInt(c.size, 16)
    c.size = r.pick([(n + r.int(1, 5)).toString(16), Math.max(0, n - 1).toString(16), 'ffffffffffffffffff', '1' + '0'.repeat(16), ` ${c.size}`,
      `${c.size} `, `0x${c.size}`, `-${c.size}`, `${c.size};`, `${c.size} ;a=b`, `+${c.size}`, '', 'g', `${c.size}\t`, `${'0'.repeat(40)}${c.size}`])
  },
  'chunk-extension' (r, d) {
    if (d.framing !== 'chunked') frame(r, d, 'chunked')
    if (d.chunks.length > 0) r.pick(d.chunks).ext = r.pick([';a=b c', ';\x00', ';a="b', '; a = b', ';a=b\rc', ';' + 'x'.repeat(300)])
    else d.lastChunk = r.pick(['0;a=b', '0 ', '00', '0;\x01', '0\r\nG'])
  },
  'chunk-data-end' (r, d) {
    if (d.framing !== 'chunked') frame(r, d, 'chunked')
    if (d.chunks.length > 0) r.pick(d.chunks).eol = r.pick(['', 'XX', '\r', '\n\n'])
  },
  trailers (r, d) {
    if (d.framing !== 'chunked') frame(r, d, 'chunked')
    d.trailers.push({ name: r.pick(['Content-Length', 'Transfer-Encoding', 'Host', 'X-T', 'Connection']), sep: r.pick([': ', ' : ']), value: r.pick(['5', 'chunked', 'x', 'close']), eol: r.pick(['\r\n', '\n']) })
  },
  'embedded-request' (r, d) {
    d.body = embedded(r, d.id, d.host)
    if (d.method === 'GET' || d.method === 'HEAD') d.method = r.pick(['POST', 'GET'])
    frame(r, d, r.pick(['length', 'chunked']))
  },
  'host-trouble' (r, d) {
    const choice = r.int(0, 5)
    if (choice === 0) d.remove('host')
    else if (choice === 1) d.add('Host', r.pick([d.host, 'other.example', '']))
    else if (choice === 2) (d.find('host') || d.any(r)).value = r.pick(['', 'a b', 'x@y', 'h:port', '[::1', 'h\x01', 'a,b', '127.0.0.1:99999'])
    else if (choice === 3) d.target = `http://${d.host}${d.target}`
    else if (choice === 4) d.target = `http://other.example${d.target}`
    else (d.find('host') || d.any(r)).name = r.pick(['host ', 'Hоst', 'X-Host'])
  },
  version (r, d) {
    d.version = r.pick(['1.0', '1.1', '1.2', '0.9', '2.0', '1.01', '11'])
  },
  method (r, d) {
    d.method = r.pick(['get', 'G ET', 'FOO', 'PROPFIND', 'TRACE', 'CONNECT', 'POST', 'PUT', 'OPTIONS', 'M-SEARCH'])
  },
  'request-line-space' (r, d) {
    if (r.chance(0.5)) d.sp1 = r.pick(['  ', '\t', ''])
    else d.sp2 = r.pick(['  ', '\t', ''])
  },
  'target-chars' (r, d) {
    d.target += r.pick(['#frag', '%00', '\x7f', '\xe9', '?a b', '/../x', '//x', '?\x00'])
  },
  'header-value-chars' (r, d) {
    d.add('X-Odd', r.pick(['a\x00b', 'a\x01b', 'a\x7fb', '\xff', 'a\rb', 'a\nb', '\x1b[0m']))
  },
  'header-name-chars' (r, d) {
    d.add(r.pick(['X Odd', 'X\x00', 'X"q', 'X(y)', 'é', 'X@']), 'v')
  },
  expect (r, d) {
    d.add('Expect', r.pick(['100-continue', '100-Continue', 'foo']))
  },
  upgrade (r, d) {
    d.remove('connection')
    d.add('Connection', r.pick(['Upgrade', 'upgrade, keep-alive', 'keep-alive, Upgrade']))
    d.add('Upgrade', r.pick(['websocket', 'h2c', 'TLS/1.0']))
  },
  'forwarded-headers' (r, d) {
    d.add(r.pick(['X-Forwarded-For', 'X-Forwarded-Host', 'X-Forwarded-Proto', 'Forwarded', 'Via']), r.pick(['1.2.3.4', 'evil.example', 'https', 'for=1.2.3.4']))
  }
}
const MUTATION_NAMES = Object.keys(MUTATIONS)

/**
 * One request.
 * @param {import('./random').Rand} r
 * @param {string} id
 * @param {string} host the Host a client would send
 * @param {{ clean: boolean, mutations?: string[] }} options `mutations`: the names to draw from
 * @returns {RequestSpec}
 */
function makeRequest (r, id, host, { clean, mutations = MUTATION_NAMES }) {
  const d = new Draft(id, host)
  d.method = r.pick(METHODS)
  if (r.chance(0.15)) d.version = '1.0'
  d.add('Host', host)
  if (d.version === '1.0' ? r.chance(0.5) : r.chance(0.3)) d.add('Connection', r.pick(['keep-alive', 'Keep-Alive', 'close']))
  if (BODY_METHODS.has(d.method)) {
    d.body = r.chance(0.15) ? '' : r.text(r.int(1, 48), BODY_ALPHABET)
    // an HTTP/1.0 client cannot send chunked (RFC 9112 §6.1)
    frame(r, d, d.version === '1.1' && r.chance(0.4) ? 'chunked' : 'length')
  } else if (r.chance(0.05)) {
    frame(r, d, 'length') // a Content-Length: 0 on a GET is still clean
  }
  vary(r, d)
  if (!clean && mutations.length > 0) {
    const n = r.chance(0.6) ? 1 : r.int(2, 3)
    for (let i = 0; i < n; i++) {
      const name = r.pick(mutations)
      MUTATIONS[name](r, d)
      d.mutations.push(name)
    }
  }
  const connection = d.headers.filter((h) => h.name.trim().toLowerCase() === 'connection').map((h) => h.value.toLowerCase()).join(',')
  const closeAfter = /\bclose\b/.test(connection) || (d.version === '1.0' && !/\bkeep-alive\b/.test(connection))
  return { id, method: d.method, target: d.target, version: d.version, clean, mutations: d.mutations, body: d.body, closeAfter, bytes: d.render() }
}

/**
 * @typedef {object} ClientConnection
 * @property {number} index
 * @property {RequestSpec[]} requests in the order they are sent
 * @property {number[]} splits offsets where the bytes are cut into separate writes
 * @property {boolean} clean every request on it is clean
 */

/**
 * @typedef {object} RequestCase
 * @property {number} seed
 * @property {number} index
 * @property {ClientConnection[]} connections
 */

/**
 * Make case `index` of run `seed`.
 * @param {number} seed
 * @param {number} index
 * @param {{ host?: string, dirtyRate?: number, exclude?: string[] }} [options] `host`: the Host value clients send;
 *   `dirtyRate`: the share of requests that get mutations; `exclude`: mutation names not to make
 *   (e.g. a class already known to fail)
 * @returns {RequestCase}
 */
function requestCase (seed, index, { host = '127.0.0.1', dirtyRate = 0.5, exclude = [] } = {}) {
  const r = caseRandom(seed, index)
  const mutations = MUTATION_NAMES.filter((m) => !exclude.includes(m))
  const connections = []
  const count = r.int(1, 4)
  for (let c = 0; c < count; c++) {
    const requests = []
    const n = r.chance(0.5) ? 1 : r.int(2, 4)
    for (let k = 0; k < n; k++) {
      const q = makeRequest(r, `${index}.${c}.${k}`, host, { clean: !r.chance(dirtyRate), mutations })
      requests.push(q)
      // bytes after a request that asked to close make llhttp refuse the connection (HPE_CLOSED_CONNECTION,
      // "Data after Connection: close"): only a connection that is dirty anyway goes on
      if (q.closeAfter && requests.every((p) => p.clean)) break
    }
    const total = requests.reduce((sum, q) => sum + q.bytes.length, 0)
    const splits = []
    if (r.chance(0.25)) for (let i = r.int(1, 3); i > 0; i--) splits.push(r.int(1, total - 1))
    connections.push({ index: c, requests, splits: [...new Set(splits)].sort((a, b) => a - b), clean: requests.every((q) => q.clean) })
  }
  return { seed, index, connections }
}

/** All the bytes a connection sends. */
function connectionBytes (conn) {
  return Buffer.concat(conn.requests.map((q) => q.bytes))
}

module.exports = { requestCase, makeRequest, connectionBytes, MUTATION_NAMES }
