'use strict'

// polistes/undici in a few lines: the embedded fleet's backends (node servers/fleet.js, or any
// http servers that answer X-Cache), a PolicyDispatcher with wasp, and undici's request() through it.
// Run: node examples/undici-dispatcher.js
// prints: last 1000 requests: … hits, … misses; wasp holds 25 keys
const { request } = require('undici')
const { PolicyDispatcher } = require('polistes/undici')
const { startFleet } = require('polistes/fleet')

async function main () {
  const fleet = await startFleet({ count: 7, cachePages: 4, missMs: 2, basePort: 0 })
  const dispatcher = new PolicyDispatcher(fleet.backends.map((b) => b.url))
  const hits = { HIT: 0, MISS: 0 }
  let sent = 0
  async function client () { // 16 of them, each asking for random pages one after another
    while (sent < 3000) {
      const i = sent++
      const res = await request(`http://site.example/page${1 + Math.floor(Math.random() * 25)}.html`, { dispatcher })
      await res.body.dump()
      if (i >= 2000) hits[res.headers['x-cache']]++
    }
  }
  await Promise.all(Array.from({ length: 16 }, client))
  const keys = dispatcher.policy.snapshot().keys
  console.log(`last 1000 requests: ${hits.HIT} hits, ${hits.MISS} misses; wasp holds ${keys} keys`)
  await dispatcher.close()
  await fleet.close()
}

main()
