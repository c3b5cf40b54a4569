'use strict'

const dns = require('node:dns')
const net = require('node:net')

/**
 * Re-resolution of backend host names, as nginx's `server … resolve` and HAProxy's `resolvers`
 * with `hold valid`: every `intervalMs` each backend given by a host name (not an IP address) is
 * looked up again. Connections are opened to the addresses of the last answer ({@link Resolver#lookup},
 * handed to the engines as net.connect's `lookup`, rotating over them), and when the answer
 * changes `onChange` is told, so that the engine retires the pooled connections to that upstream
 * (they close after their request in flight; new connections go to the new addresses). A failed
 * lookup keeps the last good answer (nginx and HAProxy keep serving on the old addresses too).
 *
 * Without re-resolution (the default), each new connection is resolved by the operating system,
 * but a pooled keep-alive connection stays on the address it was opened to for as long as it lives
 * (undici #1066).
 */
class Resolver {
  /**
   * @param {object} options
   * @param {number} options.intervalMs ms between two lookups of a host name
   * @param {typeof dns.lookup} [options.lookup] the lookup used (default node:dns's)
   * @param {(hostname: string, addresses: string[], previous: string[]) => void} options.onChange
   *   an answer differs from the one before (not called for the first answer)
   * @param {(hostname: string, err: Error) => void} [options.onError] a lookup failed (the last answer stays)
   */
  constructor ({ intervalMs, lookup = dns.lookup, onChange, onError = () => {} }) {
    this.intervalMs = intervalMs
    this.resolve = lookup
    this.onChange = onChange
    this.onError = onError
    /** @type {Map<string, { addresses: Array<{ address: string, family: number }>, next: number }>} */
    this.hosts = new Map()
    /** @type {NodeJS.Timeout | null} */
    this.timer = null
    this.running = false
    /** net.connect's `lookup`: the last answer for a watched name, else the real lookup */
    this.lookup = (hostname, options, callback) => this._lookup(hostname, options, callback)
  }

  /**
   * Watch the host names of these upstream URLs (IP literals are skipped), and forget the others.
   * @param {URL[]} targets
   */
  sync (targets) {
    const names = new Set(targets.map((t) => t.hostname.replace(/^\[|\]$/g, '')).filter((h) => net.isIP(h) === 0))
    for (const name of this.hosts.keys()) if (!names.has(name)) this.hosts.delete(name)
    for (const name of names) if (!this.hosts.has(name)) this.hosts.set(name, { addresses: [], next: 0 })
  }

  /** Change the interval (hot reload); the next round follows the new one. */
  configure (intervalMs) {
    this.intervalMs = intervalMs
    if (this.running) {
      this.stop()
      this.start()
    }
  }

  /** Resolve now, then every `intervalMs`. */
  start () {
    this.running = true
    const round = () => {
      this.refresh().then(() => {
        if (this.running) {
          this.timer = setTimeout(round, this.intervalMs)
          this.timer.unref()
        }
      })
    }
    round()
  }

  stop () {
    this.running = false
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }

  /**
   * Look every watched name up once.
   * @returns {Promise<void>} once every answer is in
   */
  refresh () {
    return Promise.all([...this.hosts.keys()].map((name) => new Promise((resolve) => {
      const answer = (err, addresses) => {
        const entry = this.hosts.get(name)
        if (entry === undefined) return resolve() // forgotten meanwhile
        if (err || !Array.isArray(addresses) || addresses.length === 0) {
          this.onError(name, err || new Error('no addresses'))
          return resolve()
        }
        const previous = entry.addresses.map((a) => a.address)
        const now = addresses.map((a) => a.address)
        entry.addresses = addresses.map(({ address, family }) => ({ address, family }))
        if (previous.length > 0 && !sameSet(previous, now)) this.onChange(name, now, previous)
        resolve()
      }
      try {
        this.resolve(name, { all: true }, answer)
      } catch (err) { // a lookup that throws (bad input) is a failed lookup, never a crash
        answer(err)
      }
    }))).then(() => {})
  }

  _lookup (hostname, options, callback) {
    if (typeof options === 'function') {
      callback = options
      options = {}
    }
    const entry = this.hosts.get(hostname)
    const family = typeof options === 'number' ? options : (options && options.family) || 0
    const list = entry === undefined ? [] : entry.addresses.filter((a) => family === 0 || a.family === family)
    if (list.length === 0) return this.resolve(hostname, options, callback)
    const start = entry.next++ % list.length // rotate: spread new connections over the addresses
    const ordered = list.slice(start).concat(list.slice(0, start))
    if (options && options.all) process.nextTick(callback, null, ordered)
    else process.nextTick(callback, null, ordered[0].address, ordered[0].family)
  }
}

/** Whether two lists hold the same strings, in any order. */
function sameSet (a, b) {
  if (a.length !== b.length) return false
  const set = new Set(a)
  return b.every((x) => set.has(x))
}

module.exports = { Resolver }
