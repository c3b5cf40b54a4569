'use strict'

const { spawnSync } = require('node:child_process')
const path = require('node:path')

test('the hand-written src/index.d.ts type-checks under strict tsc and rejects wrong options', () => {
  const root = path.join(__dirname, '..')
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  // balancer-types.ts imports 'polistes' (the package's own exports map) and holds @ts-expect-error
  // lines: tsc fails if one of them is not an error
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'test', 'types', 'tsconfig.balancer.json')], { cwd: root, encoding: 'utf8', timeout: 60000 })
  expect(`${result.stdout}${result.stderr}`).toBe('')
  expect(result.status).toBe(0)
}, 60000)
