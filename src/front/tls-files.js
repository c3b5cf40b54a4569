'use strict'

const fs = require('node:fs')
const tls = require('node:tls')
const { X509Certificate, createPrivateKey } = require('node:crypto')
const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')

/**
 * The PEM files of TLS, read once at start with one clear line when one cannot be used. Node
 * accepts garbage as a CA without a word and names no file in its PEM errors: these checks do both.
 */

/**
 * Read a certificate chain and its private key for an https server.
 * @param {string} certFile PEM certificate (chain), e.g. from `--tls-cert`
 * @param {string} keyFile PEM private key, e.g. from `--tls-key`
 * @returns {{ cert: Buffer, key: Buffer }} ready for `https.createServer`
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION: unreadable, not PEM, or a key that does
 * not match
 */
function readServerTls (certFile, keyFile) {
  const cert = readFile('--tls-cert', certFile)
  const key = readFile('--tls-key', keyFile)
  const [leaf] = certificates('--tls-cert', certFile, cert)
  let privateKey
  try {
    privateKey = createPrivateKey(key)
    tls.createSecureContext({ cert, key })
  } catch (err) {
    throw new ERR_POLISTES_BAD_OPTION(`--tls-key ${keyFile} cannot be used with --tls-cert ${certFile}: ${err.message}`)
  }
  // OpenSSL only compares a key with a certificate of its own type: an EC key with an RSA
  // certificate passes, and every handshake fails later
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new ERR_POLISTES_BAD_OPTION(`--tls-key ${keyFile} is not the private key of the first certificate in ` +
      `--tls-cert ${certFile}`)
  }
  return { cert, key }
}

/**
 * Read the CA certificates that upstream certificates are verified against.
 * @param {string} file PEM, one or more certificates, e.g. from `--upstream-ca`
 * @returns {Buffer}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION: unreadable or holding no certificate
 */
function readCa (file) {
  const ca = readFile('--upstream-ca', file)
  certificates('--upstream-ca', file, ca)
  return ca
}

function readFile (flag, file) {
  try {
    return fs.readFileSync(file)
  } catch (err) {
    throw new ERR_POLISTES_BAD_OPTION(`${flag} ${file}: cannot read it (${err.code || err.message})`)
  }
}

/** Parse every PEM certificate in `pem`; at least one, all valid. */
function certificates (flag, file, pem) {
  const blocks = pem.toString('latin1').match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) || []
  if (blocks.length === 0) {
    throw new ERR_POLISTES_BAD_OPTION(`${flag} ${file}: no PEM certificate in it (expected "-----BEGIN ` +
      'CERTIFICATE-----")')
  }
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block)
    } catch (err) {
      throw new ERR_POLISTES_BAD_OPTION(`${flag} ${file}: certificate #${i + 1} is not valid: ${err.message}`)
    }
  })
}

module.exports = { readServerTls, readCa }
