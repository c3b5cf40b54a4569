'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')
const api = readme.slice(readme.indexOf('\n## API'), readme.indexOf('\n## ', readme.indexOf('\n## API') + 1))
const blocks = [...api.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])

test('the API section has runnable examples', () => {
  expect(blocks.length).toBeGreaterThanOrEqual(8)
})

// Run from the repository root, where `require('polistes/wasp')` resolves through the package's own
// exports map (self-reference), exactly as it does for a consumer.
test.each(blocks.map((code, i) => [i + 1, code]))('README API example %i runs', (_i, code) => {
  const esm = /^\s*import /m.test(code)
  const result = spawnSync(process.execPath, [...(esm ? ['--input-type=module'] : []), '-e', code], { cwd: ROOT, encoding: 'utf8', timeout: 15000 })
  expect(result.stderr).toBe('')
  expect(result.status).toBe(0)
  expect(result.stdout.length).toBeGreaterThan(0)
})
