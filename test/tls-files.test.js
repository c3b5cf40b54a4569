'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { readServerTls, readCa } = require('../src/front/tls-files')
const { makeCertificates } = require('./helper')

let certs
beforeAll(() => { certs = makeCertificates() })
afterAll(() => certs.remove())

describe('readServerTls', () => {
  test('returns the certificate and key files as they are', () => {
    const { cert, key } = readServerTls(certs.cert, certs.key)
    expect(cert.equals(fs.readFileSync(certs.cert))).toBe(true)
    expect(key.equals(fs.readFileSync(certs.key))).toBe(true)
  })

  test.each([
    ['a missing certificate file', () => [path.join(certs.dir, 'nope.pem'), certs.key], /^--tls-cert \S+nope\.pem: cannot read it \(ENOENT\)$/],
    ['a missing key file', () => [certs.cert, path.join(certs.dir, 'nope.key')], /^--tls-key \S+nope\.key: cannot read it \(ENOENT\)$/],
    ['a key given as the certificate', () => [certs.key, certs.key], /^--tls-cert \S+key\.pem: no PEM certificate in it/],
    ['a key that is not the certificate\'s', () => [certs.cert, certs.otherKey], /^--tls-key \S+other\.key cannot be used with --tls-cert \S+cert\.pem: .*key values mismatch/],
    ['a certificate given as the key', () => [certs.cert, certs.cert], /^--tls-key \S+cert\.pem cannot be used with --tls-cert/],
    ['a key of another type than the certificate\'s', () => [certs.rsaCert, certs.key], /^--tls-key \S+key\.pem is not the private key of the first certificate in --tls-cert \S+rsa\.pem$/]
  ])('%s is ERR_POLISTES_BAD_OPTION with one line naming the file', (_name, args, message) => {
    let error
    try { readServerTls(...args()) } catch (err) { error = err }
    expect(error).toMatchObject({ code: 'ERR_POLISTES_BAD_OPTION' })
    expect(error.message).toMatch(message)
    expect(error.message).not.toMatch(/\n/)
  })
})

describe('readCa', () => {
  test('returns the CA file', () => {
    expect(readCa(certs.ca).equals(fs.readFileSync(certs.ca))).toBe(true)
  })

  test('a file without a certificate, which Node would accept without a word, is refused', () => {
    const junk = path.join(certs.dir, 'junk.pem')
    fs.writeFileSync(junk, 'not a certificate\n')
    expect(() => readCa(junk)).toThrow(/^--upstream-ca \S+junk\.pem: no PEM certificate in it/)
  })

  test('a damaged certificate is refused, with its position in the file', () => {
    const damaged = path.join(certs.dir, 'damaged.pem')
    fs.writeFileSync(damaged, fs.readFileSync(certs.ca, 'utf8') + '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')
    expect(() => readCa(damaged)).toThrow(/^--upstream-ca \S+damaged\.pem: certificate #2 is not valid/)
  })

  test('an unreadable path is refused', () => {
    expect(() => readCa(certs.dir)).toThrow(/^--upstream-ca \S+: cannot read it \(EISDIR\)$/)
  })
})
