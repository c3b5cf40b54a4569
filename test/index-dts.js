'use strict'

const fs = require('node:fs')
const path = require('node:path')

/** The text of src/index.d.ts, which the tests hold to the option table, the counters and the engines. */
const DTS = fs.readFileSync(path.join(__dirname, '..', 'src', 'index.d.ts'), 'utf8')

/**
 * The top-level property names of an interface of index.d.ts (comments and nested object types skipped).
 * @param {string} name
 * @returns {string[]}
 */
function interfaceKeys (name) {
  const start = DTS.indexOf(`export interface ${name} {`)
  if (start === -1) throw new Error(`src/index.d.ts has no interface ${name}`)
  const body = DTS.slice(DTS.indexOf('{', start) + 1).replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '')
  const keys = []
  let depth = 0
  for (const line of body.split('\n')) {
    if (depth === 0 && /^\}/.test(line)) break
    const m = /^ {2}(\w+)\??\s*[:(]/.exec(line)
    if (depth === 0 && m) keys.push(m[1])
    for (const c of line.replace(/=>/g, '')) {
      if ('{[(<'.includes(c)) depth++
      if ('}])>'.includes(c)) depth--
    }
  }
  return keys
}

module.exports = { DTS, interfaceKeys }
