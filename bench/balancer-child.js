'use strict'

/**
 * Child process holding the balancer alone, so its CPU time (`process.cpuUsage()`) is the
 * balancer's and nothing else competes in its event loop. Run with `node --cpu-prof` to profile.
 *
 * Requests: `start { backends, algo, policyOptions, keepAlive, retryOn, host }` -> `{ url, port }`;
 * `cpu` -> `process.cpuUsage()` in microseconds; `stats` -> `lb.stats()`. `close` stops it and exits
 * (normally, so that --cpu-prof writes its profile).
 */

const { serve } = require('./child')

let lb

async function start ({ backends, algo, policyOptions = {}, keepAlive = true, retryOn = [], host = '127.0.0.1' }) {
  const { startBalancer } = require('../src')
  lb = await startBalancer({ backends, algo, policyOptions, port: 0, host, keepAlive, retryOn })
  return { url: lb.url, port: lb.port }
}

serve({
  start,
  stats: () => lb.stats()
}, async () => {
  if (lb) await lb.close()
})
