'use strict'

/**
 * polistes: an HTTP reverse-proxy load balancer with pluggable, pure routing policies.
 * The wasp policy alone is also published as `polistes/wasp`.
 */
const { createBalancer, startBalancer, routingKey } = require('./balancer')
const { createPolicy, policyNames } = require('./policies')
const { parseBackend, parseBackends } = require('./backend-spec')
const { PolistesError, codes } = require('./errors')
const { mulberry32 } = require('./prng')
const { createTelemetry } = require('./telemetry')
const { createAccessLog } = require('./access-log')

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
  PolistesError,
  errorCodes: codes
}
