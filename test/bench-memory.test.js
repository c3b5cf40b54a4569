'use strict'

const path = require('node:path')
const fs = require('node:fs')
const { runNode } = require('./helper')
const { distinctUrl } = require('../bench/load/distinct-urls-child')
const { parseArgs } = require('../bench/runners/memory')

const MEMORY = path.join(__dirname, '..', 'bench', 'runners', 'memory.js')

test('distinctUrl: distinct, about the asked length, one in four an existing page with a query string', () => {
  const urls = Array.from({ length: 400 }, (_, n) => distinctUrl(n, 4096))
  expect(new Set(urls).size).toBe(400)
  for (const u of urls) expect(u).toHaveLength(4096)
  expect(urls.filter((u) => /^\/page([1-9]|1\d|2[0-5])\.html\?v=\d+-x*$/.test(u))).toHaveLength(100)
  expect(distinctUrl(123456, 8)).toBe('/d123456-') // never cut short: still distinct
})

test('parseArgs: the keys section by default, --process with its own options', () => {
  expect(parseArgs([])).toEqual({ mode: 'keys', keys: 100000, baseline: 1000, maxKeys: 10000 })
  expect(parseArgs(['--process'])).toEqual({ mode: 'process', urls: 100000, step: 20000, urlBytes: [4096, 32], connections: 32 })
  expect(parseArgs(['--process', '--urls', '500', '--step', '250', '--url-bytes', '64'])).toMatchObject({ urls: 500, step: 250, urlBytes: [64] })
})

test.each([
  [['--process', '--keys', '10'], /unknown option "--keys" with --process/],
  [['--process', '--url-bytes', '4'], /--url-bytes must be a comma list of integers from 8 to 8192/],
  [['--process', '--urls', '100', '--step', '200'], /--step must not exceed --urls/],
  [['--process', '--connections', '0'], /--connections must be an integer from 1/]
])('bench:memory %j exits 2 with one line', async (args, message) => {
  const { code, stderr } = await runNode(MEMORY, args, { timeoutMs: 10000 })
  expect(code).toBe(2)
  expect(stderr.trim().split('\n')).toHaveLength(1)
  expect(stderr).toMatch(message)
})

const onLinux = fs.existsSync('/proc/self/status') ? test : test.skip

onLinux('--process runs the real npm start, prints the RSS table and finds /_stats closed through the balancer', async () => {
  const { code, stdout, stderr } = await runNode(MEMORY, ['--process', '--urls', '300', '--step', '150', '--url-bytes', '2048', '--connections', '8'], { timeoutMs: 60000 })
  expect(stderr).toBe('')
  expect(code).toBe(0)
  const rows = stdout.split('\n').filter((l) => /^\| [\d,]+ \|/.test(l))
  expect(rows.map((r) => r.split('|')[1].trim())).toEqual(['0', '150', '300'])
  for (const r of rows) expect(Number(r.split('|')[4])).toBeGreaterThan(10) // MiB: a live process was read
  expect(stdout).toMatch(/statuses \{"200":75,"404":225\}, errors 0/)
  expect(stdout).toMatch(/GET \/_stats through the balancer: 404/)
}, 70000)
