'use strict'

/**
 * The policy test driver: a seeded PRNG, a fake clock, a driver that replays a scripted run
 * (membership changes, held in-flight work, scripted latencies) against a policy, the runner of the
 * table-driven cases, and the latency scripts the latency-driven policies' tests share.
 */

const { mulberry32 } = require('../src/common/prng')

/** A random source that replays `values` in a loop. */
function sequence (values) {
  let i = 0
  return () => values[i++ % values.length]
}

/** A manual clock in ms: `clock.now()`, `clock.advance(ms)`. */
function fakeClock (start = 0) {
  let t = start
  return { now: () => t, advance (ms) { t += ms } }
}

/**
 * Upstream records from short specs: 'a' or { id: 'a', weight: 2, region: 'eu', inflight: 3 }.
 * @returns {{ id: string, inflight: number, weight?: number, region?: string }[]}
 */
function upstreams (specs) {
  return specs.map((s) => (typeof s === 'string' ? { id: s, inflight: 0 } : { inflight: 0, ...s }))
}

/**
 * Replay requests against a policy and return the picked ids.
 * @param {object} policy
 * @param {object[]} pool all upstream records (mutated: inflight)
 * @param {object} run
 * @param {object[]} [run.requests] the ctx of each request, or
 * @param {number} [run.picks] a number of requests, with
 * @param {(i: number) => object} [run.ctx] the ctx of request i (default `{}`)
 * @param {Record<number, string[]>} [run.members] before request i, the eligible ids become these
 * @param {boolean} [run.hold] a picked upstream keeps the request in flight (inflight++ for good)
 * @param {(id: string, nth: number) => (number | object)} [run.latency] scripted outcome of the nth
 *   (0-based) request served by an upstream: a latency in ms, or a whole outcome
 * @param {{ advance: (ms: number) => void }} [run.clock] advanced by each request's latency
 * @returns {(string | undefined)[]}
 */
function drive (policy, pool, { requests, picks, ctx = () => ({}), members = {}, hold = false, latency, clock } = {}) {
  const n = requests ? requests.length : picks
  let eligible = pool
  const served = new Map()
  const picked = []
  for (let i = 0; i < n; i++) {
    if (members[i]) eligible = pool.filter((u) => members[i].includes(u.id))
    const c = requests ? requests[i] : ctx(i)
    const u = policy.pick(eligible, c)
    picked.push(u && u.id)
    if (!u) continue
    if (policy.onStart) policy.onStart(u, c)
    u.inflight++
    if (hold) continue
    const nth = served.get(u.id) ?? 0
    served.set(u.id, nth + 1)
    const scripted = latency ? latency(u.id, nth) : 1
    const outcome = typeof scripted === 'number' ? { latencyMs: scripted, statusCode: 200 } : scripted
    if (clock) clock.advance(outcome.latencyMs ?? 1)
    u.inflight--
    if (policy.onEnd) policy.onEnd(u, c, outcome)
  }
  return picked
}

/**
 * Run one table-driven case: a fresh policy from `create(options)`, the pool from `upstreams`,
 * `setup(policy, pool)` if given, then {@link drive} with the rest of the case.
 * @param {(options?: object) => object} create
 * @param {{ upstreams: Array<string | object>, options?: object, setup?: (policy: object, pool: object[]) => void }} testCase
 * @returns {(string | undefined)[]} the picked ids
 */
function replay (create, { upstreams: specs, options, setup, name, expected, ...run }) {
  const policy = create(options)
  const pool = upstreams(specs)
  if (setup) setup(policy, pool)
  return drive(policy, pool, run)
}

/** Latency script: a is fast (10 ms) for its first 5 requests, then slow (100 ms); b is a steady 50 ms. */
const aSlowsDown = (id, nth) => (id === 'b' ? 50 : nth < 5 ? 10 : 100)

/** The case every "lowest average wins" policy passes alike (sma, ewma, lowest-latency). */
const probeThenLowest = Object.freeze({
  name: 'probes every unsampled upstream first, then the lowest average wins',
  upstreams: ['a', 'b', 'c'],
  latency: (id) => ({ a: 30, b: 10, c: 20 })[id],
  picks: 6,
  expected: ['a', 'b', 'c', 'b', 'b', 'b']
})

/** Share of each id in `picked`, in the order of `ids`. */
function shares (picked, ids) {
  return ids.map((id) => picked.filter((p) => p === id).length / picked.length)
}

module.exports = { mulberry32, sequence, fakeClock, upstreams, drive, replay, shares, aSlowsDown, probeThenLowest }
