'use strict'

/**
 * The protocol probes of issue 25 ("beside the peers"): requests no well-behaved client sends,
 * sent as raw bytes to polistes and to nginx and HAProxy in front of the same kind of recording
 * upstream (bench/peers/probe-run.js), to compare what each answers and what each lets through.
 * Pure data: every probe is its client bytes, what a correct forward looks like, and, for the
 * probes about responses, the raw bytes the upstream answers with.
 *
 * A probe:
 * - `name`, `group` ('control' | 'framing' | 'host' | 'forwarded' | 'parsing' | 'response'), `title` (one line
 *   for the tables);
 * - `request`: the client's bytes (latin1 string);
 * - `expect` (request probes): what the upstream must receive when the probe is forwarded at all:
 *   exactly one request with this `method`, a `target` (a string, or a list of acceptable ones) and
 *   this `body`; a refusal (4xx/5xx, nothing forwarded) is always acceptable;
 * - `upstreamResponse` (response probes): the raw bytes the upstream answers with instead of
 *   node:http, and `client`: what the client must get (`status`, `body`, `notChunked` for an
 *   HTTP/1.0 client, `hides`: strings the body must not contain, by placeholder);
 * - `show`: request headers whose value at the upstream the tables print;
 * - `informational`: no peer comparison (the peers' stock configurations pass these on; the
 *   table records what reaches the upstream), only the framing check.
 */

const HOST = 'probe.test'

/** The request smuggled in the bodies of the framing probes (35 bytes). */
const SMUGGLED = 'GET /SMUGGLED HTTP/1.1\r\nHost: x\r\n\r\n'

/**
 * A request from its parts, CRLF line ends unless `eol` says otherwise.
 * @param {string} line request line
 * @param {string[]} headers header lines, as sent
 * @param {string} [body]
 * @param {string} [eol]
 * @returns {string}
 */
function raw (line, headers, body = '', eol = '\r\n') {
  return [line, ...headers, ''].join(eol) + eol + body
}

/** `data` as one chunk and the last chunk. */
function chunked (data) {
  return `${data.length.toString(16)}\r\n${data}\r\n0\r\n\r\n`
}

/** A POST /a with these framing headers and this body; forwarded, the upstream must see `payload`. */
function post (name, group, title, headers, body, payload) {
  return {
    name,
    group,
    title,
    request: raw('POST /a HTTP/1.1', [`Host: ${HOST}`, ...headers], body),
    expect: { method: 'POST', target: '/a', body: payload }
  }
}

/** A GET with these headers; forwarded, the upstream must see one GET of `target` without a body. */
function get (name, group, title, headers, { target = `/${name}`, line, accept, show, informational } = {}) {
  return {
    name,
    group,
    title,
    request: raw(line || `GET ${target} HTTP/1.1`, headers),
    expect: { method: 'GET', target: accept || target, body: '' },
    ...(show ? { show } : {}),
    ...(informational ? { informational: true } : {})
  }
}

const CHUNKED_TRAILER_RESPONSE = raw('HTTP/1.1 200 OK', [
  'Content-Type: text/plain', 'Transfer-Encoding: chunked', 'Trailer: X-Foo'
],
'5\r\nhello\r\n0\r\nX-Foo: bar\r\n\r\n')

