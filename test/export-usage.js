'use strict'

// Which names the modules of src/, bench/ and servers/ export that no other file imports: read from
// the source text (module.exports = { … } and the usual require/import forms), nothing is loaded.

const fs = require('node:fs')
const path = require('node:path')

const ROOT = path.join(__dirname, '..')
/** Folders whose modules may export only what another file imports. */
const EXPORTERS = ['src', 'bench', 'servers']
/** Folders (and files) whose imports count: the exporters themselves, the tests, the examples, the CLI. */
const IMPORTERS = ['src', 'bench', 'servers', 'test', 'examples', 'bin']
const pkg = require('../package.json')
/** The public entry points (package.json "exports" and "main"): their exports are the API, used or not. */
const ROOTS = new Set([pkg.main, ...Object.values(pkg.exports).map((e) => typeof e === 'string' ? e : e.default)]
  .filter((f) => /\.(c|m)?js$/.test(f))
  .map((f) => path.join(ROOT, f)))

function filesUnder (dir, pattern) {
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(file, pattern)
    return pattern.test(entry.name) ? [file] : []
  })
}

/** Split `text` at the commas outside brackets, strings and template literals. */
function splitTopLevel (text) {
  const parts = []
  let depth = 0
  let quote = ''
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quote) {
      if (c === '\\') i++
      else if (c === quote) quote = ''
    } else if (c === '"' || c === "'" || c === '`') quote = c
    else if ('([{'.includes(c)) depth++
    else if (')]}'.includes(c)) depth--
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i))
      start = i + 1
    }
  }
  parts.push(text.slice(start))
  return parts.map((p) => p.trim()).filter(Boolean)
}

/** The text between the brace at `open` and its match. */
function braced (source, open) {
  let depth = 0
  for (let i = open; i < source.length; i++) {
    if (source[i] === '{') depth++
    else if (source[i] === '}' && --depth === 0) return source.slice(open + 1, i)
  }
  throw new Error('unbalanced braces')
}

/**
 * The names of `module.exports = { ... }` (shorthand `a`, `a: expr`, `a (…) {}`), or null when the
 * module exports something else (a function, a class) or nothing.
 */
