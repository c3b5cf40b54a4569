'use strict'

const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')
const { startBalancer } = require('../src')
const { rawRequest, request, startUpstream } = require('./helper')

async function setup (options = {}) {
  const upstream = await startUpstream((req, res) => {
    res.writeHead(200, { 'x-cache': 'HIT', 'x-path': req.url })
    res.end('upstream')
  })
  const lb = await startBalancer({ backends: [{ url: upstream.url, id: 'only' }], port: 0, ...options })
  return { lb, upstream, close: async () => { await lb.close({ graceMs: 500 }); await upstream.close() } }
}

/**
 * Read Server-Sent Events from `url` until `count` events of type `frame` arrived or `timeoutMs`.
 * @returns {Promise<{ res: http.IncomingMessage, frames: object[], ended: Promise<void> }>}
 */
function readFrames (url, count, timeoutMs = 5000) {
  return new Promise((resolve, reject) => {
    const frames = []
    const req = http.get(url, (res) => {
      let buffer = ''
      const ended = new Promise((resolve) => res.on('close', resolve))
      res.setEncoding('utf8')
      res.on('data', (chunk) => {
        buffer += chunk
        let i
        while ((i = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, i)
          buffer = buffer.slice(i + 2)
          const event = /^event: (.*)$/m.exec(block)
          const data = /^data: (.*)$/m.exec(block)
          if (event && event[1] === 'frame' && data) frames.push(JSON.parse(data[1]))
          if (frames.length === count) {
            clearTimeout(timer)
            resolve({ req, res, frames, ended })
          }
        }
      })
    })
    const timer = setTimeout(() => { req.destroy(); reject(new Error(`${frames.length} of ${count} frames within ${timeoutMs} ms`)) }, timeoutMs)
    req.on('error', reject)
  })
}

describe('admin endpoints under /_polistes/', () => {
  let env
  afterEach(async () => { if (env) await env.close() })

  test('the dashboard page loads its script, its style and uPlot from this server, nothing else', async () => {
    env = await setup()
    const page = await request(`${env.lb.url}/_polistes/`)
    expect(page.status).toBe(200)
    expect(page.headers['content-type']).toMatch(/^text\/html/)
    const refs = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])
    expect(refs.filter((r) => /^https?:|^\/\//.test(r))).toEqual([])
    const assets = refs.filter((r) => r.startsWith('assets/'))
    expect(assets.sort()).toEqual(['assets/dashboard.css', 'assets/dashboard.js', 'assets/uPlot.iife.min.js', 'assets/uPlot.min.css'])
    for (const asset of assets) {
      const res = await request(`${env.lb.url}/_polistes/${asset}`)
      expect(res.status).toBe(200)
      expect(res.headers['content-type']).toMatch(asset.endsWith('.js') ? /^text\/javascript/ : /^text\/css/)
    }
    // the copy polistes ships (src/observe/dashboard/uplot/) is the devDependency's dist, byte for
    // byte: after `npm update uplot`, this fails until the copy is refreshed
    const uplot = await request(`${env.lb.url}/_polistes/assets/uPlot.iife.min.js`)
    const dist = path.join(path.dirname(require.resolve('uplot/package.json')), 'dist')
    expect(uplot.body).toBe(fs.readFileSync(path.join(dist, 'uPlot.iife.min.js'), 'utf8'))
    const css = await request(`${env.lb.url}/_polistes/assets/uPlot.min.css`)
    expect(css.body).toBe(fs.readFileSync(path.join(dist, 'uPlot.min.css'), 'utf8'))
    expect(env.upstream.requests).toBe(0)
  })

  test('/_polistes redirects to the page; unknown admin paths are 404 and never proxied; POST is 405', async () => {
    env = await setup()
    const bare = await request(`${env.lb.url}/_polistes`)
    expect([bare.status, bare.headers.location]).toEqual([302, '/_polistes/'])
    expect((await request(`${env.lb.url}/_polistes/nope`)).status).toBe(404)
    expect((await rawRequest(env.lb.url, '/_polistes/assets/../../package.json')).status).toBe(404)
    expect((await rawRequest(env.lb.url, '/_polistes/assets/constructor')).status).toBe(404)
    expect((await request(`${env.lb.url}/_polistes/stats`, { method: 'POST' })).status).toBe(405)
    expect(env.upstream.requests).toBe(0)
  })

  test('paths that only start like the prefix are proxied', async () => {
    env = await setup()
    const res = await request(`${env.lb.url}/_polistesque/x`)
    expect(res.status).toBe(200)
    expect(res.headers['x-path']).toBe('/_polistesque/x')
  })

  test('stats keep their shape and include the request just proxied', async () => {
    env = await setup()
    await request(`${env.lb.url}/a`)
    const stats = JSON.parse((await request(`${env.lb.url}/_polistes/stats?x=1`)).body)
    expect(stats).toMatchObject({ requests: 1, responses: 1, upstreams: [{ id: 'only', requests: 1, healthy: true }], policy: { name: 'wasp' } })
  })

  test('with admin: false the prefix is an ordinary path, proxied like any other', async () => {
    env = await setup({ admin: false })
    const res = await request(`${env.lb.url}/_polistes/stats`)
    expect(res.body).toBe('upstream')
    expect(typeof env.lb.admin.handle).toBe('function') // still mountable elsewhere
  })

  test('the admin handler mounts on any server', async () => {
    env = await setup({ admin: false })
    await request(`${env.lb.url}/p`)
    const other = http.createServer((req, res) => {
      if (!env.lb.admin.handle(req, res)) res.writeHead(418).end()
    })
    await new Promise((resolve) => other.listen(0, '127.0.0.1', resolve))
    try {
      const base = `http://127.0.0.1:${other.address().port}`
      expect(JSON.parse((await request(`${base}/_polistes/stats`)).body).requests).toBe(1)
      expect((await request(`${base}/elsewhere`)).status).toBe(418)
    } finally {
      await new Promise((resolve) => other.close(resolve))
    }
  })
})

describe('GET /_polistes/events (Server-Sent Events)', () => {
  let env
  afterEach(async () => { if (env) await env.close() })

  test('a full frame at once, then one about every second with the seconds since', async () => {
    env = await setup()
    for (let i = 0; i < 5; i++) await request(`${env.lb.url}/page${i}`)
    const { req, res, frames } = await readFrames(`${env.lb.url}/_polistes/events`, 3, 6000)
    req.destroy()
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/)
    const [first, second, third] = frames
    expect(first.full).toBe(true)
    expect(second.full).toBeUndefined()
    expect(first.policy).toBe('wasp')
    expect(first.upstreams).toEqual([expect.objectContaining({ id: 'only', healthy: true, requests: 5 })])
    expect(first.heat.upstreams).toEqual(['only'])
    expect(first.heat.pages).toEqual(['/page0', '/page1', '/page2', '/page3', '/page4'])
    expect(first.heat.share).toEqual([[1], [1], [1], [1], [1]])
    expect(third.t - second.t).toBeGreaterThan(500)
    expect(third.t - second.t).toBeLessThan(2500)
    // no second is sent twice
    const seconds = frames.flatMap((f) => f.series.t)
    expect(new Set(seconds).size).toBe(seconds.length)
    expect(frames.flatMap((f) => f.series.rps).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(5)
  })

  test('closing the balancer ends the event streams promptly', async () => {
    env = await setup()
    const { ended } = await readFrames(`${env.lb.url}/_polistes/events`, 1)
    const t0 = Date.now()
    await env.lb.close({ graceMs: 5000 })
    await ended
    expect(Date.now() - t0).toBeLessThan(1500)
  })
})
