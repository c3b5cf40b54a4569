'use strict'

const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const root = path.join(__dirname, '..')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const run = (args, cwd) => execFileSync(npm, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

const cjs = `
const { createWasp, defaults } = require('polistes/wasp')
const wasp = createWasp({}, { random: () => 0.5 })
const ups = [{ id: 'a', inflight: 0 }, { id: 'b', inflight: 1 }]
const { PolicyDispatcher } = require('polistes/undici')
const { withPolicy } = require('polistes/http-proxy')
const { policyRouting } = require('polistes/http-proxy-middleware')
const { policyProxyOptions } = require('polistes/fastify-http-proxy')
const dispatcher = new PolicyDispatcher(['http://127.0.0.1:9/x'])
const glue = [typeof withPolicy, policyRouting(['http://127.0.0.1:9']).target, policyProxyOptions(['http://127.0.0.1:9']).upstream]
console.log(JSON.stringify({ name: wasp.name, picked: wasp.pick(ups, { key: '/x' }).id, rounds: defaults.rounds, empty: wasp.pick([], { key: '/x' }) === undefined, undici: dispatcher.upstreams[0], policy: dispatcher.policy.name, glue }))
dispatcher.close()
`
const mjs = `
import { createWasp } from 'polistes/wasp'
import { PolicyDispatcher } from 'polistes/undici'
import { withPolicy } from 'polistes/http-proxy'
import { policyRouting } from 'polistes/http-proxy-middleware'
import { policyProxyOptions } from 'polistes/fastify-http-proxy'
const wasp = createWasp({}, { random: () => 0.5 })
const ups = [{ id: 'a', inflight: 0 }, { id: 'b', inflight: 1 }]
const dispatcher = new PolicyDispatcher(['http://127.0.0.1:9/x'])
const glue = [typeof withPolicy, policyRouting(['http://127.0.0.1:9']).target, policyProxyOptions(['http://127.0.0.1:9']).upstream]
console.log(JSON.stringify({ name: wasp.name, picked: wasp.pick(ups, { key: '/x' }).id, rounds: createWasp.defaults.rounds, empty: wasp.pick([], { key: '/x' }) === undefined, undici: dispatcher.upstreams[0], policy: dispatcher.policy.name, glue }))
dispatcher.close()
`

test('a consumer installs the packed tarball and uses polistes/wasp and the adapters from require and import', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-pack-'))
  try {
    const packed = JSON.parse(run(['pack', '--json', '--pack-destination', tmp], root))
    const tarball = path.join(tmp, packed[0].filename)
    expect(packed[0].files.map((f) => f.path)).toEqual(expect.arrayContaining(['bin/polistes.js', 'src/policies/wasp.js', 'src/policies/wasp.d.ts', 'src/adapters/undici.js', 'src/adapters/undici.d.ts', 'src/adapters/http-proxy.js', 'src/adapters/http-proxy-middleware.d.ts', 'src/adapters/fastify-http-proxy.js']))
    const project = path.join(tmp, 'consumer')
    fs.mkdirSync(project)
    run(['init', '-y'], project)
    run(['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], project)
    fs.writeFileSync(path.join(project, 'use.cjs'), cjs)
    fs.writeFileSync(path.join(project, 'use.mjs'), mjs)
    const expected = { name: 'wasp', picked: 'a', rounds: 8, empty: true, undici: 'http://127.0.0.1:9', policy: 'wasp', glue: ['function', 'http://127.0.0.1:9', ''] }
    for (const file of ['use.cjs', 'use.mjs']) {
      const out = execFileSync(process.execPath, [file], { cwd: project, encoding: 'utf8' })
      expect(JSON.parse(out)).toEqual(expected)
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}, 120000)
