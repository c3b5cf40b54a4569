'use strict'

/**
 * Child process holding the balancer alone, so its CPU time (`process.cpuUsage()`) is the
 * balancer's and nothing else competes in its event loop. Run with `node --cpu-prof` to profile.
 *
 * Requests: `start { backends, algo, policyOptions, keepAlive, retryOn, host, accessLogFile? }` -> `{ url, port }`
 * (with `accessLogFile`, one access-log line per request goes there, as `--access-log-file` does);
 * `cpu` -> `process.cpuUsage()` in microseconds; `stats` -> `lb.stats()`. `close` stops it and exits
 * (normally, so that --cpu-prof writes its profile).
 */

const { serve } = require('./child')

let lb
let accessLog = null

async function start ({ backends, algo, policyOptions = {}, keepAlive = true, retryOn = [], host = '127.0.0.1', accessLogFile }) {
  const { startBalancer } = require('../src')
  if (accessLogFile) accessLog = require('../src/access-log').createAccessLog({ file: accessLogFile })
  lb = await startBalancer({ backends, algo, policyOptions, port: 0, host, keepAlive, retryOn, accessLog })
  return { url: lb.url, port: lb.port }
}

serve({
  start,
  stats: () => lb.stats()
}, async () => {
  if (lb) await lb.close()
  if (accessLog) await accessLog.close()
})
