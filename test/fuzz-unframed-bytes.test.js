'use strict'

/**
 * The differential fuzzer's late bytes (test/fuzz/harness.js, issue 25): every byte a generated
 * upstream answer holds past the end its own framing gives it must be known to the harness as
 * extra bytes (a poison, or the `surplus` of a Content-Length shorter than the body), since written
 * late they race the next request on a pooled connection, the race HTTP/1.1 cannot resolve. From
 * seed 20261141, case 64581 (engine direct): the answer to 64577.2.1 said `Content-Length: 5` over 7
 * bytes, and split-writes sent the last 2 a moment later, after polistes had sent 64581.0.0 on that
 * connection; they were read as the start of its answer, which then could not be parsed (a 502),
 * and the harness, which knew late bytes only as a poison, called it a good answer changed.
 * The strict parser of the direct engine finds where each answer ends.
 */

const { ResponseParser } = require('../src/proxy/engines/response-parser')
const { responseCase } = require('./fuzz/responses')

const POISON_START = 'HTTP/1.1 200 OK\r\nX-Fuzz-Id: poison.'

/**
 * Whether a strict parser reads a whole answer in `bytes`.
 * @param {Buffer} bytes
 * @param {boolean} head the answer to a HEAD request (no body, whatever its head says)
 * @returns {boolean}
 */
function completes (bytes, head) {
  let complete = false
  const parser = new ResponseParser({ onHead: () => head, onBody: () => {}, onComplete: () => { complete = true } })
  parser.execute(bytes)
  return complete
}

/**
 * Where a strict parser ends the answer in `bytes`: the shortest start of them it reads whole
 * (bytes after a whole answer leave it whole, so a binary search finds it).
 * @param {Buffer} bytes
 * @param {boolean} head
 * @returns {number} the answer's length, or -1 when it does not end whole (an error, or cut)
 */
function answerLength (bytes, head) {
  if (!completes(bytes, head)) return -1
  let lo = 0
  let hi = bytes.length
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1
    if (completes(bytes.subarray(0, mid), head)) hi = mid
    else lo = mid
  }
  return hi
}

test('the bytes past an answer\'s own end are a poison or its known surplus, and a surplus is just that', () => {
  const seen = { poison: 0, surplus: 0 }
  const wrong = []
  for (const [seed, from] of [[20261141, 64500], [20251125, 0]]) {
    for (let index = from; index < from + 1500; index++) {
      for (const conn of responseCase(seed, index).connections) {
        for (const q of conn.requests) {
          const spec = q.response
          const bytes = Buffer.concat(spec.writes.filter(Buffer.isBuffer))
          const length = answerLength(bytes, q.method === 'HEAD')
          const rest = length === -1 ? '' : bytes.subarray(length).toString('latin1')
          if (rest.startsWith(POISON_START)) seen.poison++
          else if (rest.length > 0 && rest.length === spec.surplus) seen.surplus++
          else if (rest.length > 0 || spec.surplus > 0) wrong.push(`${q.id} [${spec.mutations}]: ${rest.length} bytes past the answer, surplus ${spec.surplus}`)
        }
      }
    }
  }
  expect(wrong).toEqual([])
  // both kinds occur in these cases: the test runs on them
  expect(seen.poison).toBeGreaterThan(0)
  expect(seen.surplus).toBeGreaterThan(0)
})
