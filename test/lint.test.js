'use strict'

// `eslint .` inside jest, so that lint runs in a worker beside the other suites rather than before
// them: the eslint command itself (same config, eslint.config.js, same ignores, same cache as
// `npm run lint`'s neighbour in `npm test` had), in a child process because eslint loads its config
// with import(), which jest's module sandbox refuses. `npm run lint` still runs the command alone.

const { execFile } = require('node:child_process')
const path = require('node:path')

const ROOT = path.join(__dirname, '..')
const ESLINT = path.join(path.dirname(require.resolve('eslint/package.json')), 'bin', 'eslint.js')

test('eslint . passes (exit 0; its report is the failure message)', async () => {
  const env = { ...process.env }
  delete env.NODE_OPTIONS // as `eslint .` ran before jest in npm test: without jest's deprecation flags
  const result = await new Promise((resolve) => {
    execFile(process.execPath, [ESLINT, '--cache', '--cache-strategy', 'content', '.'], { cwd: ROOT, env, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err ? err.code : 0, output: `${stdout}${stderr}` }))
  })
  if (result.code !== 0) throw new Error(`eslint . exited ${result.code}:\n${result.output}`)
}, 120000)
