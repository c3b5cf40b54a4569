'use strict'

const { execFileSync, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { CONSUMER_PACKAGES, installPacked, npm, packedTarball, plainEnv, ROOT } = require('./packed-consumer')

const cjs = `
const { createWasp, defaults } = require('polistes/wasp')
const wasp = createWasp({}, { random: () => 0.5 })
const ups = [{ id: 'a', inflight: 0 }, { id: 'b', inflight: 1 }]
const { PolicyDispatcher } = require('polistes/undici')
const { withPolicy } = require('polistes/http-proxy')
const { policyRouting } = require('polistes/http-proxy-middleware')
const { policyProxyOptions } = require('polistes/fastify-http-proxy')
const { startFleet, backendId } = require('polistes/fleet')
const { replyFromOptions } = require('polistes/undici')
const dispatcher = new PolicyDispatcher(['http://127.0.0.1:9/x'])
const glue = [typeof withPolicy, policyRouting(['http://127.0.0.1:9']).target, policyProxyOptions(['http://127.0.0.1:9']).upstream]
const fleet = [typeof startFleet, backendId(2), replyFromOptions(dispatcher).base]
console.log(JSON.stringify({ name: wasp.name, picked: wasp.pick(ups, { key: '/x' }).id, rounds: defaults.rounds, empty: wasp.pick([], { key: '/x' }) === undefined, undici: dispatcher.upstreams[0], policy: dispatcher.policy.name, glue, fleet }))
dispatcher.close()
`
const mjs = `
import { createWasp } from 'polistes/wasp'
import { PolicyDispatcher } from 'polistes/undici'
import { withPolicy } from 'polistes/http-proxy'
import { policyRouting } from 'polistes/http-proxy-middleware'
import { policyProxyOptions } from 'polistes/fastify-http-proxy'
import { startFleet, backendId } from 'polistes/fleet'
import { replyFromOptions } from 'polistes/undici'
const wasp = createWasp({}, { random: () => 0.5 })
const ups = [{ id: 'a', inflight: 0 }, { id: 'b', inflight: 1 }]
const dispatcher = new PolicyDispatcher(['http://127.0.0.1:9/x'])
const glue = [typeof withPolicy, policyRouting(['http://127.0.0.1:9']).target, policyProxyOptions(['http://127.0.0.1:9']).upstream]
const fleet = [typeof startFleet, backendId(2), replyFromOptions(dispatcher).base]
console.log(JSON.stringify({ name: wasp.name, picked: wasp.pick(ups, { key: '/x' }).id, rounds: createWasp.defaults.rounds, empty: wasp.pick([], { key: '/x' }) === undefined, undici: dispatcher.upstreams[0], policy: dispatcher.policy.name, glue, fleet }))
dispatcher.close()
`

let consumer
beforeAll(() => { consumer = installPacked(CONSUMER_PACKAGES) }, 300000)
afterAll(() => { if (consumer) consumer.remove() })

test('the packed tarball holds the entry points, their types and the examples', () => {
  expect(consumer.files).toEqual(expect.arrayContaining(['bin/polistes.js', 'src/policies/wasp/index.js', 'src/policies/wasp/index.d.ts', 'src/adapters/undici.js', 'src/adapters/undici.d.ts', 'src/adapters/http-proxy.js',
    'src/adapters/http-proxy-middleware.d.ts', 'src/adapters/fastify-http-proxy.js', 'servers/fleet.js', 'servers/fleet.d.ts', 'examples/undici-dispatcher.js']))
})

test('a consumer uses polistes/wasp, the adapters and polistes/fleet from require and import', () => {
  fs.writeFileSync(path.join(consumer.dir, 'use.cjs'), cjs)
  fs.writeFileSync(path.join(consumer.dir, 'use.mjs'), mjs)
  const expected = { name: 'wasp', picked: 'a', rounds: 8, empty: true, undici: 'http://127.0.0.1:9', policy: 'wasp', glue: ['function', 'http://127.0.0.1:9', ''], fleet: ['function', 'c', 'http://127.0.0.1:9'] }
  for (const file of ['use.cjs', 'use.mjs']) {
    const out = execFileSync(process.execPath, [file], { cwd: consumer.dir, encoding: 'utf8', env: plainEnv() })
    expect(JSON.parse(out)).toEqual(expected)
  }
})

/** What the README states about the install (section Install): the figure the test holds the package to. */
function readmeFigures () {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const packages = readme.match(/`npm install polistes` in an empty folder installs (\d+) packages/)
  if (!packages) throw new Error('README.md: no "`npm install polistes` in an empty folder installs N packages" line')
  return { packages: Number(packages[1]) }
}

describe('the packed tarball, installed in an empty folder', () => {
  let tmp, project, packed
  const node = (args, cwd = project) => spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 20000 })

  beforeAll(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-pack-'))
    packed = packedTarball() // the run's one tarball, as installPacked's
    project = path.join(tmp, 'consumer')
    fs.mkdirSync(project)
    // what `npm init -y` writes, without starting npm for it
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0' }, null, 2))
    npm(['install', packed.file, '--prefer-offline', '--no-audit', '--no-fund'], project)
  }, 300000)
  afterAll(() => {
    fs.rmSync(tmp, { recursive: true, force: true })
    if (packed) packed.remove()
  })

  test('holds the library, the bin, the docs and the dashboard, and no image', () => {
    const files = packed.files
    expect(files).toEqual(expect.arrayContaining(['bin/polistes.js', 'src/policies/wasp/index.js', 'src/policies/wasp/index.d.ts', 'src/adapters/undici.js', 'src/adapters/undici.d.ts', 'src/adapters/http-proxy.js', 'src/adapters/http-proxy-middleware.d.ts', 'src/adapters/fastify-http-proxy.js', 'docs/api.md', 'src/observe/dashboard/uplot/uPlot.iife.min.js', 'src/observe/dashboard/uplot/LICENSE']))
    expect(files.filter((f) => /\.(png|jpe?g|gif|webp)$/i.test(f))).toEqual([])
  })

  test('installs at most as many packages as the README says, and no optional one', () => {
    const lock = JSON.parse(fs.readFileSync(path.join(project, 'package-lock.json'), 'utf8'))
    const installed = Object.keys(lock.packages).filter((p) => p !== '')
    expect(installed.length).toBeLessThanOrEqual(readmeFigures().packages)
    const pkg = require('../package.json')
    for (const name of Object.keys(pkg.peerDependencies)) expect(installed).not.toContain(`node_modules/${name}`)
  })

  test('polistes/wasp loads from require and import with nothing installed but polistes itself', () => {
    const bare = path.join(tmp, 'bare')
    fs.cpSync(path.join(project, 'node_modules', 'polistes'), path.join(bare, 'node_modules', 'polistes'), { recursive: true })
    fs.writeFileSync(path.join(bare, 'use.cjs'), "const { createWasp } = require('polistes/wasp'); console.log(createWasp({}, { random: () => 0.5 }).pick([{ id: 'a', inflight: 0 }], { key: '/x' }).id)")
    fs.writeFileSync(path.join(bare, 'use.mjs'), "import { createWasp } from 'polistes/wasp'; console.log(createWasp().name)")
    expect(node(['use.cjs'], bare)).toMatchObject({ status: 0, stdout: 'a\n' })
    expect(node(['use.mjs'], bare)).toMatchObject({ status: 0, stdout: 'wasp\n' })
    expect(node(['-e', "require('polistes')"], bare).stderr).toMatch(/Cannot find module 'pino'/) // the balancer does need its dependencies
  })

  test.each([
    ['the embedded fleet', [], 'the embedded fleet of page backends (polistes without --backends) needs the packages node-static and lru-cache, not installed: npm install node-static@"^0.7.11" lru-cache@"^11.0.0"'],
    ['--engine undici', ['--backends', 'http://127.0.0.1:9', '--engine', 'undici'], 'the undici engine (--engine undici) needs the package undici, not installed: npm install undici@"^7.0.0"'],
    ['--engine http-proxy', ['--backends', 'http://127.0.0.1:9', '--engine', 'http-proxy'], 'the http-proxy engine (--engine http-proxy) needs the package http-proxy-3, not installed: npm install http-proxy-3@"^1.23.0"'],
    ['--log-format pretty', ['--backends', 'http://127.0.0.1:9', '--log-format', 'pretty'], '--log-format pretty needs the package pino-pretty, not installed: npm install pino-pretty@"^13.0.0"']
  ])('the polistes command without the optional packages: %s is refused with one line naming them, exit 2', (_name, args, message) => {
    const result = node([path.join('node_modules', 'polistes', 'bin', 'polistes.js'), '--port', '0', ...args])
    expect(result.stderr).toBe(`polistes: ${message}\n`)
    expect(result.status).toBe(2)
  })

  test('polistes/undici without undici: one line naming it', () => {
    const result = node(['-e', "try { require('polistes/undici') } catch (err) { console.log(err.code + ': ' + err.message) }"])
    expect(result.stdout).toBe('ERR_POLISTES_MISSING_PACKAGE: polistes/undici needs the package undici, not installed: npm install undici@"^7.0.0"\n')
  })
})
