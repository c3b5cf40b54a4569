'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createBackend } = require('../servers/static-server')
const { checkMethod, resolvePagePath, guardWriteHead, parseRange } = require('../servers/guards')
const { generatePages } = require('../servers/pages')
const { rawRequest, startServerCli } = require('./helper')

const PUBLIC = path.join(__dirname, '..', 'public')
const PAGE1 = fs.readFileSync(path.join(PUBLIC, 'page1.html'))
let tmp
let repo // backend over the repository's public/ (its parent holds package.json)
let sibling // backend over <tmp>/pub, next to <tmp>/pub-secret (the CVE-2023-26111 layout)

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-guards-'))
  generatePages({ count: 2, dir: path.join(tmp, 'pub') })
  fs.mkdirSync(path.join(tmp, 'pub-secret'))
  fs.writeFileSync(path.join(tmp, 'pub-secret', 'secret.txt'), 'TOP-SECRET\n')
  repo = createBackend({ id: 'g', root: PUBLIC, missMs: 0 })
  repo.url = (await repo.listen(0, '127.0.0.1')).url
  sibling = createBackend({ id: 's', root: path.join(tmp, 'pub'), missMs: 0 })
  sibling.url = (await sibling.listen(0, '127.0.0.1')).url
})

afterAll(async () => {
  await Promise.all([repo.close(), sibling.close()])
  fs.rmSync(tmp, { recursive: true, force: true })
})

// Every test ends by proving the backend still serves a normal request.
afterEach(async () => {
  const res = await rawRequest(repo.url, '/page1.html')
  expect(res.status).toBe(200)
  expect(res.body.equals(PAGE1)).toBe(true)
})

describe('directory traversal never leaks a file outside root (CVE-2023-26111)', () => {
  test.each([
    ['/../package.json', 403],
    ['/%2e%2e/package.json', 403],
    ['/%2E%2E/package.json', 403],
    ['/..%2fpackage.json', 403],
    ['/%2e%2e%2fpackage.json', 403],
    ['/page1.html/../../package.json', 403],
    ['/..\\package.json', 400],
    ['/%5c..%5cpackage.json', 400],
    ['/..%5cpackage.json', 400]
  ])('%s answers %d', async (target, status) => {
    const res = await rawRequest(repo.url, target)
    expect(res.status).toBe(status)
    expect(res.body.toString()).not.toContain('"name": "polistes"')
    expect(res.headers['x-server']).toBe('g')
  })

  test.each([
    '/../pub-secret/secret.txt',
    '/%2e%2e/pub-secret/secret.txt',
    '/..%2fpub-secret%2fsecret.txt'
  ])('a sibling directory sharing the root name as prefix stays out of reach: %s', async (target) => {
    const res = await rawRequest(sibling.url, target)
    expect([400, 403, 404]).toContain(res.status)
    expect(res.body.toString()).not.toContain('TOP-SECRET')
  })

  test('traversal attempts are counted as guarded, not as page requests', async () => {
    const before = sibling.stats()
    await rawRequest(sibling.url, '/../pub-secret/secret.txt')
    const after = sibling.stats()
    expect(after.guarded).toBe(before.guarded + 1)
    expect(after.requests).toBe(before.requests)
  })
})

describe('malformed paths are a 400, not a crash', () => {
  test.each([
    '/%00',
    '/page1.html%00.txt',
    '/%zz',
    '/%E0%A4%A',
    '/%'
  ])('%s answers 400', async (target) => {
    const res = await rawRequest(repo.url, target)
    expect(res.status).toBe(400)
  })

  test('an absolute-form request target answers 400', async () => {
    const res = await rawRequest(repo.url, 'http://example.com/page1.html')
    expect(res.status).toBe(400)
  })
})

describe('methods', () => {
  test('HEAD answers the headers only, first as a MISS, then as a HIT', async () => {
    const b = createBackend({ root: PUBLIC, missMs: 0 })
    const { url } = await b.listen(0, '127.0.0.1')
    try {
      for (const cache of ['MISS', 'HIT']) {
        const res = await rawRequest(url, '/page2.html', { method: 'HEAD' })
        expect(res.status).toBe(200)
        expect(res.headers['x-cache']).toBe(cache)
        expect(Number(res.headers['content-length'])).toBe(fs.statSync(path.join(PUBLIC, 'page2.html')).size)
        expect(res.body.length).toBe(0)
      }
    } finally {
      await b.close()
    }
  })

  test('OPTIONS answers 204 with Allow: GET, HEAD, OPTIONS', async () => {
    const res = await rawRequest(repo.url, '/page1.html', { method: 'OPTIONS' })
    expect(res.status).toBe(204)
    expect(res.headers.allow).toBe('GET, HEAD, OPTIONS')
    expect(res.body.length).toBe(0)
  })

  test.each(['POST', 'PUT', 'DELETE', 'PATCH'])('%s answers 405 with Allow', async (method) => {
    const res = await rawRequest(repo.url, '/page1.html', { method })
    expect(res.status).toBe(405)
    expect(res.headers.allow).toBe('GET, HEAD, OPTIONS')
  })
})

