'use strict'

/**
 * The tee that fills the page cache on a miss, on a real server: node-static writes the response,
 * the tee keeps the page, the next request replays it. Scripted responses cover what must never
 * be kept: other statuses, bodies cut short, bodies without a length.
 */

const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')
const { once } = require('node:events')
const nodeStatic = require('node-static')
const { teeFullBody, fullPageRequest } = require('../servers/cache-tee')
const { serveStatic } = require('../servers/serve-static')
const { rawRequest, sleep, waitFor } = require('./helper')

const PUBLIC = path.join(__dirname, '..', 'public')
const page = (name) => fs.readFileSync(path.join(PUBLIC, name))

/** Responses written by hand, as node-static would, to reach the edges. */
const SCRIPTED = {
  '/not-found': (res) => {
    res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': 10 })
    res.end('not found\n')
  },
  '/cut-short': (res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 100 })
    res.write(Buffer.alloc(50, 'x'))
    setTimeout(() => res.destroy(), 20) // a read error or a client gone mid-stream
  },
  '/no-length': (res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' })
    res.end('chunked, no Content-Length\n')
  },
  '/empty': (res) => {
    res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Length': 0 })
    res.end()
  },
  '/late-end': (res, events) => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'Content-Length': 12, ETag: '"v1"' })
    res.write('héllo ', 'utf8') // 7 bytes as a string
    res.write(Buffer.from('world'))
    setTimeout(() => { events.push('end'); res.end() }, 50) // node-static ends on the read stream's 'close'
  }
}

let server
let base
let kept // key -> { body, headers }: what the tee handed over
let events

beforeEach(async () => {
  kept = new Map()
  events = []
  const files = new nodeStatic.Server(PUBLIC, { cache: false })
  server = http.createServer((req, res) => {
    const key = new URL(req.url, 'http://localhost').pathname
    const hit = kept.get(key)
    if (hit) {
      res.writeHead(200, { ...hit.headers, 'Content-Length': hit.body.length, 'X-Cache': 'HIT' })
      return res.end(hit.body)
    }
    res.setHeader('X-Cache', 'MISS')
    teeFullBody(res, (body, headers) => {
      events.push('stored')
      kept.set(key, { body, headers })
    })
    if (SCRIPTED[key]) return SCRIPTED[key](res, events)
    serveStatic(files, key, fullPageRequest(req, key), res)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  base = `http://127.0.0.1:${server.address().port}`
})

afterEach(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

describe('a page node-static serves', () => {
  test('is a MISS, then a HIT with identical bytes and the same entity headers', async () => {
    const miss = await rawRequest(base, '/page1.html')
    const hit = await rawRequest(base, '/page1.html')
    expect([miss.status, miss.headers['x-cache']]).toEqual([200, 'MISS'])
    expect([hit.status, hit.headers['x-cache']]).toEqual([200, 'HIT'])
    expect(miss.body.equals(page('page1.html'))).toBe(true)
    expect(hit.body.equals(miss.body)).toBe(true)
    for (const name of ['content-type', 'etag', 'last-modified']) expect(hit.headers[name]).toBe(miss.headers[name])
    expect(Object.keys(kept.get('/page1.html').headers).sort()).toEqual(['content-type', 'etag', 'last-modified'])
  })

  test('a HEAD miss still keeps the full body', async () => {
    const head = await rawRequest(base, '/page2.html', { method: 'HEAD' })
    expect(head.body.length).toBe(0)
    const hit = await rawRequest(base, '/page2.html')
    expect(hit.headers['x-cache']).toBe('HIT')
    expect(hit.body.equals(page('page2.html'))).toBe(true)
  })

  test.each([
    ['Range', { range: 'bytes=0-9' }],
    ['If-None-Match', { 'if-none-match': '*' }],
    ['If-Modified-Since', { 'if-modified-since': new Date(Date.now() + 86400000).toUTCString() }],
    ['Accept-Encoding', { 'accept-encoding': 'gzip' }]
  ])('a miss with %s gets, and keeps, the full 200', async (_name, headers) => {
    const miss = await rawRequest(base, '/page3.html', { headers })
    expect(miss.status).toBe(200)
    expect(miss.body.equals(page('page3.html'))).toBe(true)
    expect(kept.get('/page3.html').body.equals(page('page3.html'))).toBe(true)
  })

  test('a missing file (node-static 404) is not kept', async () => {
    const res = await rawRequest(base, '/no-such-page.html')
    expect(res.status).toBe(404)
    expect(kept.size).toBe(0)
  })
})

describe('what is never kept', () => {
  test('a status other than 200', async () => {
    expect((await rawRequest(base, '/not-found')).status).toBe(404)
    expect(kept.has('/not-found')).toBe(false)
  })

  test('a body cut short of its Content-Length', async () => {
    await expect(rawRequest(base, '/cut-short')).rejects.toThrow()
    await sleep(30)
    expect(kept.has('/cut-short')).toBe(false)
    expect((await rawRequest(base, '/cut-short').catch(() => null))).toBeNull() // still a miss, cut again
  })

  test('a body without a Content-Length', async () => {
    const res = await rawRequest(base, '/no-length')
    expect(res.headers['transfer-encoding']).toBe('chunked')
    expect(kept.has('/no-length')).toBe(false)
  })
})

describe('when the page is handed over', () => {
  test('at its last byte, before the late end(); string chunks count in bytes', async () => {
    const res = await rawRequest(base, '/late-end')
    expect(res.body.toString()).toBe('héllo world')
    expect(events).toEqual(['stored']) // the client holds the whole page; end() has not come yet
    await waitFor(() => events.includes('end'))
    expect(events).toEqual(['stored', 'end'])
    expect(kept.get('/late-end')).toEqual({
      body: Buffer.from('héllo world'),
      headers: { 'content-type': 'text/plain; charset=utf-8', etag: '"v1"' }
    })
  })

  test('an empty 200 is kept on end(), with its headers', async () => {
    await rawRequest(base, '/empty')
    await waitFor(() => kept.has('/empty'))
    expect(kept.get('/empty')).toEqual({ body: Buffer.alloc(0), headers: { 'content-type': 'text/html' } })
    const hit = await rawRequest(base, '/empty')
    expect([hit.headers['x-cache'], hit.headers['content-type'], hit.body.length]).toEqual(['HIT', 'text/html', 0])
  })
})
