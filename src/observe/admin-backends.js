'use strict'

/**
 * The runtime state of the backends on the admin surface, as HAProxy's runtime API
 * (`set server <backend>/<server> state ready|drain|maint`):
 *
 * - `GET  /_polistes/backends`              every backend: id, url, backup, adminState, health state
 * - `GET  /_polistes/backends/<id>/state`   one backend's
 * - `POST /_polistes/backends/<id>/state`   body `drain`, `disable` (or `maint`), `enable` (or
 *   `ready`), as a bare word or as JSON `{ "state": "drain" }`; answers the backend's record
 *
 * A change is accepted on the admin listener only (`adminPort`): on the public listener, where
 * anyone who can send a request could take the fleet down, it is a 403. A request with an `Origin`
 * header (sent by browsers, never by curl or scripts) is refused too, so that a web page cannot
 * post a change to a listener on the operator's machine. The prefix is never proxied.
 */

const PREFIX = '/_polistes/backends'
/** What the POST body may say, and the pool state it sets. */
const VERBS = { drain: 'drain', disable: 'maint', maint: 'maint', enable: 'ready', ready: 'ready' }
/** Bytes of POST body read at most (a word, or a small JSON object). */
const MAX_BODY = 256

/**
 * Read a state change's body: a bare word or `{ "state": word }`.
 * @param {string} text the request body
 * @returns {{ state: 'ready' | 'drain' | 'maint' } | { error: string }}
 */
function parseStateBody (text) {
  let word = text.trim()
  if (word.startsWith('{')) {
    try {
      word = JSON.parse(word).state
    } catch {
      return { error: 'body is not valid JSON' }
    }
  }
  if (typeof word !== 'string' || !Object.hasOwn(VERBS, word.toLowerCase())) {
    return { error: `state must be one of ${Object.keys(VERBS).join(', ')}, got ${JSON.stringify(word)}` }
  }
  return { state: VERBS[word.toLowerCase()] }
}

/**
 * The route of a request target under `/_polistes/backends`: the list, one backend's state, or none.
 * @param {string} url request target
 * @returns {{ list: true } | { id: string } | null}
 */
function parseRoute (url) {
  const q = url.indexOf('?')
  const path = q === -1 ? url : url.slice(0, q)
  if (path === PREFIX || path === PREFIX + '/') return { list: true }
  if (!path.startsWith(PREFIX + '/') || !path.endsWith('/state')) return null
  const segment = path.slice(PREFIX.length + 1, -'/state'.length)
  if (segment === '' || segment.includes('/')) return null
  try {
    return { id: decodeURIComponent(segment) }
  } catch {
    return null
  }
}

/**
 * @typedef {object} BackendsSource
 * @property {() => Array<{ id: string, url: string, backup: boolean, adminState: string }>} all the members
 * @property {(id: string) => object | undefined} get one member by id
 * @property {(id: string, state: 'ready' | 'drain' | 'maint') => object | undefined} setState
 * @property {(upstream: object) => { state: string }} health its health now
 */

/**
 * Create the handler of `/_polistes/backends*`.
 * @param {BackendsSource} pool
 * @param {{ onChange?: (id: string, from: string, to: string) => void }} [options] told of every change (logging)
 * @returns {(req: import('http').IncomingMessage, res: import('http').ServerResponse, trusted: boolean) => boolean}
 *   answers and returns true for a path of its own; `trusted`: the request came in on the admin listener
 */
function createBackendsHandler (pool, { onChange = () => {} } = {}) {
  const record = (u) => ({
    id: u.id,
    url: u.url,
    backup: u.backup,
    adminState: u.adminState,
    state: pool.health(u).state
  })
  return function handle (req, res, trusted) {
    const route = parseRoute(req.url)
    if (route === null) return false
    const method = req.method
    if (route.list) {
      if (method !== 'GET' && method !== 'HEAD') return refuse(res, 405, 'method not allowed', 'GET, HEAD')
      send(res, 200, { backends: pool.all().map(record) })
      return true
    }
    const upstream = pool.get(route.id)
    if (method === 'GET' || method === 'HEAD') {
      if (upstream === undefined) return refuse(res, 404, `no backend with id ${JSON.stringify(route.id)}`)
      send(res, 200, record(upstream))
      return true
    }
    if (method !== 'POST' && method !== 'PUT') return refuse(res, 405, 'method not allowed', 'GET, HEAD, POST, PUT')
    if (!trusted) return refuse(res, 403, 'backend state changes are served on the admin listener only (--admin-port)')
    if (req.headers.origin !== undefined) {
      return refuse(res, 403, 'backend state changes are not taken from web pages (Origin header)')
    }
    readBody(req, (text) => {
      if (text === null) return refuse(res, 413, `body larger than ${MAX_BODY} bytes`)
      const parsed = parseStateBody(text)
      if (parsed.error) return refuse(res, 400, parsed.error)
      const current = pool.get(route.id) // it may have gone while the body came in
      if (current === undefined) return refuse(res, 404, `no backend with id ${JSON.stringify(route.id)}`)
      const from = current.adminState
      pool.setState(route.id, parsed.state)
      if (from !== parsed.state) onChange(route.id, from, parsed.state)
      send(res, 200, { ...record(current), previous: from })
    })
    return true
  }
}

/** Read a small body as text; `done(null)` when it is larger than MAX_BODY. */
function readBody (req, done) {
  const chunks = []
  let size = 0
  let over = false
  req.on('data', (chunk) => {
    size += chunk.length
    if (size > MAX_BODY) over = true
    else chunks.push(chunk)
  })
  req.on('end', () => done(over ? null : Buffer.concat(chunks).toString('utf8')))
  req.on('error', () => {})
}

function send (res, status, body) {
  const text = JSON.stringify(body) + '\n'
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text)
  })
  res.end(text)
}

function refuse (res, status, message, allow) {
  if (allow) res.setHeader('allow', allow)
  send(res, status, { error: message })
  return true
}

module.exports = { createBackendsHandler, parseStateBody, parseRoute }
