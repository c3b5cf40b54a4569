'use strict'

/**
 * Open-loop load: requests at fixed intended send times, N per second spread evenly over the
 * connections (connection i sends requests i, i + C, i + 2C, ... of the global schedule, one at
 * a time on its keep-alive connection, like wrk2). The latency of a request is measured from its
 * intended send time, not from when it was actually sent: when a response is late, the requests
 * scheduled behind it on the same connection wait, and their wait counts (no coordinated
 * omission). A closed loop at saturation measures queueing; this measures routing at a rate.
 *
 * The generator reports its own lag: how late it sent a request that nothing held back (timer
 * and event-loop delay), so a reader can see that it kept up.
 *
 * Without a rate the same lanes run a closed loop: each connection sends its next request as soon
 * as the previous one is answered (intended = sent, no lag), for a time or, as ApacheBench's `-n`,
 * until a number of requests has been sent (`requests`). Either way the connections can leave
 * from many loopback source addresses (`localAddresses`), so a balancer sees many clients: on
 * Linux every 127.x.y.z is a local address (docs/experiments.md, D: ip-hash needs them).
 */

const { Client } = require('undici')

/**
 * The intended send time of request k of connection i, in ms after the start. With a ramp the
 * offered rate rises linearly from 0 to `rate` over the first `rampMs` (request j of the global
 * schedule at sqrt(2 × rampMs × j / rate)), then holds it: every request after the ramp is rampMs / 2
 * later than without one, and the rate from rampMs on is `rate` exactly.
 * @param {number} i connection index, 0..connections-1
 * @param {number} k the connection's k-th request, from 0
 * @param {number} rate total requests per second
 * @param {number} connections
 * @param {number} [rampMs=0]
 * @returns {number}
 */
function intendedTime (i, k, rate, connections, rampMs = 0) {
  const j = i + k * connections
  const perMs = rate / 1000
  if (rampMs > 0 && j < perMs * rampMs / 2) return Math.sqrt(2 * rampMs * j / perMs)
  return j / perMs + rampMs / 2
}

/**
 * `count` distinct loopback source addresses, 127.0.1.1 .. 127.0.1.250, 127.0.2.1, ... (Linux
 * routes all of 127.0.0.0/8 to the loopback interface; other systems may only have 127.0.0.1).
 * @param {number} count 1 .. 250 * 254
 * @returns {string[]}
 */
function loopbackSources (count) {
  if (!(Number.isInteger(count) && count >= 1 && count <= 250 * 254)) {
    throw new Error(`source address count must be an integer in [1, ${250 * 254}], got ${count}`)
  }
  return Array.from({ length: count }, (_, i) => `127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`)
}

/**
 * @typedef {object} OpenLoopResult one completed request
 * @property {number} connection index of its connection
 * @property {number} intended intended send time, ms after the start
 * @property {number} sent actual send time, ms after the start
 * @property {number} done time the whole body had arrived, ms after the start
 * @property {number} latency done - intended, ms
 * @property {number} service done - sent, ms (what a closed-loop client would report)
 * @property {number} lag how late the generator itself sent it (sent - max(intended, previous done)), ms
 * @property {number} status
 * @property {number} bytes
 * @property {string} path
 * @property {string | undefined} server X-Server response header
 * @property {string | undefined} cache X-Cache response header
 */

/**
 * Run the open loop.
 * @param {object} params
 * @param {string} params.url origin of the server, e.g. "http://127.0.0.1:8080"
 * @param {number} [params.rate] total requests per second (> 0); absent: closed loop
 * @param {number} params.connections
 * @param {number} params.durationMs requests are scheduled in [0, durationMs) (Infinity: until
 *   `requests` have been sent)
 * @param {number} [params.requests] closed loop only: stop sending once this many requests sent
 *   at or after `countFromMs` have gone out (the loop ends when they are all answered)
 * @param {number} [params.countFromMs=0] where the count of `requests` starts (a learning phase before it)
 * @param {() => string} params.nextPath the path of the next request
 * @param {(r: OpenLoopResult) => void} [params.onResponse]
 * @param {(e: { intended: number, timeout: boolean, error: Error }) => void} [params.onError]
 * @param {number} [params.timeoutMs] per request, from its actual send (counted as a timeout)
 * @param {string[]} [params.localAddresses] source addresses, connection i leaving from
 *   localAddresses[i % length] (default: the system's choice)
 * @param {number} [params.drainMs] after durationMs, how long late requests may still be sent and
 *   answered; requests still unsent then are counted as `unsent`
 * @param {number} [params.rampMs=0] open loop only: the offered rate rises linearly from 0 to `rate`
 *   over the first rampMs (`intendedTime`), so that a fleet started cold is not flooded at full rate
 * @returns {{ done: Promise<{ scheduled: number, completed: number, errors: number, timeouts: number, unsent: number,
 *   elapsedMs: number }>, stop: () => void, startedAt: number }}
 */
