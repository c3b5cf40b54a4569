'use strict'

// Work done once per jest run and shared by the suites of every worker: test/pack-setup.js (jest's
// globalSetup) names an empty folder in POLISTES_PACK_DIR; the first suite that asks does the work
// there, the others wait for its outcome (written whole, or not at all). The teardown removes it.

const fs = require('node:fs')
const path = require('node:path')

/** Sleep `ms` milliseconds, synchronously (beforeAll hooks and helpers that call this are synchronous). */
function sleepSync (ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/**
 * The outcome of `make(folder)`, made once per run: by the first caller, under the run's folder.
 *
 * @template T
 * @param {string} name what is made, unique in the run (names its lock and its outcome file)
 * @param {(folder: string) => T} make does the work in the run's folder; returns JSON-able data
 * @param {{ waitMs?: number }} [options] how long a later caller waits for the first one's outcome
 * @returns {T | undefined} make's outcome; undefined outside a jest run of this config (no
 *   POLISTES_PACK_DIR): the caller then makes its own
 */
function oncePerRun (name, make, { waitMs = 180000 } = {}) {
  const shared = process.env.POLISTES_PACK_DIR
  if (!shared) return undefined
  const result = path.join(shared, `${name}.json`)
  let mine = true
  try {
    fs.mkdirSync(path.join(shared, `${name}.lock`)) // atomic: one caller makes it
  } catch (err) {
    if (err.code !== 'EEXIST') throw err
    mine = false
  }
  if (mine) {
    let outcome
    try {
      outcome = { ok: make(shared) }
    } catch (err) {
      outcome = { error: err.message }
    }
    fs.writeFileSync(`${result}.tmp`, JSON.stringify(outcome))
    fs.renameSync(`${result}.tmp`, result) // whole, or not there
  }
  const deadline = Date.now() + waitMs
  while (!fs.existsSync(result)) {
    if (Date.now() > deadline) throw new Error(`${name}: nothing in ${shared} after ${waitMs / 1000} s`)
    sleepSync(100)
  }
  const outcome = JSON.parse(fs.readFileSync(result, 'utf8'))
  if (outcome.error) throw new Error(`${name} failed: ${outcome.error}`)
  return outcome.ok
}

module.exports = { oncePerRun }