/** @type {ReadonlyArray<object>} */
const PROBES = Object.freeze([
  // controls: what every target must forward as it is (the harness works, the comparison is not empty)
  get('control-get', 'control', 'a plain GET', [`Host: ${HOST}`]),
  post('control-post', 'control', 'a plain POST with Content-Length: 5', ['Content-Length: 5'], 'hello', 'hello'),
  post(
    'control-chunked',
    'control',
    'a plain POST with Transfer-Encoding: chunked',
    ['Transfer-Encoding: chunked'],
    chunked('hello'),
    'hello'
  ),

  // 1. Connection naming the framing headers: dropping them as hop-by-hop leaves the body unframed
  post('conn-content-length', 'framing', 'Connection: content-length; Content-Length: 35; body = a GET request',
    ['Connection: content-length', `Content-Length: ${SMUGGLED.length}`], SMUGGLED, SMUGGLED),
  post('conn-close-content-length', 'framing', 'Connection: close, content-length; Content-Length: 35; body ' +
    '= a GET request',
  ['Connection: close, content-length', `Content-Length: ${SMUGGLED.length}`], SMUGGLED, SMUGGLED),
  post('conn-transfer-encoding', 'framing', 'Connection: transfer-encoding; chunked body = a GET request',
    ['Connection: transfer-encoding', 'Transfer-Encoding: chunked'], chunked(SMUGGLED), SMUGGLED),

  // 5. framing headers a strict parser refuses
  post(
    'te-identity-chunked',
    'framing',
    'Transfer-Encoding: identity, chunked',
    ['Transfer-Encoding: identity, chunked'],
    chunked('hello'),
    'hello'
  ),
  post(
    'te-gzip-chunked',
    'framing',
    'Transfer-Encoding: gzip, chunked',
    ['Transfer-Encoding: gzip, chunked'],
    chunked('hello'),
    'hello'
  ),
  post(
    'te-chunked-gzip',
    'framing',
    'Transfer-Encoding: chunked, gzip (chunked not last)',
    ['Transfer-Encoding: chunked, gzip'],
    chunked('hello'),
    'hello'
  ),
  post(
    'cl-te',
    'framing',
    'Content-Length: 3 and Transfer-Encoding: chunked',
    ['Content-Length: 3', 'Transfer-Encoding: chunked'],
    chunked('hello'),
    'hello'
  ),
  post(
    'cl-duplicate',
    'framing',
    'Content-Length: 5 and Content-Length: 6',
    ['Content-Length: 5', 'Content-Length: 6'],
    'hello!',
    'hello'
  ),
  post('cl-plus', 'framing', 'Content-Length: +5', ['Content-Length: +5'], 'hello', 'hello'),
  post(
    'cl-space-before-colon',
    'parsing',
    'Content-Length : 5 (space before the colon)',
    ['Content-Length : 5'],
    'hello',
    'hello'
  ),
  get(
    'te-header-identity-chunked',
    'framing',
    'TE: identity, chunked on a GET',
    [`Host: ${HOST}`, 'TE: identity, chunked'],
    { show: ['te'] }
  ),

  // 5. Host
  get(
    'host-duplicate',
    'host',
    'two Host headers (a.test, b.test)',
    ['Host: a.test', 'Host: b.test'],
    { show: ['host'] }
  ),
  get('host-space', 'host', 'Host: a b.test', ['Host: a b.test'], { show: ['host'] }),
  get('host-at', 'host', 'Host: user@a.test', ['Host: user@a.test'], { show: ['host'] }),
  get('host-slash', 'host', 'Host: a.test/evil', ['Host: a.test/evil'], { show: ['host'] }),
  get('host-bad-port', 'host', 'Host: a.test:99999', ['Host: a.test:99999'], { show: ['host'] }),
  get('host-port-letters', 'host', 'Host: a.test:abc', ['Host: a.test:abc'], { show: ['host'] }),
  get('host-empty', 'host', 'Host: (empty value)', ['Host: '], { show: ['host'] }),
  get(
    'connection-host',
    'host',
    'Connection: host',
    [`Host: ${HOST}`, 'Connection: host'],
    { show: ['host', 'connection'] }
  ),
  get('http10-no-host', 'host', 'HTTP/1.0 request without Host', [], {
    line: 'GET /http10-no-host HTTP/1.0',
    show: ['host']
  }),
  get('absolute-form', 'host', 'GET http://other.test/absolute-form with Host: probe.test', [`Host: ${HOST}`],
    { line: 'GET http://other.test/absolute-form HTTP/1.1', accept: ['/absolute-form', 'http://other.test/absolute-form'], show: ['host'] }),

  // 5. header syntax
  get(
    'obs-fold',
    'parsing',
    'obs-fold: "X-Folded: a" continued on a line starting with spaces',
    [`Host: ${HOST}`, 'X-Folded: a', '  b'],
    { show: ['x-folded'] }
  ),
  {
    ...get('bare-lf', 'parsing', 'bare LF line ends', []),
    request: raw('GET /bare-lf HTTP/1.1', [`Host: ${HOST}`], '', '\n')
  },

  // 4. forwarding headers a client sends
  get('client-forwarded-headers', 'forwarded', 'client sends X-Forwarded-Host/-Proto/-For, Forwarded, X-Real-IP', [
    `Host: ${HOST}`,
    'X-Forwarded-Host: evil.test',
    'X-Forwarded-Proto: https',
    'X-Forwarded-For: 6.6.6.6',
    'Forwarded: for=6.6.6.6;host=evil.test;proto=https',
    'X-Real-IP: 6.6.6.6'
  ], {
    show: [
      'host', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-for', 'x-forwarded-port', 'forwarded',
      'x-real-ip', 'via'
    ],
    informational: true
  }),

  // 2. responses: raw upstream bytes
  {
    name: 'trailer-http10',
    group: 'response',
    title: 'upstream: chunked with Trailer: X-Foo; client: HTTP/1.0',
    request: raw('GET /trailer-http10 HTTP/1.0', [`Host: ${HOST}`]),
    upstreamResponse: CHUNKED_TRAILER_RESPONSE,
    client: { status: 200, body: 'hello', notChunked: true }
  },
  {
    name: 'trailer-http11',
    group: 'response',
    title: 'upstream: chunked with Trailer: X-Foo; client: HTTP/1.1',
    request: raw('GET /trailer-http11 HTTP/1.1', [`Host: ${HOST}`]),
    upstreamResponse: CHUNKED_TRAILER_RESPONSE,
    client: { status: 200, body: 'hello' }
  },
  {
    name: 'bad-gateway-body',
    group: 'response',
    title: 'upstream answers garbage: the 502 and what its body reveals',
    request: raw('GET /bad-gateway-body HTTP/1.1', [`Host: ${HOST}`]),
    upstreamResponse: 'NOT-HTTP garbage\r\n\r\n',
    client: { status: 502, hides: ['{upstreamPort}', 'Error:', '    at '] }
  },
  {
    name: 'bad-gateway-close',
    group: 'response',
    title: 'upstream closes without answering: the 502 and what its body reveals',
    request: raw('GET /bad-gateway-close HTTP/1.1', [`Host: ${HOST}`]),
    upstreamResponse: '',
    client: { status: 502, hides: ['{upstreamPort}', 'Error:', '    at '] }
  }
])

/** Probe names in table order. */
const PROBE_NAMES = PROBES.map((p) => p.name)

/**
 * The probes whose names are listed (all when none).
 * @param {string[]} [names]
 * @returns {object[]}
 * @throws {Error} on an unknown name
 */
function selectProbes (names = []) {
  if (names.length === 0) return [...PROBES]
  for (const n of names) {
    if (!PROBE_NAMES.includes(n)) throw new Error(`unknown probe "${n}"; expected one of ${PROBE_NAMES.join(', ')}`)
  }
  return PROBES.filter((p) => names.includes(p.name))
}

module.exports = { PROBES, SMUGGLED, selectProbes, chunked }
