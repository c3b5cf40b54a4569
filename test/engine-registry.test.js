'use strict'

const { engineNames, engineEntry, DEFAULT_ENGINE } = require('../src/proxy/engines')
const { ENGINES, checkEngineTargets, engineTakesFront, createProxyEngine } = require('../src/proxy/proxy-engine')
const { DTS } = require('./index-dts')

test('the engine union of index.d.ts names every registered engine and nothing else', () => {
  const m = /^\s*engine\?:\s*([^\n]+)$/m.exec(DTS)
  expect(m).not.toBeNull()
  const union = m[1].split('|').map((s) => s.trim().replace(/^'|'$/g, ''))
  expect([...union].sort()).toEqual([...engineNames()].sort())
})

test('every entry says how to create the engine, which fronts it takes and whether it reaches https', () => {
  expect(ENGINES).toEqual(engineNames())
  expect(ENGINES).toContain(DEFAULT_ENGINE)
  for (const name of ENGINES) {
    const entry = engineEntry(name)
    expect(typeof entry.create).toBe('function')
    expect(entry.fronts).toContain('node')
    expect(entry.fronts.every((f) => f === 'fast' || f === 'node')).toBe(true)
    expect(typeof entry.https).toBe('boolean')
  }
  expect(engineEntry('toString')).toBeUndefined()
})

test('the fast front is taken by the engines that write through writeHead/write/end, not by http-proxy', () => {
  expect(ENGINES.filter((e) => engineTakesFront(e, 'fast'))).toEqual(['node-http', 'undici', 'direct'])
  expect(ENGINES.every((e) => engineTakesFront(e, 'node'))).toBe(true)
  expect(engineTakesFront('no-such-engine', 'node')).toBe(false)
})

test('https upstreams are refused for an engine whose entry says it cannot reach them, and taken by the others', () => {
  const targets = [new URL('http://127.0.0.1:1'), new URL('https://localhost:9443')]
  for (const name of ENGINES) {
    if (engineEntry(name).https) expect(() => checkEngineTargets(name, targets)).not.toThrow()
    else expect(() => checkEngineTargets(name, targets)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message: expect.stringMatching(new RegExp(`^engine ${name} does not proxy to https upstreams \\(https://localhost:9443\\)`)) }))
  }
  expect(() => checkEngineTargets('undici', [new URL('http://127.0.0.1:1')])).not.toThrow()
})

test('createProxyEngine makes each registered engine under its name, and refuses an unknown one', () => {
  for (const name of ['direct', 'node-http']) {
    const engine = createProxyEngine({ engine: name })
    expect(engine.name).toBe(name)
    expect(typeof engine.forward).toBe('function')
    expect(typeof engine.retire).toBe('function')
    engine.close()
  }
  expect(() => createProxyEngine({ engine: 'nope' })).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
})
