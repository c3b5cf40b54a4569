'use strict'

/** Bytes of a request body kept for a resend; a longer body is not kept (its request is not resent). */
const REPLAY_LIMIT = 64 * 1024

/**
 * A copy of a request's body as it streams to the upstream, kept so that the request can go once
 * more on a new connection (src/proxy/engines/node-http.js, http-proxy.js): a bounded one, and only
 * until the answer begins (`release`).
 */
class ReplayBody {
  /**
   * @param {import('http').IncomingMessage} req read alongside whoever pipes it; call in the same
   *   tick as the pipe, so that no chunk flows by unseen
   * @param {number} [limit]
   */
  constructor (req, limit = REPLAY_LIMIT) {
    this.req = req
    this.limit = limit
    /** @type {Buffer[] | null} null: the body outgrew the limit, or was released */
    this.chunks = []
    this.size = 0
    this.onData = (chunk) => {
      if (this.chunks === null) return
      this.size += chunk.length
      if (this.size > this.limit) this.release()
      else this.chunks.push(chunk)
    }
    req.on('data', this.onData)
  }

  /** Whether the body so far is kept whole. */
  get kept () {
    return this.chunks !== null
  }

  /**
   * Write the body again into `out`, from its first byte: what was kept, then the rest as the
   * client sends it (with back-pressure), then end it. Keeps nothing more.
   * @param {import('stream').Writable} out
   */
  replay (out) {
    for (const chunk of this.chunks) out.write(chunk)
    this.release()
    const req = this.req
    if (req.readableEnded) {
      out.end()
      return
    }
    req.on('data', (chunk) => {
      if (!out.write(chunk)) {
        req.pause()
        out.once('drain', () => req.resume())
      }
    })
    req.once('end', () => out.end())
    // paused when the pipe to the failed request was cut (its back-pressure, or its unpipe): a
    // 'data' listener alone does not start a stream paused that way
    req.resume()
  }

  /** Keep nothing more (the answer began, or the body was replayed). */
  release () {
    this.chunks = null
    this.req.off('data', this.onData)
  }
}

module.exports = { ReplayBody }
