'use strict'

// jest's globalSetup: an empty folder for the work done once per run (test/once-per-run.js): the one
// `npm pack` (test/packed-consumer.js packs into it when a suite first needs the tarball, so a run
// without such a suite packs nothing) and the test certificates (test/helper.js, makeCertificates).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

module.exports = async function packSetup () {
  process.env.POLISTES_PACK_DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-pack-run-'))
}
