'use strict'

/**
 * The balancer's own surface (stats today; metrics, dashboard and events as they come) lives under
 * one reserved path prefix, served by one router that is mounted on the public listener or, with
 * `adminPort`, on a listener of its own.
 */
const ADMIN_PREFIX = '/_polistes/'

/**
 * An admin handler answers the requests it owns and returns true, or returns false at once and
 * writes nothing (not its path, or not its method).
 * @callback AdminHandler
 * @param {import('node:http').IncomingMessage} req
 * @param {import('node:http').ServerResponse} res
 * @returns {boolean}
 */

/**
 * The admin router: handlers tried in the order they were added.
 * @returns {{ add: (handler: AdminHandler) => void, handle: AdminHandler }}
 */
function createAdminRouter () {
  const handlers = []
  return {
    add (handler) {
      if (typeof handler !== 'function') throw new TypeError('an admin handler is a function (req, res) => boolean')
      handlers.push(handler)
    },
    handle (req, res) {
      for (const handler of handlers) if (handler(req, res)) return true
      return false
    }
  }
}

/**
 * Whether a request target is under the admin prefix.
 * @param {string} url the request target, e.g. '/_polistes/stats?x=1'
 * @returns {boolean}
 */
function isAdminPath (url) {
  return url.startsWith(ADMIN_PREFIX)
}

module.exports = { ADMIN_PREFIX, createAdminRouter, isAdminPath }
