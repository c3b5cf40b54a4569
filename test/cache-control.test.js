'use strict'

const { hasNoStore, withNoStore } = require('../src/proxy/cache-control')

describe('hasNoStore', () => {
  test.each([
    ['no-store', true],
    ['NO-STORE', true],
    ['max-age=0, no-store', true],
    ['max-age=0,No-Store ,private', true],
    ['\tno-store\t', true],
    ['no-store=1', true],
    ['', false],
    ['max-age=0', false],
    ['no-storey', false],
    ['xno-store', false],
    ['private="no-store"', false],
    ['no-cache', false]
  ])('%j: %s', (value, expected) => {
    expect(hasNoStore(value)).toBe(expected)
  })

  test('undefined has none; an array has it when one of its values does', () => {
    expect(hasNoStore(undefined)).toBe(false)
    expect(hasNoStore(['max-age=0', 'no-store'])).toBe(true)
    expect(hasNoStore(['max-age=0', 'no-cache'])).toBe(false)
  })
})

describe('withNoStore', () => {
  test.each([
    [undefined, 'no-store'],
    ['', 'no-store'],
    ['  ', 'no-store'],
    ['max-age=0', 'max-age=0, no-store'],
    ['no-cache, max-age=0', 'no-cache, max-age=0, no-store'],
    ['No-Store', 'No-Store'],
    ['max-age=0, no-store', 'max-age=0, no-store'],
    ['no-storey', 'no-storey, no-store'],
    [['max-age=0', 'no-cache'], 'max-age=0, no-cache, no-store']
  ])('%j becomes %j', (value, expected) => {
    expect(withNoStore(value)).toBe(expected)
  })
})
