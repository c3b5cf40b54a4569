'use strict'

/**
 * The peers' configuration writers and the --peers parser: pure, no program needed.
 */

const { PEER_ARMS, haproxyConfig, nginxConfig, parsePeers, applyTuning, NGINX_KEEPALIVE, HAPROXY_DEFAULTS, NGINX_DEFAULTS } = require('../bench/peers/peer-configs')

const backends = [{ id: 'a', url: 'http://127.0.0.1:9101' }, { id: 'b', url: 'http://127.0.0.1:9102' }]
const lines = (text) => text.split('\n').map((l) => l.trim()).filter(Boolean)

describe('bench peer configs', () => {
  test('haproxy: one thread, keep-alive and reuse to the servers, timeouts, the listener and every backend', () => {
    const l = lines(haproxyConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8123 }))
    expect(l).toEqual(expect.arrayContaining(['nbthread 1', 'mode http', 'http-reuse always', 'option http-keep-alive',
      'timeout connect 5s', 'timeout client 30s', 'timeout server 30s', 'bind 127.0.0.1:8123',
      'server a 127.0.0.1:9101', 'server b 127.0.0.1:9102']))
    expect(l.filter((x) => x.startsWith('daemon'))).toEqual([])
  })

  test('haproxy: a refused connection is redispatched; with health checks (--churn) a server is checked and marked down at its first error', () => {
    const plain = lines(haproxyConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8123 }))
    expect(plain).toEqual(expect.arrayContaining(['retries 3', 'option redispatch', 'server a 127.0.0.1:9101']))
    const checked = lines(haproxyConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8123, healthChecks: true }))
    expect(checked).toEqual(expect.arrayContaining([
      'server a 127.0.0.1:9101 check inter 1s fall 2 rise 1 observe layer4 error-limit 1 on-error mark-down',
      'server b 127.0.0.1:9102 check inter 1s fall 2 rise 1 observe layer4 error-limit 1 on-error mark-down',
      // each retry on another server, a reset before any answer retried too (--kill)
      'retries 3', 'option redispatch 1', 'retry-on conn-failure empty-response']))
    expect(checked).not.toContain('option redispatch')
    expect(plain.filter((x) => x.startsWith('retry-on'))).toEqual([])
  })

  test('haproxy: the tuned settings, each once, and threads from workers', () => {
    const l = lines(haproxyConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8123 }))
    expect(l).toEqual(expect.arrayContaining(['maxconn 4096', 'tune.bufsize 65536']))
    expect(l).not.toContain('option splice-response') // never engages with 64 KB buffers
    expect(HAPROXY_DEFAULTS.global['tune.bufsize']).toBeGreaterThanOrEqual(64 * 1024) // a whole 62 KB page in one buffer
    for (const x of ['nbthread ', 'tune.bufsize ', 'http-reuse ', 'option http-keep-alive']) expect(l.filter((y) => y.startsWith(x))).toHaveLength(1)
    const two = lines(haproxyConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8123, workers: 2 }))
    expect(two).toContain('nbthread 2')
    expect(two).not.toContain('nbthread 1')
  })

  test.each([
    ['uri', ['balance uri', 'hash-type consistent'], ['hash-balance-factor 125', 'balance roundrobin']],
    ['uri-bounded', ['balance uri', 'hash-type consistent', 'hash-balance-factor 125'], ['balance roundrobin']],
    ['rr', ['balance roundrobin'], ['balance uri', 'hash-type consistent', 'hash-balance-factor 125']]
  ])('haproxy %s balances with %j and nothing of %j', (mode, present, absent) => {
    const l = lines(haproxyConfig({ mode, backends, host: '127.0.0.1', port: 8123 }))
    expect(l).toEqual(expect.arrayContaining(present))
    for (const x of absent) expect(l).not.toContain(x)
  })

  test('the capacity arms (issue 28): bounded-load hashing at 125, 150 and 200, and leastconn, each with its own balance lines only', () => {
    const balanceLines = (label) => lines(haproxyConfig({ mode: PEER_ARMS[label].mode, balanceFactor: PEER_ARMS[label].balanceFactor, backends, host: '127.0.0.1', port: 1 }))
      .filter((l) => /^(balance|hash-)/.test(l))
    expect(balanceLines('haproxy-uri-bounded')).toEqual(['balance uri', 'hash-type consistent', 'hash-balance-factor 125'])
    expect(balanceLines('haproxy-uri-bounded-150')).toEqual(['balance uri', 'hash-type consistent', 'hash-balance-factor 150'])
    expect(balanceLines('haproxy-uri-bounded-200')).toEqual(['balance uri', 'hash-type consistent', 'hash-balance-factor 200'])
    expect(balanceLines('haproxy-leastconn')).toEqual(['balance leastconn'])
    // the rest of the file is the tuned arm's, line for line
    const rest = (label) => lines(haproxyConfig({ mode: PEER_ARMS[label].mode, balanceFactor: PEER_ARMS[label].balanceFactor, backends, host: '127.0.0.1', port: 1 }))
      .filter((l) => !/^(balance|hash-)/.test(l))
    for (const label of ['haproxy-uri-bounded-150', 'haproxy-uri-bounded-200', 'haproxy-leastconn']) expect(rest(label)).toEqual(rest('haproxy-uri'))
    // run only when named: `--peers haproxy` is what it was
    expect(parsePeers('haproxy')).toEqual(['haproxy-uri', 'haproxy-uri-bounded', 'haproxy-rr'])
    expect(parsePeers('haproxy-leastconn,haproxy-uri-bounded-200,haproxy-uri-bounded-150'))
      .toEqual(['haproxy-uri-bounded-150', 'haproxy-uri-bounded-200', 'haproxy-leastconn'])
    expect(() => haproxyConfig({ mode: 'uri-bounded', balanceFactor: 100, backends, host: '127.0.0.1', port: 1 })).toThrow(/hash-balance-factor must be an integer above 100, got 100/)
    expect(() => haproxyConfig({ mode: 'uri-bounded', balanceFactor: 1.5, backends, host: '127.0.0.1', port: 1 })).toThrow(/above 100, got 1.5/)
  })

  test('nginx: one process in the foreground, files in its directory, no access log, upstream keep-alive over HTTP/1.1', () => {
    const l = lines(nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8124, dir: '/tmp/x' }))
    expect(l).toEqual(expect.arrayContaining(['daemon off;', 'master_process off;', 'worker_processes 1;',
      'pid /tmp/x/nginx.pid;', 'error_log /tmp/x/error.log warn;', 'access_log off;', 'proxy_temp_path /tmp/x/proxy;',
      'client_body_temp_path /tmp/x/body;', 'listen 127.0.0.1:8124;', 'hash $request_uri;',
      'server 127.0.0.1:9101;', 'server 127.0.0.1:9102;', `keepalive ${NGINX_KEEPALIVE};`,
      'proxy_pass http://fleet;', 'proxy_http_version 1.1;', 'proxy_set_header Connection "";',
      'keepalive_requests 1000000;', 'tcp_nodelay on;']))
    expect(NGINX_KEEPALIVE).toBe(64)
    expect(l.filter((x) => x.startsWith('user '))).toEqual([]) // one process: no user switch
  })

  test('nginx: a whole page (62 KB) fits the buffers nginx reads the response into', () => {
    const l = lines(nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8124, dir: '/tmp/x' }))
    const size = (v) => Number(/^(\d+)k$/.exec(v)[1]) * 1024
    const buffering = l.find((x) => x.startsWith('proxy_buffering '))
    const bufferSize = size(l.find((x) => x.startsWith('proxy_buffer_size ')).split(' ')[1].replace(';', ''))
    const [n, each] = l.find((x) => x.startsWith('proxy_buffers ')).replace(';', '').split(' ').slice(1)
    if (buffering === 'proxy_buffering off;') expect(bufferSize).toBeGreaterThanOrEqual(64 * 1024)
    else expect(bufferSize + Number(n) * size(each)).toBeGreaterThanOrEqual(64 * 1024)
    for (const d of ['proxy_buffering', 'proxy_buffer_size', 'proxy_buffers', 'keepalive', 'keepalive_requests']) {
      expect(l.filter((x) => x.startsWith(`${d} `)).length).toBeLessThanOrEqual(d === 'keepalive_requests' ? 2 : 1) // http and upstream
    }
  })

  test('nginx with more than one worker: a master and N worker processes, kept as the user that starts it', () => {
    const l = lines(nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8124, dir: '/tmp/x', workers: 2, user: 'root' }))
    expect(l).toEqual(expect.arrayContaining(['daemon off;', 'master_process on;', 'worker_processes 2;', 'user root;']))
    expect(l).not.toContain('master_process off;')
    const noUser = lines(nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8124, dir: '/tmp/x', workers: 2 }))
    expect(noUser.filter((x) => x.startsWith('user '))).toEqual([])
    expect(lines(nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8124, dir: '/tmp/x', workers: 1, user: 'root' })))
      .not.toContain('user root;')
  })

  test('nginx uri hashes over the server list; the consistent ring (keyed by ip:port) is an arm run only when named', () => {
    expect(nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 1, dir: '/tmp/x' })).not.toMatch(/consistent/)
    expect(lines(nginxConfig({ mode: 'uri-consistent', backends, host: '127.0.0.1', port: 1, dir: '/tmp/x' }))).toContain('hash $request_uri consistent;')
    expect(PEER_ARMS['nginx-uri-consistent']).toMatchObject({ peer: 'nginx', mode: 'uri-consistent', explicit: true })
  })

  test('tuning replaces, removes and adds directives per section, and refuses an unknown section', () => {
    const t = applyTuning(NGINX_DEFAULTS, { location: { proxy_buffering: 'off', proxy_buffers: null, proxy_busy_buffers_size: '8k' } })
    expect(t.location).toMatchObject({ proxy_buffering: 'off', proxy_busy_buffers_size: '8k' })
    expect(t.location).not.toHaveProperty('proxy_buffers')
    expect(t.http).toEqual(NGINX_DEFAULTS.http)
    expect(NGINX_DEFAULTS.location.proxy_buffers).toBeDefined() // the defaults are not changed
    expect(() => applyTuning(NGINX_DEFAULTS, { server: {} })).toThrow(/unknown section "server"/)
    const text = haproxyConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 1, tuning: { global: { 'tune.bufsize': null }, defaults: { 'option splice-response': '' } } })
    expect(lines(text)).toContain('option splice-response')
    expect(text).not.toMatch(/tune\.bufsize/)
    const ng = lines(nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 1, dir: '/tmp/x', tuning: { upstream: { keepalive: 16 } } }))
    expect(ng).toContain('keepalive 16;')
    expect(ng).not.toContain(`keepalive ${NGINX_KEEPALIVE};`)
  })

  test('nginx round-robin is the upstream without a hash', () => {
    const text = nginxConfig({ mode: 'rr', backends, host: '127.0.0.1', port: 8124, dir: '/tmp/x' })
    expect(text).not.toMatch(/hash/)
    expect(text).toMatch(/upstream fleet \{\n {4}server 127\.0\.0\.1:9101;/)
  })

  test('the untuned baselines differ from their arm only in the buffers', () => {
    const diff = (a, b) => {
      const [x, y] = [a, b].map((label) => lines((PEER_ARMS[label].peer === 'haproxy' ? haproxyConfig : nginxConfig)(
        { mode: PEER_ARMS[label].mode, backends, host: '127.0.0.1', port: 1, dir: '/tmp/x', tuning: PEER_ARMS[label].tuning })))
      return [x.filter((l) => !y.includes(l)), y.filter((l) => !x.includes(l))]
    }
    expect(diff('haproxy-uri', 'haproxy-uri-untuned')).toEqual([['tune.bufsize 65536'], []])
    expect(diff('nginx-uri', 'nginx-uri-untuned')).toEqual([['proxy_buffering off;', 'proxy_buffer_size 64k;', 'proxy_buffers 4 64k;'], ['proxy_buffering on;']])
    expect(diff('nginx-uri', 'nginx-uri-buffered')[1]).toEqual(['proxy_buffering on;', 'proxy_buffer_size 8k;', 'proxy_buffers 16 8k;'])
    expect(parsePeers('haproxy,nginx')).toEqual(['haproxy-uri', 'haproxy-uri-bounded', 'haproxy-rr', 'nginx-uri', 'nginx-rr'])
  })

  test('every arm has a writer for its mode', () => {
    for (const [label, arm] of Object.entries(PEER_ARMS)) {
      const write = arm.peer === 'haproxy' ? haproxyConfig : nginxConfig
      expect(() => write({ mode: arm.mode, backends, host: '127.0.0.1', port: 1, dir: '/tmp/x' })).not.toThrow()
      expect(label.startsWith(arm.peer)).toBe(true)
    }
  })

  test('bad input is refused with a clear message', () => {
    expect(() => haproxyConfig({ mode: 'uri', backends: [], host: '127.0.0.1', port: 1 })).toThrow(/at least one backend/)
    expect(() => haproxyConfig({ mode: 'random', backends, host: '127.0.0.1', port: 1 })).toThrow(/unknown haproxy mode "random"/)
    expect(() => nginxConfig({ mode: 'uri-bounded', backends, host: '127.0.0.1', port: 1, dir: '/tmp' })).toThrow(/unknown nginx mode/)
    expect(() => nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 1, dir: 'rel' })).toThrow(/absolute directory/)
    expect(() => haproxyConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 70000 })).toThrow(/port/)
    expect(() => haproxyConfig({ mode: 'uri', backends: [{ url: 'https://x:1' }], host: '127.0.0.1', port: 1 })).toThrow(/http:\/\//)
    expect(() => haproxyConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 1, workers: 0 })).toThrow(/workers must be 1\.\.64/)
    expect(() => nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 1, dir: '/tmp', workers: 1.5 })).toThrow(/workers must be 1\.\.64/)
  })

  test('--peers takes none, program names and arm labels, in the bench order', () => {
    expect(parsePeers('none')).toEqual([])
    expect(parsePeers('nginx')).toEqual(['nginx-uri', 'nginx-rr']) // not the explicit-only arm
    expect(parsePeers('nginx,nginx-uri-consistent')).toEqual(['nginx-uri', 'nginx-rr', 'nginx-uri-consistent'])
    expect(parsePeers('nginx-uri, haproxy')).toEqual(['haproxy-uri', 'haproxy-uri-bounded', 'haproxy-rr', 'nginx-uri'])
    expect(() => parsePeers('envoy')).toThrow(/unknown peer "envoy"; expected none, haproxy, nginx/)
    expect(() => parsePeers(',')).toThrow(/--peers needs/)
  })
})
