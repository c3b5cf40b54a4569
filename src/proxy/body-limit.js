'use strict'

/**
 * The request body limit (nginx's `client_max_body_size`). A declared Content-Length is checked
 * before anything is forwarded (Node's parser holds the body to exactly that length); a body of
 * unknown length (chunked) is counted as it streams through.
 */

/**
 * Whether the request declares a body larger than `max` (0: no limit).
 * @param {import('node:http').IncomingMessage} req
 * @param {number} max bytes
 * @returns {boolean}
 */
function declaresTooLarge (req, max) {
  const length = req.headers['content-length']
  return max > 0 && length !== undefined && Number(length) > max
}

/**
 * Count the body of a request without a Content-Length as it flows, and call `onExceed` once, as
 * soon as it passes `max`. Call it before the body is piped anywhere, in the same tick.
 * @param {import('node:http').IncomingMessage} req
 * @param {number} max bytes (0: no limit, nothing is counted)
 * @param {() => void} onExceed
 */
function watchBodySize (req, max, onExceed) {
  if (max === 0 || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] === undefined) return
  let received = 0
  const count = (chunk) => {
    received += chunk.length
    if (received <= max) return
    req.off('data', count)
    onExceed()
  }
  // first among the 'data' listeners, so the chunk that crosses the limit is refused before an engine writes it
  // upstream
  req.prependListener('data', count)
}

/**
 * Whether the request announces a body (Transfer-Encoding, or a Content-Length other than 0): such a
 * request cannot be replayed on another upstream, and its engine must forward the body.
 * @param {import('http').IncomingMessage} req
 * @returns {boolean}
 */
function hasBody (req) {
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

module.exports = { declaresTooLarge, watchBodySize, hasBody }
