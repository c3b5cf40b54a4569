'use strict'

const pino = require('pino')
const { isInstalled, requireOptional } = require('./optional-package')

/**
 * The balancer's logger: pretty, coloured lines when a person watches (stdout is a TTY) and
 * pino-pretty, an optional package, is installed; JSON lines otherwise (for log shippers and
 * tests). Both are synchronous streams, so no worker thread is started and nothing is lost on exit.
 *
 * @param {{ level?: string, pretty?: boolean, destination?: import('stream').Writable }} [options]
 *   `pretty`: true asks for pino-pretty (ERR_POLISTES_MISSING_PACKAGE without it), false for JSON;
 *   by default, pretty on a TTY when pino-pretty is installed
 * @returns {import('pino').Logger}
 */
function createLogger ({
  level = 'info',
  pretty = process.stdout.isTTY === true && isInstalled('pino-pretty'),
  destination
} = {}) {
  if (destination) return pino({ level, base: undefined }, destination)
  if (pretty) {
    const pinoPretty = requireOptional('pino-pretty', '--log-format pretty')
    return pino(
      { level, base: undefined },
      pinoPretty({ colorize: true, sync: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' })
    )
  }
  return pino({ level, base: undefined })
}

/** A logger that drops everything: the default for programmatic use and benchmarks. */
function silentLogger () {
  return pino({ level: 'silent' })
}

module.exports = { createLogger, silentLogger }
