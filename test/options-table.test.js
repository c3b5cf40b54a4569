'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { OPTIONS, API_OPTIONS, BALANCER_KEYS, RESTART_ONLY, RELOADABLE, TOP_KEYS } = require('../src/config/options')
const { DEFAULTS, validateOptions, checkMembers } = require('../src/config/defaults')
const cli = require('../src/run/cli-options')
const { interfaceKeys } = require('./index-dts')

const ROOT = path.join(__dirname, '..')
const DOC = fs.readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8')

/** The rows of the first table after `## Settings` in docs/configuration.md, as arrays of trimmed cells. */
function docRows () {
  const section = DOC.slice(DOC.indexOf('\n## Settings'))
  const table = section.slice(section.indexOf('\n|')).split('\n\n')[0]
  return table.trim().split('\n').slice(2).map((line) => line.split('|').slice(1, -1).map((c) => c.trim()))
}
const code = (cell) => /^`([^`]+)`$/.exec(cell)?.[1]

test('the interface scanner reads top-level keys only', () => {
  expect(interfaceKeys('StickyCookieOptions')).toEqual(['name', 'path', 'domain', 'maxAgeS', 'secure', 'httpOnly', 'sameSite'])
})

test('BalancerOptions in index.d.ts has every option of the table the balancer takes, the API-only ones, and nothing else', () => {
  const keys = interfaceKeys('BalancerOptions')
  expect([...keys].sort()).toEqual([...BALANCER_KEYS, ...Object.keys(API_OPTIONS)].sort())
  expect(new Set(keys).size).toBe(keys.length)
})

test('each option is in the table once, with a reload rule, a one-line doc and, for a flag, a --help group', () => {
  const keys = OPTIONS.map((o) => o.key)
  expect(new Set(keys).size).toBe(keys.length)
  for (const o of OPTIONS) {
    expect(['live', 'restart']).toContain(o.reload)
    expect(typeof o.doc).toBe('string')
    expect(o.doc).not.toMatch(/\n/)
    if (o.check !== undefined) expect(typeof o.check).toBe('function')
    if (o.flag) expect(Object.keys(cli.GROUPS)).toContain(o.flag.group)
    const group = o.key.split('.')[0]
    if (o.key.includes('.')) expect(TOP_KEYS).toContain(group)
  }
  expect(RESTART_ONLY).toEqual(expect.arrayContaining(['host', 'port', 'engine', 'front', 'tlsCert', 'tlsKey', 'upstreamCa', 'adminPort', 'adminHost']))
  expect(RELOADABLE).toEqual(expect.arrayContaining(['algo', 'policyOptions', 'timeoutMs', 'retryOn', 'healthCheck', 'maxBodySize', 'trustedProxies', 'routingKey', 'stickyCookie', 'resolveMs']))
  expect(RELOADABLE.filter((k) => RESTART_ONLY.includes(k))).toEqual([])
})

test('the defaults are the table\'s, members nested in their object option', () => {
  for (const o of OPTIONS) {
    const [group, member] = o.key.split('.')
    const value = member === undefined ? DEFAULTS[group] : DEFAULTS[group]?.[member]
    if (o.default === undefined && member === undefined && OPTIONS.some((m) => m.key.startsWith(`${group}.`))) continue // an object option
    expect(value).toEqual(o.default)
  }
})

test('every check of the table refuses a bad value, naming its option', () => {
  for (const o of OPTIONS.filter((o) => o.check)) {
    const bad = () => {}
    const run = o.key.includes('.')
      ? () => checkMembers(o.key.split('.')[0], { ...DEFAULTS[o.key.split('.')[0]], [o.key.split('.')[1]]: bad })
      : () => validateOptions({ [o.key]: bad })
    expect(run).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', options: expect.arrayContaining([expect.stringMatching(new RegExp(`^${o.key}`))]) }))
  }
  expect(() => validateOptions({ ...DEFAULTS })).not.toThrow()
})

test('the CLI\'s flags are the table\'s: each with its key, group, type, alias and doc as --help text', () => {
  for (const o of OPTIONS.filter((o) => o.flag)) {
    const flag = cli.OPTIONS.find((f) => f.flag === o.flag.name)
    expect(flag).toMatchObject({ key: o.key, group: o.flag.group, type: o.flag.type, describe: o.doc })
    expect(flag.alias).toBe(o.flag.alias)
    expect(cli.flagNames[o.key]).toBe(`--${o.flag.name}`)
  }
  expect(cli.OPTIONS.filter((f) => f.key).length).toBe(OPTIONS.filter((o) => o.flag).length)
})

test('docs/configuration.md lists every option of the table with its flag and its default', () => {
  const rows = docRows()
  for (const o of OPTIONS) {
    if (o.default === undefined && OPTIONS.some((m) => m.key.startsWith(`${o.key}.`))) continue // an object option: its members are listed
    const row = rows.find((r) => code(r[0]) === o.key)
    expect({ key: o.key, row }).toEqual({ key: o.key, row: expect.any(Array) })
    if (o.flag) expect(row[1]).toContain(`--${o.flag.name}`)
    else expect(row[1]).toBe('(file only)')
    if (o.default === undefined) expect(code(row[2])).toBeUndefined()
    else expect(JSON.parse(code(row[2]))).toEqual(o.default)
  }
  const documented = rows.map((r) => code(r[0])).filter(Boolean)
  expect(documented.filter((key) => !OPTIONS.some((o) => o.key === key))).toEqual([])
})
