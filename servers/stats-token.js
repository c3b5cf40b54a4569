'use strict'

/**
 * The stats token: a secret that a backend given one asks of every `GET /_stats`, as the query
 * parameter `token` (`/_stats?token=<token>`, with `&keys=1` for the per-page counts). Without it
 * (or with another one) `/_stats` is answered 404, like any page that does not exist.
 *
 * Why: a balancer forwards any path to its backends, `/_stats` included, so a fleet behind a
 * public port would show its counters (and, with `keys=1`, every page path it counted) to anyone.
 * The embedded fleet of `npm start` draws a random token at start (bin/polistes.js) and hands the
 * balancer its health-check path with it (servers/fleet.js `statsPath`); nobody else knows it.
 * A token in a path is only ever sent to the backends, on loopback, by the balancer's own health
 * checker, which logs no paths. A fleet started without one answers `/_stats` to anyone, as before
 * (the bench and the tests, whose fleets are not behind a public port).
 */

const crypto = require('node:crypto')

/** Environment variable that carries the token to a backend in a child process (never argv, which `ps` shows). */
const STATS_TOKEN_ENV = 'POLISTES_STATS_TOKEN'

/** A token as a URL query value needs no encoding: 16 to 256 letters, digits, "_" or "-". */
const TOKEN_SHAPE = /^[\w-]{16,256}$/

/** @returns {string} a fresh random token (128 bits, hex) */
function newStatsToken () {
  return crypto.randomBytes(16).toString('hex')
}

/**
 * @param {unknown} token
 * @returns {boolean} whether `token` may be used as a stats token
 */
function isStatsToken (token) {
  return typeof token === 'string' && TOKEN_SHAPE.test(token)
}

/**
 * Whether a request target may read `/_stats`: always when there is no token, else when its
 * query carries `token=<token>` (compared in constant time).
 * @param {string} rawUrl the request target, e.g. "/_stats?token=…&keys=1"
 * @param {string | null} token
 * @returns {boolean}
 */
function statsAllowed (rawUrl, token) {
  if (token === null) return true
  const q = rawUrl.indexOf('?')
  if (q === -1) return false
  const given = new URLSearchParams(rawUrl.slice(q + 1)).get('token')
  if (given === null) return false
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  return a.length === b.length && crypto.timingSafeEqual(a, b)
}

/**
 * The path that reads a backend's `/_stats` with a token.
 * @param {string | null} token
 * @param {{ keys?: boolean }} [options] `keys`: with the per-page counts
 * @returns {string} e.g. "/_stats?token=…"
 */
function statsPath (token, { keys = false } = {}) {
  const query = [token !== null && `token=${token}`, keys && 'keys=1'].filter(Boolean).join('&')
  return query ? `/_stats?${query}` : '/_stats'
}

module.exports = { STATS_TOKEN_ENV, newStatsToken, isStatsToken, statsAllowed, statsPath }
