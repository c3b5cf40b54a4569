'use strict'

const pino = require('pino')

/**
 * The balancer's logger: pretty, coloured lines when a person watches (stdout is a TTY),
 * JSON lines otherwise (for log shippers and tests). Both are synchronous streams, so no worker
 * thread is started and nothing is lost on exit.
 *
 * @param {{ level?: string, pretty?: boolean, destination?: import('stream').Writable }} [options]
 * @returns {import('pino').Logger}
 */
function createLogger ({ level = 'info', pretty = process.stdout.isTTY === true, destination } = {}) {
  if (destination) return pino({ level, base: undefined }, destination)
  if (pretty) {
    const pinoPretty = require('pino-pretty')
    return pino({ level, base: undefined }, pinoPretty({ colorize: true, sync: true, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' }))
  }
  return pino({ level, base: undefined })
}

/** A logger that drops everything: the default for programmatic use and benchmarks. */
function silentLogger () {
  return pino({ level: 'silent' })
}

module.exports = { createLogger, silentLogger }
