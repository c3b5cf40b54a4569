'use strict'

const path = require('node:path')
const { fork } = require('node:child_process')
const { createBackend } = require('../servers/static-server')
const { rawRequest, runNode, startServerCli } = require('./helper')

const SERVER = path.join(__dirname, '..', 'servers', 'static-server.js')

const startCli = (args) => startServerCli(SERVER, args)

function exitOf (child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve({ code: child.exitCode, signal: child.signalCode })
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
}

test.each([
  [['--miss-ms', '-5'], /--miss-ms/],
  [['--miss-ms=-5'], /--miss-ms/],
  [['--cache-pages', '-1'], /--cache-pages/],
  [['--cache-pages', 'four'], /--cache-pages/],
  [['--max-inflight', '1.5'], /--max-inflight/],
  [['--latency-profile', '10,x,20'], /--latency-profile/],
  [['--latency-profile', '10,-1'], /--latency-profile/],
  [['--error-rate', '1.5'], /--error-rate/],
  [['--hang-rate', '-0.1'], /--hang-rate/],
  [['--drop-rate', 'often'], /--drop-rate/],
  [['--workers', '-1'], /^static-server: --workers must be an integer >= 0, got "-1"/],
  [['--workers', '1.5'], /--workers must be an integer/],
  [['--hit-ms', 'fast'], /--hit-ms must be a number/],
  [['--service', 'gpu'], /^static-server: --service must be timer or cpu, got "gpu"/],
  [['--port', '70000'], /--port/],
  [['--port', 'http'], /--port/],
  [['--root', '/definitely/not/here'], /root is not a directory/],
  [['--id', 'a b'], /id must be/],
  [['--no-such-flag'], /Unknown argument/]
])('bad input %j: exit 2, one line on stderr, no stack trace', async (args, message) => {
  const run = await runNode(SERVER, ['--port', '0', ...args])
  expect(run.code).toBe(2)
  expect(run.stderr.trim().split('\n')).toHaveLength(1)
  expect(run.stderr).toMatch(/^static-server: /)
  expect(run.stderr).toMatch(message)
  expect(run.stdout).toBe('')
})

test('a port in use: exit 2 and one line naming the address', async () => {
  const taken = createBackend({})
  const { port } = await taken.listen(0, '127.0.0.1')
  try {
    const run = await runNode(SERVER, ['--port', String(port), '--host', '127.0.0.1'])
    expect(run.code).toBe(2)
    expect(run.stderr.trim()).toBe(`static-server: backend a: 127.0.0.1:${port} is already in use`)
  } finally {
    await taken.close()
  }
})

test('--help prints the flags and exits 0', async () => {
  const run = await runNode(SERVER, ['--help'])
  expect(run.code).toBe(0)
  for (const flag of ['--port', '--host', '--id', '--root', '--cache-pages', '--miss-ms', '--miss-cpu-ms', '--latency-profile', '--max-inflight', '--workers', '--hit-ms', '--service', '--error-rate', '--hang-rate', '--drop-rate']) {
    expect(run.stdout).toContain(flag)
  }
})

test('prints where it listens, serves with its flags, and stops cleanly on SIGINT', async () => {
  const { child, url } = startCli(['--port', '0', '--id', 'q', '--cache-pages', '2', '--miss-ms', '0', '--latency-profile', '0,5', '--workers', '3', '--hit-ms', '1', '--service', 'cpu'])
  try {
    const base = await url
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const res = await rawRequest(base, '/page1.html')
    expect(res.headers['x-server']).toBe('q')
    const stats = JSON.parse((await rawRequest(base, '/_stats')).body)
    expect(stats).toMatchObject({ id: 'q', cachePages: 2, missMs: 0, latencyProfile: [0, 5], requests: 1, workers: 3, hitMs: 1, service: 'cpu' })
  } finally {
    child.kill('SIGINT')
  }
  expect(await exitOf(child)).toEqual({ code: 0, signal: null })
})

test('with an IPC channel it sends { type: "ready", id, url, port } and exits when the parent disconnects', async () => {
  const child = fork(SERVER, ['--port', '0', '--id', 'r'], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
  const msg = await new Promise((resolve, reject) => {
    child.once('message', resolve)
    child.once('exit', (code) => reject(new Error(`exited with ${code}`)))
  })
  expect(msg).toEqual({ type: 'ready', id: 'r', url: `http://127.0.0.1:${msg.port}`, port: expect.any(Number) })
  expect((await rawRequest(msg.url, '/page2.html')).status).toBe(200)
  child.disconnect()
  expect(await exitOf(child)).toEqual({ code: 0, signal: null })
})
