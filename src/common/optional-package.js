'use strict'

const { ERR_POLISTES_MISSING_PACKAGE } = require('./errors')

/**
 * Packages only some features need are optional peer dependencies (package.json
 * `peerDependencies` + `peerDependenciesMeta`): installing polistes does not install them, and
 * they are required here, when the feature that needs them is first used, never at load time.
 * A missing one is a one-line error naming the package and the range to install.
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
 * Require an optional peer dependency.
 * @param {string} name the package, e.g. 'undici'
 * @param {string} feature what needs it, for the error, e.g. 'the undici engine (--engine undici)'
 * @returns {any} the package's exports
 * @throws {import('./errors').PolistesError} ERR_POLISTES_MISSING_PACKAGE when it is not installed
 */
function requireOptional (name, feature) {
  if (!isInstalled(name)) {
    const peers = require('../../package.json').peerDependencies || {}
    throw new ERR_POLISTES_MISSING_PACKAGE(name, feature, peers[name])
  }
  return require(name)
}

module.exports = { requireOptional, isInstalled }
