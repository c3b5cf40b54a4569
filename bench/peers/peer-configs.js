'use strict'

/**
 * Peers of polistes in `npm run bench`: HAProxy and nginx in front of the same fleet, each with the
 * configuration that suits the cache scenario best (tuned on the bench itself, docs/benchmarks.md
 * "Peers at their best"). Pure: the arms as data and the configuration files as strings;
 * bench/peers/peers.js writes and runs them.
 *
 * Threads and processes follow `--peer-workers` (default: polistes' `--workers`): HAProxy
 * `nbthread N` (one process, so one pid carries all its CPU); nginx with one worker runs as one
 * process (`master_process off`), with N > 1 as a master and N worker processes, whose CPU
 * bench/peers/peers.js sums.
 *
 * Each configuration is built from a table of directives per section (the defaults below), which an
 * arm's `tuning` overrides: a value replaces the default, `null` removes the directive. The
 * variant arms (`explicit: true`) are the alternatives the tuning measured; they run only when
 * named in `--peers`, so the table in docs/benchmarks.md can be reproduced.
 */

/**
 * @typedef {{ [section: string]: { [directive: string]: string | number | null } }} Tuning
 * @typedef {{ peer: 'haproxy' | 'nginx', mode: 'uri' | 'uri-consistent' | 'uri-bounded' | 'rr' | 'leastconn',
 *   describe: string, balanceFactor?: number, tuning?: Tuning, explicit?: boolean }} PeerArm
 */

/**
 * HAProxy's directives by section. A directive with an empty value is a bare keyword line.
 * tune.bufsize 64k: a whole 62 KB page fits one buffer, so a response takes one recv and one send
 * instead of about three each with 16 KB (0.47 -> 0.42 CPU-s per 10k requests, medians of the
 * tuning runs). `option splice-response` was tried and left out: with 64 KB buffers HAProxy never
 * splices (the page is already in the buffer), and it measured the same.
 */
const HAPROXY_DEFAULTS = Object.freeze({
  global: Object.freeze({
    maxconn: 4096,
    'tune.bufsize': 65536
  }),
  defaults: Object.freeze({
    mode: 'http',
    'option http-keep-alive': '', // keep both sides open between requests (HAProxy's default, said aloud)
    'http-reuse': 'always', // any idle server connection serves any client's request
    // a server that refuses connections (killed by --churn) costs a request nothing: after the
    // retries the request goes to another server, as nginx's proxy_next_upstream and polistes do
    // (no effect while every server answers)
    retries: 3,
    'option redispatch': '',
    'timeout connect': '5s',
    'timeout client': '30s',
    'timeout server': '30s',
    'timeout http-keep-alive': '30s'
  })
})

/**
 * nginx's directives by section. No access log; upstream keep-alive over HTTP/1.1 with as many
 * requests per connection as the run sends; responses relayed unbuffered through one 64 KB buffer,
 * which holds a whole 62 KB page, so a response takes one read and one write (nginx's stock 8 x 4 KB
 * buffers: about 11 reads and 7 writes). CPU-s per 10k requests, medians of the tuning runs: stock
 * buffers 0.73, 16 x 8 KB buffered 0.39, unbuffered through 64 KB 0.33 (16 KB: 0.52; 128 KB: 0.32,
 * no gain).
 */
const NGINX_DEFAULTS = Object.freeze({
  main: Object.freeze({}),
  events: Object.freeze({ worker_connections: 4096 }),
  http: Object.freeze({
    access_log: 'off',
    tcp_nodelay: 'on',
    keepalive_timeout: '75s',
    keepalive_requests: 1000000
  }),
  upstream: Object.freeze({
    keepalive: 64,
    keepalive_requests: 1000000,
    keepalive_timeout: '60s'
  }),
  location: Object.freeze({
    proxy_http_version: '1.1',
    proxy_set_header: 'Connection ""',
    proxy_buffering: 'off',
    proxy_buffer_size: '64k',
    proxy_buffers: '4 64k' // unused unbuffered, but nginx checks them against proxy_buffer_size
  })
})

