'use strict'

/**
 * After answering a request it could not take (or a handshake that gets no tunnel), how long the
 * balancer waits for the client to read the answer and close before it destroys the socket (nginx's
 * lingering close, bounded). Destroying at once, as Node does, resets a connection with unread bytes,
 * and the client may lose the answer; waiting for the client, as a plain `end()` would, lets a slow
 * client keep the socket.
 */
const LINGER_MS = 1000

/**
 * Destroy `socket` LINGER_MS from now unless it closes first: after polistes ended its side, the
 * peer gets that long to read the answer and close its own.
 * @param {import('node:net').Socket} socket
 */
function destroyAfterLinger (socket) {
  const linger = setTimeout(() => socket.destroy(), LINGER_MS)
  socket.once('close', () => clearTimeout(linger))
}

module.exports = { destroyAfterLinger }
