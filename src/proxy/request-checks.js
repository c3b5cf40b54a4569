'use strict'

const net = require('node:net')

/**
 * What a request's head must satisfy before any of it is forwarded, on every front and engine
 * (issue 25: no client can touch another's response). Node's parser (llhttp, strict) already
 * refuses Content-Length with Transfer-Encoding, two Content-Lengths, a Transfer-Encoding that does
 * not end in `chunked`, and an HTTP/1.1 request without Host; these are the rules it leaves to us.
 * Pure functions over the parsed head; no sockets.
 *
 * - Host (RFC 9112 §3.2): "A server MUST respond with a 400 (Bad Request) status code to any
 *   HTTP/1.1 request message that lacks a Host header field and to any request message that
 *   contains more than one Host header field line or a Host header field with an invalid field
 *   value." Valid is RFC 3986's `uri-host [ ":" port ]`: an IPv6 literal in brackets or a reg-name
 *   (letters, digits, `-._~`, sub-delims, %-escapes), and a port of at most 65535. Node keeps the
 *   first of two Host lines and accepts any visible value, so both are checked here.
 * - Transfer-Encoding: only `chunked`, alone (nginx's rule): any other coding, or a list, is
 *   answered 501 (RFC 9112 §6.1: a server that receives a transfer coding it does not understand
 *   SHOULD answer 501), and Transfer-Encoding in an HTTP/1.0 request 400 (RFC 9112 §6.1: it
 *   cannot be trusted to have been framed by it).
 */

/**
 * @typedef {object} Refusal
 * @property {number} status 400 or 501
 * @property {string} reason the X-Polistes-Error kind
 * @property {string} message the body's text
 */

/** The characters of a reg-name (RFC 3986): unreserved and sub-delims; `%` starts an escape. */
const REG_NAME = new Uint8Array(128)
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=") {
  REG_NAME[c.charCodeAt(0)] = 1
}
/** An IP-literal (the address is checked by node:net), with an optional port. */
const IP_LITERAL = /^\[([0-9A-Fa-f:.]+)\](?::([0-9]*))?$/

/** The last Host found valid: nearly every request names the same one as the one before. */
let lastValid = ''

/**
 * Whether `value` is a valid Host field value: `uri-host [ ":" port ]`, not empty (nginx refuses an
 * empty Host too), a port of at most 65535. It runs for every request: the Host of the request
 * before is taken without a second look.
 * @param {string} value
 * @returns {boolean}
 */
function validHost (value) {
  if (value === lastValid) return true
  const n = value.length
  if (n === 0) return false
  if (value.charCodeAt(0) === 91) { // '['
    const literal = IP_LITERAL.exec(value)
    if (literal === null || !net.isIPv6(literal[1]) || !validPort(literal[2])) return false
    lastValid = value
    return true
  }
  let i = 0
  for (; i < n; i++) {
    const c = value.charCodeAt(i)
    if (c === 58) break // ':'
    if (c === 37) { // '%' HEXDIG HEXDIG
      if (i + 2 >= n || !hex(value.charCodeAt(i + 1)) || !hex(value.charCodeAt(i + 2))) return false
      i += 2
    } else if (c >= 128 || REG_NAME[c] === 0) {
      return false
    }
  }
  if (i === 0 || (i < n && !validPort(value.slice(i + 1)))) return false
  lastValid = value
  return true
}

/** A port: digits only (none is allowed, RFC 3986), at most 65535. */
function validPort (port) {
  if (port === undefined || port === '') return true
  if (port.length > 5) return false
  for (let i = 0; i < port.length; i++) {
    const c = port.charCodeAt(i)
    if (c < 48 || c > 57) return false
  }
  return Number(port) <= 65535
}

function hex (c) {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102)
}

/**
 * The answer to a request whose head breaks a rule above, or null when it may be forwarded.
 * @param {{ httpVersion: string, headers: Record<string, string | string[] | undefined>, rawHeaders?: string[] }} req
 *   node:http's IncomingMessage or the fast front's request (which has no `rawHeaders`: it hands any
 *   request with a repeated header name to node:http)
 * @returns {Refusal | null}
 */
function checkRequest (req) {
  const headers = req.headers
  const host = headers.host
  if (host === undefined) {
    if (req.httpVersion !== '1.0') return refusal(400, 'host', 'an HTTP/1.1 request needs a Host header')
  } else if (!validHost(host)) {
    return refusal(400, 'host', 'invalid Host header')
  } else if (req.rawHeaders !== undefined && hostLines(req.rawHeaders) > 1) {
    return refusal(400, 'host', 'more than one Host header')
  }
  const te = headers['transfer-encoding']
  if (te !== undefined) {
    if (req.httpVersion === '1.0') return refusal(400, 'transfer-encoding', 'Transfer-Encoding in an HTTP/1.0 request')
    if (headers['content-length'] !== undefined) {
      return refusal(400, 'transfer-encoding', 'Transfer-Encoding with Content-Length')
    }
    if (te.length !== 7 || te.toLowerCase() !== 'chunked') {
      return refusal(501, 'transfer-encoding', 'only Transfer-Encoding: chunked is implemented')
    }
  }
  return null
}

/** How many Host lines a raw header list holds. */
function hostLines (raw) {
  let n = 0
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]
    if (name.length === 4 && name.toLowerCase() === 'host') n++
  }
  return n
}

function refusal (status, reason, message) {
  return { status, reason, message }
}

module.exports = { checkRequest, validHost }
