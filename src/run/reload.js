'use strict'

const fs = require('node:fs')
const path = require('node:path')
const { readConfigFile, resolveConfig } = require('../config/config')

/**
 * The CLI's hot reload: read the config file again, merge the command-line flags (they still win),
 * validate with the one validation (src/config/config.js, from the option table src/config/options.js), and apply the
 * result to the running balancer (`balancer.reconfigure`). An invalid config is refused with one log line and the
 * old one keeps serving. Triggered by SIGHUP and, with `--watch`, by a change of the file.
 */

/**
 * Where the embedded fleet's backends are checked when no `healthCheck.path` is configured, unless
 * the fleet gives its own `statsPath` (the same path with the fleet's stats token, which its
 * backends ask of every `/_stats`: see servers/stats-token.js).
 */
const FLEET_HEALTH_PATH = '/_stats'

/**
 * The balancer options of a resolved config: without configured backends, the embedded fleet's
 * (checked on its stats path unless a check path is configured).
 * @param {object} config from resolveConfig
 * @param {{ backends: Array<{ id: string, url: string }>, statsPath?: string } | null} fleet the running fleet, if any
 * @returns {object}
 */
function balancerOptions (config, fleet) {
  if (config.backends || !fleet) return config
  const healthCheck = config.healthCheck.path === null
    ? { ...config.healthCheck, path: fleet.statsPath || FLEET_HEALTH_PATH }
    : config.healthCheck
  return { ...config, healthCheck, backends: fleet.backends.map((b) => ({ id: b.id, url: b.url })) }
}

/**
 * @param {object} options
 * @param {import('../balancer').Balancer} options.balancer the running balancer
 * @param {string} [options.configFile] the --config file (none: only the flags, which cannot change)
 * @param {object} options.flags the flags given at start
 * @param {object} options.config the config the balancer started with
 * @param {{ backends: Array<{ id: string, url: string }>, statsPath?: string } | null} [options.fleet] the embedded
 * fleet
 * @param {Array<{ id: string, url: string }>} [options.backends] backends given from outside the
 *   config (by a cluster primary), kept on a reload
 * @param {(config: object) => object} [options.prepare] applied to every re-read config, as at start
 *   (the cluster's worker rule)
 * @param {import('pino').Logger} options.logger
 * @returns {{ reload: (reason: string) => { ok: boolean, error?: Error, added?: string[], removed?: string[] },
 * current: () => object }}
 */
function createReloader ({ balancer, configFile, flags, config, fleet = null, backends, prepare = (c) => c, logger }) {
  let current = config
  function reload (reason) {
    let next
    let result
    try {
      next = prepare(resolveConfig(flags, configFile ? readConfigFile(configFile) : {}))
      // backends a cluster primary handed over (embedded fleet) stay what they are
      result = balancer.reconfigure(
        balancerOptions(next.backends || fleet || !backends ? next : { ...next, backends }, fleet)
      )
    } catch (err) {
      logger.error(
        { reason, code: err.code },
        `config reload (${reason}) refused, the previous config keeps serving: ${err.code || 'error'}: ${err.message}`
      )
      return { ok: false, error: err }
    }
    current = next
    const restartNeeded = [...result.restartNeeded]
    if (fleet && !next.backends && JSON.stringify(next.fleet) !== JSON.stringify(config.fleet)) {
      restartNeeded.push('fleet')
    }
    const parts = [
      result.added.length > 0 && `added ${result.added.join(', ')}`,
      result.removed.length > 0 && `removed ${result.removed.join(', ')}`,
      result.updated.length > 0 && `updated ${result.updated.join(', ')}`,
      result.changed.length > 0 && `changed ${result.changed.join(', ')}`
    ].filter(Boolean)
    logger.info(
      { reason, ...result, restartNeeded: undefined },
      `config reloaded (${reason}): ${parts.length > 0 ? parts.join('; ') : 'no changes'}`
    )
    if (restartNeeded.length > 0) {
      logger.warn(
        { settings: restartNeeded },
        `config reload: ${restartNeeded.join(', ')} cannot change on a running balancer; restart to apply`
      )
    }
    return { ok: true, ...result, restartNeeded }
  }
  return { reload, current: () => current }
}

/**
 * Call `onChange` (debounced) when `file` changes. The directory is watched, not the file, so an
 * editor that saves by writing a new file and renaming it over the old one is followed too.
 * @param {string} file
 * @param {() => void} onChange
 * @param {{ debounceMs?: number }} [options]
 * @returns {{ close: () => void }}
 */
function watchFile (file, onChange, { debounceMs = 150 } = {}) {
  const dir = path.dirname(path.resolve(file))
  const base = path.basename(file)
  let timer = null
  const watcher = fs.watch(dir, { persistent: false }, (event, name) => {
    if (name !== null && name !== base) return
    clearTimeout(timer)
    timer = setTimeout(onChange, debounceMs)
  })
  watcher.on('error', () => {}) // the directory went away: nothing more to watch
  return {
    close () {
      clearTimeout(timer)
      watcher.close()
    }
  }
}

module.exports = { createReloader, balancerOptions, watchFile }