function runOpenLoop ({
  url,
  rate,
  connections,
  durationMs,
  requests,
  countFromMs = 0,
  nextPath,
  onResponse = () => {},
  onError = () => {},
  timeoutMs = 10000,
  drainMs = 10000,
  rampMs = 0,
  localAddresses = []
}) {
  const closed = rate === undefined
  if (!closed && !(rate > 0)) throw new Error('rate must be > 0')
  if (!(rampMs >= 0) || (closed && rampMs > 0)) throw new Error('rampMs must be >= 0, open loop only')
  if (requests !== undefined && !(closed && Number.isInteger(requests) && requests > 0)) {
    throw new Error('requests must be a positive integer, closed loop only')
  }
  if (!(Number.isInteger(connections) && connections > 0)) throw new Error('connections must be a positive integer')
  const origin = new URL(url).origin
  const t0 = performance.now()
  const now = () => performance.now() - t0
  const deadline = durationMs + drainMs
  const counts = { scheduled: 0, completed: 0, errors: 0, timeouts: 0, unsent: 0 }
  let counted = 0 // requests sent at or after countFromMs
  let stopped = false
  const timers = new Set()
  const wakers = new Set()
  const sleep = (ms) => new Promise((resolve) => {
    const waker = () => { clearTimeout(timer); timers.delete(timer); wakers.delete(waker); resolve() }
    const timer = setTimeout(waker, ms)
    timers.add(timer)
    wakers.add(waker)
  })

  const clients = []
  async function lane (i) {
    const localAddress = localAddresses.length > 0 ? localAddresses[i % localAddresses.length] : undefined
    const client = new Client(origin, {
      pipelining: 1,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      keepAliveTimeout: 30000,
      ...(localAddress ? { localAddress } : {})
    })
    clients.push(client)
    let previousDone = 0
    for (let k = 0; ; k++) {
      if (closed && stopped) break // nothing scheduled to count as unsent
      const intended = closed ? now() : intendedTime(i, k, rate, connections, rampMs)
      if (intended >= durationMs) break
      if (requests !== undefined && intended >= countFromMs) {
        if (counted >= requests) break
        counted++
      }
      counts.scheduled++
      if (stopped || now() >= deadline) { counts.unsent++; continue }
      // timers run on the event loop's millisecond clock and can fire up to a millisecond before the
      // intended time on performance.now(): sleep again until it is really due (latency >= service)
      let wait = intended - now()
      while (wait > 0) {
        await sleep(wait)
        wait = stopped ? 0 : intended - now()
      }
      if (stopped) { counts.unsent++; continue }
      const sent = now()
      const lag = Math.max(0, sent - Math.max(intended, previousDone))
      const path = nextPath()
      try {
        const res = await client.request({ path, method: 'GET' })
        let bytes = 0
        for await (const chunk of res.body) bytes += chunk.length
        const done = now()
        previousDone = done
        counts.completed++
        const server = res.headers['x-server']
        const cache = res.headers['x-cache']
        onResponse({
          connection: i,
          intended,
          sent,
          done,
          latency: done - intended,
          service: done - sent,
          lag,
          status: res.statusCode,
          bytes,
          path,
          server,
          cache
        })
      } catch (error) {
        previousDone = now()
        const timeout = /timeout/i.test(error.code || '') || /timeout/i.test(error.message)
        if (timeout) counts.timeouts++
        else counts.errors++
        onError({ intended, timeout, error })
      }
    }
  }

  const lanes = []
  for (let i = 0; i < connections; i++) lanes.push(lane(i))
  const done = Promise.all(lanes).then(async () => {
    const elapsedMs = now()
    await Promise.all(clients.map((c) => c.close().catch(() => {})))
    return { ...counts, elapsedMs }
  })
  const stop = () => {
    stopped = true
    for (const wake of [...wakers]) wake()
    for (const c of clients) c.destroy().catch(() => {})
  }
  return { done, stop, startedAt: t0 }
}

module.exports = { runOpenLoop, intendedTime, loopbackSources }
