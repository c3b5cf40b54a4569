'use strict'

const { createHash } = require('node:crypto')
const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')
const { cookieValue } = require('./routing-key')

/**
 * Cookie stickiness, as HAProxy's `cookie <name> insert indirect` and nginx Plus's `sticky cookie`:
 * the first response to a client carries a cookie that names its upstream by an opaque token (a
 * hash of the upstream's id, never its address); a later request that brings the cookie back goes
 * to that upstream, bypassing the policy, as long as it can serve (not down by its checks, not
 * ejected, not in maintenance; a drained upstream still takes its sticky clients). Otherwise the
 * policy picks, and the response carries a new cookie. A client whose cookie already names the
 * upstream that answered gets no new one (`indirect`). The cookie is passed on to the upstream.
 */

/** The keys of the `stickyCookie` option, with their defaults. */
const STICKY_DEFAULTS = Object.freeze({
  name: 'polistes_upstream',
  path: '/',
  domain: null,
  maxAgeS: null,
  secure: false,
  httpOnly: true,
  sameSite: 'Lax'
})
/** An RFC 6265 cookie name (an RFC 9110 token). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const SAME_SITE = ['Strict', 'Lax', 'None']

/**
 * Read a `stickyCookie` option: null (off), a cookie name, or an object of STICKY_DEFAULTS' keys.
 * @param {unknown} value
 * @returns {null | { name: string, path: string, domain: string | null, maxAgeS: number | null, secure: boolean,
 * httpOnly: boolean, sameSite: 'Strict' | 'Lax' | 'None' }}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function parseStickyCookie (value) {
  if (value === null || value === undefined || value === false) return null
  const bad = (why) => new ERR_POLISTES_BAD_OPTION(`stickyCookie ${why}`)
  const given = typeof value === 'string' ? { name: value } : value
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    throw bad(`must be null, a cookie name or an object such as { "name": "srv" }, got ${JSON.stringify(value)}`)
  }
  for (const key of Object.keys(given)) {
    if (!Object.hasOwn(STICKY_DEFAULTS, key)) {
      throw bad(`: unknown key ${JSON.stringify(key)}; known keys: ${Object.keys(STICKY_DEFAULTS).join(', ')}`)
    }
  }
  const o = { ...STICKY_DEFAULTS, ...given }
  if (typeof o.name !== 'string' || !TOKEN.test(o.name)) {
    throw bad(`name must be a cookie name (letters, digits, - _ . and the like), got ${JSON.stringify(o.name)}`)
  }
  if (typeof o.path !== 'string' || !/^\/[\x21-\x3a\x3c-\x7e]*$/.test(o.path)) {
    throw bad(`path must be a path starting with "/" (no spaces or ";"), got ${JSON.stringify(o.path)}`)
  }
  if (o.domain !== null && (typeof o.domain !== 'string' || !/^\.?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/.test(o.domain))) {
    throw bad(`domain must be a host name or null, got ${JSON.stringify(o.domain)}`)
  }
  if (o.maxAgeS !== null && !(Number.isInteger(o.maxAgeS) && o.maxAgeS > 0)) {
    throw bad('maxAgeS must be a positive integer of seconds or null (a session cookie), got ' +
      `${JSON.stringify(o.maxAgeS)}`)
  }
  for (const key of ['secure', 'httpOnly']) {
    if (typeof o[key] !== 'boolean') {
      throw bad(`${key} must be true or false, got ${JSON.stringify(o[key])}`)
    }
  }
  const sameSite = typeof o.sameSite === 'string'
    ? SAME_SITE.find((s) => s.toLowerCase() === o.sameSite.toLowerCase())
    : undefined
  if (sameSite === undefined) {
    throw bad(`sameSite must be one of ${SAME_SITE.join(', ')}, got ${JSON.stringify(o.sameSite)}`)
  }
  if (sameSite === 'None' && !o.secure) {
    throw bad('sameSite None needs secure: true (browsers drop such a cookie otherwise)')
  }
  return { ...o, sameSite }
}

/**
 * The opaque token that names an upstream in the cookie: the same in every worker and after a
 * restart, for as long as the upstream keeps its id.
 * @param {string} id the upstream's id
 * @returns {string} 16 base64url characters
 */
