'use strict'

const http = require('node:http')
const https = require('node:https')
const net = require('node:net')
const { parseExpectStatus } = require('./health-check-options')
const { silentLogger } = require('../common/logger')

/**
 * Active health checks: per upstream, a GET of `path` every `intervalMs`, failed when it errors, takes
 * longer than `timeoutMs` or answers a status outside `expectStatus`. The results go to the pool,
 * which owns the state (HAProxy's rise/fall, see ./pool.js); this module only does the I/O.
 *
 * - One check in flight per upstream: the next one is scheduled `intervalMs` after the previous one
 *   ended, never on a fixed beat, so slow checks cannot pile up.
 * - Checks use no agent and send `Connection: close`: they never take or leave a socket in the
 *   proxy's keep-alive pool, and a check always measures a fresh connect, as HAProxy's do.
 * - Timers are unref'd and `stop()` cancels them and aborts the checks in flight.
 *
 * @typedef {{ path: string, intervalMs: number, timeoutMs: number, expectStatus: string | number, rise: number, fall:
 * number }} HealthCheckSettings
 */

/**
 * @param {import('./pool').Pool} pool
 * @param {{ logger?: import('pino').Logger, ca?: Buffer | null }} [options] `ca`: what https upstreams are
 *   verified against (the balancer's --upstream-ca; default Node's roots), as the engines do
 */
function createHealthChecker (pool, { logger = silentLogger(), ca = null } = {}) {
  /** @type {Map<string, { upstream: import('./pool').Upstream, settings: HealthCheckSettings, expect: (status: number)
   * => boolean, timer: NodeJS.Timeout | null, req: http.ClientRequest | null }>} */
  const watched = new Map()
  let stopped = false

  function schedule (entry, delay) {
    entry.timer = setTimeout(() => run(entry), delay)
    entry.timer.unref()
  }

  function run (entry) {
    entry.timer = null
    if (stopped || watched.get(entry.upstream.id) !== entry) return
    const { upstream, settings } = entry
    const t0 = performance.now()
    let settled = false
    const settle = (result) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      if (stopped || watched.get(upstream.id) !== entry) return
      const change = pool.reportCheck(upstream, { ...result, ms: Math.round((performance.now() - t0) * 100) / 100 })
      if (change === 'down') {
        logger.warn(
          { upstream: upstream.id, status: result.status, err: result.error },
          `upstream ${upstream.id} is down: ${settings.fall} failed health checks`
        )
      }
      if (change === 'up') {
        logger.info(
          { upstream: upstream.id },
          `upstream ${upstream.id} is up again: ${settings.rise} passed health checks`
        )
      }
    }
    const req = checkRequest(upstream.target, settings.path, ca, (res) => {
      const status = res.statusCode
      const ok = entry.expect(status)
      settle(ok ? { ok, status } : { ok, status, error: `status ${status}` })
      res.resume() // drain, so the socket closes cleanly
    })
    entry.req = req
    const deadline = setTimeout(() => {
      settle({ ok: false, error: `no answer within ${settings.timeoutMs} ms` })
      req.destroy()
    }, settings.timeoutMs)
    req.on('error', (err) => settle({ ok: false, error: err.code || err.message }))
    req.on('close', () => {
      entry.req = null
      settle({ ok: false, error: 'connection closed before a response' })
      if (!stopped && watched.get(upstream.id) === entry) schedule(entry, settings.intervalMs)
    })
    req.end()
  }

  function unwatch (id) {
    const entry = watched.get(id)
    if (entry === undefined) return
    watched.delete(id)
    if (entry.timer) clearTimeout(entry.timer)
    if (entry.req) entry.req.destroy()
  }

  return {
    /**
     * Bring the checks in line with the pool's members: `settingsFor(upstream)` gives each one's
     * settings, or null for no active checks. New members start checking at once; a member whose
     * settings changed starts over with them (its health state is kept); a member gone from the
     * pool, or whose checks were turned off, stops.
     * @param {(upstream: import('./pool').Upstream) => HealthCheckSettings | null} settingsFor
     */
    sync (settingsFor) {
      if (stopped) return
      const members = new Map(pool.all().map((u) => [u.id, u]))
      for (const id of [...watched.keys()]) {
        if (members.get(id) !== watched.get(id).upstream) unwatch(id)
      }
      for (const upstream of members.values()) {
        const settings = settingsFor(upstream)
        const entry = watched.get(upstream.id)
        if (settings === null) {
          if (entry) unwatch(upstream.id)
          pool.unwatch(upstream)
          continue
        }
        if (entry && sameSettings(entry.settings, settings)) continue
        if (entry) unwatch(upstream.id)
        pool.watch(upstream, settings)
        const fresh = { upstream, settings, expect: parseExpectStatus(settings.expectStatus), timer: null, req: null }
        watched.set(upstream.id, fresh)
        schedule(fresh, 0)
      }
    },

    /** @returns {number} upstreams being checked */
    get size () {
      return watched.size
    },

    /** Cancel every timer and abort the checks in flight. */
    stop () {
      stopped = true
      for (const id of [...watched.keys()]) unwatch(id)
    }
  }
}

/**
 * One health check's GET to `target`: https (verified, the URL's host name as SNI unless it is an
 * address) for an https upstream, the host of an IPv6 literal without its brackets, the scheme's port
 * when the URL names none.
 * @param {URL} target
 * @param {string} path
 * @param {Buffer | null} ca
 * @param {(res: http.IncomingMessage) => void} onResponse
 * @returns {http.ClientRequest}
 */
function checkRequest (target, path, ca, onResponse) {
  const secure = target.protocol === 'https:'
  const host = target.hostname.replace(/^\[|\]$/g, '')
  const options = {
    host,
    port: Number(target.port) || (secure ? 443 : 80),
    path,
    method: 'GET',
    agent: false,
    headers: { host: target.host, connection: 'close', 'user-agent': 'polistes-health-check' }
  }
  if (!secure) return http.request(options, onResponse)
  return https.request({ ...options, ca: ca || undefined, servername: net.isIP(host) ? undefined : host }, onResponse)
}

function sameSettings (a, b) {
  return a.path === b.path && a.intervalMs === b.intervalMs && a.timeoutMs === b.timeoutMs &&
    String(a.expectStatus) === String(b.expectStatus) && a.rise === b.rise && a.fall === b.fall
}

module.exports = { createHealthChecker }
