// Compiled with `tsc --noEmit --strict` by test/types.test.js; never run.
import { createWasp, defaults } from 'polistes/wasp'
import type { WaspOptions, WaspPolicy, WaspSnapshot, Upstream } from 'polistes/wasp'

const options: WaspOptions = { xi: 100, phi: 3, feedback: { cache: true }, maxKeys: 1000, idleGaps: 8 }
const policy: WaspPolicy = createWasp(options, { random: Math.random, now: () => 0 })
createWasp()
createWasp({}, {})

interface Member extends Upstream { url: string }
const members: Member[] = [{ id: 'a', url: 'http://127.0.0.1:9101', inflight: 0 }]
const picked: Member | undefined = policy.pick(members, { key: '/page1' })
if (picked) {
  const url: string = picked.url
  // @ts-expect-error wasp has no onStart: the contract makes it optional
  policy.onStart(picked, { key: '/page1' })
  policy.onEnd(picked, { key: '/page1' }, { latencyMs: 3, statusCode: 200, cache: 'HIT' })
  void url
}
const snap: WaspSnapshot = policy.snapshot()
const n: number = snap.picks + defaults.rounds + createWasp.defaults.thetaMax + defaults.idleGaps + defaults.balanced + snap.idleWins + snap.packings + snap.upstreams[0].idle
const on: boolean = defaults.feedback.cache
const name: 'wasp' = policy.name
void n; void on; void name

// @ts-expect-error xi is a number, not a string
createWasp({ xi: 'fast' })
// @ts-expect-error idleGaps is a number
createWasp({ idleGaps: true })
// @ts-expect-error unknown option
createWasp({ learningRate: 1 })
// @ts-expect-error cache is 'HIT' | 'MISS'
policy.onEnd(members[0], undefined, { cache: 'STALE' })
// @ts-expect-error defaults are read-only
defaults.xi = 5
