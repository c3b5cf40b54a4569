'use strict'

/**
 * The bench's child processes and their IPC: fork a script, wait for its 'ready' message, ask it
 * questions (request/reply matched by id), listen to what it pushes, and close it.
 *
 * Protocol: every message is `{ type, ... }`. The parent sends `{ type, id, ... }` for a request
 * and the child answers `{ type: 'reply', id, value }` or `{ type: 'reply', id, error }`.
 * The parent sends `{ type: 'close' }` to end a child; a child also exits when the IPC channel
 * disconnects, so no child outlives the bench.
 */

const { fork } = require('node:child_process')
const { once } = require('node:events')

class Child {
  /**
   * @param {string} script path of the child script
   * @param {{ execArgv?: string[], env?: object, name?: string }} [options]
   */
  constructor (script, { execArgv = [], env = process.env, name = script } = {}) {
    this.name = name
    this.process = fork(script, [], { execArgv, env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    this.nextId = 1
    this.pending = new Map()
    this.exited = false
    this.listeners = new Set()
    this.process.on('message', (msg) => this.onMessage(msg))
    this.process.on('exit', (code, signal) => {
      this.exited = true
      const err = new Error(`${this.name} exited (code ${code}, signal ${signal})`)
      for (const { reject } of this.pending.values()) reject(err)
      this.pending.clear()
    })
  }

  onMessage (msg) {
    if (msg && msg.type === 'reply' && this.pending.has(msg.id)) {
      const { resolve, reject } = this.pending.get(msg.id)
      this.pending.delete(msg.id)
      if (msg.error) reject(new Error(`${this.name}: ${msg.error}`))
      else resolve(msg.value)
      return
    }
    for (const listener of this.listeners) listener(msg)
  }

  /**
   * @param {(msg: object) => void} listener called with every pushed (non-reply) message
   * @returns {() => void} removes the listener
   */
  on (listener) {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /**
   * Wait for a pushed message of a type; rejects if the child exits first or on timeout.
   * @param {string} type
   * @param {number} [timeoutMs]
   * @returns {Promise<object>}
   */
  waitFor (type, timeoutMs = 30000) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => { done(); reject(new Error(`${this.name}: no "${type}" within ${timeoutMs} ms`)) },
        timeoutMs
      )
      const onExit = (code, signal) => {
        done()
        reject(new Error(`${this.name} exited before "${type}" (code ${code}, signal ${signal})`))
      }
      const off = this.on((msg) => {
        if (msg && msg.type === type) { done(); resolve(msg) }
        if (msg && msg.type === 'fatal') { done(); reject(new Error(`${this.name}: ${msg.error}`)) }
      })
      const done = () => { clearTimeout(timer); off(); this.process.off('exit', onExit) }
      this.process.once('exit', onExit)
    })
  }

  /**
   * @param {string} type request type
   * @param {object} [payload]
   * @returns {Promise<any>} the child's reply value
   */
  request (type, payload = {}) {
    if (this.exited) return Promise.reject(new Error(`${this.name} has exited`))
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.process.send({ ...payload, type, id })
    })
  }

  /** @param {object} msg sent without waiting for a reply */
  send (msg) {
    if (!this.exited) this.process.send(msg)
  }

  /**
   * Ask the child to close, and kill it if it has not exited within the grace period.
   * @param {number} [graceMs]
   */
  async close (graceMs = 5000) {
    if (this.exited) return
    const exited = once(this.process, 'exit')
    try { this.process.send({ type: 'close' }) } catch {}
    const timer = setTimeout(() => { if (!this.exited) this.process.kill('SIGKILL') }, graceMs)
    await exited
    clearTimeout(timer)
  }
}

/**
 * The child side: answer requests with handlers, exit on 'close' or when the parent goes away.
 * Every child answers `cpu` with its `process.cpuUsage()` (microseconds).
 * @param {Record<string, (msg: object) => any>} handlers by request type; may return a promise
 * @param {() => Promise<void> | void} [onClose] cleanup before exit
 */
function serve (handlers, onClose = () => {}) {
  let closing = false
  const close = async () => {
    if (closing) return
    closing = true
    try { await onClose() } catch {}
    process.exit(0)
  }
  process.on('disconnect', close)
  process.on('message', async (msg) => {
    if (!msg || typeof msg !== 'object') return
    if (msg.type === 'close') return close()
    const handler = msg.type === 'cpu' && !handlers.cpu ? () => process.cpuUsage() : handlers[msg.type]
    if (!handler) return
    try {
      const value = await handler(msg)
      if (msg.id !== undefined && process.connected) process.send({ type: 'reply', id: msg.id, value })
    } catch (err) {
      if (msg.id !== undefined && process.connected) process.send({ type: 'reply', id: msg.id, error: err.message })
    }
  })
}

module.exports = { Child, serve }
