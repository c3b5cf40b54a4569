'use strict'

/**
 * A strict HTTP/1.1 response parser (RFC 9112) in plain JavaScript: bytes in, callbacks out, no
 * sockets. It replaces the internal `_http_common` HTTPParser (Node's llhttp binding, deprecated as
 * DEP0199) in the direct engine, and frames responses as strictly as llhttp's strict mode does:
 *
 * - status line `HTTP/1.x NNN reason`, headers `name: value` with token names and no whitespace
 *   before the colon, CRLF line ends only (a bare LF, obsolete line folding, a control character in
 *   a value: refused);
 * - framing by RFC 9112 §6.3: no body for HEAD, 1xx, 204 and 304; Transfer-Encoding ending in
 *   `chunked` means chunked; Transfer-Encoding otherwise means the body runs to the connection's end;
 *   Content-Length is one run of digits; a 101 (no upgrade is ever asked on these connections); Content-Length with
 *   Transfer-Encoding, two Content-Length headers, a bad chunk size or a chunk not followed by CRLF: refused;
 * - a head larger than `maxHeaderSize` bytes (Node's 16 KiB default): refused.
 *
 * The common case costs one `indexOf` for the end of the head, one latin1 decode of it, and
 * zero-copy `subarray` views of the body.
 */

const CRLF = 0x0a0d // '\r\n' read as a little-endian uint16
/** The end of a head. */
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1')
const CR = 13
const LF = 10

/** Header names: RFC 9110 token characters. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
/** Field values: no control characters but HTAB (obs-text, 0x80-0xff, is allowed). */
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/ // eslint-disable-line no-control-regex
/**
 * A whole block of header lines at `lastIndex`, each `token:value` (value without control
 * characters but HTAB) ending in CRLF or at the end of the text: one regex run checks every line of
 * a head at once; only a head it refuses is walked again line by line for the error to report.
 */
const FIELD_LINES = /(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\x00-\x08\x0a-\x1f\x7f]*(?:\r\n|$))*$/y // eslint-disable-line no-control-regex
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: ([^\x00-\x08\x0a-\x1f\x7f]*))?$/ // eslint-disable-line no-control-regex
const DIGITS = /^\d{1,15}$/
const HEX = /^[0-9A-Fa-f]{1,12}$/

/** Node's default `--max-http-header-size`. */
const DEFAULT_MAX_HEADER_SIZE = 16384

/** Longest chunk-size line (size, extensions) accepted. */
const MAX_CHUNK_LINE = 4096

// parser states
const HEAD = 0
const BODY_LENGTH = 1 // Content-Length body: `remaining` bytes to go
const BODY_EOF = 2 // body runs to the connection's end
const CHUNK_SIZE = 3 // reading a chunk-size line
const CHUNK_DATA = 4 // `remaining` bytes of chunk data to go
const CHUNK_DATA_END = 5 // the CRLF after chunk data
const TRAILERS = 6 // trailer lines up to the empty line
const DONE = 7 // a message completed; any further byte is unsolicited

/**
 * What the parser tells its owner.
 * @typedef {object} ResponseParserHandlers
 * @property {(statusCode: number, statusMessage: string, rawHeaders: string[], keepAlive: boolean) => boolean} onHead
 *   a final (non-1xx) response head; `rawHeaders` flat `[name, value, ...]` as received; return
 *   true when the response has no body to read whatever its headers say (the answer to HEAD)
 * @property {(chunk: Buffer) => void} onBody a piece of the body, framing removed (a view of the
 *   bytes passed to execute(), which the caller may reuse for its next read: write it on or copy it)
 * @property {(extra: boolean) => void} onComplete the message ended; `extra`: bytes follow it in the same
 *   read (they answer nothing: the parser stops there and reports them as an error after this call)
 */

/** An error in the upstream's bytes, with llhttp's code names where one fits. */
class ResponseParseError extends Error {
  /**
   * @param {string} code e.g. 'HPE_INVALID_CONSTANT'
   * @param {string} message
   */
  constructor (code, message) {
    super(`Parse Error: ${message}`)
    this.code = code
  }
}

