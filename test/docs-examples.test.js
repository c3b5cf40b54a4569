'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')
const DOCS = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

/** Every ```js block of a markdown file. */
function jsBlocks (file) {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8')
  return [...text.matchAll(/^```js\n([\s\S]*?)^```/gm)].map((m) => m[1])
}

const examples = DOCS.flatMap((file) => jsBlocks(file).map((code, i) => [file, i + 1, code]))

test('docs/api.md has a runnable example for each function', () => {
  expect(jsBlocks('docs/api.md').length).toBeGreaterThanOrEqual(8)
})

// Run from the repository root, where `require('polistes/wasp')` resolves through the package's own
// exports map (self-reference), exactly as it does for a consumer.
test.each(examples)('%s example %i runs and prints', (_file, _i, code) => {
  const esm = /^\s*import /m.test(code)
  const result = spawnSync(process.execPath, [...(esm ? ['--input-type=module'] : []), '-e', code], { cwd: ROOT, encoding: 'utf8', timeout: 15000 })
  expect(result.stderr).toBe('')
  expect(result.status).toBe(0)
  expect(result.stdout.length).toBeGreaterThan(0)
})
