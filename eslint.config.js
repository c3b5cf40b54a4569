'use strict'

const neostandard = require('neostandard')
const globals = require('globals')

module.exports = [
  ...neostandard({ ignores: ['bench/results/**', 'coverage/**', 'public/**', 'src/observe/dashboard/uplot/**'] }),
  { files: ['test/**/*.js'], languageOptions: { globals: globals.jest } },
  { files: ['src/observe/dashboard/**/*.js'], languageOptions: { globals: globals.browser } },
  // no source line over 120 characters (test/ is free; the vendored uPlot and bench/results/ are ignored above)
  {
    files: ['{src,bench,servers,bin,examples}/**/*.{js,mjs,cjs}'],
    rules: { '@stylistic/max-len': ['error', { code: 120, ignoreUrls: true, ignoreRegExpLiterals: true }] }
  }
]