/**
 * One connection's response parser: feed it the bytes read from the socket with `execute()`, and
 * `finish()` when the connection ended. One response at a time (no pipelining): bytes after a
 * complete response are an error, since no request is in flight for them.
 */
class ResponseParser {
  /**
   * @param {ResponseParserHandlers} handlers
   * @param {{ maxHeaderSize?: number }} [options]
   */
  constructor (handlers, { maxHeaderSize = DEFAULT_MAX_HEADER_SIZE } = {}) {
    this.handlers = handlers
    this.maxHeaderSize = maxHeaderSize
    this.reset()
  }

  /** Expect a new response (the connection carries a new request). */
  reset () {
    this.state = HEAD
    /** @type {Buffer | null} bytes of a head (or chunk line, or trailers) split across reads */
    this.pending = null
    this.remaining = 0
    this.keepAlive = false
    /** @type {ResponseParseError | null} */
    this.error = null
  }

  /** Whether a response is partly read (a head, or a body, begun and not complete). */
  get inMessage () {
    return this.state !== DONE && (this.state !== HEAD || this.pending !== null)
  }

  /**
   * Parse bytes read from the connection; calls the handlers on the way.
   * @param {Buffer} data
   * @returns {ResponseParseError | null} an error: the connection cannot be trusted any more
   */
  execute (data) {
    if (this.error !== null) return this.error
    let buf = data
    if (this.pending !== null) {
      buf = Buffer.concat([this.pending, data])
      this.pending = null
    }
    let pos = 0
    const end = buf.length
    while (pos < end) {
      switch (this.state) {
        case HEAD: pos = this.head(buf, pos); break
        case BODY_LENGTH: {
          const take = Math.min(this.remaining, end - pos)
          this.remaining -= take
          const chunk = buf.subarray(pos, pos + take)
          pos += take
          if (this.remaining === 0) this.state = DONE
          this.handlers.onBody(chunk)
          if (this.state === DONE) pos = this.complete(pos, end)
          break
        }
        case BODY_EOF:
          this.handlers.onBody(pos === 0 ? buf : buf.subarray(pos))
          pos = end
          break
        case CHUNK_SIZE: pos = this.chunkSize(buf, pos); break
        case CHUNK_DATA: {
          const take = Math.min(this.remaining, end - pos)
          this.remaining -= take
          const chunk = buf.subarray(pos, pos + take)
          pos += take
          if (this.remaining === 0) this.state = CHUNK_DATA_END
          this.handlers.onBody(chunk)
          break
        }
        case CHUNK_DATA_END:
          if (end - pos < 2) {
            if (buf[pos] !== CR) return this.fail('HPE_STRICT', 'Expected LF after chunk data')
            this.pending = Buffer.from(buf.subarray(pos))
            pos = end
          } else {
            if (buf.readUInt16LE(pos) !== CRLF) return this.fail('HPE_STRICT', 'Expected LF after chunk data')
            pos += 2
            this.state = CHUNK_SIZE
          }
          break
        case TRAILERS: pos = this.trailers(buf, pos); break
        case DONE: return this.fail('HPE_UNSOLICITED', 'Data after the response')
      }
      if (pos < 0) return this.error
    }
    return null
  }

  /**
   * The message ended at `pos` of a read of `end` bytes. Bytes after it answer nothing (polistes
   * sends one request at a time): the handler hears of them as the message completes, before its
   * request is done with the connection, so the connection is never handed on with them, whatever
   * runs while the message completes; then parsing stops there.
   * @param {number} pos
   * @param {number} end
   * @returns {number} where parsing goes on, or -1 (HPE_UNSOLICITED) when bytes follow
   */
  complete (pos, end) {
    this.state = DONE
    const extra = pos < end
    this.handlers.onComplete(extra)
    return extra ? this.fail('HPE_UNSOLICITED', 'Data after the response') : pos
  }

