'use strict'

// The `// prints:` comments of the docs' examples: what each one must print, line by line.
//
//   console.log(x) // prints: 42               one line, exactly "42"
//   console.log(y) // prints: a or b           "a" or "b"
//   console.log(z) // prints: 200 … (remark)   "…" is any text; a last "(...)" after a space is a remark
//   // prints:                                  alone: each following "// " line is one line printed
//   // /page1 -> a

/**
 * Drop a trailing parenthesized remark: `a,a,b (nginx's example)` -> `a,a,b`.
 * @param {string} text
 * @returns {string}
 */
function withoutRemark (text) {
  if (!text.endsWith(')')) return text
  let depth = 0
  for (let i = text.length - 1; i >= 0; i--) {
    if (text[i] === ')') depth++
    else if (text[i] === '(' && --depth === 0) return i > 0 && text[i - 1] === ' ' ? text.slice(0, i - 1) : text
  }
  return text
}

/**
 * The lines a piece of code says it prints, in order.
 * @param {string} code a docs block or an example file
 * @returns {string[]} the expected lines, as written (wildcards and alternatives kept)
 */
function expectedPrints (code) {
  const lines = code.split('\n')
  const expected = []
  for (let i = 0; i < lines.length; i++) {
    const m = /\/\/ prints:(.*)$/.exec(lines[i])
    if (!m) continue
    const text = m[1].trim()
    if (text !== '') {
      expected.push(withoutRemark(text))
      continue
    }
    while (i + 1 < lines.length && /^\s*\/\/ /.test(lines[i + 1])) expected.push(lines[++i].replace(/^\s*\/\/ /, ''))
  }
  return expected
}

/**
 * Whether a printed line is what the doc says: one of its ' or ' alternatives, '…' matching any text.
 * @param {string} actual
 * @param {string} expected
 * @returns {boolean}
 */
function matches (actual, expected) {
  return expected.split(' or ').some((alternative) => {
    const pattern = alternative.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')
    return new RegExp(`^${pattern}$`).test(actual)
  })
}

/**
 * The printed lines set against the expected ones: those that differ, as `{ line, expected, actual }`.
 * @param {string} stdout
 * @param {string[]} expected
 * @returns {Array<{ line: number, expected: string | undefined, actual: string | undefined }>}
 */
function mismatches (stdout, expected) {
  const actual = stdout.replace(/\n$/, '').split('\n')
  const out = []
  for (let i = 0; i < Math.max(actual.length, expected.length); i++) {
    if (actual[i] === undefined || expected[i] === undefined || !matches(actual[i], expected[i])) out.push({ line: i + 1, expected: expected[i], actual: actual[i] })
  }
  return out
}

module.exports = { expectedPrints, matches, mismatches, withoutRemark }
