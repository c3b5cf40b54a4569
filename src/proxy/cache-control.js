'use strict'

/**
 * The `Cache-Control: no-store` request directive (RFC 9111 §5.2.1.5: "a cache MUST NOT store any
 * part of either this request or any response to it"), the admission hint the balancer adds to a
 * request whose policy said the picked upstream should not keep the page (`ctx.noStore === true`).
 * Pure functions over header values; no sockets.
 */

const NO_STORE = 'no-store'

/**
 * Whether a Cache-Control value holds the `no-store` directive: a token match, case-insensitive,
 * among comma-separated directives (`no-store` with an argument, `no-store=x`, counts too; a
 * `no-storey` or a `private="no-store"` argument does not).
 * @param {string | string[] | undefined} value the header's value (node:http joins repeated ones with ', ')
 * @returns {boolean}
 */
function hasNoStore (value) {
  if (value === undefined) return false
  if (Array.isArray(value)) return value.some(hasNoStore)
  const lower = value.toLowerCase()
  let from = 0
  for (;;) {
    const at = lower.indexOf(NO_STORE, from)
    if (at === -1) return false
    if (directiveStart(lower, at) && directiveEnd(lower, at + NO_STORE.length)) return true
    from = at + 1
  }
}

/** `no-store` at `at` starts a directive: only whitespace back to a comma or the start. */
function directiveStart (s, at) {
  for (let i = at - 1; i >= 0; i--) {
    const c = s.charCodeAt(i)
    if (c === 44) return true // ,
    if (c !== 32 && c !== 9) return false
  }
  return true
}

/** The directive name ends at `at`: whitespace, then a comma, `=` or the end. */
function directiveEnd (s, at) {
  for (let i = at; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 44 || c === 61) return true // , =
    if (c !== 32 && c !== 9) return false
  }
  return true
}

/**
 * The Cache-Control value to forward when the request must not be stored: the client's value with
 * `, no-store` appended, unchanged when it holds no-store already, `no-store` when there was none.
 * @param {string | string[] | undefined} value the client's Cache-Control
 * @returns {string}
 */
function withNoStore (value) {
  if (Array.isArray(value)) value = value.join(', ')
  if (value === undefined || value.trim() === '') return NO_STORE
  return hasNoStore(value) ? value : value + ', ' + NO_STORE
}

module.exports = { hasNoStore, withNoStore }