function exportedNames (source) {
  const m = /^module\.exports\s*=\s*\{/m.exec(source)
  if (!m) return null
  return splitTopLevel(braced(source, m.index + m[0].length - 1)).map((item) => {
    const name = /^(?:async\s+)?\*?\s*([A-Za-z_$][\w$]*)/.exec(item)
    if (!name || item.startsWith('...')) throw new Error(`cannot read export ${item}`)
    return name[1]
  })
}

/** The file a module specifier names from `dir` (relative paths and `polistes/...`), or null. */
function resolve (specifier, dir) {
  let base
  if (specifier.startsWith('.')) base = path.resolve(dir, specifier)
  else if (specifier === pkg.name || specifier.startsWith(`${pkg.name}/`)) {
    const entry = pkg.exports[`.${specifier.slice(pkg.name.length)}`]
    if (entry === undefined) return null
    base = path.join(ROOT, typeof entry === 'string' ? entry : entry.default)
  } else return null
  for (const candidate of [base, `${base}.js`, path.join(base, 'index.js')]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate
  }
  return null
}

/** Whether a `/` after the code `out`, whose last non-space character is `last`, starts a regex literal. */
function regexMayStart (last, out) {
  if (last === '' || '(,=:[!&|?{};+-*%<>~^'.includes(last)) return true
  return /\b(return|typeof|case|in|of|void|yield|await)\s*$/.test(out.slice(-12))
}

/**
 * `source` with its comments blanked (they name modules and properties in prose), and with the
 * text of its strings, template literals and regex literals blanked too when `blankStrings` is set
 * (a template's `${…}` is code and stays). A small scanner: quotes, templates, comments and regex literals.
 */
function stripped (source, blankStrings = false) {
  let out = ''
  let i = 0
  let last = '' // the last non-space character of code, to tell a regex literal from a division
  const braces = [] // per open template substitution, the brace depth of its code
  const text = (from, to) => blankStrings ? source.slice(from, to).replace(/[^\n]/g, ' ') : source.slice(from, to)
  /** From `i` inside a template literal's text: copy to its end or to a `${`, return the new index. */
  const template = (j) => {
    const from = j
    const substitution = (k) => source[k] === '$' && source[k + 1] === '{'
    while (j < source.length && source[j] !== '`' && !substitution(j)) j += source[j] === '\\' ? 2 : 1
    out += text(from, j)
    if (source[j] === '`') {
      out += '`'
      last = 'a'
      return j + 1
    }
    out += '${'
    braces.push(0)
    last = '{'
    return j + 2
  }
  while (i < source.length) {
    const c = source[i]
    const next = source[i + 1]
    if (c === '/' && next === '/') {
      while (i < source.length && source[i] !== '\n') i++
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2)
      const stop = end < 0 ? source.length : end + 2
      out += source.slice(i, stop).replace(/[^\n]/g, ' ')
      i = stop
    } else if (c === '`') {
      out += c
      i = template(i + 1)
    } else if (c === '}' && braces.length > 0 && braces[braces.length - 1] === 0) {
      braces.pop()
      out += c
      i = template(i + 1)
    } else if (c === "'" || c === '"' || (c === '/' && regexMayStart(last, out))) {
      let j = i + 1
      let inClass = false
      while (j < source.length && source[j] !== '\n') {
        if (source[j] === '\\') j++
        else if (c === '/' && source[j] === '[') inClass = true
        else if (c === '/' && source[j] === ']') inClass = false
        else if (source[j] === c && !inClass) break
        j++
      }
      const closed = j < source.length && source[j] === c
      out += c + text(i + 1, j) + (closed ? c : '')
      i = closed ? j + 1 : j // an unclosed one (a lone quote or slash the scanner misread) ends at the line
      last = 'a'
    } else {
      if (braces.length > 0 && c === '{') braces[braces.length - 1]++
      else if (braces.length > 0 && c === '}') braces[braces.length - 1]--
      out += c
      if (!/\s/.test(c)) last = /[\w$)\]]/.test(c) ? 'a' : c
      i++
    }
  }
  return out
}

const IDENT = '[A-Za-z_$][\\w$]*'
const SPEC = String.raw`\(\s*['"]([^'"]+)['"]\s*\)`

/** Names taken from a destructuring pattern `{ a, b: c, d = 1 }` (its keys). */
function destructured (pattern) {
  return splitTopLevel(pattern).map((item) => new RegExp(`^(${IDENT})`).exec(item.replace(/^\.\.\./, '')))
    .filter(Boolean).map((m) => m[1])
}

/**
 * What `file` takes from each module it imports: Map(resolved file -> Set of names), where the
 * name '*' means the whole export object escapes (passed on, spread, iterated): every name counts.
 */
