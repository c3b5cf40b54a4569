'use strict'

const errors = require('../src/common/errors')
const { PolistesError, codes } = errors

describe('one error class per stable code', () => {
  test('every code in the public map has its factory, named after the code', () => {
    expect(Object.keys(codes).sort()).toEqual(Object.keys(errors).filter((k) => k.startsWith('ERR_POLISTES_')).sort())
    for (const code of Object.keys(codes)) {
      expect(errors[code].name).toBe(code)
      expect(typeof codes[code]).toBe('string')
    }
  })

  test('a call site passes facts; the message template lives in errors.js', () => {
    const err = new errors.ERR_POLISTES_PORT_IN_USE('backend a', '127.0.0.1', 9101)
    expect(err).toBeInstanceOf(PolistesError)
    expect(err).toBeInstanceOf(errors.ERR_POLISTES_PORT_IN_USE)
    expect(err).toMatchObject({ code: 'ERR_POLISTES_PORT_IN_USE', exitCode: 2, message: 'backend a: 127.0.0.1:9101 is already in use' })
    expect(new errors.ERR_POLISTES_UNKNOWN_ALGO('fastest', ['random', 'wasp']).message).toBe('unknown algorithm "fastest"; expected one of: random, wasp')
    expect(new errors.ERR_POLISTES_UNKNOWN_ALGO(42, ['wasp']).message).toBe('unknown algorithm 42; expected one of: wasp')
    expect(new errors.ERR_POLISTES_BAD_URL('backend #2', 'malformed URL "x"').message).toBe('backend #2: malformed URL "x"')
    expect(new errors.ERR_POLISTES_NO_BACKENDS().message).toMatch(/^no backends given/)
    expect(new errors.ERR_POLISTES_BAD_OPTION('port must be an integer').message).toBe('port must be an integer')
    expect(new errors.ERR_POLISTES_MISSING_PACKAGE(['undici'], 'the undici engine', { undici: '^7.0.0' }).message)
      .toBe('the undici engine needs the package undici, not installed: npm install undici@"^7.0.0"')
    expect(new errors.ERR_POLISTES_MISSING_PACKAGE(['a', 'b'], 'x', { b: '^1.2.0' }).message).toBe('x needs the packages a and b, not installed: npm install a b@"^1.2.0"')
  })

  test('PolistesError still builds an error from a code and a message', () => {
    expect(new PolistesError('ERR_POLISTES_BAD_CONFIG', 'x')).toMatchObject({ code: 'ERR_POLISTES_BAD_CONFIG', message: 'x', exitCode: 2, name: 'PolistesError' })
  })

  test('the registry throws the factory error for an unknown algorithm', () => {
    const { createPolicy } = require('../src/policies')
    expect(() => createPolicy('fastest')).toThrow(errors.ERR_POLISTES_UNKNOWN_ALGO)
  })
})
