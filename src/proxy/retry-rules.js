'use strict'

const { hasBody } = require('./body-limit')

/**
 * Which requests may be sent twice: the one set of idempotent methods, read by the balancer's
 * retries on another upstream (src/proxy/proxied-request.js, the http-proxy adapter) and by the direct
 * engine's resend on a new connection to the same upstream (src/proxy/engines/direct.js).
 */

/** Methods whose requests may be sent again (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'])

/**
 * Whether a failed attempt of the request may be sent again, to another upstream: an idempotent
 * method and no body (nothing of it would have to be read twice).
 * @param {import('http').IncomingMessage} req
 * @returns {boolean}
 */
function canRetry (req) {
  return IDEMPOTENT.has(req.method) && !hasBody(req)
}

module.exports = { IDEMPOTENT, canRetry }
