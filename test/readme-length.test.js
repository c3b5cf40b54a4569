'use strict'

const fs = require('node:fs')
const path = require('node:path')

// issue 19: the README stays a front page; the detail lives in docs/
test('README.md is at most 300 lines', () => {
  const lines = fs.readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8').split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  expect(lines.length).toBeLessThanOrEqual(300)
})
