'use strict'

/**
 * `npm run bench:seeds --quick` end to end: every experiment A-E runs through real fleets,
 * balancers and load children, and the report has the originals, polistes' figures and a
 * comparison line for each.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { runSeeds, replaceSection, EXPERIMENTS, BEGIN, END } = require('../bench/runners/seeds')

jest.setTimeout(240000)

describe('bench:seeds', () => {
  test('replaceSection appends the marked section once, then replaces only what is between the markers', () => {
    const once = replaceSection('# Title\n\ntext\n', 'first')
    expect(once).toBe(`# Title\n\ntext\n\n${BEGIN}\nfirst\n${END}\n`)
    const twice = replaceSection(once + 'after\n', 'second')
    expect(twice).toBe(`# Title\n\ntext\n\n${BEGIN}\nsecond\n${END}\nafter\n`)
  })

  test('the quick variant runs A-E and writes JSON and a Markdown section with numbers for each', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-seeds-'))
    const doc = path.join(dir, 'experiments.md')
    fs.writeFileSync(doc, '# Earlier experiments\n\nkept as it is\n')
    try {
      const { report, json } = await runSeeds({ quick: true, resultsDir: dir, doc, stderr: { write: () => true } })
      expect(report.results.map((r) => r.id)).toEqual(['A', 'B', 'C', 'D', 'E'])
      for (const r of report.results) {
        expect(r.original.length).toBeGreaterThan(20)
        expect(r.docs.length).toBe(EXPERIMENTS.find((e) => e.id === r.id).parts.length)
        for (const d of r.docs) {
          const arms = Object.values(d.summary)
          expect(arms.length).toBeGreaterThanOrEqual(2)
          for (const s of arms) expect(s.rps).toBeGreaterThan(0)
        }
        expect(r.verdict).toMatch(/\d/)
      }
      expect(JSON.parse(fs.readFileSync(json, 'utf8')).results).toHaveLength(5)
      const md = fs.readFileSync(doc, 'utf8')
      expect(md.startsWith('# Earlier experiments\n\nkept as it is\n')).toBe(true)
      for (const id of ['A', 'B', 'C', 'D', 'E']) expect(md).toMatch(new RegExp(`### ${id}\\. [^\\n]+\\n\\n\\*\\*Original\\.\\*\\*[\\s\\S]+?\\| arm \\| req/s[\\s\\S]+?\\*\\*Comparison\\.\\*\\* `))
      expect(md).toMatch(/at commit [0-9a-f]{12}|at commit unknown/)
      expect(md).toContain(END)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
