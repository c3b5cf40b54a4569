'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { unusedExports, exportedNames, destructured, bindingUses, importsOf, stripped } = require('./export-usage')

test('every name a module in src/, bench/ or servers/ exports is imported by another file', () => {
  // each entry is `file: name`; stop exporting it (or, if another file should use it, import it there)
  expect(unusedExports()).toEqual([])
})

describe('the reading of imports and exports', () => {
  test('module.exports = { … }: shorthand, keyed and method entries; anything else is not read', () => {
    const source = 'module.exports = { a, b: x, c (y) { return y }, d: f(1, 2) }\n'
    expect(exportedNames(source)).toEqual(['a', 'b', 'c', 'd'])
    expect(exportedNames('module.exports = createThing\n')).toBe(null)
    expect(destructured(' a, b: c, d = 1, ...rest ')).toEqual(['a', 'b', 'd', 'rest'])
  })

  test('comments are blanked; then strings, template text and regex literals; code and lines are kept', () => {
    const sub = '$' + '{b}' // a template's substitution, written so that lint does not take it for a slip
    const source = `const a = \`${sub}/_x/* not a comment\`\n` +
      'return /["\']/.test(c) // h.gone\n' +
      "x('h.gone', h.kept) /* h.gone */\n"
    const code = stripped(stripped(source), true)
    expect(code.split('\n')).toHaveLength(4)
    expect(code).toContain(sub)
    expect(code).toContain('/    /.test(c)')
    expect(stripped(source)).toContain('/["\']/.test(c)')
    expect(code).toContain('h.kept')
    expect(code).not.toContain('gone')
  })

  test('a binding counts the properties read from it, or every name when it is handed on whole', () => {
    const uses = (source) => bindingUses(stripped(source, true), 'h')
    expect(uses("const h = require('./h')\nh.one(); h?.two\n")).toEqual(['one', 'two'])
    expect(uses("const h = require('./h')\nrun(h)\n")).toEqual(['*'])
    expect(uses("const h = require('./h')\nrun({ h: 1 }, { a, h: 2 }); h.one\n")).toEqual(['one'])
  })

  test('importsOf reads every form from a real file and resolves it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-exports-'))
    try {
      fs.writeFileSync(path.join(dir, 'lib.js'), 'module.exports = { a, b, c, d, e, f, unused }\n')
      fs.mkdirSync(path.join(dir, 'room'))
      fs.writeFileSync(path.join(dir, 'room', 'index.js'), 'module.exports = { g }\n')
      fs.writeFileSync(path.join(dir, 'use.js'), [
        "const { a, b: renamed } = require('./lib')",
        "const lib = require('./lib.js')",
        'lib.c(lib.d)',
        "require('./lib').e",
        "async function later () { const { f } = await import('./lib') }",
        "const { g } = require('./room')",
        "/** @type {import('./lib').unused} a JSDoc type counts: the class is exported for it */"
      ].join('\n'))
      const found = importsOf(path.join(dir, 'use.js'))
      expect(found.get(path.join(dir, 'lib.js'))).toEqual(new Set(['a', 'b', 'c', 'd', 'e', 'f', 'unused']))
      expect(found.get(path.join(dir, 'room', 'index.js'))).toEqual(new Set(['g']))
      fs.writeFileSync(path.join(dir, 'use.js'), "const { a } = require('./lib')\n// require('./lib').b\n")
      expect(importsOf(path.join(dir, 'use.js')).get(path.join(dir, 'lib.js'))).toEqual(new Set(['a']))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
