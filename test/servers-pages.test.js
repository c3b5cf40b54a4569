'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { generatePages, renderPage, renderPageOfSize, mulberry32 } = require('../servers/pages')
const { parsePageSizes, pageSizes } = require('../bench/workloads/page-sizes')
const { runNode } = require('./helper')

const PUBLIC = path.join(__dirname, '..', 'public')
let tmp

beforeAll(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-pages-')) })
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }))

test('regenerating gives files byte-identical to the committed public/ pages', () => {
  const dir = path.join(tmp, 'all')
  const written = generatePages({ count: 25, dir })
  expect(written).toHaveLength(25)
  for (let n = 1; n <= 25; n++) {
    const name = `page${n}.html`
    expect(fs.readFileSync(path.join(dir, name)).equals(fs.readFileSync(path.join(PUBLIC, name)))).toBe(true)
  }
})

test('pages of given sizes: exactly that many bytes, the same bytes on every run, valid HTML naming the page', () => {
  const sizes = pageSizes(parsePageSizes('uniform:20k,80k'), 40, 1)
  expect(pageSizes(parsePageSizes('uniform:20k,80k'), 40, 1)).toEqual(sizes) // sizes from the seed
  expect(pageSizes(parsePageSizes('uniform:20k,80k'), 40, 2)).not.toEqual(sizes)
  expect(Math.min(...sizes)).toBeGreaterThanOrEqual(20480)
  expect(Math.max(...sizes)).toBeLessThanOrEqual(81920)
  const a = path.join(tmp, 'sized-a')
  const b = path.join(tmp, 'sized-b')
  generatePages({ count: 40, dir: a, sizes })
  generatePages({ count: 40, dir: b, sizes })
  for (let n = 1; n <= 40; n++) {
    const bytes = fs.readFileSync(path.join(a, `page${n}.html`))
    expect(bytes.length).toBe(sizes[n - 1])
    expect(bytes.equals(fs.readFileSync(path.join(b, `page${n}.html`)))).toBe(true)
    const text = bytes.toString('latin1')
    expect(text).toMatch(new RegExp(`^<!DOCTYPE html>\\n[^]*<title>Page ${n}</title>`))
    expect(text.endsWith('</p>\n</body>\n</html>\n')).toBe(true)
  }
  expect(renderPageOfSize(3, 256)).toHaveLength(256)
  expect(renderPageOfSize(3, 5000)).not.toBe(renderPageOfSize(4, 5000))
  expect(() => renderPageOfSize(1, 100)).toThrow(/bytes must be an integer >= 256/)
  expect(() => generatePages({ count: 2, dir: a, sizes: [300] })).toThrow(/one size per page/)
})

test('count is a parameter: 3 pages means page1..page3 and nothing else', () => {
  const dir = path.join(tmp, 'three')
  generatePages({ count: 3, dir })
  expect(fs.readdirSync(dir).sort()).toEqual(['page1.html', 'page2.html', 'page3.html'])
})

test('each page is about 1,000 lines and 55-65 KB of HTML naming its number', () => {
  for (const n of [1, 2, 13, 25]) {
    const text = renderPage(n)
    expect(text.split('\n').length - 1).toBe(1000)
    expect(Buffer.byteLength(text)).toBeGreaterThanOrEqual(55 * 1024)
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(65 * 1024)
    expect(text.startsWith('<!DOCTYPE html>\n')).toBe(true)
    expect(text).toContain(`<title>Page ${n}</title>`)
    expect(text.trimEnd().endsWith('</html>')).toBe(true)
  }
})

test('pages differ from each other and the same page renders the same every time', () => {
  expect(renderPage(4)).toBe(renderPage(4))
  expect(renderPage(4)).not.toBe(renderPage(5))
})

test('mulberry32 is a deterministic generator in [0, 1)', () => {
  const a = mulberry32(42)
  const b = mulberry32(42)
  const xs = Array.from({ length: 1000 }, () => a())
  expect(xs).toEqual(Array.from({ length: 1000 }, () => b()))
  expect(Math.min(...xs)).toBeGreaterThanOrEqual(0)
  expect(Math.max(...xs)).toBeLessThan(1)
})

test('bad count or missing dir throw', () => {
  expect(() => generatePages({ count: 0, dir: tmp })).toThrow(/count/)
  expect(() => generatePages({ count: 2 })).toThrow(/dir/)
})

test('the CLI writes the pages it is asked for and rejects a bad count with exit 2 and one line', async () => {
  const dir = path.join(tmp, 'cli')
  const ok = await runNode(path.join(__dirname, '..', 'servers', 'pages.js'), ['--count', '2', '--dir', dir])
  expect(ok.code).toBe(0)
  expect(fs.readdirSync(dir).sort()).toEqual(['page1.html', 'page2.html'])
  const badRun = await runNode(path.join(__dirname, '..', 'servers', 'pages.js'), ['--count', 'x', '--dir', dir])
  expect(badRun.code).toBe(2)
  expect(badRun.stderr.trim().split('\n')).toHaveLength(1)
  expect(badRun.stderr).toMatch(/--count/)
})
