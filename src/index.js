'use strict'

/**
 * polistes: an HTTP reverse-proxy load balancer with pluggable, pure routing policies.
 * The wasp policy alone is also published as `polistes/wasp`.
 */
const { createBalancer, startBalancer, routingKey } = require('./balancer')
const { createPolicy, policyNames } = require('./policies')
const { parseBackend, parseBackends } = require('./pool/backend-spec')
const errors = require('./common/errors')
const { mulberry32 } = require('./common/prng')
const { createTelemetry } = require('./observe/telemetry')
const { createAccessLog } = require('./observe/access-log')

module.exports = {
  createBalancer,
  startBalancer,
  createPolicy,
  policyNames,
  parseBackend,
  parseBackends,
  routingKey,
  mulberry32,
  createTelemetry,
  createAccessLog,
  PolistesError: errors.PolistesError,
  errorCodes: errors.codes,
  ERR_POLISTES_UNKNOWN_ALGO: errors.ERR_POLISTES_UNKNOWN_ALGO,
  ERR_POLISTES_BAD_URL: errors.ERR_POLISTES_BAD_URL,
  ERR_POLISTES_BAD_CONFIG: errors.ERR_POLISTES_BAD_CONFIG,
  ERR_POLISTES_BAD_OPTION: errors.ERR_POLISTES_BAD_OPTION,
  ERR_POLISTES_PORT_IN_USE: errors.ERR_POLISTES_PORT_IN_USE,
  ERR_POLISTES_NO_BACKENDS: errors.ERR_POLISTES_NO_BACKENDS,
  ERR_POLISTES_MISSING_PACKAGE: errors.ERR_POLISTES_MISSING_PACKAGE
}
