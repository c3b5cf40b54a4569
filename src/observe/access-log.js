'use strict'

const fs = require('node:fs')
const pino = require('pino')
const { ERR_POLISTES_BAD_OPTION } = require('../common/errors')

/**
 * The access log: one pino line per finished request, at `info`:
 * `{"level":30,"time":1700000000000,"method":"GET","path":"/page1.html","status":200,"upstream":"a",
 * "attempts":1,"ms":1.23,"cache":"HIT","bytes":62011,"msg":"request"}`.
 * `bytes` is what the balancer wrote to the client's socket for this response (headers included).
 *
 * To a file, lines go through pino's asynchronous destination (sonic-boom, buffered 4 KiB): the
 * event loop never waits for the disk. Without a file they go to the given logger (the CLI's,
 * whose JSON output is asynchronous too).
 */

/**
 * @typedef {object} AccessLog
 * @property {(request: import('./telemetry').RequestRecord) => void} write one line of the request's
 *   method, path, status, upstream, attempts, ms, cache and bytes
 * @property {() => Promise<void>} close flush and close the file (no-op without one)
 * @property {string | undefined} file
 */

/**
 * Create an access log.
 * @param {object} [options]
 * @param {import('pino').Logger} [options.logger] where lines go when no file is given
 * @param {string} [options.file] append to this file instead (created if missing)
 * @returns {AccessLog}
 * @throws {import('../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION when the file cannot be opened
 */
function createAccessLog ({ logger, file } = {}) {
  let destination = null
  let log = logger
  if (file !== undefined) {
    if (typeof file !== 'string' || file === '') {
      throw new ERR_POLISTES_BAD_OPTION('access log file must be a non-empty path')
    }
    let fd
    try {
      fd = fs.openSync(file, 'a')
    } catch (err) {
      throw new ERR_POLISTES_BAD_OPTION(`cannot open access log file ${file}: ${err.code || err.message}`)
    }
    destination = pino.destination({ dest: fd, sync: false, minLength: 4096 })
    log = pino({ base: undefined }, destination)
  }
  if (!log) throw new TypeError('createAccessLog needs a logger or a file')
  const on = log.isLevelEnabled('info')
  let closed = null
  return {
    file,
    write ({ method, path, status, upstream, attempts, ms, cache, bytes }) {
      if (on) {
        log.info(
          { method, path, status, upstream, attempts, ms: Math.round(ms * 100) / 100, cache, bytes },
          'request'
        )
      }
    },
    close () {
      if (!destination) return Promise.resolve()
      closed ||= new Promise((resolve) => {
        destination.once('close', resolve)
        destination.end()
      })
      return closed
    }
  }
}

module.exports = { createAccessLog }
