'use strict'

const { ERR_POLISTES_MISSING_PACKAGE } = require('./errors')

/**
 * Packages only some features need are optional peer dependencies (package.json
 * `peerDependencies` + `peerDependenciesMeta`): installing polistes does not install them, and
 * they are required when the feature that needs them is first used, never when polistes loads.
 * A missing one is a one-line error naming the packages and the ranges to install.
 */

/**
 * Whether `name` can be found from polistes' own location (a consumer's node_modules, or the repo's).
 * @param {string} name a package name
 * @returns {boolean}
 */
function isInstalled (name) {
  try {
    require.resolve(name)
    return true
  } catch (err) {
    if (err.code === 'MODULE_NOT_FOUND') return false
    throw err
  }
}

/**
 * Refuse a feature whose packages are not all installed, naming every missing one at once.
 * @param {string[]} names package names
 * @param {string} feature what needs them, for the error, e.g. 'the undici engine (--engine undici)'
 * @throws {import('./errors').PolistesError} ERR_POLISTES_MISSING_PACKAGE
 */
function assertInstalled (names, feature) {
  const missing = names.filter((name) => !isInstalled(name))
  if (missing.length === 0) return
  const ranges = require('../../package.json').peerDependencies || {}
  throw new ERR_POLISTES_MISSING_PACKAGE(missing, feature, ranges)
}

/**
 * Require an optional peer dependency.
 * @param {string} name the package, e.g. 'undici'
 * @param {string} feature what needs it, for the error
 * @returns {any} the package's exports
 * @throws {import('./errors').PolistesError} ERR_POLISTES_MISSING_PACKAGE when it is not installed
 */
function requireOptional (name, feature) {
  assertInstalled([name], feature)
  return require(name)
}

module.exports = { requireOptional, assertInstalled, isInstalled }