  /**
   * The connection ended: completes a response that runs to the connection's end.
   * @returns {ResponseParseError | null} an error when a response was cut short
   */
  finish () {
    if (this.error !== null) return this.error
    if (this.state === BODY_EOF) {
      this.state = DONE
      this.handlers.onComplete(false)
      return null
    }
    if (this.inMessage) this.fail('HPE_INVALID_EOF_STATE', 'Invalid EOF state')
    return this.error
  }

  fail (code, message) {
    this.error = new ResponseParseError(code, message)
    return -1
  }

  /**
   * Keep bytes of a line or head that has not ended yet (a copy: the caller may reuse `buf` for
   * its next read); -1 when they grow beyond `limit`.
   */
  keep (buf, pos, limit, code, message) {
    if (buf.length - pos > limit) return this.fail(code, message)
    this.pending = Buffer.from(buf.subarray(pos))
    return buf.length
  }

  head (buf, pos) {
    const stop = buf.indexOf(HEAD_END, pos)
    if (stop === -1) return this.keep(buf, pos, this.maxHeaderSize, 'HPE_HEADER_OVERFLOW', 'Header overflow')
    if (stop - pos > this.maxHeaderSize) return this.fail('HPE_HEADER_OVERFLOW', 'Header overflow')
    const text = buf.toString('latin1', pos, stop)
    const next = stop + 4
    let lineEnd = text.indexOf('\r\n')
    if (lineEnd === -1) lineEnd = text.length
    const status = STATUS_LINE.exec(text.slice(0, lineEnd))
    if (status === null) return this.fail('HPE_INVALID_CONSTANT', 'Expected HTTP/')
    const minor = status[1]
    const statusCode = Number(status[2])

    /** @type {string[]} */
    const raw = []
    let contentLength = -1
    let transferEncoding = null
    let close = false
    let start = lineEnd + 2
    if (start < text.length) {
      FIELD_LINES.lastIndex = start
      if (!FIELD_LINES.test(text)) return this.fieldError(text, start)
    }
    while (start < text.length) {
      let stopLine = text.indexOf('\r\n', start)
      if (stopLine === -1) stopLine = text.length
      const colon = text.indexOf(':', start)
      const name = text.slice(start, colon)
      let from = colon + 1
      let to = stopLine
      while (from < to && (text.charCodeAt(from) === 32 || text.charCodeAt(from) === 9)) from++
      while (to > from && (text.charCodeAt(to - 1) === 32 || text.charCodeAt(to - 1) === 9)) to--
      const value = text.slice(from, to)
      raw.push(name, value)
      switch (name.length) {
        case 14:
          if (name.toLowerCase() === 'content-length') {
            if (contentLength !== -1) return this.fail('HPE_UNEXPECTED_CONTENT_LENGTH', 'Duplicate Content-Length')
            if (!DIGITS.test(value)) {
              return this.fail('HPE_INVALID_CONTENT_LENGTH', 'Invalid character in Content-Length')
            }
            contentLength = Number(value)
          }
          break
        case 17:
          if (name.toLowerCase() === 'transfer-encoding') {
            transferEncoding = transferEncoding === null ? value : transferEncoding + ', ' + value
          }
          break
        case 10:
          if (name.toLowerCase() === 'connection' && hasToken(value, 'close')) close = true
          break
      }
      start = stopLine + 2
    }
    if (transferEncoding !== null && contentLength !== -1) {
      return this.fail('HPE_UNEXPECTED_CONTENT_LENGTH', 'Content-Length can\'t be present with Transfer-Encoding')
    }

    if (statusCode < 200) { // 1xx: informational; the final head follows on the same request
      if (statusCode === 101) return this.fail('HPE_UNEXPECTED_UPGRADE', 'Unexpected protocol switch')
      return next
    }

    let chunked = false
    if (transferEncoding !== null) {
      const codings = transferEncoding.toLowerCase().split(',')
      const last = codings[codings.length - 1].trim()
      // chunked anywhere but last: the body runs to the connection's end (RFC 9112 §6.3.4)
      chunked = last === 'chunked'
    }
    const bodyless = statusCode === 204 || statusCode === 304
    const framed = bodyless || chunked || (transferEncoding === null && contentLength !== -1)
    this.keepAlive = minor === '1' && !close && framed
    const skip = this.handlers.onHead(statusCode, status[3] || '', raw, this.keepAlive)
    if (this.error !== null || this.state !== HEAD) return -1 // the handler reset or closed the parser
    if (skip || bodyless || contentLength === 0) {
      return this.complete(next, buf.length)
    } else if (chunked) {
      this.state = CHUNK_SIZE
    } else if (contentLength > 0) {
      this.state = BODY_LENGTH
      this.remaining = contentLength
    } else {
      this.state = BODY_EOF
    }
    return next
  }

