'use strict'

const { ERR_POLISTES_BAD_URL, ERR_POLISTES_NO_BACKENDS } = require('../common/errors')
const { validateHealthCheck } = require('./health-check-options')

/**
 * A backend as the pool needs it. `healthCheck` (object form only) overrides the balancer's
 * `healthCheck` settings for this backend; `false` turns its active checks off. `backup`: used only
 * while no other (primary) backend is up. `weight` only when one was given (`w=`, `weight`): an unweighted
 * backend weighs 1 to the weighted policies, and wasp learns its weight from its queue (issue 28).
 * @typedef {{ id: string, url: string, weight?: number, region?: string, backup?: boolean, healthCheck?: object | false
 * }} BackendSpec
 */

/** The keys a backend given as an object may hold. */
const OBJECT_KEYS = ['url', 'id', 'weight', 'region', 'backup', 'healthCheck']

/**
 * Parse one backend, given as a URL string or an object.
 *
 * String form: `http://host:port` or `https://host:port` (proxied over TLS, certificate verified) with optional fragment tokens joined by `&`:
 * a bare word is the region (`#eu`), `region=eu`, `w=3` or `weight=3`, `id=name`, and the bare word
 * `backup` marks a backup server (a region named backup is `region=backup`).
 * Example: `http://127.0.0.1:9101#eu&w=3`, `http://127.0.0.1:9109#backup`. A string without a scheme (`127.0.0.1:9101`, the
 * seed config's shape) is read as `http://`.
 *
 * @param {string | { url: string, id?: string, weight?: number, region?: string, backup?: boolean, healthCheck?: object
 * | false }} input
 * @param {number} index position in the list, used for error messages
 * @returns {BackendSpec}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_URL when the URL or a fragment token is malformed
 */
function parseBackend (input, index = 0) {
  const where = `backend #${index + 1}`
  let raw = input
  let extra = {}
  if (input !== null && typeof input === 'object') {
    raw = input.url
    extra = input
    const unknown = Object.keys(input).filter((k) => !OBJECT_KEYS.includes(k))
    if (unknown.length > 0) {
      throw new ERR_POLISTES_BAD_URL(
        where,
        `unknown key ${JSON.stringify(unknown[0])}; known keys: ${OBJECT_KEYS.join(', ')}`
      )
    }
  }
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw new ERR_POLISTES_BAD_URL(where, `expected a URL such as http://127.0.0.1:9101, got ${JSON.stringify(raw)}`)
  }
  raw = raw.trim()
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`
  let url
  try {
    url = new URL(withScheme)
  } catch {
    throw new ERR_POLISTES_BAD_URL(where, `malformed URL "${raw}"`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ERR_POLISTES_BAD_URL(where, `only http:// and https:// backends are supported, got "${raw}"`)
  }
  // URL drops a port equal to the scheme's default (http://h:80, https://h:443): read it from the text
  const port = url.port || /^[a-z][a-z0-9+.-]*:\/\/(?:\[[^\]]*\]|[^/:#?]*):(\d+)/i.exec(withScheme)?.[1]
  if (!url.hostname || !port) {
    throw new ERR_POLISTES_BAD_URL(where, `"${raw}" needs an explicit host and port`)
  }
  if ((url.pathname && url.pathname !== '/') || url.search || url.username || url.password) {
    throw new ERR_POLISTES_BAD_URL(where, `"${raw}" must be an origin (no path, query or credentials)`)
  }
  // the URL keeps its port, even the scheme's default: the spec reads back as itself (parseBackend is
  // idempotent), so a list resolved once (config) can be given again (balancer, cluster worker, reload)
  const spec = { id: `${url.hostname}:${port}`, url: `${url.protocol}//${url.hostname}:${port}` }
  for (const token of url.hash.replace(/^#/, '').split('&').filter(Boolean)) {
    const [name, value, rest] = token.split('=')
    if (rest !== undefined) throw badToken(where, token)
    if (value === undefined && name === 'backup') spec.backup = true
    else if (value === undefined) spec.region = decodeURIComponent(name)
    else if (name === 'w' || name === 'weight') spec.weight = parseWeight(where, value)
    else if (name === 'region') spec.region = decodeURIComponent(value)
    else if (name === 'id') spec.id = decodeURIComponent(value)
    else throw badToken(where, token)
  }
  if (extra.id !== undefined) spec.id = String(extra.id)
  if (extra.region !== undefined) spec.region = String(extra.region)
  if (extra.weight !== undefined) spec.weight = parseWeight(where, extra.weight)
  if (extra.backup !== undefined) {
    if (typeof extra.backup !== 'boolean') {
      throw new ERR_POLISTES_BAD_URL(where, `backup must be true or false, got ${JSON.stringify(extra.backup)}`)
    }
    if (extra.backup) spec.backup = true
    else delete spec.backup
  }
  if (extra.healthCheck !== undefined) {
    if (extra.healthCheck !== false) validateHealthCheck(extra.healthCheck, `${where} healthCheck`)
    spec.healthCheck = extra.healthCheck === false ? false : { ...extra.healthCheck }
  }
  return spec
}

function parseWeight (where, value) {
  const weight = Number(value)
  if (!Number.isFinite(weight) || weight <= 0) {
    throw new ERR_POLISTES_BAD_URL(where, `weight must be a positive number, got "${value}"`)
  }
  return weight
}

function badToken (where, token) {
  return new ERR_POLISTES_BAD_URL(
    where,
    `unknown fragment token "${token}" (expected a region word, backup, region=, w=, weight= or id=)`
  )
}

/**
 * Parse a list of backends: an array, or one comma-separated string.
 * @param {string | Array<string | object>} list
 * @returns {BackendSpec[]}
 * @throws {import('../common/errors').PolistesError} on a malformed entry or duplicate ids
 */
function parseBackends (list) {
  const items = typeof list === 'string' ? list.split(',').filter((s) => s.trim() !== '') : list
  if (!Array.isArray(items) || items.length === 0) {
    throw new ERR_POLISTES_NO_BACKENDS()
  }
  const specs = items.map(parseBackend)
  const seen = new Set()
  for (const spec of specs) {
    if (seen.has(spec.id)) throw new ERR_POLISTES_BAD_URL('backends', `duplicate backend id "${spec.id}"`)
    seen.add(spec.id)
  }
  return specs
}

module.exports = { parseBackend, parseBackends }
