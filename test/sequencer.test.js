'use strict'

// test/sequencer.js: a run without jest's timings (a fresh clone) starts the longest suites first.

const fs = require('node:fs')
const path = require('node:path')
const Sequencer = require('./sequencer')
const SECONDS = require('./suite-seconds.json')

const suites = fs.readdirSync(__dirname).filter((f) => f.endsWith('.test.js'))
/** A test as jest hands it to the sequencer, in a context without a cache (as on a fresh clone). */
const untimed = (file) => ({ path: path.join(__dirname, file), context: { config: { cache: false }, hasteFS: { getSize: () => 1 } } })

test('every suite named in test/suite-seconds.json exists', () => {
  expect(Object.keys(SECONDS).filter((name) => !suites.includes(`${name}.test.js`))).toEqual([])
})

test('without timings the suites run longest first by the cold run\'s seconds, unlisted ones (1 s) last', () => {
  const order = new Sequencer({}).sort(suites.map(untimed)).map((test) => path.basename(test.path, '.test.js'))
  const seconds = order.map((name) => SECONDS[name] ?? 1)
  expect(seconds).toEqual([...seconds].sort((a, b) => b - a))
  expect(order[0]).toBe(Object.entries(SECONDS).sort((a, b) => b[1] - a[1])[0][0])
  expect(order.indexOf('lint')).toBeLessThan(order.indexOf('readme-length')) // by size, lint ran last
})
