'use strict'

/**
 * Child process of `npm run bench:memory -- --process`: sends requests for distinct URLs, each
 * one new, over keep-alive connections, never in the measured process.
 *
 * Request: `send { url, from, to, urlBytes, connections }` -> `{ statuses, errors, ms }`: requests
 * for the URLs numbered `from` to `to - 1` (see {@link distinctUrl}), `connections` at a time;
 * `statuses` counts the responses by status code.
 */

const http = require('node:http')
const { serve } = require('../children/child')

/** Pages of public/ that exist (page1.html ... page25.html). */
const PAGES = 25

/**
 * The `n`-th distinct URL, about `bytes` long (never shorter than it needs to be distinct): three
 * in four are paths that exist on no backend (`/d<n>-xxx…`, answered 404), one in four an existing
 * page with a distinct query string (`/page<i>.html?v=<n>-xxx…`, answered 200).
 * @param {number} n
 * @param {number} bytes
 * @returns {string}
 */
function distinctUrl (n, bytes) {
  const head = n % 4 === 3 ? `/page${1 + (n % PAGES)}.html?v=${n}-` : `/d${n}-`
  return head + 'x'.repeat(Math.max(0, bytes - head.length))
}

/**
 * @param {{ url: string, from: number, to: number, urlBytes: number, connections: number }} o
 * @returns {Promise<{ statuses: Record<string, number>, errors: number, ms: number }>}
 */
function send ({ url, from, to, urlBytes, connections }) {
  const base = new URL(url)
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections })
  const statuses = {}
  let errors = 0
  let next = from
  let open = 0
  const t0 = performance.now()
  return new Promise((resolve) => {
    function one () {
      if (next >= to) {
        if (open === 0) {
          agent.destroy()
          resolve({ statuses, errors, ms: Math.round(performance.now() - t0) })
        }
        return
      }
      const path = distinctUrl(next++, urlBytes)
      open++
      let settled = false
      const done = () => {
        if (settled) return
        settled = true
        open--
        one()
      }
      http.get({ host: base.hostname, port: base.port, path, agent }, (res) => {
        statuses[res.statusCode] = (statuses[res.statusCode] || 0) + 1
        res.resume()
        res.on('end', done)
        res.on('error', () => { errors++; done() })
      }).on('error', () => { errors++; done() })
    }
    for (let i = 0; i < connections; i++) one()
  })
}

if (require.main === module) serve({ send })

module.exports = { distinctUrl }
