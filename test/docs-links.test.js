'use strict'

const fs = require('node:fs')
const path = require('node:path')

const ROOT = path.join(__dirname, '..')
const DOCS = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

/** Markdown without fenced code blocks and inline code, where a `[x](y)` is not a link. */
function prose (text) {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '``')
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors (text) {
  const seen = new Map()
  const out = new Set()
  for (const m of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const slug = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N} _-]/gu, '').replace(/ /g, '-')
    const n = seen.get(slug) || 0
    seen.set(slug, n + 1)
    out.add(n === 0 ? slug : `${slug}-${n}`)
  }
  return out
}

/**
 * The relative links of one markdown text that do not resolve.
 * @param {string} text markdown
 * @param {string} file its path relative to the repository root
 * @param {(file: string) => string | undefined} read the text of a repository file, undefined if absent
 * @returns {string[]} one line per broken link
 */
function brokenLinks (text, file, read) {
  const broken = []
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) {
    const target = m[1]
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // http:, https:, mailto:
    const [pathPart, fragment] = target.split('#')
    const resolved = pathPart === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), pathPart))
    const content = pathPart === '' ? text : read(resolved)
    if (content === undefined) {
      broken.push(`${file}: ${target} (no file ${resolved})`)
    } else if (fragment !== undefined && resolved.endsWith('.md') && !anchors(content).has(fragment)) {
      broken.push(`${file}: ${target} (no heading #${fragment} in ${resolved})`)
    }
  }
  return broken
}

function readRepoFile (file) {
  const full = path.join(ROOT, file)
  if (!fs.existsSync(full)) return undefined
  return fs.statSync(full).isDirectory() ? '' : fs.readFileSync(full, 'utf8')
}

test('the checker reports a missing file and a missing heading, and accepts good links', () => {
  const files = { 'docs/a.md': '# Title\n\n## The `cache` scenario: A, B\n', 'README.md': '' }
  const read = (f) => files[f]
  const text = [
    '[ok](docs/a.md) [ok](docs/a.md#the-cache-scenario-a-b) [ok](#here) [web](https://example.org/x)',
    '[gone](docs/b.md) [bad anchor](docs/a.md#nope) `[not a link](nowhere.md)`',
    '# Here'
  ].join('\n')
  expect(brokenLinks(text, 'README.md', read)).toEqual([
    'README.md: docs/b.md (no file docs/b.md)',
    'README.md: docs/a.md#nope (no heading #nope in docs/a.md)'
  ])
  expect(brokenLinks('[up](../README.md#top)', 'docs/a.md', (f) => f === 'README.md' ? '# Top\n' : undefined)).toEqual([])
})

test('anchors follow GitHub: punctuation dropped, repeated headings numbered', () => {
  expect([...anchors('# A. Proxy (Python) — RR vs SMA\n## `npm run bench:model`: x\n## Dup\n## Dup\n```\n# not a heading\n```\n')])
    .toEqual(['a-proxy-python--rr-vs-sma', 'npm-run-benchmodel-x', 'dup', 'dup-1'])
})

test.each(DOCS)('every relative link in %s points to an existing file and heading', (file) => {
  expect(brokenLinks(fs.readFileSync(path.join(ROOT, file), 'utf8'), file, readRepoFile)).toEqual([])
})