function importsOf (file) {
  const raw = fs.readFileSync(file, 'utf8')
  const source = stripped(raw)
  const code = stripped(source, true)
  const dir = path.dirname(file)
  const uses = new Map()
  const use = (specifier, names) => {
    const target = resolve(specifier, dir)
    if (target === null || target === file) return
    if (!uses.has(target)) uses.set(target, new Set())
    for (const n of names) uses.get(target).add(n)
  }
  // const { a, b: c } = require('x'), = await import('x')
  const LOAD = String.raw`(?:require|await\s+import)\s*${SPEC}`
  for (const m of source.matchAll(new RegExp(String.raw`\{([^{}]*)\}\s*=\s*${LOAD}`, 'g'))) {
    use(m[2], destructured(m[1]))
  }
  // require('x').a, (await import('x')).a
  for (const m of source.matchAll(new RegExp(String.raw`(?:require|import)\s*${SPEC}\)?\s*\.\s*(${IDENT})`, 'g'))) {
    use(m[1], [m[2]])
  }
  // a JSDoc type `import('x').Name` (a class exported for the types of other files)
  for (const m of raw.matchAll(new RegExp(String.raw`\bimport\s*${SPEC}\s*\.\s*(${IDENT})`, 'g'))) {
    use(m[1], [m[2]])
  }
  // import { a, b as c } from 'x', export { a } from 'x', import X / * as X from 'x'
  for (const m of source.matchAll(/\b(?:import|export)\s+(?:type\s+)?([^'";]*?)\s+from\s+(['"])([^'"]+)\2/g)) {
    const clause = m[1]
    const names = []
    const braces = /\{([^}]*)\}/.exec(clause)
    const imported = (item) => item.replace(/^type\s+/, '').split(/\s+as\s+/)[0].trim()
    if (braces) names.push(...splitTopLevel(braces[1]).map(imported))
    const binding = new RegExp(`^(?:\\*\\s+as\\s+)?(${IDENT})`).exec(clause.trim())
    if (binding && binding[1] !== 'type') names.push(...bindingUses(code, binding[1]))
    use(m[3], names)
  }
  // const X = require('x'), then X.a (and X passed on whole: '*')
  for (const m of source.matchAll(new RegExp(String.raw`\b(?:const|let|var)\s+(${IDENT})\s*=\s*${LOAD}`, 'g'))) {
    use(m[2], bindingUses(code, m[1]))
  }
  // require('x') left bare (loaded for its effects, or its object handed on): every name counts
  const bare = String.raw`(^|[^.\w$=\s]\s*|[(,]\s*|return\s+)require\s*${SPEC}(?!\s*\.)`
  for (const m of source.matchAll(new RegExp(bare, 'gm'))) {
    use(m[2], ['*'])
  }
  return uses
}

/** The properties read from binding `name` in `source` ('*' when it is used otherwise). */
function bindingUses (source, name) {
  const names = new Set()
  const pattern = new RegExp(String.raw`(^|[^.\w$])${name.replace(/\$/g, '\\$')}(?![\w$])(\s*\??\.\s*(${IDENT}))?`, 'g')
  let declarations = 0
  for (const m of source.matchAll(pattern)) {
    if (m[3]) names.add(m[3])
    else {
      const after = source.slice(m.index + m[0].length, m.index + m[0].length + 40)
      const before = source.slice(Math.max(0, m.index - 40), m.index + m[1].length)
      if (/^\s*=\s*(require|await\s+import)\b/.test(after) || /^\s+from\b/.test(after)) declarations++
      else if (/[{,]\s*$/.test(before) && /^\s*:/.test(after)) continue // an object key of the same name
      else names.add('*')
    }
  }
  return declarations > 0 ? [...names] : ['*']
}

/** Every exported name of src/, bench/ and servers/ that no other file of `dirs` imports. */
function unusedExports (dirs = IMPORTERS) {
  const importers = dirs.flatMap((dir) => filesUnder(path.join(ROOT, dir), /\.(c|m)?(js|ts)$/))
  const used = new Map()
  for (const file of importers) {
    for (const [target, names] of importsOf(file)) {
      if (!used.has(target)) used.set(target, new Set())
      for (const n of names) used.get(target).add(n)
    }
  }
  const unused = []
  for (const file of EXPORTERS.flatMap((dir) => filesUnder(path.join(ROOT, dir), /\.(c|m)?js$/))) {
    if (ROOTS.has(file) || file.includes(`${path.sep}uplot${path.sep}`)) continue
    const names = exportedNames(fs.readFileSync(file, 'utf8'))
    if (names === null) continue
    const taken = used.get(file) || new Set()
    if (taken.has('*')) continue
    for (const name of names) if (!taken.has(name)) unused.push(`${path.relative(ROOT, file)}: ${name}`)
  }
  return unused
}

module.exports = { unusedExports, exportedNames, destructured, bindingUses, importsOf, stripped }
