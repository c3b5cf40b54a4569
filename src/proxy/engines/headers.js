'use strict'

const { STATUS_CODES } = require('node:http')
const { HeaderNames } = require('../../common/header-names')
const { withNoStore } = require('../cache-control')
const { CLIENT_FORWARDING } = require('../forwarded')

/**
 * The header rules the node-http and undici engines share (the http-proxy engine gets the same
 * effect from the library's passes plus its own stripping). Pure functions over header data;
 * no sockets.
 *
 * Request: hop-by-hop headers (RFC 9110 §7.6.1: Connection, the headers it names, Keep-Alive,
 * Proxy-Connection, Upgrade, TE) stay on the client's hop, Via gets `1.1 polistes` appended, as does Expect (Node
 * answered the client's `100-continue` already) and Trailer (no request trailers are forwarded, and node:http throws on
 * a Trailer header of a message that is not chunked). Forwarding headers (src/proxy/forwarded.js): from a
 * peer that is not a trusted proxy the client's X-Forwarded-*, Forwarded and X-Real-IP are dropped and
 * ours sent (X-Forwarded-For: the peer, -Host: Host, -Proto: our listener's scheme, -Port: the port
 * the client addressed); from a trusted proxy they are kept and X-Forwarded-For gets the peer
 * appended (forwardingHeaders). Content-Length and Transfer-Encoding are framing, never copied from
 * the client: the proxy frames what it forwards itself, from the body it sends (the length Node's
 * parser held the client's body to, or `Transfer-Encoding: chunked`), and no Connection token
 * removes them or Host (see FRAMING below). With `noStore` (the
 * policy's admission hint, src/proxy/cache-control.js) Cache-Control carries `no-store`, merged into
 * the client's value.
 *
 * Response: the same hop-by-hop set plus Transfer-Encoding and Trailer; Node frames the response to
 * the client itself (Content-Length kept, otherwise chunked for HTTP/1.1, close-delimited for
 * HTTP/1.0). No engine forwards an upstream's trailer fields (they are read and dropped), so the
 * `Trailer` header announcing them is dropped too (Go's ReverseProxy counts it hop-by-hop as well):
 * kept, it would promise the client fields that never come, and node:http's writeHead throws
 * ERR_HTTP_TRAILER_INVALID on a Trailer header of a response it does not chunk (an HTTP/1.0 client,
 * a Content-Length, HEAD, 204, 304).
 */

/** Request headers never forwarded (the framing ones are written by requestHeaders itself). */
const REQUEST_DROPPED = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'expect', 'trailer', 'te', 'via',
  'x-forwarded-for', 'x-forwarded-port', 'x-forwarded-proto', 'x-forwarded-host', 'content-length', 'transfer-encoding'
])
/** The same plus the client's other forwarding headers: what a peer that is not a trusted proxy loses. */
const REQUEST_DROPPED_UNTRUSTED = new Set([...REQUEST_DROPPED, ...CLIENT_FORWARDING])

/**
 * Names a Connection header cannot take away (issue 25): `Connection: content-length` made the
 * request go upstream without its length and its body parsed there as the next request, whose
 * answer another client then received; `Connection: host` left the request without Host. The
 * framing is the proxy's to write (nginx and HAProxy write their own too), Host is end to end.
 */
const FRAMING = new Set(['host', 'content-length', 'transfer-encoding'])

/** Response headers never passed to the client (trailer: see above). */
const RESPONSE_DROPPED = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'transfer-encoding', 'trailer'
])

/**
 * The names a Connection header value lists, lower-cased, beyond those always dropped
 * (`Connection: keep-alive` and `close`, the usual values, list nothing more) and those no
 * Connection header removes (Host, Content-Length, Transfer-Encoding).
 * @param {string | undefined} value
 * @param {Set<string>} always names dropped anyway
 * @returns {string[] | null} null when there is nothing extra to drop
 */
function connectionNames (value, always) {
  if (!value) return null
  const lower = value.toLowerCase()
  if (lower === 'keep-alive' || lower === 'close') return null
  let names = null
  for (const part of lower.split(',')) {
    const name = part.trim()
    if (name && name !== 'close' && !always.has(name) && !FRAMING.has(name)) (names ||= []).push(name)
  }
  return names
}

