'use strict'

const net = require('node:net')
const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')

/**
 * Which peers may tell the balancer who the client is (`trustedProxies`), and who the client then
 * is. Pure logic over addresses and header values; no sockets.
 *
 * A request's forwarding headers (X-Forwarded-For, -Host, -Proto, -Port and the rest of
 * CLIENT_FORWARDING) are the client's word. From a peer that is not a trusted proxy they are
 * dropped and the balancer's own values sent (a client cannot poison an upstream's view of host,
 * scheme or address); from a trusted proxy they are kept and X-Forwarded-For gets the peer
 * appended, as nginx's `set_real_ip_from` + `real_ip_header X-Forwarded-For` + `real_ip_recursive on`
 * and HAProxy's `option forwardfor` behind an ACL on the source do. The client address (what
 * `ip-hash` keys on) is then the right-most address in X-Forwarded-For that is not itself trusted.
 */

/** Client-sent headers about earlier hops, dropped unless the peer is a trusted proxy. */
const CLIENT_FORWARDING = Object.freeze(['x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port',
  'x-forwarded-ssl', 'x-forwarded-scheme', 'x-forwarded-prefix', 'x-forwarded-server', 'forwarded', 'x-real-ip'])

/**
 * Read one trusted-proxy entry: a CIDR (`10.0.0.0/8`, `fd00::/8`) or one address (`127.0.0.1`, `::1`).
 * @param {unknown} entry
 * @param {string} where its name in messages
 * @returns {{ address: string, prefix: number, family: 'ipv4' | 'ipv6' }}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function parseCidr (entry, where) {
  const bad = (why) => new ERR_POLISTES_BAD_OPTION(`${where}: ${JSON.stringify(entry)} is not a ` +
    `CIDR${why ? ` (${why})` : ''}; expected an IPv4 or IPv6 network such as 10.0.0.0/8 or ::1/128, or one address`)
  if (typeof entry !== 'string') throw bad()
  const text = entry.trim()
  const slash = text.indexOf('/')
  const address = slash === -1 ? text : text.slice(0, slash)
  const version = net.isIP(address)
  if (version === 0) throw bad(`${JSON.stringify(address)} is not an IP address`)
  const max = version === 4 ? 32 : 128
  let prefix = max
  if (slash !== -1) {
    const digits = text.slice(slash + 1)
    if (!/^\d{1,3}$/.test(digits) || Number(digits) > max) {
      throw bad(`the prefix length must be 0 to ${max} for IPv${version}`)
    }
    prefix = Number(digits)
  }
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' }
}

/**
 * Validate a `trustedProxies` value: an array of CIDRs (or single addresses), IPv4 and IPv6.
 * @param {unknown} value
 * @param {string} [where] its name in messages
 * @returns {Array<{ address: string, prefix: number, family: 'ipv4' | 'ipv6' }>}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function parseTrustedProxies (value, where = 'trustedProxies') {
  if (!Array.isArray(value)) {
    throw new ERR_POLISTES_BAD_OPTION(`${where} must be a list of CIDRs, e.g. ["10.0.0.0/8", "::1/128"], got ` +
      `${JSON.stringify(value)}`)
  }
  return value.map((entry) => parseCidr(entry, where))
}

/**
 * @typedef {object} Trust
 * @property {(address: string | undefined) => boolean} trusts whether a peer address is a trusted proxy
 * @property {(peer: string | undefined, xff: string | undefined) => string | undefined} clientAddress
 *   the client's address: `peer` unless it is trusted, else the right-most untrusted address of
 *   `xff` (the left-most when all are trusted; parsing stops at an entry that is not an address)
 */

/**
 * Build the matcher of a `trustedProxies` list (node:net BlockList), or null when it is empty:
 * then no peer is trusted and the balancer never reads a client's forwarding headers.
 * @param {unknown} list CIDRs, validated here
 * @returns {Trust | null}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function createTrust (list) {
  const entries = parseTrustedProxies(list)
  if (entries.length === 0) return null
  const blocks = new net.BlockList()
  for (const { address, prefix, family } of entries) blocks.addSubnet(address, prefix, family)
  const trusts = (address) => {
    if (typeof address !== 'string') return false
    const version = net.isIP(address)
    return version !== 0 && blocks.check(address, version === 4 ? 'ipv4' : 'ipv6')
  }
  return {
    trusts,
    clientAddress (peer, xff) {
      if (!xff || !trusts(peer)) return peer
      let client = peer
      const hops = xff.split(',')
      for (let i = hops.length - 1; i >= 0; i--) {
        const hop = hops[i].trim()
        if (net.isIP(hop) === 0) break // garbage: the last trusted hop is as far as the chain is believed
        client = hop
        if (!trusts(hop)) break
      }
      return client
    }
  }
}

/**
 * Who sent `req`: whether its peer is a trusted proxy, and the client's address (the peer's, or
 * with a trusted peer the right-most untrusted X-Forwarded-For entry).
 * @param {ReturnType<typeof createTrust>} trust
 * @param {import('http').IncomingMessage} req
 * @returns {{ trusted: boolean, clientAddress: string | undefined }}
 */
function clientOf (trust, req) {
  const peer = req.socket.remoteAddress
  if (trust === null || !trust.trusts(peer)) return { trusted: false, clientAddress: peer }
  return { trusted: true, clientAddress: trust.clientAddress(peer, req.headers['x-forwarded-for']) }
}

module.exports = { CLIENT_FORWARDING, createTrust, parseTrustedProxies, clientOf }
