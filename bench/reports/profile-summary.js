#!/usr/bin/env node
'use strict'

/**
 * Summarize a V8 CPU profile (from `npm run bench -- --profile`, i.e. `node --cpu-prof` on the
 * balancer child): self time by function and by module, heaviest first.
 *
 *   node bench/reports/profile-summary.js bench/results/profiles/<file>.cpuprofile [--top 25]
 */

const fs = require('node:fs')
const path = require('node:path')

/** Native functions that make the system calls of socket I/O: their self time is mostly the kernel's. */
const IO_NATIVES = new Set([
  'writev', 'writeBuffer', 'writeLatin1String', 'writeUtf8String', 'writeAsciiString', 'writeUcs2String',
  'readStart', 'readStop', 'shutdown', 'close', 'connect'
])

/**
 * The group a function falls in, for a coarse breakdown of the busy time.
 * @param {string} functionName
 * @param {string} file its script, relative to the working directory when it is under it ('' for natives)
 * @returns {string}
 */
function groupOf (functionName, file) {
  if (!file) {
    if (functionName === '(idle)') return 'idle'
    if (functionName === '(garbage collector)') return 'garbage collector'
    if (functionName === '(program)') return 'unattributed native (program)'
    if (functionName.startsWith('RegExp: ')) return 'regular expressions'
    if (IO_NATIVES.has(functionName)) return 'socket I/O natives (system calls inside)'
    return 'other natives (V8 and Node builtins)'
  }
  if (file.startsWith('node:')) return 'Node.js JavaScript (streams, net, events, timers)'
  if (file.includes('node_modules/')) return 'dependencies'
  if (file.startsWith('src/policies/')) return 'polistes policy (src/policies)'
  if (file.startsWith('src/')) return 'polistes (src/, policies aside)'
  return 'other JavaScript (bench, tools)'
}

/**
 * @param {{ nodes: object[], samples: number[], timeDeltas: number[] }} profile
 * @returns {{ totalMs: number, busyMs: number, byFunction: Array<{ name: string, ms: number, share: number }>,
 *   byModule: Array<{ name: string, ms: number, share: number }>, byGroup: Array<{ name: string, ms: number, share:
 *   number }> }}
 *   shares of the total sampled time, except byGroup's: of the busy (not idle) time
 */
function summarizeProfile (profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map()
  let total = 0
  profile.samples.forEach((id, i) => {
    const dt = (profile.timeDeltas[i] || 0) / 1000
    total += dt
    self.set(id, (self.get(id) || 0) + dt)
  })
  const fn = new Map()
  const mod = new Map()
  const group = new Map()
  for (const [id, ms] of self) {
    const { callFrame } = byId.get(id)
    const file = callFrame.url ? callFrame.url.replace(/^file:\/\//, '') : ''
    const where = file ? `${path.relative(process.cwd(), file) || file}:${callFrame.lineNumber + 1}` : ''
    const name = `${callFrame.functionName || '(anonymous)'}${where ? ' ' + where : ''}`
    fn.set(name, (fn.get(name) || 0) + ms)
    const m = !file
      ? callFrame.functionName || '(native)'
      : /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1] ||
        (file.startsWith('node:') ? file.split('/')[0] : path.relative(process.cwd(), file))
    mod.set(m, (mod.get(m) || 0) + ms)
    const g = groupOf(
      callFrame.functionName,
      file && !file.startsWith('node:') ? path.relative(process.cwd(), file) : file
    )
    if (g !== 'idle') group.set(g, (group.get(g) || 0) + ms)
  }
  const sorted = (m, of = total) => [...m.entries()].sort((a, b) => b[1] - a[1]).map(
    ([name, ms]) => ({ name, ms, share: ms / of })
  )
  const busy = total - (mod.get('(idle)') || 0)
  return { totalMs: total, busyMs: busy, byFunction: sorted(fn), byModule: sorted(mod), byGroup: sorted(group, busy) }
}

if (require.main === module) {
  const args = process.argv.slice(2)
  const file = args.find((a) => !a.startsWith('--'))
  const topIndex = args.indexOf('--top')
  const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 25
  if (!file) {
    process.stderr.write('usage: node bench/reports/profile-summary.js <file.cpuprofile> [--top N]\n')
    process.exit(2)
  }
  const s = summarizeProfile(JSON.parse(fs.readFileSync(file, 'utf8')))
  const line = (r) => `${(r.share * 100).toFixed(1).padStart(5)} %  ${r.ms.toFixed(0).padStart(6)} ms  ${r.name}`
  console.log(`total sampled ${s.totalMs.toFixed(0)} ms, busy ${s.busyMs.toFixed(0)} ms\n\nby group (share ` +
    'of the busy time):')
  s.byGroup.forEach((r) => console.log(line(r)))
  console.log('\nby module (self time):')
  s.byModule.slice(0, top).forEach((r) => console.log(line(r)))
  console.log('\nby function (self time):')
  s.byFunction.slice(0, top).forEach((r) => console.log(line(r)))
}

module.exports = { summarizeProfile, groupOf }
