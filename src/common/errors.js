'use strict'

/**
 * Errors with stable codes, in one place, one factory per code (fastify's `createError` habit):
 * a call site passes the facts (`new ERR_POLISTES_PORT_IN_USE('balancer', host, port)`) and the
 * message template lives here. A CLI prints `message` on one line and exits with `exitCode`;
 * nothing here prints a stack trace.
 */

class PolistesError extends Error {
  /**
   * @param {string} code stable error code (one of `codes`)
   * @param {string} message one human-readable line
   */
  constructor (code, message) {
    super(message)
    this.name = 'PolistesError'
    this.code = code
    this.exitCode = 2
  }
}

/** code → what it means (the public `errorCodes` map). */
const codes = {}

/**
 * Make the error class for one code.
 * @param {string} code stable code, also the class name
 * @param {(...args: any[]) => string} template builds the one-line message from the call's arguments
 * @param {string} description what the code means, for `codes`
 * @returns {new (...args: any[]) => PolistesError}
 */
function createError (code, template, description) {
  codes[code] = description
  const PolistesCodeError = class extends PolistesError {
    constructor (...args) {
      super(code, template(...args))
    }
  }
  Object.defineProperty(PolistesCodeError, 'name', { value: code })
  return PolistesCodeError
}

/** `new ERR_POLISTES_UNKNOWN_ALGO(name, known)`: `name` is not in the registry `known`. */
const ERR_POLISTES_UNKNOWN_ALGO = createError('ERR_POLISTES_UNKNOWN_ALGO',
  (name, known) => `unknown algorithm ${JSON.stringify(name)}; expected one of: ${known.join(', ')}`,
  'unknown routing algorithm')

/** `new ERR_POLISTES_BAD_URL(where, problem)`, e.g. ('backend #2', 'malformed URL "x"'). */
const ERR_POLISTES_BAD_URL = createError('ERR_POLISTES_BAD_URL',
  (where, problem) => `${where}: ${problem}`,
  'malformed backend URL')

/** `new ERR_POLISTES_BAD_CONFIG(problem)`: what is wrong with the config file, naming the file. */
const ERR_POLISTES_BAD_CONFIG = createError('ERR_POLISTES_BAD_CONFIG',
  (problem) => problem,
  'config file unreadable, not JSON, or invalid')

/** `new ERR_POLISTES_BAD_OPTION(problem)`: which option, what it must be, what it got. */
const ERR_POLISTES_BAD_OPTION = createError('ERR_POLISTES_BAD_OPTION',
  (problem) => problem,
  'an option out of range or of the wrong type')

/** `new ERR_POLISTES_PORT_IN_USE(who, host, port)`, e.g. ('backend a', '127.0.0.1', 9101). */
const ERR_POLISTES_PORT_IN_USE = createError('ERR_POLISTES_PORT_IN_USE',
  (who, host, port) => `${who}: ${host}:${port} is already in use`,
  'the listen address is taken')

/** `new ERR_POLISTES_NO_BACKENDS()`: an empty backend list. */
const ERR_POLISTES_NO_BACKENDS = createError('ERR_POLISTES_NO_BACKENDS',
  () => 'no backends given: pass --backends http://127.0.0.1:9101,... or leave it out to use the embedded fleet',
  'no backend to route to')

/**
 * `new ERR_POLISTES_MISSING_PACKAGE(names, feature, ranges)`: a feature needs optional peer
 * dependencies that are not installed, e.g. (['undici'], 'the undici engine (--engine undici)', { undici: '^7.0.0' }).
 */
const ERR_POLISTES_MISSING_PACKAGE = createError('ERR_POLISTES_MISSING_PACKAGE',
  (names, feature, ranges = {}) => {
    const specs = names.map((name) => ranges[name] ? `${name}@${JSON.stringify(ranges[name])}` : name)
    return `${feature} needs the package${names.length > 1 ? 's' : ''} ${names.join(' and ')}, not installed: npm ` +
      `install ${specs.join(' ')}`
  },
  'a feature needs an optional package that is not installed')

module.exports = {
  PolistesError,
  codes,
  ERR_POLISTES_UNKNOWN_ALGO,
  ERR_POLISTES_BAD_URL,
  ERR_POLISTES_BAD_CONFIG,
  ERR_POLISTES_BAD_OPTION,
  ERR_POLISTES_PORT_IN_USE,
  ERR_POLISTES_NO_BACKENDS,
  ERR_POLISTES_MISSING_PACKAGE
}
