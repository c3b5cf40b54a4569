'use strict'

/**
 * Child process holding one fleet of backends (servers/fleet.js), so that the backends' event
 * loop is neither the balancer's nor the load generator's.
 *
 * Requests: `start { fleet, pages, host }` -> `{ backends: [{ id, url, port }] }`;
 * `stats` -> every backend's `GET /_stats`, in fleet order. `close` stops the fleet and exits.
 */

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { serve } = require('./child')

const DEFAULT_PAGES = 25
const agent = new http.Agent({ keepAlive: true })

let fleet
let tmpDir

function getJson (url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, timeout: 10000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { body += chunk })
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${url}: ${res.statusCode}`))
        try { resolve(JSON.parse(body)) } catch (err) { reject(err) }
      })
    })
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timeout`)))
    req.on('error', reject)
  })
}

async function start ({ fleet: fleetOptions, pages = DEFAULT_PAGES, host = '127.0.0.1' }) {
  const { startFleet } = require('../servers/fleet')
  const options = { ...fleetOptions, basePort: 0, host }
  if (pages !== DEFAULT_PAGES) {
    const { generatePages } = require('../servers/pages')
    tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-bench-pages-'))
    await generatePages({ count: pages, dir: tmpDir })
    options.root = tmpDir
  }
  fleet = await startFleet(options)
  return { backends: fleet.backends.map(({ id, url, port }) => ({ id, url, port })) }
}

async function stats () {
  return Promise.all(fleet.backends.map((b) => getJson(new URL('/_stats', b.url).href)))
}

serve({ start, stats }, async () => {
  agent.destroy()
  if (fleet) await fleet.close()
  if (tmpDir) fs.rmSync(tmpDir, { recursive: true, force: true })
})
