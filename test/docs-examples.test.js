'use strict'

// The docs' examples as a newcomer runs them: the packed package installed in an empty folder beside
// the libraries, every ```js block of the docs and every file of examples/ (the installed copy) run
// there with plain `node`, and what each prints set against its `// prints:` comments.

const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')
const { spawn, spawnSync } = require('node:child_process')
const { CONSUMER_PACKAGES, installPacked, plainEnv, ROOT } = require('./packed-consumer')
const { expectedPrints, mismatches } = require('./doc-prints')
const { startFleet } = require('../servers/fleet')

const DOCS = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
/** The libraries the docs and examples use (versions: this repository's node_modules). */
const PEERS = ['undici', 'http-proxy-3', 'node-static', 'lru-cache', 'http-proxy-middleware', 'fastify', '@fastify/http-proxy', '@fastify/reply-from']
/** What an example may require: node's own modules, polistes' entry points, the libraries, its siblings. */
const ENTRY_POINTS = Object.keys(require('../package.json').exports).map((k) => path.posix.join('polistes', k)).filter((e) => e !== 'polistes/package.json')

/** Every ```js block of a markdown file. */
function jsBlocks (file) {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8')
  return [...text.matchAll(/^```js\n([\s\S]*?)^```/gm)].map((m) => m[1])
}

const blocks = DOCS.flatMap((file) => jsBlocks(file).map((code, i) => [file, i + 1, code]))
const exampleFiles = fs.readdirSync(path.join(ROOT, 'examples')).filter((f) => /\.(m?js)$/.test(f)).sort()
const source = (file) => fs.readFileSync(path.join(ROOT, 'examples', file), 'utf8')
/** Files other examples require: helpers, not run alone. */
const helpers = exampleFiles.filter((f) => exampleFiles.some((g) => source(g).includes(`require('./${f.replace(/\.js$/, '')}')`)))
/** Servers that run until stopped: started, asked, stopped (below). */
const SERVERS = ['wasp-proxy.js']
const runnable = exampleFiles.filter((f) => !helpers.includes(f) && !SERVERS.includes(f))

let consumer
// the libraries (and the types, unused here) as test/package.test.js installs them: one folder per run for both
beforeAll(() => { consumer = installPacked(CONSUMER_PACKAGES) }, 300000)
afterAll(() => { if (consumer) consumer.remove() })

/** Run a file of the consumer's folder with plain node; its exit status and output. */
function runNode (file, cwd) {
  return spawnSync(process.execPath, [file], { cwd, encoding: 'utf8', timeout: 60000, env: plainEnv() })
}

/**
 * http-proxy-middleware 3, the version that runs on Node 20 (4 needs Node 22.15), proxies through
 * http-proxy 1.18, which calls util._extend: Node 22 and later warn once (DEP0060). That warning is
 * the library's, not polistes': it is the one stderr line allowed, and only where the code uses
 * http-proxy-middleware.
 */
const HPM_DEP0060 = /^\(node:\d+\) \[DEP0060\] DeprecationWarning: The `util\._extend` API is deprecated\. Please use Object\.assign\(\) instead\.\n\(Use `node --trace-deprecation \.\.\.` to show where the warning was created\)\n/

function expectPrints (result, code) {
  expect(code.includes('http-proxy-middleware') ? result.stderr.replace(HPM_DEP0060, '') : result.stderr).toBe('')
  expect(result.status).toBe(0)
  expect(mismatches(result.stdout, expectedPrints(code))).toEqual([])
}

test('docs/api.md has a runnable example for each function, and every block says what it prints', () => {
  expect(jsBlocks('docs/api.md').length).toBeGreaterThanOrEqual(11)
  for (const [file, i, code] of blocks) expect([file, i, expectedPrints(code).length > 0]).toEqual([file, i, true])
  // a block fenced otherwise (```javascript) would be skipped here: every JavaScript block is ```js
  for (const file of DOCS) expect([file, /^```(javascript|cjs|mjs|node)\b/m.test(fs.readFileSync(path.join(ROOT, file), 'utf8'))]).toEqual([file, false])
})

test.each(blocks)('%s example %i runs from the installed package and prints what its comments say', (file, i, code) => {
  const name = `${file.replace(/\W/g, '-')}-${i}.${/^\s*import /m.test(code) ? 'mjs' : 'js'}`
  fs.writeFileSync(path.join(consumer.dir, name), code)
  expectPrints(runNode(name, consumer.dir), code)
}, 120000)

test('examples/ ships in the package, and each example requires only public entry points, the libraries and its siblings', () => {
  expect(consumer.files).toEqual(expect.arrayContaining(exampleFiles.map((f) => `examples/${f}`)))
  expect(CONSUMER_PACKAGES).toEqual(expect.arrayContaining(PEERS)) // the consumer's folder has them
  const allowed = new Set([...ENTRY_POINTS, ...PEERS, ...helpers.map((f) => `./${f.replace(/\.js$/, '')}`)])
  for (const file of exampleFiles) {
    const required = [...source(file).matchAll(/(?:require\(|from |import\()'([^']+)'/g)].map((m) => m[1]).filter((m) => !m.startsWith('node:'))
    expect([file, required.filter((m) => !allowed.has(m))]).toEqual([file, []])
    if (!helpers.includes(file)) expect([file, expectedPrints(source(file)).length > 0]).toEqual([file, true])
  }
})

test.each(runnable)('examples/%s runs from the installed package and prints what its comments say', (file) => {
  const dir = path.join(consumer.dir, 'node_modules', 'polistes', 'examples')
  expectPrints(runNode(file, dir), source(file))
}, 120000)

test('examples/wasp-proxy.js, started from the installed package in front of two backends, proxies and prints what it says', async () => {
  const fleet = await startFleet({ count: 2, basePort: 0, missMs: 1 })
  const child = spawn(process.execPath, ['wasp-proxy.js', ...fleet.backends.map((b) => b.url)], {
    cwd: path.join(consumer.dir, 'node_modules', 'polistes', 'examples'),
    env: { ...plainEnv(), PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  try {
    const line = await new Promise((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (d) => {
        out += d
        if (out.includes('\n')) resolve(out.split('\n')[0])
      })
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)))
    })
    expect(mismatches(`${line}\n`, expectedPrints(source('wasp-proxy.js')))).toEqual([])
    const port = Number(/ on :(\d+) /.exec(line)[1])
    const caches = []
    for (let i = 0; i < 12; i++) {
      const res = await get(port, `/page${1 + (i % 3)}.html`)
      expect(res.status).toBe(200)
      caches.push(res.cache)
    }
    expect(caches.slice(0, 3)).toEqual(['MISS', 'MISS', 'MISS'])
    expect(caches.slice(3).filter((c) => c === 'HIT').length).toBeGreaterThanOrEqual(6) // each page kept where it went
    expect(stderr).toBe('')
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
    await fleet.close()
  }
}, 120000)

/** One GET on a fresh connection: its status and X-Cache. */
function get (port, pathname) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: pathname, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode, cache: res.headers['x-cache'] }))
    }).on('error', reject)
  })
}
