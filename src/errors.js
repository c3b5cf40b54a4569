'use strict'

/**
 * Errors with stable codes, in one place (fastify's FST_ERR_* habit). A CLI prints `message`
 * on one line and exits with `exitCode`; nothing here prints a stack trace.
 */
const codes = {
  ERR_POLISTES_UNKNOWN_ALGO: 'unknown routing algorithm',
  ERR_POLISTES_BAD_URL: 'malformed backend URL',
  ERR_POLISTES_BAD_CONFIG: 'config file unreadable, not JSON, or invalid',
  ERR_POLISTES_BAD_OPTION: 'an option out of range or of the wrong type',
  ERR_POLISTES_PORT_IN_USE: 'the listen address is taken',
  ERR_POLISTES_NO_BACKENDS: 'no backend to route to'
}

class PolistesError extends Error {
  /**
   * @param {keyof typeof codes} code stable error code
   * @param {string} message one human-readable line
   */
  constructor (code, message) {
    super(message)
    this.name = 'PolistesError'
    this.code = code
    this.exitCode = 2
  }
}

module.exports = { PolistesError, codes }