/** Arms by label, in the order the bench runs them. */
const PEER_ARMS = {
  'haproxy-uri': { peer: 'haproxy', mode: 'uri', describe: 'HAProxy balance uri, hash-type consistent' },
  'haproxy-uri-bounded': {
    peer: 'haproxy',
    mode: 'uri-bounded',
    describe: 'HAProxy balance uri, hash-type consistent, hash-balance-factor 125'
  },
  'haproxy-rr': { peer: 'haproxy', mode: 'rr', describe: 'HAProxy balance roundrobin' },
  // the capacity scenario's (issue 28), run only when named: bounded-load hashing at looser factors
  // (HAProxy's hash-balance-factor, in percent of the mean load), and least-connections
  'haproxy-uri-bounded-150': {
    peer: 'haproxy',
    mode: 'uri-bounded',
    balanceFactor: 150,
    explicit: true,
    describe: 'HAProxy balance uri, hash-type consistent, hash-balance-factor 150'
  },
  'haproxy-uri-bounded-200': {
    peer: 'haproxy',
    mode: 'uri-bounded',
    balanceFactor: 200,
    explicit: true,
    describe: 'HAProxy balance uri, hash-type consistent, hash-balance-factor 200'
  },
  'haproxy-leastconn': { peer: 'haproxy', mode: 'leastconn', explicit: true, describe: 'HAProxy balance leastconn' },
  'nginx-uri': { peer: 'nginx', mode: 'uri', describe: 'nginx hash $request_uri (over the server list)' },
  'nginx-rr': { peer: 'nginx', mode: 'rr', describe: 'nginx round-robin' },
  // run only when named: the ring of nginx's `consistent` hashes each server's ip:port, and the
  // bench's backends listen on ephemeral ports, so its hit rate changes from run to run
  'nginx-uri-consistent': {
    peer: 'nginx',
    mode: 'uri-consistent',
    explicit: true,
    describe: 'nginx hash $request_uri consistent (ring keyed by ephemeral ports)'
  },
  // the tuning's baselines, run only when named (docs/benchmarks.md, "Peers at their best")
  'haproxy-uri-untuned': {
    peer: 'haproxy',
    mode: 'uri',
    explicit: true,
    describe: 'haproxy-uri with HAProxy\'s default 16 KB buffers',
    tuning: { global: { 'tune.bufsize': null } }
  },
  'nginx-uri-untuned': {
    peer: 'nginx',
    mode: 'uri',
    explicit: true,
    describe: 'nginx-uri with nginx\'s stock proxy buffers (buffering on, 8 x 4 KB)',
    tuning: { location: { proxy_buffering: 'on', proxy_buffer_size: null, proxy_buffers: null } }
  },
  'nginx-uri-buffered': {
    peer: 'nginx',
    mode: 'uri',
    explicit: true,
    describe: 'nginx-uri buffering in memory (proxy_buffers 16 8k, proxy_buffer_size 8k)',
    tuning: { location: { proxy_buffering: 'on', proxy_buffer_size: '8k', proxy_buffers: '16 8k' } }
  }
}

/** Peer programs, by name. */
const PEERS = ['haproxy', 'nginx']

/** Keep-alive connections nginx keeps open to the upstreams (per worker). */
const NGINX_KEEPALIVE = NGINX_DEFAULTS.upstream.keepalive

/** @param {string} url e.g. "http://127.0.0.1:9101" @returns {string} "127.0.0.1:9101" */
function hostPort (url) {
  const u = new URL(url)
  if (u.protocol !== 'http:') throw new Error(`peer backends must be http:// URLs, got ${url}`)
  return `${u.hostname}:${u.port || 80}`
}

function checkCommon ({ backends, port, host, workers }) {
  if (!Array.isArray(backends) || backends.length === 0) throw new Error('a peer needs at least one backend')
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`peer port must be 1..65535, got ${port}`)
  if (typeof host !== 'string' || !host) throw new Error('peer host missing')
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) {
    throw new Error(`peer workers must be 1..64, got ${workers}`)
  }
}

/** A name safe in both configuration languages. */
function serverName (backend, i) {
  const id = String(backend.id ?? i + 1).replace(/[^A-Za-z0-9_.-]/g, '_')
  return id || `b${i + 1}`
}

/**
 * Section tables with an arm's tuning applied: a value replaces, `null` removes, a new name is added.
 * @param {Tuning} defaults
 * @param {Tuning} [tuning]
 * @returns {{ [section: string]: { [directive: string]: string | number } }}
 */
