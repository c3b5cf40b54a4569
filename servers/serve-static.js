'use strict'

const { EventEmitter } = require('node:events')

/**
 * node-static's `serve()` without the `url.parse()` it starts with (deprecated in Node, DEP0169,
 * and a failure under `--pending-deprecation --throw-deprecation`): the caller gives the decoded
 * path itself (servers/guards.js resolvePagePath has checked it), and node-static's `servePath`
 * gets the same `finish` and callback as `serve()` gives it.
 *
 * @param {import('node-static').Server} files a node-static server
 * @param {string} pathname decoded path under the root, e.g. "/page1.html"
 * @param {{ url: string, method: string, headers: object }} req the request node-static answers
 * @param {import('node:http').ServerResponse} res
 * @param {(err: { status: number, message?: string } | null, result?: object) => void} [callback]
 *   as `serve()`'s: an error result for statuses >= 400
 */
function serveStatic (files, pathname, req, res, callback) {
  const promise = new EventEmitter()
  files.servePath(pathname, 200, {}, req, res,
    (status, headers) => files.finish(status, headers, req, res, promise, callback))
}

module.exports = { serveStatic }
