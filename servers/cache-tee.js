'use strict'

/**
 * How a miss fills the backend's page cache: node-static stays the file-serving path and writes
 * the response itself; we tee what it writes for a full 200 and hand the page over once its last
 * byte is written. Reading the file ourselves would bypass node-static, which is what the
 * experiment replaces; teeing keeps node-static's headers (Content-Type, ETag, Last-Modified) and
 * costs one copy of the body per miss.
 *
 * What never reaches the cache: any status other than 200, a body that stops short of its
 * Content-Length (a read error, a client gone mid-stream: node-static's pipe stops writing), a
 * body without a Content-Length, anything written after the page was handed over.
 */

/** Entity headers kept with a cached page and replayed on a hit. */
const KEPT_HEADERS = ['content-type', 'etag', 'last-modified']

/** Request headers that would make node-static answer something other than a full 200. */
const STRIPPED_ON_MISS = ['range', 'if-none-match', 'if-modified-since', 'accept-encoding']

/**
 * The request node-static sees on a miss, so that it always produces a full 200 that can be
 * cached: a safe re-encoded URL, method GET (Node still suppresses the body of a HEAD, because the
 * real response belongs to a HEAD request; this avoids node-static's second writeHead for non-GET
 * methods) and no Range / conditional / gzip headers (its 206 path crashes on Node 20).
 *
 * @param {import('node:http').IncomingMessage} req the client's request
 * @param {string} url the page URL to serve (from resolvePagePath)
 * @returns {{ url: string, method: 'GET', headers: Record<string, string | string[] | undefined> }}
 */
function fullPageRequest (req, url) {
  const headers = { ...req.headers }
  for (const name of STRIPPED_ON_MISS) delete headers[name]
  return { url, method: 'GET', headers }
}

/**
 * Wrap `res` so that the body written for a full 200 is handed to `onFullBody` as soon as its last
 * byte is written (Content-Length reached), before node-static's own `res.end()`, which only comes
 * on the read stream's 'close': a client may already hold the whole page by then. An empty 200
 * (Content-Length 0) is handed over on `end()`. `onFullBody` is called at most once.
 *
 * @param {import('node:http').ServerResponse} res the response node-static will write
 * @param {(body: Buffer, headers: Record<string, string>) => void} onFullBody receives the body
 *   and the {@link KEPT_HEADERS} that were sent (lower-case names)
 */
function teeFullBody (res, onFullBody) {
  const chunks = []
  let size = 0
  let status = 0
  let expected = -1
  let head = {}
  let kept = false
  const writeHead = res.writeHead
  const write = res.write
  const end = res.end
  const keptHeaders = () => Object.fromEntries(
    KEPT_HEADERS.filter((k) => head[k] !== undefined).map((k) => [k, String(head[k])])
  )
  const collect = (chunk, encoding) => {
    if (kept || status !== 200 || !chunk || typeof chunk === 'function') return
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8')
    chunks.push(buffer)
    size += buffer.length
    if (size === expected) {
      kept = true
      onFullBody(Buffer.concat(chunks), keptHeaders())
      chunks.length = 0
    }
  }
  res.writeHead = function teeWriteHead (code, ...rest) {
    if (!res.headersSent) {
      status = code
      const h = rest.find((a) => a && typeof a === 'object') || {}
      head = Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]))
      expected = Number(head['content-length'])
    }
    return writeHead.call(res, code, ...rest)
  }
  res.write = function teeWrite (chunk, encoding, ...rest) {
    collect(chunk, encoding)
    return write.call(res, chunk, encoding, ...rest)
  }
  res.end = function teeEnd (chunk, encoding, ...rest) {
    collect(chunk, encoding)
    if (!kept && status === 200 && expected === 0) onFullBody(Buffer.alloc(0), keptHeaders()) // an empty file
    kept = true
    chunks.length = 0
    return end.call(res, chunk, encoding, ...rest)
  }
}

module.exports = { teeFullBody, fullPageRequest }