/**
 * The headers to send upstream for `req`, as a flat `[name, value, ...]` array (what
 * `http.request` and undici take without building a header object).
 *
 * @param {import('http').IncomingMessage} req the client's request (its `headers`: lower-case, duplicates joined)
 * @param {{ keepTransferEncoding: boolean, close: boolean, authority?: string, noStore?: boolean, trusted?: boolean }}
 *   options `keepTransferEncoding`: announce a chunked body with `Transfer-Encoding: chunked` (the engine
 *   chunk-encodes it; false for undici, which announces it itself); a body of known length always
 *   gets its `Content-Length`, from the length Node's parser read, never the client's text;
 *   `close`: add `Connection: close`;
 *   `authority`: the upstream's host[:port], sent as Host when the client sent none (HTTP/1.0 allows
 *   that, HTTP/1.1 upstreams refuse a request without it); `noStore`: send `Cache-Control: no-store`
 *   (appended to the client's Cache-Control); `trusted`: the peer is a trusted proxy (its forwarding
 *   headers are kept; default false: replaced by ours)
 * @returns {string[]}
 */
function requestHeaders (req, { keepTransferEncoding, close, authority, noStore, trusted = false }) {
  const headers = req.headers
  const extra = connectionNames(headers.connection, REQUEST_DROPPED)
  const dropped = trusted ? REQUEST_DROPPED : REQUEST_DROPPED_UNTRUSTED
  const out = []
  for (const name in headers) {
    if (dropped.has(name)) continue
    if (extra !== null && extra.includes(name)) continue
    out.push(name, headers[name])
  }
  forwardingHeaders(req, trusted, out)
  out.push('via', via(headers.via))
  // the framing of the body the engine sends (the front admits `chunked` alone, never with a
  // length: src/proxy/request-checks.js and Node's parser)
  if (headers['transfer-encoding'] !== undefined) {
    if (keepTransferEncoding) out.push('transfer-encoding', 'chunked')
  } else if (headers['content-length'] !== undefined) {
    out.push('content-length', contentLength(headers['content-length']))
  }
  if (close) out.push('connection', 'close')
  if (headers.host === undefined && authority) out.push('host', authority)
  if (noStore === true) addNoStore(out, headers['cache-control'])
  return out
}

/**
 * Put `no-store` into the Cache-Control of a flat header array: the client's entry (copied there
 * by requestHeaders unless its Connection header named it) gets it appended, or a new one is added.
 * Only requests whose policy asked pay for this scan.
 * @param {string[]} out flat `[name, value, ...]`, lower-case names
 * @param {string | undefined} existing the client's Cache-Control
 */
function addNoStore (out, existing) {
  if (existing !== undefined) {
    for (let i = 0; i < out.length; i += 2) {
      if (out[i] === 'cache-control') {
        out[i + 1] = withNoStore(existing)
        return
      }
    }
  }
  out.push('cache-control', withNoStore(undefined))
}

/**
 * A Content-Length as it goes upstream: the number Node's parser held the body to (it admits one
 * value of digits only), without leading zeros (as text: no rounding above 2^53).
 * @param {string} value
 * @returns {string}
 */
function contentLength (value) {
  return value.length === 1 || value[0] !== '0' ? value : value.replace(/^0+(?=[0-9])/, '')
}

/** RFC 9110 §7.6.3: a gateway MUST add itself to Via on the requests it forwards (requests only). */
const VIA = '1.1 polistes'
/**
 * @param {string | undefined} existing the client's Via
 * @returns {string}
 */
function via (existing) {
  return existing ? `${existing}, ${VIA}` : VIA
}

/**
 * This hop's X-Forwarded-For, -Port, -Proto and -Host, pushed onto `out` as `[name, value, ...]`
 * (every engine and the WebSocket tunnel send these). Untrusted peer: X-Forwarded-For is the peer's
 * address, -Proto the scheme of our listener, -Port the port the client addressed (Host's, else the
 * scheme's), -Host the Host header (none without one, as HTTP/1.0 allows). Trusted proxy: the peer is
 * appended to the client's X-Forwarded-For, and its -Proto, -Port and -Host (the original request's)
 * are kept, ours only standing in for one it did not send.
 * @param {import('http').IncomingMessage} req
 * @param {boolean} trusted the peer is a trusted proxy (src/proxy/forwarded.js)
 * @param {string[]} [out] pushed onto
 * @returns {string[]} `out`
 */
