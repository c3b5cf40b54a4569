'use strict'

/**
 * Deterministic test pages: `page1.html … pageN.html`, each about 1,000 lines (about 60 KB) of
 * lorem-ipsum text. The text of page `n` comes from a mulberry32 PRNG seeded from `n`, so the same
 * bytes come out on every run and every machine (no clock, no locale, `\n` line endings).
 */

const fs = require('node:fs')
const path = require('node:path')
const { mulberry32 } = require('../src/common/prng')

const WORDS = (
  'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut ' +
  'labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris ' +
  'nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse ' +
  'cillum eu fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui ' +
  'officia deserunt mollit anim id est laborum vespa polistes dominula nidus cella larva pupa ' +
  'regina operaria vigilia pabulum aqua lignum charta'
).split(' ')

/** Lines per page, including the HTML scaffolding. */
const LINES_PER_PAGE = 1000

/**
 * Render one page as a string.
 *
 * @param {number} n page number, 1-based; also the PRNG seed
 * @returns {string} the HTML text of `page<n>.html`
 */
function renderPage (n) {
  const random = mulberry32(n * 2654435761)
  const pick = () => WORDS[Math.floor(random() * WORDS.length)]
  const head = [
    '<!DOCTYPE html>',
    '<html lang="la">',
    '<head>',
    '<meta charset="utf-8">',
    `<title>Page ${n}</title>`,
    '</head>',
    '<body>',
    `<h1>Page ${n}</h1>`
  ]
  const tail = ['</body>', '</html>']
  const lines = [...head]
  const bodyLines = LINES_PER_PAGE - head.length - tail.length
  for (let i = 0; i < bodyLines; i++) {
    // A paragraph every 20 lines; the other lines are text 40..80 characters long (mean ~60).
    if (i % 20 === 0) {
      lines.push(i === 0 ? '<p>' : '</p><p>')
      continue
    }
    const target = 40 + Math.floor(random() * 41)
    let line = pick()
    line = line[0].toUpperCase() + line.slice(1)
    while (line.length < target) line += ' ' + pick()
    lines.push(line + (random() < 0.3 ? '.' : ','))
  }
  lines[lines.length - 1] = '</p>'
  lines.push(...tail)
  return lines.join('\n') + '\n'
}

/**
 * Render one page of exactly `bytes` bytes (ASCII): the same scaffolding, then lorem-ipsum words
 * from the page's PRNG, twelve to a line, cut to length.
 *
 * @param {number} n page number, 1-based; also the PRNG seed
 * @param {number} bytes the page's size, at least 256
 * @returns {string} the HTML text of `page<n>.html`
 */
function renderPageOfSize (n, bytes) {
  if (!Number.isInteger(bytes) || bytes < 256) throw new TypeError(`bytes must be an integer >= 256, got ${bytes}`)
  const random = mulberry32(n * 2654435761)
  const head = '<!DOCTYPE html>\n<html lang="la">\n<head>\n<meta charset="utf-8">\n' +
    `<title>Page ${n}</title>\n</head>\n<body>\n<h1>Page ${n}</h1>\n<p>\n`
  const tail = '\n</p>\n</body>\n</html>\n'
  const room = bytes - head.length - tail.length
  const words = []
  let length = 0
  for (let i = 1; length < room; i++) {
    const word = WORDS[Math.floor(random() * WORDS.length)]
    words.push(word, i % 12 === 0 ? '\n' : ' ')
    length += word.length + 1
  }
  return head + words.join('').slice(0, room) + tail
}

/**
 * Write `page1.html … page<count>.html` into `dir` (created if missing).
 *
 * @param {object} options
 * @param {number} [options.count=25] how many pages
 * @param {string} options.dir target directory
 * @param {number[]} [options.sizes] bytes of each page (renderPageOfSize); default the ~60 KB
 *   pages of renderPage
 * @returns {string[]} the absolute paths written, in page order
 */
function generatePages ({ count = 25, dir, sizes } = {}) {
  if (!Number.isInteger(count) || count < 1) throw new TypeError(`count must be a positive integer, got ${count}`)
  if (typeof dir !== 'string' || dir === '') throw new TypeError('dir is required')
  if (sizes !== undefined && (!Array.isArray(sizes) || sizes.length !== count)) {
    throw new TypeError(`sizes must list one size per page (${count})`)
  }
  fs.mkdirSync(dir, { recursive: true })
  const written = []
  for (let n = 1; n <= count; n++) {
    const file = path.resolve(dir, `page${n}.html`)
    fs.writeFileSync(file, sizes ? renderPageOfSize(n, sizes[n - 1]) : renderPage(n))
    written.push(file)
  }
  return written
}

module.exports = { generatePages, renderPage, renderPageOfSize, mulberry32 }

if (require.main === module) {
  const { runCli } = require('./cli-support')
  runCli('pages', async (argv) => {
    const { yargsFor, intOption } = require('./cli-support')
    const args = yargsFor(argv, 'Write deterministic lorem-ipsum pages page1.html … pageN.html.')
      .option('count', { type: 'string', default: '25', describe: 'how many pages' })
      .option('dir', { type: 'string', default: 'public', describe: 'target directory' })
      .parse()
    const count = intOption('count', args.count, { min: 1 })
    const files = generatePages({ count, dir: args.dir })
    console.log(`wrote ${files.length} pages to ${path.resolve(args.dir)}`)
  })
}
