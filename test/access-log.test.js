'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { once } = require('node:events')
const { Writable } = require('node:stream')
const pino = require('pino')
const { startBalancer } = require('../src')
const { createAccessLog } = require('../src/observe/access-log')
const { request, startUpstream, closedPort, waitFor } = require('./helper')

const CLI = path.join(__dirname, '..', 'bin', 'polistes.js')

function tmpFile (name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-access-'))
  return { file: path.join(dir, name), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

const readLines = (file) => fs.readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l))

describe('access log', () => {
  let upstream
  let tmp
  beforeEach(async () => {
    upstream = await startUpstream((req, res) => {
      res.writeHead(req.url === '/gone' ? 404 : 200, { 'x-cache': req.url.startsWith('/hit') ? 'HIT' : 'MISS' })
      res.end('y'.repeat(1000))
    })
    tmp = tmpFile('access.log')
  })
  afterEach(async () => {
    await upstream.close()
    tmp.cleanup()
  })

  test('one pino line per request to a file: method, path, status, upstream, attempts, ms, cache, bytes', async () => {
    const log = createAccessLog({ file: tmp.file })
    const dead = await closedPort()
    const lb = await startBalancer({
      backends: [{ url: `http://127.0.0.1:${dead}`, id: 'dead' }, { url: upstream.url, id: 'live' }],
      algo: 'round-robin',
      port: 0,
      accessLog: log
    })
    try {
      expect((await request(`${lb.url}/hit1?q=2`)).status).toBe(200) // dead first: retried on live
      expect((await request(`${lb.url}/miss`)).status).toBe(200)
      expect((await request(`${lb.url}/gone`)).status).toBe(404)
      await request(`${lb.url}/_polistes/stats`) // admin requests are not logged
    } finally {
      await lb.close({ graceMs: 500 })
      await log.close()
    }
    const lines = readLines(tmp.file)
    expect(lines.map((l) => [l.method, l.path, l.status, l.upstream, l.attempts, l.cache])).toEqual([
      ['GET', '/hit1?q=2', 200, 'live', 2, 'HIT'],
      ['GET', '/miss', 200, 'live', 1, 'MISS'],
      ['GET', '/gone', 404, 'live', 1, 'MISS']
    ])
    for (const l of lines) {
      expect(l).toMatchObject({ level: 30, msg: 'request' })
      expect(typeof l.time).toBe('number')
      expect(l.ms).toBeGreaterThan(0)
      expect(l.bytes).toBeGreaterThan(1000) // body and headers
      expect(l.bytes).toBeLessThan(1500)
    }
  })

  test('without a file, lines go to the given logger at info', async () => {
    const lines = []
    const sink = new Writable({ write (chunk, enc, cb) { lines.push(JSON.parse(chunk)); cb() } })
    const lb = await startBalancer({ backends: [upstream.url], port: 0, accessLog: createAccessLog({ logger: pino({ base: undefined }, sink) }) })
    try {
      await request(`${lb.url}/hit`)
    } finally {
      await lb.close({ graceMs: 500 })
    }
    await waitFor(() => lines.length === 1)
    expect(lines[0]).toMatchObject({ method: 'GET', path: '/hit', status: 200, attempts: 1, cache: 'HIT', msg: 'request' })
    const silent = createAccessLog({ logger: pino({ level: 'warn' }, sink) })
    silent.write({ method: 'GET', path: '/x', status: 200, upstream: 'a', attempts: 1, ms: 1, cache: 'HIT', bytes: 1 })
    expect(lines).toHaveLength(1)
  })

  test('a client that leaves before the answer is logged as 499', async () => {
    const slow = await startUpstream(() => {}) // never answers
    const log = createAccessLog({ file: tmp.file })
    const lb = await startBalancer({ backends: [slow.url], port: 0, accessLog: log })
    try {
      await expect(request(`${lb.url}/slow`, { timeoutMs: 200 })).rejects.toThrow()
      await waitFor(() => lb.stats().clientAborts === 1)
    } finally {
      await lb.close({ graceMs: 500 })
      await log.close()
      await slow.close()
    }
    expect(readLines(tmp.file)).toEqual([expect.objectContaining({ path: '/slow', status: 499, attempts: 1 })])
  })

  test('a file that cannot be opened is a one-line ERR_POLISTES_BAD_OPTION', () => {
    expect(() => createAccessLog({ file: path.join(tmp.file, 'no', 'such', 'dir', 'x.log') }))
      .toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(/cannot open access log file .*ENOENT/) }))
  })
})

describe('access log from the CLI', () => {
  /** Start the CLI, resolve its URL from the JSON start-up line; stop() sends SIGTERM and waits. */
  async function startCli (args) {
    const child = spawn(process.execPath, [CLI, '--port', '0', '--fleet-base-port', '0', '--fleet-size', '2', '--log-format', 'json', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    const url = await waitFor(() => /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1], { timeoutMs: 10000 })
    return {
      url,
      output: () => out,
      async stop () {
        const exited = once(child, 'exit')
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 8000)
        await exited
        clearTimeout(timer)
      }
    }
  }

  test('--access-log-file writes one line per request; without it nothing is logged per request', async () => {
    const tmp = tmpFile('cli-access.log')
    try {
      const cli = await startCli(['--access-log-file', tmp.file])
      try {
        for (let i = 1; i <= 4; i++) expect((await request(`${cli.url}/page${i}.html`)).status).toBe(200)
      } finally {
        await cli.stop()
      }
      const lines = readLines(tmp.file)
      expect(lines.map((l) => l.path)).toEqual(['/page1.html', '/page2.html', '/page3.html', '/page4.html'])
      expect(lines.every((l) => ['a', 'b'].includes(l.upstream) && l.cache === 'MISS')).toBe(true)
      expect(cli.output()).not.toMatch(/"msg":"request"/)

      const quiet = await startCli([])
      try {
        await request(`${quiet.url}/page1.html`)
      } finally {
        await quiet.stop()
      }
      expect(quiet.output()).not.toMatch(/"msg":"request"/)
      const loud = await startCli(['--access-log'])
      try {
        await request(`${loud.url}/page1.html`)
        await waitFor(() => /"msg":"request"/.test(loud.output()))
      } finally {
        await loud.stop()
      }
    } finally {
      tmp.cleanup()
    }
  }, 40000)
})
