'use strict'

/**
 * Run a peer (HAProxy or nginx) in front of the bench's fleet: write its configuration into a
 * temporary directory, start it in the foreground as a child process, wait for its port, read its
 * CPU time from /proc/<pid>/stat (with nginx's worker processes, the master's and every worker's),
 * and stop it and remove the directory afterwards (also when anything fails, and on exit of the
 * bench).
 *
 * {@link PeerProcess} answers the same requests as the balancer child (bench/children/child.js `Child`):
 * `start`, `cpu`, `close`, so bench/runners/trial.js runs a peer arm like a polistes arm.
 */

const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const { spawn, spawnSync, execFileSync } = require('node:child_process')
const { once } = require('node:events')
const { PEER_ARMS, haproxyConfig, nginxConfig } = require('./peer-configs')

/** Where to look besides PATH: Debian installs both programs in sbin, often missing from a user's PATH. */
const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin']

/** How to install each peer, for the notes. */
const INSTALL = { haproxy: 'apt-get install haproxy', nginx: 'apt-get install nginx-light' }

/**
 * The executable of a peer program, or null.
 * @param {string} name "haproxy" or "nginx"
 * @param {{ envPath?: string }} [options]
 * @returns {string | null}
 */
function findBinary (name, { envPath = process.env.PATH || '' } = {}) {
  const dirs = [...envPath.split(path.delimiter).filter(Boolean), ...SBIN]
  for (const dir of dirs) {
    const file = path.join(dir, name)
    try {
      fs.accessSync(file, fs.constants.X_OK)
      if (fs.statSync(file).isFile()) return file
    } catch {}
  }
  return null
}

/**
 * The version line of a peer binary, e.g. "HAProxy version 2.6.12" or "nginx/1.22.1".
 * @param {string} name
 * @param {string} binary
 * @returns {string}
 */
function peerVersion (name, binary) {
  const r = spawnSync(binary, ['-v'], { encoding: 'utf8', timeout: 5000 })
  const line = `${r.stdout || ''}${r.stderr || ''}`.split('\n')[0].trim() // nginx -v prints on stderr
  return line.replace(/^nginx version: /, '').replace(/ - https?:\S+$/, '') || 'unknown'
}

let clockTicks
/** Clock ticks per second of /proc/<pid>/stat (CLK_TCK, 100 on Linux). */
function clkTck () {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 5000 }).trim()) || 100
    } catch {
      clockTicks = 100
    }
  }
  return clockTicks
}

/**
 * CPU time of a process, in the shape of `process.cpuUsage()` (microseconds).
 * @param {string} statText contents of /proc/<pid>/stat
 * @param {number} ticksPerSecond CLK_TCK
 * @param {{ children?: boolean }} [options] children: the time of its waited-for children instead
 * @returns {{ user: number, system: number }}
 */
function parseProcStat (statText, ticksPerSecond, { children = false } = {}) {
  // the command name (field 2) is in parentheses and may hold spaces: split after the last ')'
  const fields = statText.slice(statText.lastIndexOf(')') + 2).trim().split(/\s+/)
  const user = Number(fields[children ? 13 : 11]) // utime is field 14, cutime field 16
  const system = Number(fields[children ? 14 : 12]) // stime is field 15, cstime field 17
  if (!Number.isFinite(user) || !Number.isFinite(system)) throw new Error('unreadable /proc/<pid>/stat')
  return { user: user * 1e6 / ticksPerSecond, system: system * 1e6 / ticksPerSecond }
}

/**
 * CPU time of a running process from /proc (Linux).
 * @param {number | 'self'} pid
 * @param {{ children?: boolean }} [options]
 * @returns {{ user: number, system: number }} microseconds
 */
function procCpu (pid, options) {
  return parseProcStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'), clkTck(), options)
}

/**
 * The parent pid of a process, from its /proc/<pid>/stat text (field 4).
 * @param {string} statText
 * @returns {number}
 */
function parsePpid (statText) {
  const ppid = Number(statText.slice(statText.lastIndexOf(')') + 2).trim().split(/\s+/)[1])
  if (!Number.isInteger(ppid)) throw new Error('unreadable /proc/<pid>/stat')
  return ppid
}

