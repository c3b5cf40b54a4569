'use strict'

const fs = require('node:fs')
const path = require('node:path')

const ROOT = path.join(__dirname, '..')
const SRC = path.join(ROOT, 'src')
/** Folders the library must never load: its test backends, its benchmarks, its tests. */
const OUTSIDE = ['servers', 'bench', 'test'].map((dir) => path.join(ROOT, dir) + path.sep)

/** Every module specifier in `require('…')`, `import … from '…'`, `import('…')` and `import type`. */
function specifiers (source) {
  const found = []
  const pattern = /\brequire\s*\(\s*(['"`])([^'"`]+)\1|\bfrom\s+(['"])([^'"]+)\3|\bimport\s*\(\s*(['"])([^'"]+)\5|^\s*import\s+(['"])([^'"]+)\7/gm
  for (const m of source.matchAll(pattern)) found.push(m[2] || m[4] || m[6] || m[8])
  return found
}

function filesUnder (dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) return filesUnder(file)
    return /\.(c|m)?(js|ts)$/.test(entry.name) ? [file] : []
  })
}

/** The relative imports of `file` that land in servers/, bench/ or test/. */
function wrongWay (file) {
  return specifiers(fs.readFileSync(file, 'utf8'))
    .filter((s) => s.startsWith('.'))
    .map((s) => path.resolve(path.dirname(file), s))
    .filter((target) => OUTSIDE.some((dir) => target.startsWith(dir)))
}

test('the import scanner sees require, import and import type', () => {
  const source = "const a = require('../servers/fleet')\nimport b from './b.js'\nimport type { C } from '../c'\nconst d = await import(\"./d\")\nimport './e'\n"
  expect(specifiers(source)).toEqual(['../servers/fleet', './b.js', '../c', './d', './e'])
})

test('nothing under src/ imports servers/, bench/ or test/', () => {
  const files = filesUnder(SRC)
  expect(files).toEqual(expect.arrayContaining([path.join(SRC, 'cli.js'), path.join(SRC, 'index.js')]))
  const offenders = files.flatMap((file) => wrongWay(file).map((target) => `${path.relative(ROOT, file)} -> ${path.relative(ROOT, target)}`))
  expect(offenders).toEqual([])
})
