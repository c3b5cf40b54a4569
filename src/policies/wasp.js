'use strict'
// Placeholder until the wasp issue lands: behaves as round-robin so the registry loads.
const { createRoundRobin } = require('./round-robin')
function createWasp (options = {}, deps = {}) {
  return { ...createRoundRobin(options, deps), name: 'wasp' }
}
module.exports = { createWasp }
