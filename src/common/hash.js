'use strict'

/** String hashing shared by the policies (keys, upstream ids) and the heat map's admission counters. */

// globals read once at load: under jest (a vm context) each read of a global is slow (src/common/prng.js)
const { imul } = Math

/** FNV-1a's offset basis and prime (32 bits). */
const FNV_OFFSET = 0x811c9dc5
const FNV_PRIME = 0x01000193

/**
 * FNV-1a, 32 bits, over the string's UTF-16 code units (identical to byte-wise FNV-1a for ASCII).
 * @param {string} str
 * @param {number} [seed] starting state (default the FNV offset basis), to chain strings
 * @param {number} [from] first code unit hashed (default 0)
 * @param {number} [to] end of the hashed range, exclusive (default the length): a part of a string
 *   without slicing it
 * @returns {number} unsigned 32-bit hash
 */
function fnv1a32 (str, seed = FNV_OFFSET, from = 0, to = str.length) {
  let h = seed
  for (let i = from; i < to; i++) {
    h ^= str.charCodeAt(i)
    h = imul(h, FNV_PRIME)
  }
  return h >>> 0
}

module.exports = { fnv1a32, FNV_OFFSET, FNV_PRIME }
