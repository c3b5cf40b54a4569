'use strict'

/**
 * Guards in front of node-static 0.7.11, whose defects on Node 20 would otherwise leak files or
 * kill the process (each has a test in test/servers-guards.test.js):
 *
 * - Directory traversal, CVE-2023-26111: node-static checks `resolved.indexOf(root) === 0`, a prefix
 *   test without a path separator, so `/../public-secret/x` (or `/%2e%2e/…`, decoded by its
 *   `decodeURI`) escapes into any sibling directory whose name starts with the root's name.
 * - A NUL byte (`/%00`) reaches `fs.stat` inside a `process.nextTick`, which throws
 *   ERR_INVALID_ARG_VALUE synchronously there: an uncaught exception, the process dies.
 * - HEAD, OPTIONS (and any other method) and Range: node-static streams the body, then its
 *   `finish` calls `res.writeHead` a second time for any status other than 200 or any method other
 *   than GET: ERR_HTTP_HEADERS_SENT thrown from a stream callback, the process dies. OPTIONS and
 *   POST would also get the file's body.
 *
 * Every function here is a small pure "pass" over the request (node-http-proxy style), testable alone.
 */

const path = require('node:path')

/** Methods a page backend answers. */
const ALLOW = 'GET, HEAD, OPTIONS'

/**
 * @typedef {{ status: number, reason: string, headers?: Record<string, string> }} Refusal
 * @typedef {{ key: string, file: string, url: string }} PageRoute
 */

/**
 * Decide what a method gets before anything touches node-static.
 *
 * @param {string} method the request method
 * @returns {Refusal|null} null for GET/HEAD; 204 with Allow for OPTIONS; 405 with Allow otherwise
 */
function checkMethod (method) {
  if (method === 'GET' || method === 'HEAD') return null
  if (method === 'OPTIONS') return { status: 204, reason: 'options', headers: { Allow: ALLOW } }
  return { status: 405, reason: 'method not allowed', headers: { Allow: ALLOW } }
}

/**
 * Turn a raw request target into a safe page route under `root`, or a refusal.
 *
 * The path is decoded once with decodeURIComponent (so `%2f` and `%2e` count as what they mean),
 * then: malformed encoding → 400, NUL byte → 400, backslash (raw or `%5c`) → 400, any `..` segment
 * → 403, and finally the resolved file must be `root` itself or lie under `root + path.sep`
 * (the separator-aware check node-static lacks) → else 403.
 *
 * @param {string} rawUrl `req.url` as received, e.g. "/page1.html?x=1"
 * @param {string} root absolute, resolved root directory
 * @returns {PageRoute|Refusal} `key` is the normalized decoded path ("/page1.html", the cache key),
 *   `file` the absolute file, `url` a re-encoded path that is safe to hand to node-static
 */
function resolvePagePath (rawUrl, root) {
  if (typeof rawUrl !== 'string' || rawUrl[0] !== '/') {
    return { status: 400, reason: 'request target must start with /' }
  }
  const rawPath = rawUrl.split(/[?#]/, 1)[0]
  if (rawPath.includes('\\')) return { status: 400, reason: 'backslash in path' }
  let decoded
  try {
    decoded = decodeURIComponent(rawPath)
  } catch {
    return { status: 400, reason: 'malformed percent-encoding' }
  }
  if (decoded.includes('\0')) return { status: 400, reason: 'NUL byte in path' }
  if (decoded.includes('\\')) return { status: 400, reason: 'backslash in path' }
  if (decoded.split('/').includes('..')) return { status: 403, reason: 'path traversal' }
  const key = path.posix.normalize(decoded)
  const file = path.resolve(root, '.' + key)
  if (file !== root && !file.startsWith(root + path.sep)) return { status: 403, reason: 'outside root' }
  // encodeURIComponent per segment: node-static's decodeURI leaves %2F/%3F/%23 encoded, so no
  // decoded character can change how node-static splits or truncates the path.
  const url = key.split('/').map(encodeURIComponent).join('/')
  return { key, file, url }
}

/**
 * Make a second `res.writeHead` a no-op instead of a thrown ERR_HTTP_HEADERS_SENT. Defence in
 * depth: node-static's `finish` writes the head again after streaming in several paths (206,
 * non-GET, and a 500 after a read error mid-stream), always from a callback we cannot wrap in try.
 *
 * @param {import('node:http').ServerResponse} res the response to guard (mutated)
 * @returns {import('node:http').ServerResponse} the same response
 */
function guardWriteHead (res) {
  const writeHead = res.writeHead
  res.writeHead = function guardedWriteHead (...args) {
    if (res.headersSent) return res
    return writeHead.apply(res, args)
  }
  return res
}

/**
 * Parse a Range header for one byte range (RFC 9110 §14.1.2), clamped to the body.
 *
 * @param {string|undefined} header the Range header
 * @param {number} size body length in bytes
 * @returns {{ start: number, end: number }|null} inclusive bounds, or null when absent,
 *   unsupported (several ranges, other units) or unsatisfiable: the caller then answers a full 200,
 *   which the RFC allows for any Range it does not honour
 */
function parseRange (header, size) {
  if (typeof header !== 'string') return null
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!m || (m[1] === '' && m[2] === '')) return null
  let start
  let end
  if (m[1] === '') {
    const suffix = Number(m[2])
    if (suffix === 0) return null
    start = Math.max(0, size - suffix)
    end = size - 1
  } else {
    start = Number(m[1])
    end = m[2] === '' ? size - 1 : Number(m[2])
    if (end < start) return null
    end = Math.min(end, size - 1)
  }
  if (start >= size || start > end) return null
  return { start, end }
}

module.exports = { checkMethod, resolvePagePath, guardWriteHead, parseRange }