function applyTuning (defaults, tuning = {}) {
  for (const section of Object.keys(tuning)) {
    if (!Object.hasOwn(defaults, section)) {
      throw new Error(`unknown section "${section}" in peer tuning; expected one of ` +
        `${Object.keys(defaults).join(', ')}`)
    }
  }
  const out = {}
  for (const [section, directives] of Object.entries(defaults)) {
    const merged = { ...directives, ...(tuning[section] || {}) }
    out[section] = Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== null && v !== undefined))
  }
  return out
}

/** Directive lines of one section: `name value` + terminator, indented. */
function directiveLines (directives, indent, terminator = '') {
  return Object.entries(directives).map(([k, v]) => `${indent}${v === '' ? k : `${k} ${v}`}${terminator}`)
}

/**
 * The active check of a run with --churn, for every arm that has one: HAProxy's `check inter 1s
 * fall 2 rise 1` below, and the polistes arms' `healthCheck` (bench/children/balancer-child.js, on
 * the backends' `/_stats`). nginx (open source) has passive checks only.
 */
const CHURN_HEALTH_CHECK = Object.freeze({ path: '/_stats', intervalMs: 1000, timeoutMs: 500, rise: 1, fall: 2 })

/** HAProxy's server check option for CHURN_HEALTH_CHECK, plus the passive mark-down. */
const CHURN_CHECK_LINE = ` check inter ${CHURN_HEALTH_CHECK.intervalMs / 1000}s fall ` +
  `${CHURN_HEALTH_CHECK.fall} rise ${CHURN_HEALTH_CHECK.rise} observe layer4 error-limit 1 on-error mark-down`

/**
 * HAProxy's retries in a run with health checks (--churn, --kill), as a demanding user sets them for a
 * server that may crash: every retry goes to another server (`option redispatch 1`; bare, only the last
 * of the 3 does, after HAProxy's 1 s turn-around on the dead one), and a request whose server closed or
 * reset the connection before any byte of answer is retried too (`retry-on conn-failure empty-response`;
 * the default retries only a failed connect). The fleet is GETs only, safe to send twice.
 */
const CHURN_RETRIES = Object.freeze({ 'retry-on': 'conn-failure empty-response', 'option redispatch': '1' })

/** HAProxy's hash-balance-factor of the `uri-bounded` mode unless an arm sets its own (percent of the mean load). */
const DEFAULT_BALANCE_FACTOR = 125

/**
 * haproxy.cfg for one arm.
 * @param {{ mode: 'uri' | 'uri-bounded' | 'rr' | 'leastconn', backends: Array<{ id?: string, url: string }>, host:
 *   string, port: number, workers?: number, balanceFactor?: number, tuning?: Tuning, healthChecks?: boolean }} params
 *   workers: threads (`nbthread`), default 1; balanceFactor: `hash-balance-factor` of mode uri-bounded,
 *   an integer above 100 (default 125); healthChecks (runs with --churn): a TCP connect check
 *   of every server each second, and a server marked down at its first connection error (`observe
 *   layer4 error-limit 1 on-error mark-down`, the passive check nginx and polistes have), so a killed
 *   server does not cost each request sent to it HAProxy's one-second retry turn-around; and the retries of
 *   CHURN_RETRIES (each on another server, a reset before any answer retried too)
 * @returns {string}
 */
function haproxyConfig ({
  mode, backends, host, port, workers = 1, balanceFactor = DEFAULT_BALANCE_FACTOR, tuning, healthChecks = false
}) {
  checkCommon({ backends, port, host, workers })
  if (!Number.isInteger(balanceFactor) || balanceFactor <= 100) {
    throw new Error(`hash-balance-factor must be an integer above 100, got ${balanceFactor}`)
  }
  const balance = {
    uri: ['balance uri', 'hash-type consistent'],
    'uri-bounded': ['balance uri', 'hash-type consistent', `hash-balance-factor ${balanceFactor}`],
    rr: ['balance roundrobin'],
    leastconn: ['balance leastconn']
  }[mode]
  if (!balance) throw new Error(`unknown haproxy mode "${mode}"`)
  const d = applyTuning(healthChecks
    ? { ...HAPROXY_DEFAULTS, defaults: { ...HAPROXY_DEFAULTS.defaults, ...CHURN_RETRIES } }
    : HAPROXY_DEFAULTS, tuning)
  return [
    'global',
    `  nbthread ${workers}`,
    ...directiveLines(d.global, '  '),
    '',
    'defaults',
    ...directiveLines(d.defaults, '  '),
    '',
    'frontend bench',
    `  bind ${host}:${port}`,
    '  default_backend fleet',
    '',
    'backend fleet',
    ...balance.map((l) => `  ${l}`),
    ...backends.map((b, i) => `  server ${serverName(b, i)} ${hostPort(b.url)}${healthChecks ? CHURN_CHECK_LINE : ''}`),
    ''
  ].join('\n')
}

