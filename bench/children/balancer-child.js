'use strict'

/**
 * Child process holding the balancer alone, so its CPU time (`process.cpuUsage()`) is the
 * balancer's and nothing else competes in its event loop. Run with `node --cpu-prof` to profile.
 *
 * Requests: `start { backends, algo, policyOptions, keepAlive, retryOn, tryTimeoutMs, host, workers, engine,
 * healthChecks?, balancerOptions?, accessLogFile? }` -> `{ url, port, pids }`
 * (`balancerOptions`: more balancer options, e.g. `{ failTimeoutMs: 1000 }`, a scenario's own;
 * `healthChecks` (runs with --churn): the backends are checked actively as HAProxy checks them,
 * every second, down after 2 failures, up after 1 success, on the backends' `/_stats`)
 * (with `accessLogFile`, one access-log line per request goes there, as `--access-log-file` does);
 * (`reference`: `{ name, fleet }`, a reference of bench/model/reference-learners.js told the fleet, as the
 * capacity scenario's `--algos clairvoyant,counting` run it, instead of `algo`);
 * `cpu` -> CPU time in microseconds; `stats` -> `lb.stats()`. `close` stops it and exits
 * (normally, so that --cpu-prof writes its profile).
 *
 * With `workers` > 1 this child is a node:cluster primary, like `polistes --workers N`: N workers
 * (bench/children/balancer-worker.js) share the port; `cpu` is the sum over the primary and every worker, and
 * `stats` sums the workers' counters (the policy state is the first worker's).
 */

const path = require('node:path')
const cluster = require('node:cluster')
const { serve } = require('./child')
const { CHURN_HEALTH_CHECK } = require('../peers/peer-configs')
const { REFERENCES } = require('../model/reference-learners')

let lb
let accessLog = null
let workers = []
let nextId = 1
const pending = new Map()

async function start ({
  backends,
  algo,
  policyOptions = {},
  keepAlive = true,
  retryOn = [],
  tryTimeoutMs = null,
  host = '127.0.0.1',
  workers: n = 1,
  accessLogFile,
  engine,
  healthChecks = false,
  balancerOptions = {},
  reference
}) {
  const options = {
    ...(healthChecks ? { healthCheck: CHURN_HEALTH_CHECK } : {}),
    ...balancerOptions,
    backends,
    algo,
    policyOptions,
    port: 0,
    host,
    keepAlive,
    retryOn,
    tryTimeoutMs,
    engine
  }
  if (n <= 1) {
    const { startBalancer } = require('../../src')
    if (accessLogFile) accessLog = require('../../src/observe/access-log').createAccessLog({ file: accessLogFile })
    const policy = reference ? REFERENCES[reference.name](null, null, reference.fleet) : undefined
    lb = await startBalancer({ ...options, ...(policy ? { policy, algo: undefined } : {}), accessLog })
    return { url: lb.url, port: lb.port, pids: [process.pid] }
  }
  // the same rule as `polistes --workers N`: independent wasp colonies get a balanced packing to agree on
  const { workerConfig } = require('../../src/run/cluster')
  const resolved = workerConfig({ algo, policyOptions, workers: n })
  cluster.setupPrimary({
    exec: path.join(__dirname, 'balancer-worker.js'),
    execArgv: process.execArgv.filter((a) => !a.startsWith('--cpu-prof-name')) // one profile per worker
  })
  workers = Array.from({ length: n }, () => cluster.fork())
  for (const w of workers) {
    w.on('message', (msg) => {
      if (msg && msg.type === 'reply' && pending.has(msg.id)) {
        const { resolve, reject } = pending.get(msg.id)
        pending.delete(msg.id)
        if (msg.error) reject(new Error(msg.error))
        else resolve(msg.value)
      }
    })
  }
  const started = await Promise.all(workers.map((w) => new Promise((resolve, reject) => {
    w.on('message', (msg) => {
      if (msg && msg.type === 'started') resolve(msg)
      if (msg && msg.type === 'failed') reject(new Error(msg.error))
    })
    w.once('exit', (code) => reject(new Error(`balancer worker exited (code ${code})`)))
    w.send({ type: 'start', options: { ...options, policyOptions: resolved.policyOptions } })
  })))
  return { url: started[0].url, port: started[0].port, pids: started.map((s) => s.pid) }
}

function ask (worker, type) {
  const id = nextId++
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject })
    worker.send({ type, id })
  })
}

async function cpu () {
  const own = process.cpuUsage()
  if (workers.length === 0) return own
  const all = await Promise.all(workers.map((w) => ask(w, 'cpu')))
  return all.reduce((a, c) => ({ user: a.user + c.user, system: a.system + c.system }), own)
}

async function stats () {
  if (workers.length === 0) return lb.stats()
  const all = await Promise.all(workers.map((w) => ask(w, 'stats')))
  const sum = (f) => all.reduce((a, s) => a + f(s), 0)
  return {
    ...all[0],
    pid: all.map((s) => s.pid),
    requests: sum((s) => s.requests),
    responses: sum((s) => s.responses),
    retries: sum((s) => s.retries),
    noUpstream: sum((s) => s.noUpstream),
    clientAborts: sum((s) => s.clientAborts),
    failures: {
      connect: sum((s) => s.failures.connect),
      timeout: sum((s) => s.failures.timeout),
      stream: sum((s) => s.failures.stream)
    }
  }
}

serve({ start, cpu, stats }, async () => {
  if (lb) await lb.close()
  if (accessLog) await accessLog.close()
  await Promise.all(workers.map((w) => new Promise((resolve) => {
    if (w.isDead()) return resolve()
    w.once('exit', resolve)
    w.send({ type: 'close' })
  })))
})
