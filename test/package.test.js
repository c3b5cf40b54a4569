'use strict'

const { execFileSync, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { installPacked, plainEnv, ROOT } = require('./packed-consumer')

/** The libraries the adapters wrap, with their types, and TypeScript: what a TypeScript newcomer installs. */
const CONSUMER_PACKAGES = ['typescript', '@types/node', 'undici', 'http-proxy', '@types/http-proxy', 'http-proxy-3', 'http-proxy-middleware', 'fastify', '@fastify/http-proxy', '@fastify/reply-from',
  '@types/ws@8.18.2'] // @fastify/http-proxy's types import 'ws', whose types it does not install

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
  expect(consumer.files).toEqual(expect.arrayContaining(['bin/polistes.js', 'src/policies/wasp.js', 'src/policies/wasp.d.ts', 'src/adapters/undici.js', 'src/adapters/undici.d.ts', 'src/adapters/http-proxy.js',
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

test('every subpath export type-checks with the real libraries\' types under tsc --strict (nodenext), as the docs use them', () => {
  // test/types/consumer-types.ts holds @ts-expect-error lines: tsc fails if one of them is not an error
  for (const file of ['consumer-types.ts', 'tsconfig.consumer.json']) fs.copyFileSync(path.join(ROOT, 'test', 'types', file), path.join(consumer.dir, file))
  const tsc = path.join(consumer.dir, 'node_modules', 'typescript', 'bin', 'tsc')
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.consumer.json'], { cwd: consumer.dir, encoding: 'utf8', timeout: 120000, env: plainEnv() })
  expect(`${result.stdout}${result.stderr}`).toBe('')
  expect(result.status).toBe(0)
}, 120000)