/**
 * nginx.conf for one arm, with every path nginx writes inside `dir` and no access log.
 * One worker: one process (`master_process off`). More: a master and `worker_processes N`; when the
 * bench runs as root, the workers stay root (`user`), so they can write in `dir` as the master does.
 * @param {{ mode: 'uri' | 'uri-consistent' | 'rr', backends: Array<{ url: string }>, host: string, port: number, dir:
 *   string, workers?: number, user?: string, tuning?: Tuning }} params
 * @returns {string}
 */
function nginxConfig ({ mode, backends, host, port, dir, workers = 1, user, tuning }) {
  checkCommon({ backends, port, host, workers })
  if (typeof dir !== 'string' || !dir.startsWith('/')) {
    throw new Error('nginx needs an absolute directory for its files')
  }
  const balance = { uri: ['hash $request_uri;'], 'uri-consistent': ['hash $request_uri consistent;'], rr: [] }[mode]
  if (!balance) throw new Error(`unknown nginx mode "${mode}"`)
  const d = applyTuning(NGINX_DEFAULTS, tuning)
  return [
    'daemon off;',
    ...(workers === 1
      ? ['master_process off;', 'worker_processes 1;']
      : ['master_process on;', `worker_processes ${workers};`]),
    ...(workers > 1 && user ? [`user ${user};`] : []),
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log warn;`,
    ...directiveLines(d.main, '', ';'),
    'events {',
    ...directiveLines(d.events, '  ', ';'),
    '}',
    'http {',
    ...directiveLines(d.http, '  ', ';'),
    `  client_body_temp_path ${dir}/body;`,
    `  proxy_temp_path ${dir}/proxy;`,
    `  fastcgi_temp_path ${dir}/fastcgi;`,
    `  uwsgi_temp_path ${dir}/uwsgi;`,
    `  scgi_temp_path ${dir}/scgi;`,
    '  upstream fleet {',
    ...balance.map((l) => `    ${l}`),
    ...backends.map((b) => `    server ${hostPort(b.url)};`),
    ...directiveLines(d.upstream, '    ', ';'),
    '  }',
    '  server {',
    `    listen ${host}:${port};`,
    '    location / {',
    '      proxy_pass http://fleet;',
    ...directiveLines(d.location, '      ', ';'),
    '    }',
    '  }',
    '}',
    ''
  ].join('\n')
}

/**
 * Resolve a `--peers` value into arm labels. A program name stands for its arms except the
 * explicit-only variants, which run when named.
 * @param {string} value "none", or comma-separated peer names ("haproxy") and arm labels ("nginx-uri")
 * @returns {string[]} arm labels in PEER_ARMS order
 * @throws {Error} on an unknown name
 */
function parsePeers (value) {
  const names = String(value).split(',').map((s) => s.trim()).filter(Boolean)
  if (names.length === 1 && names[0] === 'none') return []
  if (names.length === 0) throw new Error('--peers needs "none" or at least one name')
  const wanted = new Set()
  for (const name of names) {
    if (PEERS.includes(name)) {
      for (const [label, arm] of Object.entries(PEER_ARMS)) if (arm.peer === name && !arm.explicit) wanted.add(label)
    } else if (Object.hasOwn(PEER_ARMS, name)) {
      wanted.add(name)
    } else {
      throw new Error(`unknown peer "${name}"; expected none, ${PEERS.join(', ')} or one of ` +
        `${Object.keys(PEER_ARMS).join(', ')}`)
    }
  }
  return Object.keys(PEER_ARMS).filter((label) => wanted.has(label))
}

module.exports = {
  PEER_ARMS,
  CHURN_HEALTH_CHECK,
  NGINX_KEEPALIVE,
  HAPROXY_DEFAULTS,
  NGINX_DEFAULTS,
  applyTuning,
  haproxyConfig,
  nginxConfig,
  parsePeers
}
