'use strict'

// The contract of docs/design.md ("The policy contract"), checked for every registered policy (wasp included).
const { policyNames, createPolicy } = require('../src/policies')
const { mulberry32, fakeClock, upstreams, drive } = require('./policy-driver')

const names = policyNames()

/** Fresh policy with seeded random and a fake clock. */
function make (name, seed = 42) {
  const clock = fakeClock(1000)
  const policy = createPolicy(name, {}, { random: mulberry32(seed), now: clock.now })
  return { policy, clock }
}

/** A scripted run over a changing membership: ids leave and join, keys and addresses vary. */
function churnRun (seed) {
  const rnd = mulberry32(seed)
  const ids = ['a', 'b', 'c', 'd', 'e', 'f']
  const members = {}
  for (let i = 0; i < 2000; i += 50) {
    const subset = ids.filter(() => rnd() < 0.6)
    members[i] = subset.length > 0 ? subset : ['c']
  }
  members[1000] = [] // everybody gone for a while
  members[1010] = ['f', 'a']
  const regions = ['eu', 'us', undefined]
  return {
    pool: upstreams(ids.map((id, k) => ({ id, weight: 1 + (k % 3), region: regions[k % 3] }))),
    run: {
      picks: 2000,
      members,
      ctx: (i) => ({ key: `/page-${i % 25}`, clientAddress: `10.0.0.${i % 17}`, method: 'GET' }),
      latency: (id, nth) => (nth % 7 === 6 ? { error: new Error('reset'), statusCode: 502 } : 5 + ids.indexOf(id) * 10 + (nth % 5))
    }
  }
}

describe.each(names)('policy %s honours the contract', (name) => {
  test('its name is its registry key', () => {
    expect(make(name).policy.name).toBe(name)
  })

  test('an unknown option is refused with ERR_POLISTES_BAD_OPTION naming it', () => {
    expect(() => createPolicy(name, { maxRounds: 4 })).toThrow(expect.objectContaining({
      code: 'ERR_POLISTES_BAD_OPTION',
      message: expect.stringMatching(new RegExp(`^${name}: unknown option "maxRounds"; (known options: |it takes no options)`))
    }))
  })

  test.each([[null], [[]], ['rounds=4']])('options %j that are not an object are refused', (options) => {
    expect(() => createPolicy(name, options)).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION' }))
  })

  test('an empty list gives undefined and does not throw', () => {
    const { policy } = make(name)
    expect(policy.pick([], { key: '/', clientAddress: '10.0.0.1', method: 'GET' })).toBeUndefined()
    expect(policy.pick([], {})).toBeUndefined()
  })

  test.each([
    { ctx: { key: '/a', clientAddress: '10.0.0.1', method: 'GET' } },
    { ctx: { key: '/a' } },
    { ctx: {} }
  ])('a single upstream is always picked (ctx $ctx)', ({ ctx }) => {
    const { policy } = make(name)
    const [only] = upstreams([{ id: 'solo', region: 'eu' }])
    for (let i = 0; i < 20; i++) {
      expect(policy.pick([only], ctx)).toBe(only)
      if (policy.onEnd) policy.onEnd(only, ctx, { latencyMs: 10 + i, statusCode: 200 })
    }
  })

  test('members leaving and joining between calls: no throw, every pick is a current member', () => {
    const { policy, clock } = make(name)
    const { pool, run } = churnRun(7)
    // each pick checked in plain code (2,000 expect() calls per policy cost more than the run); the
    // first one that is not a current member (or not undefined from an empty list) is the failure
    let wrong = null
    const wrapped = {
      ...policy,
      pick (list, ctx) {
        const u = policy.pick(list, ctx)
        if (wrong === null && (list.length === 0 ? u !== undefined : !list.includes(u))) {
          wrong = { members: list.map((m) => m.id), picked: u && u.id, key: ctx && ctx.key }
        }
        return u
      }
    }
    expect(() => drive(wrapped, pool, { ...run, clock })).not.toThrow()
    expect(wrong).toBeNull()
  })

  test('the same seed and clock give the same picks', () => {
    const runs = [1, 2].map(() => {
      const { policy, clock } = make(name, 1234)
      const { pool, run } = churnRun(99)
      return drive(policy, pool, { ...run, clock })
    })
    expect(runs[0]).toEqual(runs[1])
  })

  test('onEnd tolerates errors, odd latencies, unknown upstreams and a missing outcome', () => {
    const { policy } = make(name)
    if (!policy.onEnd) return
    const pool = upstreams(['a', 'b'])
    const ctx = { key: '/x', clientAddress: '10.0.0.1', method: 'GET' }
    const outcomes = [
      { error: new Error('ECONNREFUSED') },
      { error: 'timeout', latencyMs: 30000 },
      { statusCode: 503, latencyMs: 2 },
      { latencyMs: undefined, statusCode: 200 },
      { latencyMs: NaN },
      { latencyMs: -5 },
      { latencyMs: Infinity },
      { cache: 'HIT' },
      {},
      undefined
    ]
    for (const outcome of outcomes) {
      expect(() => policy.onEnd(pool[0], ctx, outcome)).not.toThrow()
      expect(() => policy.onEnd({ id: 'never-seen', inflight: 0 }, ctx, outcome)).not.toThrow()
      expect(() => policy.onEnd(pool[1], undefined, outcome)).not.toThrow()
      expect(pool).toContain(policy.pick(pool, ctx))
    }
  })

  test('snapshot, when present, is plain JSON', () => {
    const { policy, clock } = make(name)
    if (!policy.snapshot) return
    const { pool, run } = churnRun(3)
    drive(policy, pool, { ...run, picks: 300, clock })
    const snap = policy.snapshot()
    expect(JSON.parse(JSON.stringify(snap))).toEqual(snap)
  })
})
