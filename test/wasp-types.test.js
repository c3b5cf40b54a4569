'use strict'

const { execFileSync } = require('node:child_process')
const path = require('node:path')

test('the hand-written wasp.d.ts type-checks under strict tsc and rejects a wrong option type', () => {
  const root = path.join(__dirname, '..')
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  // test/types/wasp-types.ts holds `// @ts-expect-error` lines: tsc fails if any of them is not an error
  let output = ''
  try {
    execFileSync(process.execPath, [tsc, '-p', path.join(root, 'test', 'types', 'tsconfig.json')], { cwd: root, encoding: 'utf8' })
  } catch (err) {
    output = `${err.stdout}${err.stderr}`
  }
  expect(output).toBe('')
}, 60000)
