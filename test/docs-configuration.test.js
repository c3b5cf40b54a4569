'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { DEFAULTS } = require('../src/config/config')
const { runNode } = require('./helper')

const ROOT = path.join(__dirname, '..')
const doc = fs.readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8')

/** The rows of the first table after `## Settings`, as arrays of trimmed cells. */
function settingsRows () {
  const section = doc.slice(doc.indexOf('\n## Settings'))
  const table = section.slice(section.indexOf('\n|')).split('\n\n')[0]
  return table.trim().split('\n').slice(2).map((line) => line.split('|').slice(1, -1).map((c) => c.trim()))
}

/** DEFAULTS as dotted leaves: { algo: 'wasp', 'fleet.count': 7, policyOptions: {} ... }. */
function leaves (object, prefix = '') {
  const out = {}
  for (const [key, value] of Object.entries(object)) {
    const isGroup = value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0
    if (isGroup) Object.assign(out, leaves(value, `${prefix}${key}.`))
    else out[`${prefix}${key}`] = value
  }
  return out
}

const code = (cell) => /^`([^`]+)`$/.exec(cell)?.[1]
const rows = settingsRows()
const defaults = leaves(DEFAULTS)

test('the settings table has a row per setting', () => {
  expect(rows.length).toBeGreaterThanOrEqual(Object.keys(defaults).length)
  for (const row of rows) expect(row).toHaveLength(4)
})

test.each(Object.entries(defaults))('docs/configuration.md gives %s the default of src/config/config.js', (key, value) => {
  const row = rows.find((r) => code(r[0]) === key)
  expect(row).toBeDefined()
  expect(code(row[2])).toBeDefined()
  expect(JSON.parse(code(row[2]))).toEqual(value)
})

test('every default written as a value in the table is one of src/config/config.js DEFAULTS', () => {
  const claimed = rows.filter((r) => code(r[2]) !== undefined).map((r) => code(r[0]))
  expect(claimed.sort()).toEqual(Object.keys(defaults).sort())
})

test('the table lists exactly the flags of polistes --help', async () => {
  const { code: exit, stdout } = await runNode(path.join(ROOT, 'bin', 'polistes.js'), ['--help'])
  expect(exit).toBe(0)
  const help = new Set([...stdout.matchAll(/^ +(?:-\w, +)?--([a-z][a-z-]*)/gm)].map((m) => m[1]))
  help.delete('help')
  help.delete('version')
  const documented = new Set(rows.flatMap((r) => [...r[1].matchAll(/--([a-z][a-z-]*)/g)].map((m) => m[1])))
  for (const flag of documented) if (flag.startsWith('no-') && documented.has(flag.slice(3))) documented.delete(flag)
  expect([...documented].sort()).toEqual([...help].sort())
  expect(help.size).toBeGreaterThan(10)
})
