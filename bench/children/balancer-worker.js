'use strict'

/**
 * One worker of the bench's balancer child when it runs with `--workers N` (node:cluster): it
 * starts the balancer on the port the cluster shares, and answers the primary's `cpu` and `stats`
 * requests over IPC, so the child can sum the CPU time of every worker.
 * Messages: `{ type: 'start', options }` -> `{ type: 'started', url, port, pid }`;
 * `{ type: 'cpu' | 'stats', id }` -> `{ type: 'reply', id, value }`; `{ type: 'close' }` closes and exits.
 */

const { startBalancer } = require('../../src')

let lb

process.on('message', async (msg) => {
  if (!msg || typeof msg !== 'object') return
  try {
    if (msg.type === 'start') {
      lb = await startBalancer(msg.options)
      process.send({ type: 'started', url: lb.url, port: lb.port, pid: process.pid })
    } else if (msg.type === 'cpu') {
      process.send({ type: 'reply', id: msg.id, value: process.cpuUsage() })
    } else if (msg.type === 'stats') {
      process.send({ type: 'reply', id: msg.id, value: lb.stats() })
    } else if (msg.type === 'close') {
      if (lb) await lb.close()
      process.exit(0)
    }
  } catch (err) {
    process.send({ type: msg.type === 'start' ? 'failed' : 'reply', id: msg.id, error: err.message })
  }
})
process.on('disconnect', () => process.exit(0))
