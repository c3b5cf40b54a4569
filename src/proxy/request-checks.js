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

/** A reg-name of RFC 3986 (unreserved, sub-delims, pct-encoded), with an optional port. */
const REG_NAME = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+(?::([0-9]{0,5}))?$/
/** An IP-literal (the address is checked by node:net), with an optional port. */
const IP_LITERAL = /^\[([0-9A-Fa-f:.]+)\](?::([0-9]{0,5}))?$/

/**
 * Whether `value` is a valid Host field value: `uri-host [ ":" port ]`, not empty (nginx refuses an
 * empty Host too), a port of at most 65535.
 * @param {string} value
 * @returns {boolean}
 */
function validHost (value) {
  let port
  const name = REG_NAME.exec(value)
  if (name !== null) {
    port = name[1]
  } else {
    const literal = IP_LITERAL.exec(value)
    if (literal === null || !net.isIPv6(literal[1])) return false
    port = literal[2]
  }
  return port === undefined || port === '' || Number(port) <= 65535
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
    if (headers['content-length'] !== undefined) return refusal(400, 'transfer-encoding', 'Transfer-Encoding with Content-Length')
    if (te.length !== 7 || te.toLowerCase() !== 'chunked') return refusal(501, 'transfer-encoding', 'only Transfer-Encoding: chunked is implemented')
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