function forwardingHeaders (req, trusted, out = []) {
  const headers = req.headers
  const encrypted = req.socket.encrypted === true
  const peer = req.socket.remoteAddress || ''
  const proto = encrypted ? 'https' : 'http'
  if (trusted) {
    out.push(
      'x-forwarded-for', append(headers['x-forwarded-for'], peer),
      'x-forwarded-port', headers['x-forwarded-port'] || hostPort(headers.host, encrypted),
      'x-forwarded-proto', headers['x-forwarded-proto'] || proto
    )
    const host = headers['x-forwarded-host'] || headers.host
    if (host) out.push('x-forwarded-host', host)
    return out
  }
  out.push('x-forwarded-for', peer, 'x-forwarded-port', hostPort(headers.host, encrypted), 'x-forwarded-proto', proto)
  if (headers.host) out.push('x-forwarded-host', headers.host) // an HTTP/1.0 request may have no Host
  return out
}

function append (existing, value) {
  return existing ? `${existing}, ${value}` : value
}

/** The port the client addressed: from its Host header, else the scheme's default. */
function hostPort (host, encrypted) {
  if (host) {
    const colon = host.lastIndexOf(':')
    let digits = colon !== -1 && colon < host.length - 1
    for (let i = colon + 1; digits && i < host.length; i++) {
      const c = host.charCodeAt(i)
      digits = c >= 48 && c <= 57
    }
    if (digits) return host.slice(colon + 1)
  }
  return encrypted ? '443' : '80'
}

/**
 * Filter an upstream response's raw headers for the client.
 *
 * @param {string[]} raw flat `[name, value, ...]` as received (original case, duplicates separate)
 * @param {HeaderNames} [names] the names of the responses before from the same upstream (src/common/header-names.js)
 * @returns {{ raw: string[], headers: Record<string, string | string[]> }} `raw`: what to pass to
 *   `res.writeHead` (original case kept); `headers`: the same, by lower-case name (repeated headers
 *   as arrays), for whoever reads a value
 */
function responseHead (raw, names = new HeaderNames()) {
  let extra = null
  for (let i = 0; i < raw.length; i += 2) {
    const name = names.lowerAt(raw[i], i >> 1)
    if (name.length === 10 && name === 'connection') {
      const more = connectionNames(raw[i + 1], RESPONSE_DROPPED)
      if (more) extra = extra ? extra.concat(more) : more
    }
  }
  const out = []
  const headers = {}
  for (let i = 0; i < raw.length; i += 2) {
    const name = names.lower[i >> 1] // lowerAt put it there in the loop above
    if (RESPONSE_DROPPED.has(name)) continue
    if (extra !== null && extra.includes(name)) continue
    const value = raw[i + 1]
    out.push(raw[i], value)
    const seen = headers[name]
    headers[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return { raw: out, headers }
}

/** A character node:http's writeHead refuses in a reason phrase (all but HTAB, SP, VCHAR, obs-text). */
const BAD_REASON = /[^\t\x20-\x7e\x80-\xff]/

/**
 * The reason phrase to relay: the upstream's, or the standard one for the status when node:http
 * could not send the upstream's (a control character that Node's lenient client parser let
 * through, or characters beyond latin1 from undici's decoding). A reason phrase is informational
 * (RFC 9112 §4: a client SHOULD ignore it), so a bad one is replaced rather than failing the response.
 * @param {number} statusCode
 * @param {string | undefined} message as the upstream sent it
 * @returns {string}
 */
function sendableReason (statusCode, message) {
  if (message && !BAD_REASON.test(message)) return message
  return STATUS_CODES[statusCode] || 'unknown'
}

module.exports = {
  requestHeaders,
  responseHead,
  contentLength,
  via,
  hostPort,
  forwardingHeaders,
  sendableReason,
  FRAMING
}
