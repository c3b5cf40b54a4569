'use strict'

/**
 * Handlers added to the admin surface (`/_polistes/*`) with `balancer.addAdminHandler`: tried in
 * the order they were added, before the built-in endpoints of admin.js. The balancer serves the
 * surface on its public listener or, with `adminPort`, on a listener of its own.
 */

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

module.exports = { createAdminRouter }