describe('Range', () => {
  test('a Range on a miss gets the full 200; on a hit a correct 206', async () => {
    const b = createBackend({ root: PUBLIC, missMs: 0 })
    const { url } = await b.listen(0, '127.0.0.1')
    try {
      const page = fs.readFileSync(path.join(PUBLIC, 'page4.html'))
      const miss = await rawRequest(url, '/page4.html', { headers: { range: 'bytes=0-99' } })
      expect(miss.status).toBe(200)
      expect(miss.body.equals(page)).toBe(true)

      const hit = await rawRequest(url, '/page4.html', { headers: { range: 'bytes=100-199' } })
      expect(hit.status).toBe(206)
      expect(hit.headers['x-cache']).toBe('HIT')
      expect(hit.headers['content-range']).toBe(`bytes 100-199/${page.length}`)
      expect(hit.body.equals(page.subarray(100, 200))).toBe(true)

      const suffix = await rawRequest(url, '/page4.html', { headers: { range: 'bytes=-10' } })
      expect(suffix.status).toBe(206)
      expect(suffix.body.equals(page.subarray(page.length - 10))).toBe(true)

      for (const range of ['bytes=999999-', 'bytes=0-1,5-6', 'items=0-1', 'bytes=9-2']) {
        const full = await rawRequest(url, '/page4.html', { headers: { range } })
        expect(full.status).toBe(200)
        expect(full.body.equals(page)).toBe(true)
      }
    } finally {
      await b.close()
    }
  })

  test('conditional headers on a miss still get a full, cacheable 200', async () => {
    const b = createBackend({ root: PUBLIC, missMs: 0 })
    const { url } = await b.listen(0, '127.0.0.1')
    try {
      const res = await rawRequest(url, '/page5.html', { headers: { 'if-modified-since': new Date(Date.now() + 86400000).toUTCString() } })
      expect(res.status).toBe(200)
      expect(b.stats().cachedKeys).toEqual(['/page5.html'])
    } finally {
      await b.close()
    }
  })
})

test('a backend process survives every hostile request and keeps serving', async () => {
  const started = startServerCli(path.join(__dirname, '..', 'servers', 'static-server.js'), ['--port', '0', '--miss-ms', '0'])
  const { child } = started
  try {
    const url = await started.url
    const hostile = [
      ['/%00'], ['/%zz'], ['/../package.json'], ['/%2e%2e/package.json'], ['/..%2fpackage.json'], ['/..\\package.json'],
      ['/page1.html', { method: 'HEAD' }], ['/page1.html', { method: 'OPTIONS' }], ['/page1.html', { method: 'POST' }],
      ['/page3.html', { headers: { range: 'bytes=0-9' } }], ['/page3.html', { headers: { range: 'bytes=0-9' } }],
      ['/page6.html', { method: 'HEAD', headers: { range: 'bytes=0-9' } }]
    ]
    for (const [target, options] of hostile) await rawRequest(url, target, options)
    const res = await rawRequest(url, '/page1.html')
    expect(res.status).toBe(200)
    expect(res.body.equals(PAGE1)).toBe(true)
    expect(child.exitCode).toBeNull()
  } finally {
    child.kill('SIGTERM')
  }
})

describe('guard functions', () => {
  test('checkMethod', () => {
    expect(checkMethod('GET')).toBeNull()
    expect(checkMethod('HEAD')).toBeNull()
    expect(checkMethod('OPTIONS')).toMatchObject({ status: 204, headers: { Allow: 'GET, HEAD, OPTIONS' } })
    expect(checkMethod('TRACE')).toMatchObject({ status: 405 })
  })

  test('resolvePagePath keeps pages under root and re-encodes the URL for node-static', () => {
    const root = path.resolve('/srv/pub')
    expect(resolvePagePath('/page1.html?x=1#y', root)).toEqual({ key: '/page1.html', file: path.join(root, 'page1.html'), url: '/page1.html' })
    expect(resolvePagePath('//a/./b.html', root)).toMatchObject({ key: '/a/b.html' })
    expect(resolvePagePath('/a%3Fb%23c', root)).toMatchObject({ key: '/a?b#c', url: '/a%3Fb%23c' })
    expect(resolvePagePath('/../pub-secret/x', root)).toMatchObject({ status: 403 })
    expect(resolvePagePath('/%2e%2e%2fpub-secret/x', root)).toMatchObject({ status: 403 })
    expect(resolvePagePath('/%00', root)).toMatchObject({ status: 400 })
    expect(resolvePagePath('/%zz', root)).toMatchObject({ status: 400 })
    expect(resolvePagePath('*', root)).toMatchObject({ status: 400 })
  })

  test('guardWriteHead turns a second writeHead into a no-op', () => {
    const calls = []
    const res = { headersSent: false, writeHead (...args) { calls.push(args); this.headersSent = true; return this } }
    guardWriteHead(res)
    res.writeHead(206, {})
    expect(() => res.writeHead(206, {})).not.toThrow()
    expect(calls).toEqual([[206, {}]])
  })

  test('parseRange', () => {
    expect(parseRange(undefined, 100)).toBeNull()
    expect(parseRange('bytes=0-9', 100)).toEqual({ start: 0, end: 9 })
    expect(parseRange('bytes=5-5', 100)).toEqual({ start: 5, end: 5 })
    expect(parseRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 })
    expect(parseRange('bytes=90-500', 100)).toEqual({ start: 90, end: 99 })
    expect(parseRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 })
    expect(parseRange('bytes=-500', 100)).toEqual({ start: 0, end: 99 })
    for (const bad of ['bytes=100-', 'bytes=-0', 'bytes=9-2', 'bytes=0-1,3-4', 'bytes=-', 'items=0-1', 'bytes=a-b']) {
      expect(parseRange(bad, 100)).toBeNull()
    }
  })
})