  /**
   * The error in header lines FIELD_LINES refused: the first bad line, checked as llhttp reports it.
   * @param {string} text the head
   * @param {number} start where its header lines begin
   * @returns {number} -1
   */
  fieldError (text, start) {
    while (start < text.length) {
      let stopLine = text.indexOf('\r\n', start)
      if (stopLine === -1) stopLine = text.length
      const colon = text.indexOf(':', start)
      if (colon === -1 || colon > stopLine || !TOKEN.test(text.slice(start, colon))) {
        return this.fail('HPE_INVALID_HEADER_TOKEN', 'Invalid header token')
      }
      if (BAD_VALUE.test(text.slice(colon + 1, stopLine))) {
        return this.fail('HPE_INVALID_HEADER_TOKEN', 'Invalid header value char')
      }
      start = stopLine + 2
    }
    return this.fail('HPE_INVALID_HEADER_TOKEN', 'Invalid header token') // not reached: some line is bad
  }

  chunkSize (buf, pos) {
    const stop = buf.indexOf(LF, pos)
    if (stop === -1) return this.keep(buf, pos, MAX_CHUNK_LINE, 'HPE_INVALID_CHUNK_SIZE', 'Chunk size line too long')
    if (stop === pos || buf[stop - 1] !== CR) return this.fail('HPE_STRICT', 'Expected CRLF after chunk size')
    const line = buf.toString('latin1', pos, stop - 1)
    const semi = line.indexOf(';')
    const size = semi === -1 ? line : line.slice(0, semi)
    if (!HEX.test(size)) return this.fail('HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size')
    if (semi !== -1 && BAD_VALUE.test(line.slice(semi))) {
      return this.fail('HPE_INVALID_CHUNK_SIZE', 'Invalid chunk extension')
    }
    const n = parseInt(size, 16)
    if (n === 0) {
      this.state = TRAILERS
    } else {
      this.state = CHUNK_DATA
      this.remaining = n
    }
    return stop + 1
  }

  trailers (buf, pos) {
    // trailer fields are read and dropped (Node does not forward them either): up to the empty line
    for (;;) {
      const stop = buf.indexOf(LF, pos)
      if (stop === -1) return this.keep(buf, pos, this.maxHeaderSize, 'HPE_HEADER_OVERFLOW', 'Trailers overflow')
      if (stop === pos || buf[stop - 1] !== CR) return this.fail('HPE_STRICT', 'Expected CRLF in trailers')
      if (stop === pos + 1) return this.complete(stop + 1, buf.length)
      const line = buf.toString('latin1', pos, stop - 1)
      const colon = line.indexOf(':')
      if (colon <= 0 || !TOKEN.test(line.slice(0, colon)) || BAD_VALUE.test(line.slice(colon + 1))) {
        return this.fail('HPE_INVALID_HEADER_TOKEN', 'Invalid trailer')
      }
      pos = stop + 1
    }
  }
}

/**
 * Whether a comma-separated header value lists `token` (case-insensitive).
 * @param {string} value
 * @param {string} token lower-case
 * @returns {boolean}
 */
function hasToken (value, token) {
  const lower = value.toLowerCase()
  if (lower === token) return true
  if (!lower.includes(token)) return false
  return lower.split(',').some((part) => part.trim() === token)
}

module.exports = { ResponseParser }
