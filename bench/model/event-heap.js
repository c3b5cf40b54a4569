'use strict'

/**
 * The event queue of the closed-loop and open-loop models: a binary min-heap of events ordered by
 * (time, seq), so that events at the same simulated time resolve in scheduling order. Pure.
 */

/** A binary min-heap of `{ time, seq }` events: the earliest first, ties in `seq` order. */
class EventHeap {
  constructor () { this.items = [] }
  get size () { return this.items.length }
  push (ev) {
    const a = this.items
    a.push(ev)
    let i = a.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!less(a[i], a[p])) break
      ;[a[i], a[p]] = [a[p], a[i]]
      i = p
    }
  }

  pop () {
    const a = this.items
    const top = a[0]
    const last = a.pop()
    if (a.length > 0) {
      a[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < a.length && less(a[l], a[m])) m = l
        if (r < a.length && less(a[r], a[m])) m = r
        if (m === i) break
        ;[a[i], a[m]] = [a[m], a[i]]
        i = m
      }
    }
    return top
  }
}

function less (x, y) {
  return x.time < y.time || (x.time === y.time && x.seq < y.seq)
}

module.exports = { EventHeap }
