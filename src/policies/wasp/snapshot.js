'use strict'

/**
 * What a wasp policy shows of itself (`snapshot()`, the admin API and the dashboard): counters,
 * upstream records, and the specialists of the most recent keys. Reads the state of ./index.js,
 * changes nothing.
 */

/** Keys listed (most recent first) in a snapshot's `recent`. */
const RECENT_KEYS = 50

/**
 * Plain JSON: counters, upstream records, and the specialist of the most recent keys.
 * @param {object} w the state of one wasp policy (`createState` in ./index.js)
 * @returns {object} plain JSON, `WaspSnapshot` in ./index.d.ts
 */
function snapshot (w) {
  const { memory } = w
  const recent = []
  // the 50 most recently used keys are the last 50 of the LRU map: skip the rest without copying it
  let skip = memory.keys.size - RECENT_KEYS
  const last = []
  for (const entry of memory.keys) if (skip-- <= 0) last.push(entry)
  for (let j = last.length - 1; j >= 0; j--) {
    const [key, krec] = last[j]
    let sid
    let st = Infinity
    for (const [id, urec] of memory.ups) {
      const t = memory.theta(krec, urec)
      if (t < st) { st = t; sid = id }
    }
    recent.push({ key, specialist: sid, theta: st, requests: krec.step, holders: krec.holders.map((h) => h.id) })
  }
  // keys held by more than one upstream (replicated), counted over the table (snapshot only)
  let replicated = 0
  for (const krec of memory.keys.values()) if (krec.holders.length > 1) replicated++
  // keys owned: those whose lowest threshold is below thetaStart (learnt), by that upstream. Only an
  // upstream with an entry for the key can be below thetaStart (one without reads thetaStart or
  // more), so this reads the key's few entries, not every upstream (O(keys), not O(keys × upstreams))
  const owned = {}
  for (const id of memory.ups.keys()) owned[id] = 0
  for (const krec of memory.keys.values()) {
    let sid
    let st = w.o.thetaStart
    for (const e of krec.entries) {
      if (!memory.current(e.u)) continue // a forgotten record
      const t = memory.theta(krec, e.u)
      if (t < st) { st = t; sid = e.u.id }
    }
    if (sid !== undefined) owned[sid]++
  }
  return {
    name: 'wasp',
    picks: memory.picks,
    fallbacks: w.fallbacks,
    guarded: w.guarded,
    keys: memory.keys.size,
    maxKeys: w.o.maxKeys,
    idleWins: w.idleWins,
    packings: w.packing.version,
    joins: w.joins,
    swaps: w.swaps,
    spills: w.spills,
    freeMisses: w.freeMisses,
    replicated,
    upstreams: [...memory.ups.values()].map((u) => ({
      id: u.id,
      latencyMs: u.latency,
      idle: u.idle,
      held: u.heldTotal,
      heldHitRatio: u.hits,
      capacity: u.cap === Infinity ? null : u.cap,
      admissionSize: u.admission.size === Infinity ? null : u.admission.size,
      queued: u.q.queued,
      workers: u.q.busyCount > 0 ? u.q.busyCount : null,
      weight: u.weight
    })),
    owned,
    recent
  }
}

module.exports = { snapshot }
