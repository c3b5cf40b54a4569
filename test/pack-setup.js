'use strict'

// jest's globalSetup: an empty folder for the work done once per run (test/once-per-run.js): the one
// `npm pack` (test/packed-consumer.js packs into it when a suite first needs the tarball, so a run
// without such a suite packs nothing) and the test certificates (test/helper.js, makeCertificates).
//
// It also sets NODE_EXTRA_CA_CERTS aside for the run (the workers start after this and inherit the
// change). Node reads that file of extra certificate authorities when each process starts: on a
// machine that points it at the system bundle (144 certificates here), every node process pays about
// 0.1 CPU-second for it, and the tests start some 320 of them (balancers, fleets, load children, the
// docs' examples), all speaking to 127.0.0.1 only, over TLS with certificates the tests make and trust
// by name. npm, which reaches the registry, gets the variable back (test/packed-consumer.js).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

/** Where the run keeps NODE_EXTRA_CA_CERTS for npm while its own processes go without. */
const SET_ASIDE = 'POLISTES_TEST_NODE_EXTRA_CA_CERTS'

module.exports = async function packSetup () {
  process.env.POLISTES_PACK_DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-pack-run-'))
  if (process.env.NODE_EXTRA_CA_CERTS !== undefined) {
    process.env[SET_ASIDE] = process.env.NODE_EXTRA_CA_CERTS
    delete process.env.NODE_EXTRA_CA_CERTS
  }
}

module.exports.SET_ASIDE = SET_ASIDE
