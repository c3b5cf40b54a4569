'use strict'

module.exports = require('neostandard')({
  ignores: ['bench/results/**', 'coverage/**', 'public/**']
})