/**
 * The live child processes of a process (Linux, by the parent pid in every /proc/<pid>/stat).
 * @param {number} pid
 * @param {{ procDir?: string }} [options]
 * @returns {number[]}
 */
function childPids (pid, { procDir = '/proc' } = {}) {
  const out = []
  for (const name of fs.readdirSync(procDir)) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (parsePpid(fs.readFileSync(path.join(procDir, name, 'stat'), 'utf8')) === pid) out.push(Number(name))
    } catch {} // gone meanwhile
  }
  return out.sort((a, b) => a - b)
}

/**
 * CPU time of a process tree of depth one: the process, its children that have ended and been
 * waited for, and its live children (nginx's master and worker processes).
 * @param {number} pid
 * @param {{ procDir?: string, ticksPerSecond?: number }} [options]
 * @returns {{ user: number, system: number, pids: number[] }} microseconds, and the pids read
 */
function treeCpu (pid, { procDir = '/proc', ticksPerSecond = clkTck() } = {}) {
  const read = (p, opts) => parseProcStat(
    fs.readFileSync(path.join(procDir, String(p), 'stat'), 'utf8'),
    ticksPerSecond,
    opts
  )
  const own = read(pid)
  const reaped = read(pid, { children: true })
  let user = own.user + reaped.user
  let system = own.system + reaped.system
  const pids = [pid]
  for (const child of childPids(pid, { procDir })) {
    try {
      const c = read(child)
      user += c.user
      system += c.system
      pids.push(child)
    } catch {} // ended between the listing and the read
  }
  return { user, system, pids }
}

/** A TCP port free a moment ago on host. */
async function freePort (host) {
  const server = net.createServer()
  server.listen(0, host)
  await once(server, 'listening')
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

function canConnect (host, port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port })
    const done = (ok) => { socket.destroy(); resolve(ok) }
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
    socket.setTimeout(500, () => done(false))
  })
}

const live = new Set()
let exitHook = false
/** Kill the live peers and remove their directories when the bench exits or is interrupted. */
function killAllOnExit () {
  if (exitHook) return
  exitHook = true
  const cleanup = () => {
    for (const peer of live) {
      peer.kill('SIGKILL')
      try { fs.rmSync(peer.dir, { recursive: true, force: true }) } catch {}
    }
    live.clear()
  }
  process.once('exit', cleanup)
  for (const signal of ['SIGINT', 'SIGTERM']) {
    // clean up, then die of the signal as if no handler had been there
    const onSignal = () => {
      cleanup()
      for (const s of ['SIGINT', 'SIGTERM']) process.removeListener(s, handlers[s])
      process.kill(process.pid, signal)
    }
    handlers[signal] = onSignal
    process.once(signal, onSignal)
  }
}
const handlers = {}

/** One peer process for one bench arm, with the balancer child's request interface. */
class PeerProcess {
  /**
   * @param {string} label an arm of PEER_ARMS, e.g. "haproxy-uri"
   * @param {{ binary?: string }} [options] the executable (default: found on PATH)
   */
  constructor (label, { binary } = {}) {
    const arm = PEER_ARMS[label]
    if (!arm) throw new Error(`unknown peer arm "${label}"`)
    this.label = label
    this.arm = arm
    this.name = label
    this.binary = binary || findBinary(arm.peer)
    this.child = null
    this.dir = null
    this.exited = false
    this.stderr = ''
  }

  /**
   * Same protocol as bench/children/child.js: `start` -> `{ url, port }`, `cpu` -> `{ user, system }` µs.
   * Anything else rejects (a peer has no polistes stats).
   * @param {string} type
   * @param {object} [payload]
   */
  async request (type, payload = {}) {
    if (type === 'start') return this.start(payload)
    if (type === 'cpu') return this.cpu()
    throw new Error(`${this.name}: no "${type}" for a peer`)
  }

