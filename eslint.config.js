'use strict'

const neostandard = require('neostandard')
const globals = require('globals')

module.exports = [
  ...neostandard({ ignores: ['bench/results/**', 'coverage/**', 'public/**'] }),
  { files: ['test/**/*.js'], languageOptions: { globals: globals.jest } },
  { files: ['src/observe/dashboard/**/*.js'], languageOptions: { globals: globals.browser } }
]