function stickyToken (id) {
  return createHash('sha256').update('polistes-sticky\0' + id).digest('base64url').slice(0, 16)
}

/**
 * The Set-Cookie value that names the upstream with token `token`.
 * @param {NonNullable<ReturnType<typeof parseStickyCookie>>} o
 * @param {string} token
 * @returns {string}
 */
function setCookieValue (o, token) {
  let out = `${o.name}=${token}; Path=${o.path}`
  if (o.domain !== null) out += `; Domain=${o.domain}`
  if (o.maxAgeS !== null) out += `; Max-Age=${o.maxAgeS}`
  if (o.secure) out += '; Secure'
  if (o.httpOnly) out += '; HttpOnly'
  return out + `; SameSite=${o.sameSite}`
}

/**
 * The sticky cookie of one balancer.
 * @param {unknown} option the `stickyCookie` option
 * @returns {null | { name: string, tokenOf: (id: string) => string, requested: (headers: object) => string | undefined,
 *   header: (id: string) => string }} `requested`: the token a request's cookie holds; `header`: the Set-Cookie value
 *   for an upstream
 */
function createSticky (option) {
  const o = parseStickyCookie(option)
  if (o === null) return null
  const tokens = new Map()
  const tokenOf = (id) => {
    let token = tokens.get(id)
    if (token === undefined) {
      if (tokens.size > 10000) tokens.clear() // ids come and go with reloads: bounded
      token = stickyToken(id)
      tokens.set(id, token)
    }
    return token
  }
  return {
    name: o.name,
    tokenOf,
    requested: (headers) => cookieValue(headers.cookie, o.name),
    header: (id) => setCookieValue(o, tokenOf(id))
  }
}

/**
 * Make `res` add `Set-Cookie: <state.setCookie>` to its head when `state.setCookie` is set by then
 * (an upstream answered), whichever engine writes the head and however: node:http's writeHead with
 * a raw array, an object or nothing (headers set one by one, http-proxy), or the fast front's
 * writeRelayedHead. The upstream's own Set-Cookie headers are kept.
 * @param {object} res node:http's ServerResponse or the fast front's response
 * @param {{ setCookie: string | null }} state
 */
function insertCookieOnHead (res, state) {
  const writeHead = res.writeHead
  res.writeHead = function (statusCode, message, headers) {
    const cookie = state.setCookie
    if (cookie === null) return writeHead.apply(this, arguments)
    state.setCookie = null
    if (typeof message !== 'string') {
      headers = message
      message = undefined
    }
    if (Array.isArray(headers)) {
      headers = [...headers, 'Set-Cookie', cookie]
    } else if (headers) {
      headers = { ...headers }
      const name = Object.keys(headers).find((k) => k.toLowerCase() === 'set-cookie')
      if (name === undefined) headers['set-cookie'] = cookie
      else headers[name] = [].concat(headers[name], cookie)
    } else if (typeof this.appendHeader === 'function') {
      this.appendHeader('set-cookie', cookie)
    } else {
      headers = ['Set-Cookie', cookie]
    }
    return message === undefined
      ? writeHead.call(this, statusCode, headers)
      : writeHead.call(this, statusCode, message, headers)
  }
  const relayed = res.writeRelayedHead
  if (relayed !== undefined) {
    res.writeRelayedHead = function (statusCode, message, raw, headers) {
      const cookie = state.setCookie
      if (cookie === null) return relayed.call(this, statusCode, message, raw, headers)
      state.setCookie = null
      return relayed.call(this, statusCode, message, [...raw, 'Set-Cookie', cookie], headers)
    }
  }
}

/**
 * The upstream a sticky cookie's token names, if it may take the request: not down by its checks,
 * not ejected, not in maintenance (a drained one keeps its sticky clients).
 * @param {import('../pool/pool').Pool} pool
 * @param {NonNullable<ReturnType<typeof createSticky>>} sticky
 * @param {string} token
 * @returns {import('../pool/pool').Upstream | null}
 */
function stickyUpstream (pool, sticky, token) {
  for (const u of pool.members.values()) {
    if (sticky.tokenOf(u.id) === token) return u.adminState !== 'maint' && pool.isHealthy(u) ? u : null
  }
  return null
}

module.exports = { parseStickyCookie, createSticky, stickyToken, setCookieValue, insertCookieOnHead, stickyUpstream }
