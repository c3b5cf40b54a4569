'use strict'

const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')

/**
 * The routing key of a request: what the keyed policies (wasp, chash-bounded) route by, and the
 * heat map's rows. Chosen by the `routingKey` option, as nginx's `hash <key> consistent`, HAProxy's
 * `balance uri | hdr(<name>) | url_param(<name>)` and istio's `consistentHash`:
 *
 * - `path` (default): the path without the query string (`/a/b?x=1` → `/a/b`)
 * - `url`: the whole request target, query included (alias `path+query`; nginx `$request_uri`)
 * - `host`: the Host header, lower-case, without its port (nginx `$host`)
 * - `header:<name>`: that request header's value (repeated: node:http's joined value)
 * - `cookie:<name>`: that cookie's value (nginx `$cookie_<name>`, istio `httpCookie`)
 * - `param:<name>`: that query parameter's value, as sent (HAProxy `url_param`)
 *
 * A request without the header, cookie, parameter or Host falls back to its path, so that it still
 * has a key (wasp needs one); ip-hash keys on the client address whatever this says.
 */

/** The kinds that take a name after a colon. */
const NAMED = new Set(['header', 'cookie', 'param'])
/** A header, cookie or parameter name: an RFC 9110 token. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * Read a `routingKey` option.
 * @param {unknown} spec e.g. 'path', 'url', 'host', 'header:x-user', 'cookie:session', 'param:id'
 * @returns {{ kind: 'path' | 'url' | 'host' | 'header' | 'cookie' | 'param', name?: string }}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function parseRoutingKey (spec) {
  const bad = (why) => new ERR_POLISTES_BAD_OPTION(`routingKey ${why}; expected path, url, host, header:<name>, ` +
    `cookie:<name> or param:<name>, got ${JSON.stringify(spec)}`)
  if (typeof spec !== 'string') throw bad('must be a string')
  if (spec === 'path' || spec === 'url' || spec === 'host') return { kind: spec }
  if (spec === 'path+query') return { kind: 'url' }
  const colon = spec.indexOf(':')
  const kind = colon === -1 ? spec : spec.slice(0, colon)
  if (!NAMED.has(kind)) throw bad('is not known')
  const name = spec.slice(colon + 1)
  if (colon === -1 || !TOKEN.test(name)) throw bad(`needs a name after "${kind}:"`)
  return { kind, name: kind === 'header' ? name.toLowerCase() : name }
}

/**
 * A function from a request to its routing key, for a `routingKey` option.
 * @param {string} spec see {@link parseRoutingKey}
 * @returns {(req: { url: string, headers: Record<string, string | string[] | undefined> }) => string}
 */
function compileRoutingKey (spec) {
  const { kind, name } = parseRoutingKey(spec)
  switch (kind) {
    case 'path': return (req) => pathOf(req.url)
    case 'url': return (req) => req.url
    case 'host': return (req) => hostOf(req.headers.host) ?? pathOf(req.url)
    case 'header': return (req) => {
      const v = req.headers[name]
      const value = Array.isArray(v) ? v.join(', ') : v
      return value === undefined || value === '' ? pathOf(req.url) : value
    }
    case 'cookie': return (req) => cookieValue(req.headers.cookie, name) ?? pathOf(req.url)
    default: return (req) => queryValue(req.url, name) ?? pathOf(req.url)
  }
}

/**
 * The path of a request target, without its query string.
 * @param {string} url
 * @returns {string}
 */
function pathOf (url) {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/**
 * A Host header's host, lower-case, without the port.
 * @param {string | undefined} host
 * @returns {string | undefined} undefined without a Host
 */
function hostOf (host) {
  if (host === undefined || host === '') return undefined
  const end = host[0] === '[' ? host.indexOf(']') + 1 : host.indexOf(':')
  return (end > 0 ? host.slice(0, end) : host).toLowerCase()
}

/**
 * The value of cookie `name` in a Cookie header (the first one of that name), as sent.
 * @param {string | string[] | undefined} header
 * @param {string} name
 * @returns {string | undefined} undefined when there is no such cookie, or it is empty
 */
function cookieValue (header, name) {
  if (header === undefined) return undefined
  const text = Array.isArray(header) ? header.join('; ') : header
  for (const pair of text.split(';')) {
    const eq = pair.indexOf('=')
    if (eq === -1 || pair.slice(0, eq).trim() !== name) continue
    let value = pair.slice(eq + 1).trim()
    if (value.length >= 2 && value[0] === '"' && value[value.length - 1] === '"') value = value.slice(1, -1)
    return value === '' ? undefined : value
  }
  return undefined
}

/**
 * The value of query parameter `name` in a request target (the first one), as sent (not decoded).
 * @param {string} url
 * @param {string} name
 * @returns {string | undefined} undefined when absent or empty
 */
function queryValue (url, name) {
  const q = url.indexOf('?')
  if (q === -1) return undefined
  for (const pair of url.slice(q + 1).split('&')) {
    const eq = pair.indexOf('=')
    if ((eq === -1 ? pair : pair.slice(0, eq)) !== name) continue
    const value = eq === -1 ? '' : pair.slice(eq + 1)
    return value === '' ? undefined : value
  }
  return undefined
}

module.exports = { parseRoutingKey, compileRoutingKey, pathOf, hostOf, cookieValue, queryValue }
