'use strict'

const neostandard = require('neostandard')
const globals = require('globals')

module.exports = [
  ...neostandard({ ignores: ['bench/results/**', 'coverage/**', 'public/**', 'src/observe/dashboard/uplot/**'] }),
  { files: ['test/**/*.js'], languageOptions: { globals: globals.jest } },
  { files: ['src/observe/dashboard/**/*.js'], languageOptions: { globals: globals.browser } }
]
