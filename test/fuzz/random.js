'use strict'

const { mulberry32 } = require('../../src/common/prng')

/**
 * Seeded choices for the differential fuzzer: every case draws from its own stream, made from the
 * run's seed and the case's number, so one case can be made again alone (`--case N`).
 */

/**
 * @param {number} seed the run's seed
 * @param {number} index the case's number
 * @returns {Rand}
 */
function caseRandom (seed, index) {
  const mixed = (Math.imul(seed >>> 0, 0x9E3779B1) ^ Math.imul((index >>> 0) + 1, 0x85EBCA6B)) >>> 0
  return new Rand(mulberry32(mixed))
}

/** A few helpers over a uniform [0, 1) source. */
class Rand {
  /** @param {() => number} next */
  constructor (next) {
    this.next = next
  }

  /** @returns {boolean} true with probability p */
  chance (p) {
    return this.next() < p
  }

  /** @returns {number} an integer in [lo, hi] */
  int (lo, hi) {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }

  /**
   * @template T
   * @param {T[]} items
   * @returns {T}
   */
  pick (items) {
    return items[Math.floor(this.next() * items.length)]
  }

  /** @returns {string} `length` characters from `alphabet` */
  text (length, alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789') {
    let s = ''
    for (let i = 0; i < length; i++) s += alphabet[Math.floor(this.next() * alphabet.length)]
    return s
  }

  /** @returns {string} the name with each letter's case flipped at random */
  mixCase (name) {
    let s = ''
    for (const c of name) s += this.chance(0.5) ? c.toUpperCase() : c.toLowerCase()
    return s
  }
}

module.exports = { caseRandom, Rand }