  /**
   * Write the configuration, start the peer and wait until its port accepts connections.
   * @param {{ backends: Array<{ id?: string, url: string }>, host?: string, workers?: number, timeoutMs?: number,
   *   healthChecks?: boolean }} params
   *   workers: HAProxy threads or nginx worker processes (default 1); healthChecks: HAProxy checks its
   *   servers each second (runs with --churn; nginx marks a failed server down by itself)
   * @returns {Promise<{ url: string, port: number, pid: number, version: string, config: string }>}
   */
  async start ({ backends, host = '127.0.0.1', workers = 1, timeoutMs = 10000, healthChecks = false }) {
    if (!this.binary) throw new Error(`${this.arm.peer} not found on PATH (install: ${INSTALL[this.arm.peer]})`)
    killAllOnExit()
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `polistes-peer-${this.arm.peer}-`))
    live.add(this)
    const port = await freePort(host)
    let file, args, config
    if (this.arm.peer === 'haproxy') {
      config = haproxyConfig({
        mode: this.arm.mode,
        backends,
        host,
        port,
        workers,
        balanceFactor: this.arm.balanceFactor,
        tuning: this.arm.tuning,
        healthChecks
      })
      file = path.join(this.dir, 'haproxy.cfg')
      args = ['-db', '-f', file]
    } else {
      // as root, nginx's workers would drop to nobody, who cannot write in the directory
      const user = process.getuid && process.getuid() === 0 ? os.userInfo().username : undefined
      config = nginxConfig({
        mode: this.arm.mode,
        backends,
        host,
        port,
        dir: this.dir,
        workers,
        user,
        tuning: this.arm.tuning
      })
      file = path.join(this.dir, 'nginx.conf')
      args = ['-p', this.dir, '-e', path.join(this.dir, 'error.log'), '-c', file]
    }
    fs.writeFileSync(file, config)
    this.version = peerVersion(this.arm.peer, this.binary)
    this.child = spawn(this.binary, args, { cwd: this.dir, stdio: ['ignore', 'ignore', 'pipe'] })
    this.child.stderr.setEncoding('utf8')
    this.child.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-2000) })
    let spawnError
    this.child.once('error', (err) => { spawnError = err })
    this.child.once('exit', () => { this.exited = true })

    const end = Date.now() + timeoutMs
    for (;;) {
      if (spawnError) throw new Error(`${this.name}: ${spawnError.message}`)
      if (this.exited) throw new Error(`${this.name} exited at startup: ${this.errorText()}`)
      if (await canConnect(host, port)) break
      if (Date.now() > end) {
        throw new Error(`${this.name}: port ${port} not open within ${timeoutMs} ms: ${this.errorText()}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    return { url: `http://${host}:${port}`, port, pid: this.child.pid, version: this.version, config }
  }

  errorText () {
    let text = this.stderr
    try { text += fs.readFileSync(path.join(this.dir, 'error.log'), 'utf8') } catch {}
    return text.trim().split('\n').slice(-3).join(' | ') || 'no message'
  }

  /**
   * CPU time of the peer, microseconds: of its process (HAProxy's threads are all in it) and of
   * its worker processes (nginx with a master), live or waited for.
   * @returns {{ user: number, system: number }}
   */
  cpu () {
    if (!this.child || this.exited) throw new Error(`${this.name} is not running`)
    const { user, system } = treeCpu(this.child.pid)
    return { user, system }
  }

  /**
   * Send a signal to the peer and to its worker processes, which would outlive a master killed
   * with SIGKILL and keep the port.
   * @param {NodeJS.Signals} signal
   */
  kill (signal) {
    if (!this.child || this.exited) return
    let children = []
    try { children = childPids(this.child.pid) } catch {}
    try { this.child.kill(signal) } catch {}
    for (const pid of children) try { process.kill(pid, signal) } catch {}
  }

  /**
   * Stop the peer (SIGTERM, SIGKILL to it and its workers after the grace period) and remove its directory.
   * @param {number} [graceMs]
   */
  async close (graceMs = 3000) {
    try {
      if (this.child && !this.exited) {
        const exited = once(this.child, 'exit')
        this.child.kill('SIGTERM')
        const timer = setTimeout(() => { if (!this.exited) this.kill('SIGKILL') }, graceMs)
        await exited
        clearTimeout(timer)
      }
    } finally {
      if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true })
      live.delete(this)
    }
  }
}

module.exports = { PeerProcess, findBinary, parseProcStat, parsePpid, childPids, treeCpu, procCpu, INSTALL }
