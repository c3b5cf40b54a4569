'use strict'

// One bench run through its API (bench/runners/run.js), as `npm run bench -- <args>` would run it,
// with its results in a fresh temporary folder: the suites that run the bench end to end share it.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { parseOptions } = require('../bench/runners/options')
const { bench } = require('../bench/runners/run')

/**
 * Run the bench with `args` (plus `--results-dir` and `--out` in a new folder named from `prefix`).
 * The folder is removed if the run fails; else the caller removes `dir`.
 * @param {string} prefix the temporary folder's name prefix
 * @param {string[]} args command-line options
 * @param {{ adjust?: (settings: object) => void }} [options] a change to the parsed settings
 * @returns {Promise<{ dir: string, result: object, doc: object, stdout: string, stderr: string }>}
 *   `result` bench()'s value, `doc` the JSON it wrote, `stdout`/`stderr` what it printed
 */
async function runBench (prefix, args, { adjust } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  const out = path.join(dir, 'out.json')
  const printed = { stdout: '', stderr: '' }
  const sink = (name) => ({ isTTY: false, write: (t) => { printed[name] += t; return true } })
  try {
    const settings = parseOptions([...args, '--results-dir', dir, '--out', out])
    if (adjust) adjust(settings)
    const result = await bench(settings, { stdout: sink('stdout'), stderr: sink('stderr') })
    return { dir, result, doc: JSON.parse(fs.readFileSync(out, 'utf8')), ...printed }
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true })
    throw err
  }
}

module.exports = { runBench }
