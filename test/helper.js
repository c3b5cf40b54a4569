'use strict'

/**
 * Shared test helpers. Add to this file; do not rewrite what others use.
 */

const http = require('node:http')
const { spawn } = require('node:child_process')

/**
 * One HTTP request with the path sent exactly as given (no URL normalization, so `/../x` and
 * `/%2e%2e/x` reach the server unchanged) and a hard time bound.
 *
 * @param {string} base server origin, e.g. "http://127.0.0.1:1234"
 * @param {string} path raw request target
 * @param {{ method?: string, headers?: object, timeoutMs?: number, agent?: http.Agent|false }} [options]
 * @returns {Promise<{ status: number, headers: object, body: Buffer, ms: number }>} rejects on a
 *   socket error (e.g. a dropped connection) or the timeout
 */
function rawRequest (base, path, { method = 'GET', headers = {}, timeoutMs = 3000, agent = false } = {}) {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = http.request({ host: hostname, port, path, method, headers, agent }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), ms: performance.now() - started }))
      res.on('error', reject)
    })
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer from ${base}${path} within ${timeoutMs} ms`)))
    req.on('error', reject)
    req.end()
  })
}

/**
 * Run a node script to completion with a time bound.
 *
 * @param {string} script path of the script
 * @param {string[]} args its arguments
 * @param {{ timeoutMs?: number }} [options]
 * @returns {Promise<{ code: number|null, signal: string|null, stdout: string, stderr: string }>}
 */
function runNode (script, args = [], { timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${script} did not exit within ${timeoutMs} ms`)) }, timeoutMs)
    child.on('error', (err) => { clearTimeout(timer); reject(err) })
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }) })
  })
}

module.exports = { rawRequest, runNode }
