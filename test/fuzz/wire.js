'use strict'

/**
 * Small HTTP/1.x readers for the differential fuzzer: the client's reader of the responses that
 * come back on one connection, and the raw upstream's reader of the requests polistes forwards.
 * Pure: bytes in, messages out.
 */

/** Whether `text` holds, from `from` on, a control character other than HTAB (not allowed in a field value). */
function hasControl (text, from) {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if ((c < 0x20 && c !== 9) || c === 0x7f) return true
  }
  return false
}

/**
 * @typedef {object} ParsedResponse
 * @property {number} status
 * @property {string} version 'HTTP/1.1' or 'HTTP/1.0'
 * @property {Record<string, string>} headers lower-case names, repeats joined with ', '
 * @property {Buffer} body decoded (chunked undone)
 * @property {boolean} interim a 1xx other than 101
 * @property {boolean} chunked it came chunked
 * @property {boolean} closeDelimited its body ran to the end of the connection
 */

/**
 * Read the responses at the start of `buffer`.
 * @param {Buffer} buffer
 * @param {(index: number, headers: Record<string, string>, rest: Buffer) => boolean} isHead whether the final
 *   response number `index` (0-based) with these headers answers a HEAD request (no body)
 * @param {boolean} ended the connection has closed (a body without length ends there)
 * @returns {{ responses: ParsedResponse[], rest: Buffer, error: string | null }} `error`: bytes
 *   that are not an HTTP response (the responses before them are still given)
 */
function readResponses (buffer, isHead, ended) {
  const responses = []
  let pos = 0
  let finals = 0
  for (;;) {
    if (pos >= buffer.length) break
    const headEnd = buffer.indexOf('\r\n\r\n', pos)
    if (headEnd === -1) {
      if (ended) return { responses, rest: buffer.subarray(pos), error: `cut head: ${JSON.stringify(buffer.toString('latin1', pos, pos + 80))}` }
      break
    }
    const lines = buffer.toString('latin1', pos, headEnd).split('\r\n')
    const m = /^(HTTP\/1\.[01]) (\d{3})(?: [^\r\n]*)?$/.exec(lines[0])
    if (!m) return { responses, rest: buffer.subarray(pos), error: `not a status line: ${JSON.stringify(lines[0].slice(0, 80))}` }
    const status = Number(m[2])
    const headers = {}
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':')
      if (colon <= 0 || /[^!#$%&'*+\-.^_`|~0-9A-Za-z]/.test(line.slice(0, colon)) || hasControl(line, colon + 1)) {
        return { responses, rest: buffer.subarray(pos), error: `bad header line: ${JSON.stringify(line.slice(0, 80))}` }
      }
      const name = line.slice(0, colon).toLowerCase()
      const value = line.slice(colon + 1).trim()
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value
    }
    let cursor = headEnd + 4
    const interim = status >= 100 && status < 200 && status !== 101
    let body = Buffer.alloc(0)
    let chunked = false
    let closeDelimited = false
    if (interim || status === 101 || status === 204 || status === 304 || (!interim && isHead(finals, headers, buffer.subarray(headEnd + 4)))) {
      // no body
    } else if (headers['transfer-encoding'] !== undefined) {
      if (headers['transfer-encoding'].toLowerCase() !== 'chunked') return { responses, rest: buffer.subarray(pos), error: `transfer-encoding ${headers['transfer-encoding']}` }
      chunked = true
      const chunks = []
      let done = false
      for (;;) {
        const lineEnd = buffer.indexOf('\r\n', cursor)
        if (lineEnd === -1) break
        const sizeText = buffer.toString('latin1', cursor, lineEnd).split(';')[0]
        if (!/^[0-9a-fA-F]{1,15}$/.test(sizeText)) return { responses, rest: buffer.subarray(pos), error: `bad chunk size ${JSON.stringify(sizeText)}` }
        const size = parseInt(sizeText, 16)
        if (size === 0) {
          // trailers, then an empty line
          let at = lineEnd + 2
          for (;;) {
            const end = buffer.indexOf('\r\n', at)
            if (end === -1) break
            if (end === at) {
              cursor = end + 2
              done = true
              break
            }
            at = end + 2
          }
          break
        }
        if (buffer.length < lineEnd + 2 + size + 2) break
        if (buffer[lineEnd + 2 + size] !== 13 || buffer[lineEnd + 3 + size] !== 10) return { responses, rest: buffer.subarray(pos), error: 'chunk data not followed by CRLF' }
        chunks.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size))
        cursor = lineEnd + 2 + size + 2
      }
      if (!done) {
        if (ended) return { responses, rest: buffer.subarray(pos), error: 'cut chunked body' }
        break
      }
      body = Buffer.concat(chunks)
    } else if (headers['content-length'] !== undefined) {
      if (!/^\d+$/.test(headers['content-length'])) return { responses, rest: buffer.subarray(pos), error: `content-length ${JSON.stringify(headers['content-length'])}` }
      const length = Number(headers['content-length'])
      if (buffer.length < cursor + length) {
        if (ended) return { responses, rest: buffer.subarray(pos), error: 'cut body' }
        break
      }
      body = buffer.subarray(cursor, cursor + length)
      cursor += length
    } else {
      if (!ended) break
      body = buffer.subarray(cursor)
      cursor = buffer.length
      closeDelimited = true
    }
    responses.push({ status, version: m[1], headers, body, interim, chunked, closeDelimited, from: pos, to: cursor })
    if (!interim) finals++
    pos = cursor
    if (status === 101) break
  }
  return { responses, rest: buffer.subarray(pos), error: null }
}

