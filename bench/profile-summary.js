#!/usr/bin/env node
'use strict'

/**
 * Summarize a V8 CPU profile (from `npm run bench -- --profile`, i.e. `node --cpu-prof` on the
 * balancer child): self time by function and by module, heaviest first.
 *
 *   node bench/profile-summary.js bench/results/profiles/<file>.cpuprofile [--top 25]
 */

const fs = require('node:fs')
const path = require('node:path')

/**
 * @param {{ nodes: object[], samples: number[], timeDeltas: number[] }} profile
 * @returns {{ totalMs: number, byFunction: Array<{ name: string, ms: number, share: number }>, byModule: Array<{ name: string, ms: number, share: number }> }}
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
  for (const [id, ms] of self) {
    const { callFrame } = byId.get(id)
    const file = callFrame.url ? callFrame.url.replace(/^file:\/\//, '') : ''
    const where = file ? `${path.relative(process.cwd(), file) || file}:${callFrame.lineNumber + 1}` : ''
    const name = `${callFrame.functionName || '(anonymous)'}${where ? ' ' + where : ''}`
    fn.set(name, (fn.get(name) || 0) + ms)
    const m = !file
      ? callFrame.functionName || '(native)'
      : /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1] || (file.startsWith('node:') ? file.split('/')[0] : path.relative(process.cwd(), file))
    mod.set(m, (mod.get(m) || 0) + ms)
  }
  const sorted = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]).map(([name, ms]) => ({ name, ms, share: ms / total }))
  return { totalMs: total, byFunction: sorted(fn), byModule: sorted(mod) }
}

if (require.main === module) {
  const args = process.argv.slice(2)
  const file = args.find((a) => !a.startsWith('--'))
  const topIndex = args.indexOf('--top')
  const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 25
  if (!file) {
    process.stderr.write('usage: node bench/profile-summary.js <file.cpuprofile> [--top N]\n')
    process.exit(2)
  }
  const s = summarizeProfile(JSON.parse(fs.readFileSync(file, 'utf8')))
  const line = (r) => `${(r.share * 100).toFixed(1).padStart(5)} %  ${r.ms.toFixed(0).padStart(6)} ms  ${r.name}`
  console.log(`total sampled ${s.totalMs.toFixed(0)} ms\n\nby module (self time):`)
  s.byModule.slice(0, top).forEach((r) => console.log(line(r)))
  console.log('\nby function (self time):')
  s.byFunction.slice(0, top).forEach((r) => console.log(line(r)))
}

module.exports = { summarizeProfile }
