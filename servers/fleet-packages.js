'use strict'

const { assertInstalled } = require('../src/common/optional-package')

/**
 * The page backends (servers/) need packages the library does not: optional peer dependencies of
 * polistes, installed in this repository as devDependencies. Without them, starting a backend
 * (the CLI's embedded fleet, with no --backends) is one error naming both.
 */
const FLEET_PACKAGES = ['node-static', 'lru-cache']

/** @throws {import('../src/common/errors').PolistesError} ERR_POLISTES_MISSING_PACKAGE */
function assertFleetPackages () {
  assertInstalled(FLEET_PACKAGES, 'the embedded fleet of page backends (polistes without --backends)')
}

module.exports = { assertFleetPackages }
