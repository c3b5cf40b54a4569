'use strict'

// The load of the adapter examples: 32 clients asking for random pages of the fleet's 25.
const { request, Agent } = require('undici')

/**
 * 1,500 requests through `base`; the hit rate of the last 500 (the pages have found their backends
 * within the first 1,000).
 * @param {string} base the proxy's URL
 * @returns {Promise<string>} a line to print
 */
async function hitRateThrough (base) {
  const dispatcher = new Agent({ connections: 32 })
  let sent = 0
  let hits = 0
  async function client () {
    while (sent < 1500) {
      const i = sent++
      const res = await request(`${base}/page${1 + Math.floor(Math.random() * 25)}.html`, { dispatcher })
      await res.body.dump()
      if (i >= 1000 && res.headers['x-cache'] === 'HIT') hits++
    }
  }
  await Promise.all(Array.from({ length: 32 }, client))
  await dispatcher.close()
  return `hit rate of the last 500 of 1,500 requests: ${(hits / 500).toFixed(3)}`
}

module.exports = { hitRateThrough }
