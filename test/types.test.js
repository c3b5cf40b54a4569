'use strict'

// The hand-written declaration files under tsc --strict (nodenext), as a consumer compiles them: the
// packed package installed in an empty folder beside the libraries it wraps, with their own types
// (test/packed-consumer.js, the folder test/package.test.js and test/docs-examples.test.js share), and
// every type test of test/types/ checked there in one tsc run, so @types/node is parsed and checked
// once (about 8 CPU-s a project on a cold run), not once per project. Each file holds
// `// @ts-expect-error` lines: tsc reports an unused one, so a wrong option that type-checks fails.
// The project's lib is es2022 alone, without the DOM lib a bare target brings: the declarations must
// stand on @types/node as a server's project does, not on browser globals (and tsc reads 45,000 fewer
// lines: 6.4 CPU-s against 8.8 cold).
//
// Incremental: the build info of the last run is kept in the system's temporary folder (one file per
// checkout) and copied into the consumer's folder, where its paths resolve to the same packages at the
// same versions; tsc re-checks whatever changed or imports what changed, so what passes is what a full
// check passes.

const crypto = require('node:crypto')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { CONSUMER_PACKAGES, installPacked, plainEnv, ROOT } = require('./packed-consumer')

const TYPES = path.join(ROOT, 'test', 'types')
const { files: FILES } = JSON.parse(fs.readFileSync(path.join(TYPES, 'tsconfig.json'), 'utf8'))

/** Where the build info is kept between runs: one file per checkout. */
const KEPT = path.join(os.tmpdir(), `polistes-tsc-${crypto.createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}.tsbuildinfo`)

let consumer
let tsc
beforeAll(() => {
  consumer = installPacked(CONSUMER_PACKAGES)
  const dir = path.join(consumer.dir, 'types') // a folder of its own: the suites sharing the consumer write files of their own
  fs.mkdirSync(dir)
  for (const file of ['tsconfig.json', ...FILES]) fs.copyFileSync(path.join(TYPES, file), path.join(dir, file))
  const buildInfo = path.join(dir, 'types.tsbuildinfo')
  if (fs.existsSync(KEPT)) fs.copyFileSync(KEPT, buildInfo)
  const bin = path.join(consumer.dir, 'node_modules', 'typescript', 'bin', 'tsc')
  const result = spawnSync(process.execPath, [bin, '-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', buildInfo], { cwd: dir, encoding: 'utf8', timeout: 120000, env: plainEnv() })
  tsc = { status: result.status, output: `${result.stdout}${result.stderr}${result.error ? result.error.message : ''}` }
  if (result.status === 0) fs.copyFileSync(buildInfo, KEPT)
}, 300000)
afterAll(() => { if (consumer) consumer.remove() })

/** What tsc reported about one file of test/types (its lines start with the file's name). */
const reported = (file) => tsc.output.split('\n').filter((line) => line.startsWith(file))

test('every type test of test/types is in the one project, and tsc ran on it and passed', () => {
  expect(fs.readdirSync(TYPES).filter((f) => f.endsWith('.ts')).sort()).toEqual([...FILES].sort())
  expect(tsc.output).toBe('')
  expect(tsc.status).toBe(0)
})

test.each([
  ['the hand-written wasp.d.ts type-checks and rejects a wrong option type', 'wasp-types.ts'],
  ['the hand-written src/index.d.ts (polistes) type-checks and rejects wrong options', 'balancer-types.ts'],
  ['polistes/undici type-checks beside undici\'s own types', 'undici-types.ts'],
  ['polistes/http-proxy, http-proxy-middleware and fastify-http-proxy type-check beside their libraries', 'adapters-types.ts'],
  ['every subpath export type-checks with the real libraries\' types, as the docs use them', 'consumer-types.ts']
])('%s (%s)', (_name, file) => {
  expect(FILES).toContain(file)
  expect(reported(file)).toEqual([])
})
