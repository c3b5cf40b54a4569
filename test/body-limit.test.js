'use strict'

const http = require('node:http')
const net = require('node:net')
const { once } = require('node:events')
const { startBalancer } = require('../src/balancer')
const { rawRequest, startUpstream, waitFor, sleep } = require('./helper')

/** The request body limit, end to end: client → balancer → upstream. */

let upstream
let lb
const seen = [] // what the upstream received: { url, bytes, complete }
beforeAll(async () => {
  upstream = await startUpstream((req, res) => {
    const record = { url: req.url, bytes: 0, complete: false, aborted: false }
    seen.push(record)
    if (req.url === '/early') res.writeHead(200).write('started\n') // answers before the body is in
    req.on('data', (d) => { record.bytes += d.length })
    req.on('close', () => { record.aborted = !req.complete })
    req.on('end', () => {
      record.complete = true
      res.end(`got ${record.bytes}`)
    })
  })
})
afterAll(() => upstream.close())
afterEach(async () => {
  if (lb) await lb.close({ graceMs: 100 })
  lb = undefined
  seen.length = 0
})

/**
 * POST a chunked body (no Content-Length) of `chunks` × `size` bytes, a chunk every `gapMs`.
 * @returns {Promise<{ status?: number, body: string, error?: string }>} what came back, or the socket error
 */
function postChunked (url, { chunks, size, gapMs = 5 }) {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent: false })
    const state = { stopped: false }
    req.on('response', (res) => {
      let body = ''
      res.on('data', (d) => { body += d })
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body, complete: res.complete }))
      res.on('error', (err) => resolve({ status: res.statusCode, body, error: err.code || err.message }))
    })
    req.on('error', (err) => { state.stopped = true; resolve({ error: err.code || err.message }) })
    req.on('close', () => { state.stopped = true })
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')))
    ;(async () => {
      for (let i = 0; i < chunks && !state.stopped; i++) {
        req.write(Buffer.alloc(size, 97))
        await sleep(gapMs)
      }
      if (!state.stopped) req.end()
    })()
  })
}

test('a Content-Length above the limit gets 413 at once, and nothing is forwarded', async () => {
  lb = await startBalancer({ backends: [upstream.url], port: 0, maxBodySize: 1000 })
  const res = await rawRequest(lb.url, '/upload', { method: 'POST', body: 'a'.repeat(1001) })
  expect(res.status).toBe(413)
  expect(res.headers['x-polistes-error']).toBe('body-too-large')
  expect(res.headers.connection).toBe('close')
  expect(seen).toEqual([])
  expect(lb.stats().bodyTooLarge).toBe(1)
  const ok = await rawRequest(lb.url, '/upload', { method: 'POST', body: 'a'.repeat(1000) })
  expect({ status: ok.status, body: ok.body.toString() }).toEqual({ status: 200, body: 'got 1000' })
})

test('the default limit is 1 MiB; 0 lifts it', async () => {
  lb = await startBalancer({ backends: [upstream.url], port: 0 })
  expect((await rawRequest(lb.url, '/big', { method: 'PUT', body: Buffer.alloc(1048577) })).status).toBe(413)
  expect((await rawRequest(lb.url, '/big', { method: 'PUT', body: Buffer.alloc(1048576) })).status).toBe(200)
  await lb.close()
  lb = await startBalancer({ backends: [upstream.url], port: 0, maxBodySize: 0 })
  const res = await rawRequest(lb.url, '/big', { method: 'PUT', body: Buffer.alloc(3 * 1048576), timeoutMs: 10000 })
  expect(res.body.toString()).toBe(`got ${3 * 1048576}`)
})

test('Expect: 100-continue with a body too large gets 413 and no "100 Continue": the body is never sent', async () => {
  lb = await startBalancer({ backends: [upstream.url], port: 0, maxBodySize: 1000 })
  const { port } = new URL(lb.url)
  const ask = async (length) => {
    const socket = net.connect(port, '127.0.0.1')
    await once(socket, 'connect')
    socket.write(`POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`)
    const [first] = await once(socket, 'data')
    socket.destroy()
    return first.toString()
  }
  expect(await ask(5000)).toMatch(/^HTTP\/1\.1 413 /)
  expect(await ask(500)).toMatch(/^HTTP\/1\.1 100 Continue\r\n/)
})

test('a chunked body under the limit is streamed through whole', async () => {
  lb = await startBalancer({ backends: [upstream.url], port: 0, maxBodySize: 100000 })
  const res = await postChunked(`${lb.url}/chunked`, { chunks: 9, size: 10000 })
  expect(res).toMatchObject({ status: 200, body: 'got 90000' })
})

test('a chunked body that passes the limit mid-stream: the upstream request is aborted, the client gets 413', async () => {
  lb = await startBalancer({ backends: [upstream.url], port: 0, maxBodySize: 100000 })
  const res = await postChunked(`${lb.url}/chunked`, { chunks: 30, size: 10000 })
  expect(res.status).toBe(413)
  expect(res.body).toBe('request body larger than 100000 bytes\n')
  await waitFor(() => seen.length === 1 && seen[0].aborted)
  expect(seen[0].complete).toBe(false)
  expect(seen[0].bytes).toBeLessThanOrEqual(100000)
  expect(lb.stats()).toMatchObject({ bodyTooLarge: 1, inflight: 0 })
})

test('past the limit after the upstream began its response, the client connection is cut', async () => {
  lb = await startBalancer({ backends: [upstream.url], port: 0, maxBodySize: 100000 })
  const res = await postChunked(`${lb.url}/early`, { chunks: 30, size: 10000 })
  expect(res.status).toBe(200)
  expect(res.complete).not.toBe(true) // a broken response, never one that looks whole
  expect(res.body).toBe('started\n')
  await waitFor(() => seen[0].aborted)
  expect(lb.stats().bodyTooLarge).toBe(1)
})
