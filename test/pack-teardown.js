'use strict'

// jest's globalTeardown: the run's tarball folder (test/pack-setup.js) goes.

const fs = require('node:fs')

module.exports = async function packTeardown () {
  const dir = process.env.POLISTES_PACK_DIR
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
}
