'use strict'

/**
 * Lower-cased header names, remembered by position. A peer sends the same header names in the same
 * order message after message (a client its requests on one connection, an upstream its
 * responses), so a name equal to the one at its place last time takes that one's lower-case form,
 * a string already made and hashed, instead of a new one: cheaper to make, and to look up in a Set
 * or use as a property name.
 */
class HeaderNames {
  constructor () {
    /** @type {string[]} names as received */
    this.raw = []
    /** @type {string[]} the same, lower-cased */
    this.lower = []
  }

  /**
   * @param {string} name as received
   * @param {number} at its index among the message's header names
   * @returns {string} lower-case
   */
  lowerAt (name, at) {
    if (this.raw[at] === name) return this.lower[at]
    const lower = name.toLowerCase()
    this.raw[at] = name
    this.lower[at] = lower
    return lower
  }
}

module.exports = { HeaderNames }
