'use strict'

/**
 * The peers' configuration writers and the --peers parser: pure, no program needed.
 */

const { PEER_ARMS, haproxyConfig, nginxConfig, parsePeers, NGINX_KEEPALIVE } = require('../bench/peer-configs')

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

  test.each([
    ['uri', ['balance uri', 'hash-type consistent'], ['hash-balance-factor 125', 'balance roundrobin']],
    ['uri-bounded', ['balance uri', 'hash-type consistent', 'hash-balance-factor 125'], ['balance roundrobin']],
    ['rr', ['balance roundrobin'], ['balance uri', 'hash-type consistent', 'hash-balance-factor 125']]
  ])('haproxy %s balances with %j and nothing of %j', (mode, present, absent) => {
    const l = lines(haproxyConfig({ mode, backends, host: '127.0.0.1', port: 8123 }))
    expect(l).toEqual(expect.arrayContaining(present))
    for (const x of absent) expect(l).not.toContain(x)
  })

  test('nginx: one process in the foreground, files in its directory, no access log, upstream keep-alive over HTTP/1.1', () => {
    const l = lines(nginxConfig({ mode: 'uri', backends, host: '127.0.0.1', port: 8124, dir: '/tmp/x' }))
    expect(l).toEqual(expect.arrayContaining(['daemon off;', 'master_process off;', 'worker_processes 1;',
      'pid /tmp/x/nginx.pid;', 'error_log /tmp/x/error.log warn;', 'access_log off;', 'proxy_temp_path /tmp/x/proxy;',
      'client_body_temp_path /tmp/x/body;', 'listen 127.0.0.1:8124;', 'hash $request_uri consistent;',
      'server 127.0.0.1:9101;', 'server 127.0.0.1:9102;', `keepalive ${NGINX_KEEPALIVE};`,
      'proxy_pass http://fleet;', 'proxy_http_version 1.1;', 'proxy_set_header Connection "";']))
    expect(NGINX_KEEPALIVE).toBe(64)
  })

  test('nginx round-robin is the upstream without a hash', () => {
    const text = nginxConfig({ mode: 'rr', backends, host: '127.0.0.1', port: 8124, dir: '/tmp/x' })
    expect(text).not.toMatch(/hash/)
    expect(text).toMatch(/upstream fleet \{\n {4}server 127\.0\.0\.1:9101;/)
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
  })

  test('--peers takes none, program names and arm labels, in the bench order', () => {
    expect(parsePeers('none')).toEqual([])
    expect(parsePeers('nginx')).toEqual(['nginx-uri', 'nginx-rr'])
    expect(parsePeers('nginx-uri, haproxy')).toEqual(['haproxy-uri', 'haproxy-uri-bounded', 'haproxy-rr', 'nginx-uri'])
    expect(() => parsePeers('envoy')).toThrow(/unknown peer "envoy"; expected none, haproxy, nginx/)
    expect(() => parsePeers(',')).toThrow(/--peers needs/)
  })
})
