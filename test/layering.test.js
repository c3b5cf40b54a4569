'use strict'

const fs = require('node:fs')
const path = require('node:path')

const ROOT = path.join(__dirname, '..')
const SRC = path.join(ROOT, 'src')
/** Folders the library must never load: its test backends, its benchmarks, its tests. */
const OUTSIDE = ['servers', 'bench', 'test'].map((dir) => path.join(ROOT, dir) + path.sep)

/** The top of src/ (src/*.js), where the assembler stands: roomOf() names it ''. */
const TOP = ''

/**
 * The rooms of src/ and, for each, the rooms its files may import (its own always). A request enters
 * at the front and flows down: the top-level balancer (src/balancer.js) takes it from front/ and hands
 * it to proxy/, which picks through policies/ among the upstreams of pool/; observe/ records it;
 * common/ is the floor everyone stands on. Nothing below the top imports the top, and front/ knows
 * nothing of proxy/ (the balancer wires them). config/ checks options against the names that proxy/,
 * pool/ and policies/ offer, so it may read them; adapters/ put the policies inside other proxies;
 * run/ (the `polistes` command, its reload) stands above the balancer it starts.
 */
const MAY_IMPORT = {
  common: [],
  policies: ['common'],
  pool: ['common'],
  proxy: ['pool', 'policies', 'common'],
  front: ['common'],
  observe: ['common'],
  config: ['proxy', 'pool', 'policies', 'common'],
  adapters: ['proxy', 'pool', 'policies', 'config', 'common'],
  run: [TOP, 'front', 'proxy', 'pool', 'policies', 'config', 'observe', 'common']
}
/**
 * The files at the top of src/, which assemble the rooms and so may import any of them: the package
 * entry and its types, the balancer (front server, pool, engine, admin around the request's path)
 * and its reload step.
 */
const ASSEMBLERS = ['index.js', 'index.d.ts', 'balancer.js', 'reconfigure.js']

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

/** The room of a path under src/ (its first folder; a folder is its own room), '' for a file at the top of src/. */
function roomOf (file) {
  const rel = path.relative(SRC, file).split(path.sep)
  if (rel.length > 1) return rel[0]
  return fs.existsSync(file) && fs.statSync(file).isDirectory() ? rel[0] : ''
}

/** The paths that the relative specifiers of `file` reach. */
function targets (file) {
  return specifiers(fs.readFileSync(file, 'utf8'))
    .filter((s) => s.startsWith('.'))
    .map((s) => path.resolve(path.dirname(file), s))
}

/** The paths that JSDoc types `import('…').Name` of `file` reach (types only, nothing is loaded). */
function typeTargets (file) {
  return [...fs.readFileSync(file, 'utf8').matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)\./g)]
    .map((m) => path.resolve(path.dirname(file), m[1]))
}

/** The relative imports of `file` that land in servers/, bench/ or test/. */
function wrongWay (file) {
  return targets(file).filter((target) => OUTSIDE.some((dir) => target.startsWith(dir)))
}

/** The imports of `file` into a room its own room may not import. */
function upward (file) {
  if (ASSEMBLERS.includes(path.relative(SRC, file).split(path.sep).join('/'))) return []
  const own = roomOf(file)
  const allowed = new Set([own, ...(MAY_IMPORT[own] || [])])
  // the package's public types (src/index.d.ts) may be named in a JSDoc type from anywhere
  const publicTypes = new Set(typeTargets(file).filter((t) => t === path.join(SRC, 'index')))
  return targets(file)
    .filter((target) => target.startsWith(SRC + path.sep) && !allowed.has(roomOf(target)) && !publicTypes.has(target))
}

const files = filesUnder(SRC)
const rel = (f) => path.relative(ROOT, f).split(path.sep).join('/')

test('the import scanner sees require, import and import type', () => {
  const source = "const a = require('../servers/fleet')\nimport b from './b.js'\nimport type { C } from '../c'\nconst d = await import(\"./d\")\nimport './e'\n"
  expect(specifiers(source)).toEqual(['../servers/fleet', './b.js', '../c', './d', './e'])
})

test('nothing under src/ imports servers/, bench/ or test/', () => {
  expect(files).toEqual(expect.arrayContaining([path.join(SRC, 'run', 'cli.js'), path.join(SRC, 'index.js')]))
  const offenders = files.flatMap((file) => wrongWay(file).map((target) => `${rel(file)} -> ${rel(target)}`))
  expect(offenders).toEqual([])
})

test('every file of src/ sits in a known room (or is the package entry)', () => {
  const homeless = files.filter((file) => roomOf(file) === '' ? !ASSEMBLERS.includes(path.basename(file)) : !(roomOf(file) in MAY_IMPORT))
  expect(homeless.map(rel)).toEqual([])
})

test('imports flow downward: top -> front, proxy -> pool and policies, and policies import nothing of the proxy', () => {
  const offenders = files.flatMap((file) => upward(file).map((target) => `${rel(file)} -> ${rel(target)}`))
  expect(offenders).toEqual([])
})

test('the room check catches a policy that reaches into the proxy', () => {
  const policy = path.join(SRC, 'policies', 'x.js')
  const own = roomOf(policy)
  const allowed = new Set([own, ...MAY_IMPORT[own]])
  const reach = path.resolve(path.dirname(policy), '../proxy/balancer')
  expect(own).toBe('policies')
  expect(allowed.has(roomOf(reach))).toBe(false)
  expect(allowed.has(roomOf(path.resolve(path.dirname(policy), '../common/errors')))).toBe(true)
})

test('the room check catches the proxy reaching into the front, and a room reaching up to the balancer', () => {
  const request = path.join(SRC, 'proxy', 'x.js')
  const allowed = new Set(['proxy', ...MAY_IMPORT.proxy])
  expect(allowed.has(roomOf(path.resolve(path.dirname(request), '../front/front-server')))).toBe(false)
  expect(allowed.has(roomOf(path.resolve(path.dirname(request), '../balancer')))).toBe(false)
  expect(new Set(['run', ...MAY_IMPORT.run]).has(roomOf(path.join(SRC, 'balancer.js')))).toBe(true)
})
