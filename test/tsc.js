'use strict'

// tsc for the type tests, incremental: its build info (which files it checked, their hashes and their
// errors) kept in the system's temporary folder, one file per checkout and project, so that a run
// after an unchanged one reuses the checks instead of repeating them over @types/node (~8 CPU-s each).
// tsc re-checks a file whenever it or anything it imports changed, so what passes is what a full check
// passes; delete the build info (or change the tsconfig) and it checks everything again.

const crypto = require('node:crypto')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..')
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')

/**
 * Where a project's build info is kept between runs: the system's temporary folder, one file per
 * checkout and project.
 * @param {string} tsconfig the project's tsconfig file name
 * @returns {string} the build info's path
 */
function buildInfoFile (tsconfig) {
  const checkout = crypto.createHash('sha256').update(ROOT).digest('hex').slice(0, 12)
  return path.join(os.tmpdir(), `polistes-tsc-${checkout}-${tsconfig.replace(/\.json$/, '')}.tsbuildinfo`)
}

/**
 * Run tsc on one of test/types' projects.
 * @param {string} tsconfig its file name in test/types
 * @returns {{ status: number | null, output: string }} tsc's exit status and everything it printed
 */
function typeCheck (tsconfig) {
  const buildInfo = buildInfoFile(tsconfig)
  const result = spawnSync(process.execPath, [TSC, '-p', path.join(ROOT, 'test', 'types', tsconfig), '--incremental', '--tsBuildInfoFile', buildInfo], {
    cwd: ROOT, encoding: 'utf8', timeout: 60000
  })
  return { status: result.status, output: `${result.stdout}${result.stderr}${result.error ? result.error.message : ''}` }
}

module.exports = { buildInfoFile, typeCheck }
