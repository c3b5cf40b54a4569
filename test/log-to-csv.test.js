'use strict'

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { startBalancer } = require('../src')
const { createAccessLog } = require('../src/observe/access-log')
const { csvRow, HEADER } = require('../src/observe/log-to-csv')
const { request, runNode, startUpstream } = require('./helper')

const SCRIPT = path.join(__dirname, '..', 'src', 'observe', 'log-to-csv.js')

describe('log-to-csv: one row', () => {
  test('an access line becomes timestamp, backend, latency_ms, status, cache', () => {
    const line = JSON.stringify({ level: 30, time: Date.UTC(2025, 0, 2, 3, 4, 5, 678), method: 'GET', path: '/p', status: 200, upstream: 'c', attempts: 1, ms: 0.62, cache: 'HIT', bytes: 10, msg: 'request' })
    expect(csvRow(line)).toBe('2025-01-02T03:04:05.678Z,c,0.62,200,HIT')
  })

  test('no upstream and no cache leave empty cells; a comma is quoted', () => {
    expect(csvRow('{"time":0,"status":503,"upstream":null,"ms":0.1}')).toBe('1970-01-01T00:00:00.000Z,,0.1,503,')
    expect(csvRow('{"time":0,"status":200,"upstream":"a,b","ms":1}')).toBe('1970-01-01T00:00:00.000Z,"a,b",1,200,')
  })

  test('other log lines are left out (null); text that is not JSON is undefined', () => {
    expect(csvRow('{"level":30,"time":1,"msg":"polistes listening"}')).toBeNull()
    expect(csvRow('')).toBeNull()
    expect(csvRow('[09:30:00.000] INFO: request')).toBeUndefined()
  })
})

describe('log-to-csv: the command', () => {
  let dir
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-csv-')) })
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }))

  test('turns a real balancer\'s access log into CSV, from a file or from stdin', async () => {
    const upstream = await startUpstream((req, res) => {
      res.writeHead(200, { 'x-cache': req.url === '/hot' ? 'HIT' : 'MISS' })
      res.end('ok')
    })
    const file = path.join(dir, 'access.log')
    const log = createAccessLog({ file })
    const lb = await startBalancer({ backends: [{ url: upstream.url, id: 'web1' }], port: 0, accessLog: log })
    try {
      for (const p of ['/hot', '/cold', '/hot']) await request(`${lb.url}${p}`)
    } finally {
      await lb.close({ graceMs: 500 })
      await log.close()
      await upstream.close()
    }
    fs.appendFileSync(file, '{"level":30,"time":1,"msg":"stopped"}\n')

    const { code, stdout, stderr } = await runNode(SCRIPT, [file])
    expect([code, stderr]).toEqual([0, ''])
    const rows = stdout.trim().split('\n')
    expect(rows[0]).toBe(HEADER)
    expect(rows.slice(1).map((r) => r.split(',').slice(1).filter((_, i) => i !== 1))).toEqual([
      ['web1', '200', 'HIT'], ['web1', '200', 'MISS'], ['web1', '200', 'HIT']
    ])
    for (const r of rows.slice(1)) {
      const [time, , ms] = r.split(',')
      expect(new Date(time).toISOString()).toBe(time)
      expect(Number(ms)).toBeGreaterThan(0)
    }

    const child = spawn(process.execPath, [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] })
    let piped = ''
    child.stdout.on('data', (d) => { piped += d })
    child.stdin.end(fs.readFileSync(file))
    const exit = await new Promise((resolve) => child.on('close', resolve))
    expect(exit).toBe(0)
    expect(piped).toBe(stdout)
  })

  test('bad input: one line and exit 2', async () => {
    const missing = await runNode(SCRIPT, [path.join(dir, 'nope.log')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/^log-to-csv: cannot read .*nope\.log: ENOENT\n$/)
    const pretty = path.join(dir, 'pretty.log')
    fs.writeFileSync(pretty, '[09:30:00.000] INFO: request\n    method: "GET"\n')
    const text = await runNode(SCRIPT, [pretty])
    expect(text.code).toBe(2)
    expect(text.stderr).toMatch(/^log-to-csv: no access-log line in .*pretty\.log \(2 line\(s\) are not JSON: log with --log-format json or --access-log-file\)\n$/)
    const flag = await runNode(SCRIPT, ['--out', 'x'])
    expect([flag.code, flag.stderr]).toEqual([2, 'log-to-csv: unknown option --out (usage: log-to-csv [file])\n'])
  })
})
