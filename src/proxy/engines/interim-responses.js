'use strict'

/**
 * Interim (1xx) response heads at the start of an upstream's answer, for the undici engine:
 * undici 7's HTTP/1.1 client destroys the connection on any `100 Continue` (it never asks for
 * one), though RFC 9110 §15.2 says a client MUST be able to parse 1xx responses received before
 * the final one, even unexpected. polistes relays no 1xx from an upstream (nginx's policy; the
 * other engines drop them too): these heads are cut off before undici reads them.
 */

/** What an interim status line starts with; the rest of the head runs to the blank line. */
const PREFIX = 'HTTP/1.'
/** The longest interim head taken (a longer one is left to undici's own limit). */
const MAX_HEAD = 16 * 1024

/**
 * The length of the interim head `bytes` starts with.
 * @param {Buffer} bytes what the upstream sent from the start of an answer on
 * @returns {number} the length of a whole interim head (not 101, which switches protocols) to
 *   drop; 0 when `bytes` may still become one (more bytes needed); -1 when they are no interim
 *   head (a final head, or anything else: undici reads it as it is)
 */
function interimHeadLength (bytes) {
  // "HTTP/1.x 1dd" then SP or CR
  const n = Math.min(bytes.length, 13)
  for (let i = 0; i < n; i++) {
    const b = bytes[i]
    let ok
    if (i < 7) ok = b === PREFIX.charCodeAt(i)
    else if (i === 7) ok = b >= 0x30 && b <= 0x39
    else if (i === 8) ok = b === 0x20
    else if (i === 9) ok = b === 0x31 // '1'
    else if (i === 10 || i === 11) ok = b >= 0x30 && b <= 0x39
    else ok = b === 0x20 || b === 0x0d
    if (!ok) return -1
  }
  if (bytes.length >= 12 && bytes[10] === 0x30 && bytes[11] === 0x31) return -1 // 101
  if (bytes.length < 13) return 0
  // the head ends with its first empty line (CRLF, or a bare LF: RFC 9112 §2.2)
  for (let i = bytes.indexOf(0x0a, 12); i !== -1 && i < MAX_HEAD; i = bytes.indexOf(0x0a, i + 1)) {
    if (bytes[i + 1] === 0x0a) return i + 2
    if (bytes[i + 1] === 0x0d && bytes[i + 2] === 0x0a) return i + 3
  }
  return bytes.length < MAX_HEAD ? 0 : -1
}

/**
 * Make `socket` (an undici connection's) drop the interim heads before each answer: from the
 * write of a request head (undici writes each as one latin1 string starting with the request line)
 * until the first byte of a final head, what undici reads is cut of them. Only the socket's own
 * read() and write() are wrapped; undici reads the socket with read() on 'readable'.
 * @param {import('net').Socket} socket
 * @returns {import('net').Socket} the same socket
 */
function dropInterimHeads (socket) {
  const read = socket.read
  const write = socket.write
  /** a request went out and no byte of its final head has come */
  let awaiting = false
  /** the start of an interim head not yet whole */
  let held = null
  socket.write = function (chunk, ...rest) {
    if (typeof chunk === 'string' && REQUEST_LINE.test(chunk)) {
      awaiting = true
      held = null
    }
    return write.call(this, chunk, ...rest)
  }
  socket.read = function (...args) {
    for (;;) {
      let chunk = read.apply(this, args)
      if (!awaiting || chunk === null) return chunk
      if (held !== null) {
        chunk = Buffer.concat([held, chunk])
        held = null
      }
      for (;;) {
        const length = interimHeadLength(chunk)
        if (length === -1) {
          awaiting = false
          return chunk
        }
        if (length === 0) {
          held = chunk
          break
        }
        chunk = chunk.subarray(length)
        if (chunk.length === 0) break
      }
    }
  }
  return socket
}

/** The start of a request head as undici writes it. */
const REQUEST_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ \S+ HTTP\/1\.1\r\n/

module.exports = { interimHeadLength, dropInterimHeads }
