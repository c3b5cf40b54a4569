'use strict'

const { responseHead } = require('../src/proxy/engines/headers')
const { HeaderNames } = require('../src/common/header-names')

describe('responseHead', () => {
  const heads = [
    ['X-Cache', 'HIT', 'Content-Length', '3', 'Connection', 'keep-alive, X-Hop', 'X-Hop', '1', 'Keep-Alive', 'timeout=5'],
    // the same upstream changes its names, their order and their number between responses
    ['content-length', '4', 'Set-Cookie', 'a=1', 'SET-COOKIE', 'b=2', 'Transfer-Encoding', 'chunked'],
    ['X-Cache', 'MISS', 'Content-Length', '3', 'Connection', 'close'],
    ['X-CACHE', 'HIT', 'X-Hop', 'stays: no Connection names it'],
    []
  ]
  const want = [
    { raw: ['X-Cache', 'HIT', 'Content-Length', '3'], headers: { 'x-cache': 'HIT', 'content-length': '3' } },
    { raw: ['content-length', '4', 'Set-Cookie', 'a=1', 'SET-COOKIE', 'b=2'], headers: { 'content-length': '4', 'set-cookie': ['a=1', 'b=2'] } },
    { raw: ['X-Cache', 'MISS', 'Content-Length', '3'], headers: { 'x-cache': 'MISS', 'content-length': '3' } },
    { raw: ['X-CACHE', 'HIT', 'X-Hop', 'stays: no Connection names it'], headers: { 'x-cache': 'HIT', 'x-hop': 'stays: no Connection names it' } },
    { raw: [], headers: {} }
  ]

  test('drops hop-by-hop headers and those Connection names, keeps case and repeats', () => {
    heads.forEach((raw, i) => expect(responseHead(raw)).toEqual(want[i]))
  })

  test('one upstream\'s name cache gives the same answers as none, whatever changes between responses', () => {
    const names = new HeaderNames()
    for (let round = 0; round < 3; round++) {
      heads.forEach((raw, i) => expect(responseHead([...raw], names)).toEqual(want[i]))
    }
  })
})

describe('hostPort (X-Forwarded-Port)', () => {
  const { hostPort } = require('../src/proxy/engines/headers')
  test.each([
    ['a:8080', false, '8080'],
    ['a', false, '80'],
    ['a', true, '443'],
    ['[::1]', false, '80'],
    ['[::1]:9', true, '9'],
    ['a:', false, '80'],
    ['a:80x', false, '80'],
    [undefined, true, '443'],
    ['', false, '80']
  ])('%s (tls %s): %s', (host, encrypted, port) => {
    expect(hostPort(host, encrypted)).toBe(port)
  })
})
