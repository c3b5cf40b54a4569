'use strict'

/**
 * Peers of polistes in `npm run bench`: HAProxy and nginx in front of the same fleet, each with the
 * configuration that suits the cache scenario best. Pure: the arms as data and the configuration
 * files as strings; bench/peers.js writes and runs them.
 *
 * Both run single-threaded, like one polistes process: HAProxy `nbthread 1`, nginx one process
 * (`master_process off`, so the one pid carries all the CPU the bench accounts).
 */

/** @typedef {{ peer: 'haproxy' | 'nginx', mode: 'uri' | 'uri-bounded' | 'rr' }} PeerArm */

/** Arms by label, in the order the bench runs them. */
const PEER_ARMS = {
  'haproxy-uri': { peer: 'haproxy', mode: 'uri', describe: 'HAProxy balance uri, hash-type consistent' },
  'haproxy-uri-bounded': { peer: 'haproxy', mode: 'uri-bounded', describe: 'HAProxy balance uri, hash-type consistent, hash-balance-factor 125' },
  'haproxy-rr': { peer: 'haproxy', mode: 'rr', describe: 'HAProxy balance roundrobin' },
  'nginx-uri': { peer: 'nginx', mode: 'uri', describe: 'nginx hash $request_uri consistent' },
  'nginx-rr': { peer: 'nginx', mode: 'rr', describe: 'nginx round-robin' }
}

/** Peer programs, by name. */
const PEERS = ['haproxy', 'nginx']

/** Keep-alive connections nginx keeps open to the upstreams (per worker). */
const NGINX_KEEPALIVE = 64

/** @param {string} url e.g. "http://127.0.0.1:9101" @returns {string} "127.0.0.1:9101" */
function hostPort (url) {
  const u = new URL(url)
  if (u.protocol !== 'http:') throw new Error(`peer backends must be http:// URLs, got ${url}`)
  return `${u.hostname}:${u.port || 80}`
}

function checkCommon ({ backends, port, host }) {
  if (!Array.isArray(backends) || backends.length === 0) throw new Error('a peer needs at least one backend')
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`peer port must be 1..65535, got ${port}`)
  if (typeof host !== 'string' || !host) throw new Error('peer host missing')
}

/** A name safe in both configuration languages. */
function serverName (backend, i) {
  const id = String(backend.id ?? i + 1).replace(/[^A-Za-z0-9_.-]/g, '_')
  return id || `b${i + 1}`
}

/**
 * haproxy.cfg for one arm.
 * @param {{ mode: 'uri' | 'uri-bounded' | 'rr', backends: Array<{ id?: string, url: string }>, host: string, port: number }} params
 * @returns {string}
 */
function haproxyConfig ({ mode, backends, host, port }) {
  checkCommon({ backends, port, host })
  const balance = {
    uri: ['balance uri', 'hash-type consistent'],
    'uri-bounded': ['balance uri', 'hash-type consistent', 'hash-balance-factor 125'],
    rr: ['balance roundrobin']
  }[mode]
  if (!balance) throw new Error(`unknown haproxy mode "${mode}"`)
  return [
    'global',
    '  nbthread 1',
    '  maxconn 4096',
    '',
    'defaults',
    '  mode http',
    '  option http-keep-alive',
    '  http-reuse always',
    '  timeout connect 5s',
    '  timeout client 30s',
    '  timeout server 30s',
    '  timeout http-keep-alive 30s',
    '',
    'frontend bench',
    `  bind ${host}:${port}`,
    '  default_backend fleet',
    '',
    'backend fleet',
    ...balance.map((l) => `  ${l}`),
    ...backends.map((b, i) => `  server ${serverName(b, i)} ${hostPort(b.url)}`),
    ''
  ].join('\n')
}

/**
 * nginx.conf for one arm, with every path nginx writes inside `dir` and no access log.
 * @param {{ mode: 'uri' | 'rr', backends: Array<{ url: string }>, host: string, port: number, dir: string }} params
 * @returns {string}
 */
function nginxConfig ({ mode, backends, host, port, dir }) {
  checkCommon({ backends, port, host })
  if (typeof dir !== 'string' || !dir.startsWith('/')) throw new Error('nginx needs an absolute directory for its files')
  const balance = { uri: ['hash $request_uri consistent;'], rr: [] }[mode]
  if (!balance) throw new Error(`unknown nginx mode "${mode}"`)
  return [
    'daemon off;',
    'master_process off;',
    'worker_processes 1;',
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log warn;`,
    'events { worker_connections 4096; }',
    'http {',
    '  access_log off;',
    `  client_body_temp_path ${dir}/body;`,
    `  proxy_temp_path ${dir}/proxy;`,
    `  fastcgi_temp_path ${dir}/fastcgi;`,
    `  uwsgi_temp_path ${dir}/uwsgi;`,
    `  scgi_temp_path ${dir}/scgi;`,
    '  keepalive_requests 1000000;',
    '  upstream fleet {',
    ...balance.map((l) => `    ${l}`),
    ...backends.map((b) => `    server ${hostPort(b.url)};`),
    `    keepalive ${NGINX_KEEPALIVE};`,
    '    keepalive_requests 1000000;',
    '  }',
    '  server {',
    `    listen ${host}:${port};`,
    '    location / {',
    '      proxy_pass http://fleet;',
    '      proxy_http_version 1.1;',
    '      proxy_set_header Connection "";',
    '      proxy_buffering on;',
    '    }',
    '  }',
    '}',
    ''
  ].join('\n')
}

/**
 * Resolve a `--peers` value into arm labels.
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
      for (const [label, arm] of Object.entries(PEER_ARMS)) if (arm.peer === name) wanted.add(label)
    } else if (Object.hasOwn(PEER_ARMS, name)) {
      wanted.add(name)
    } else {
      throw new Error(`unknown peer "${name}"; expected none, ${PEERS.join(', ')} or one of ${Object.keys(PEER_ARMS).join(', ')}`)
    }
  }
  return Object.keys(PEER_ARMS).filter((label) => wanted.has(label))
}

module.exports = { PEER_ARMS, PEERS, NGINX_KEEPALIVE, haproxyConfig, nginxConfig, parsePeers }
