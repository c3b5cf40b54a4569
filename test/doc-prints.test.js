'use strict'

const { expectedPrints, matches, mismatches, withoutRemark } = require('./doc-prints')

test('a // prints: comment is one line; alone, the // lines after it are', () => {
  const code = [
    'console.log(x) // prints: 42',
    "console.log(y) // prints: a,a,b (nginx's example)",
    '// prints:',
    '// /page1 -> a',
    '//   indented',
    'done()',
    '// not printed'
  ].join('\n')
  expect(expectedPrints(code)).toEqual(['42', 'a,a,b', '/page1 -> a', '  indented'])
})

test('a remark is the last parenthesized part after a space, nested parentheses included', () => {
  expect(withoutRemark('503 (500, +3 (φ), −100 (ξ))')).toBe('503')
  expect(withoutRemark('f(x)')).toBe('f(x)')
  expect(withoutRemark('(all of it)')).toBe('(all of it)')
  expect(withoutRemark('no remark')).toBe('no remark')
})

test('… is any text, " or " separates alternatives, everything else is literal', () => {
  expect(matches('hit rate: 0.987', 'hit rate: …')).toBe(true)
  expect(matches('b', 'a or b')).toBe(true)
  expect(matches('c', 'a or b')).toBe(false)
  expect(matches('a.b', 'a.b')).toBe(true)
  expect(matches('axb', 'a.b')).toBe(false)
  expect(matches('[1] x', '[1] …')).toBe(true)
  expect(matches('200 MISS', '200 HIT')).toBe(false)
})

test('mismatches lists the lines that differ, and lines missing or extra', () => {
  expect(mismatches('a\nb\n', ['a', 'b'])).toEqual([])
  expect(mismatches('a\nc\n', ['a', 'b'])).toEqual([{ line: 2, expected: 'b', actual: 'c' }])
  expect(mismatches('a\n', ['a', 'b'])).toEqual([{ line: 2, expected: 'b', actual: undefined }])
  expect(mismatches('a\nb\n', ['a'])).toEqual([{ line: 2, expected: undefined, actual: 'b' }])
  expect(mismatches('', ['a'])).toEqual([{ line: 1, expected: 'a', actual: '' }])
})