/**
 * @typedef {object} ParsedRequest
 * @property {string} method
 * @property {string} target
 * @property {string} version
 * @property {Record<string, string>} headers
 * @property {string[]} rawHeaders
 * @property {Buffer} body
 */

/**
 * Read one request at `start` of `buffer` (what polistes forwards: CRLF lines, Content-Length or
 * chunked bodies).
 * @param {Buffer} buffer
 * @param {number} start
 * @returns {{ request: ParsedRequest, next: number } | 'partial' | { error: string }}
 */
function readRequest (buffer, start) {
  const headEnd = buffer.indexOf('\r\n\r\n', start)
  if (headEnd === -1) return 'partial'
  const lines = buffer.toString('latin1', start, headEnd).split('\r\n')
  const m = /^([A-Z-]+) (\S+) (HTTP\/1\.[01])$/.exec(lines[0])
  if (!m) return { error: `not a request line: ${JSON.stringify(lines[0].slice(0, 80))}` }
  const headers = {}
  const rawHeaders = []
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':')
    if (colon <= 0) return { error: `bad header line: ${JSON.stringify(line.slice(0, 80))}` }
    const name = line.slice(0, colon).toLowerCase()
    const value = line.slice(colon + 1).trim()
    rawHeaders.push(line.slice(0, colon), value)
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value
  }
  let cursor = headEnd + 4
  let body = Buffer.alloc(0)
  if (headers['transfer-encoding'] !== undefined) {
    const chunks = []
    for (;;) {
      const lineEnd = buffer.indexOf('\r\n', cursor)
      if (lineEnd === -1) return 'partial'
      const size = parseInt(buffer.toString('latin1', cursor, lineEnd), 16)
      if (Number.isNaN(size)) return { error: 'bad chunk size' }
      if (size === 0) {
        const end = buffer.indexOf('\r\n\r\n', lineEnd) // no trailers, or trailers then an empty line
        if (end === -1) return 'partial'
        cursor = end + 4
        break
      }
      if (buffer.length < lineEnd + 4 + size) return 'partial'
      chunks.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size))
      cursor = lineEnd + 4 + size
    }
    body = Buffer.concat(chunks)
  } else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length'])
    if (!Number.isInteger(length) || length < 0) return { error: `content-length ${headers['content-length']}` }
    if (buffer.length < cursor + length) return 'partial'
    body = buffer.subarray(cursor, cursor + length)
    cursor += length
  }
  return { request: { method: m[1], target: m[2], version: m[3], headers, rawHeaders, body }, next: cursor }
}

/** The id a target names (`/id/<id>`), or null. */
function idOf (target) {
  const m = /\/id\/([0-9]+\.[0-9]+\.[0-9]+s?)/.exec(target)
  return m ? m[1] : null
}

module.exports = { readResponses, readRequest, idOf }
