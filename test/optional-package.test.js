'use strict'

const { requireOptional, assertInstalled, isInstalled } = require('../src/common/optional-package')
const { PolistesError } = require('../src/common/errors')
const pkg = require('../package.json')

describe('optional peer dependencies: required when used, a one-line error when missing', () => {
  test('every optional peer is listed as optional, and installed here for the repo (as a devDependency)', () => {
    const optional = Object.keys(pkg.peerDependenciesMeta).filter((name) => pkg.peerDependenciesMeta[name].optional)
    expect(optional.sort()).toEqual(Object.keys(pkg.peerDependencies).sort())
    for (const name of optional) {
      expect(pkg.dependencies[name]).toBeUndefined()
      expect(pkg.devDependencies[name]).toBeDefined()
      expect(isInstalled(name)).toBe(true)
    }
  })

  test('an installed package is required as is', () => {
    expect(requireOptional('undici', 'a test')).toBe(require('undici'))
    expect(() => assertInstalled(['node-static', 'lru-cache'], 'a test')).not.toThrow()
  })

  test('a missing package: ERR_POLISTES_MISSING_PACKAGE naming it, and the peer range when polistes declares one', () => {
    let err
    try { requireOptional('polistes-no-such-package', 'the feature (--flag)') } catch (e) { err = e }
    expect(err).toBeInstanceOf(PolistesError)
    expect(err.code).toBe('ERR_POLISTES_MISSING_PACKAGE')
    expect(err.exitCode).toBe(2)
    expect(err.message).toBe('the feature (--flag) needs the package polistes-no-such-package, not installed: npm install polistes-no-such-package')
  })

  test('every missing package is named at once; the installed ones are not', () => {
    expect(() => assertInstalled(['polistes-no-a', 'undici', 'polistes-no-b'], 'the feature'))
      .toThrow(/^the feature needs the packages polistes-no-a and polistes-no-b, not installed: npm install polistes-no-a polistes-no-b$/)
  })
})
