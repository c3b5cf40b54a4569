// ESM import of the CommonJS policy: node examples/wasp.mjs
import { createWasp } from 'polistes/wasp'

let seed = 1 // a tiny seeded random source, so the output is the same on every run
const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646

const wasp = createWasp({}, { random })
const upstreams = ['a', 'b', 'c'].map((id) => ({ id, inflight: 0 }))

for (let i = 0; i < 12; i++) {
  const ctx = { key: `/page${(i % 3) + 1}` }
  const upstream = wasp.pick(upstreams, ctx)
  upstream.inflight++ // the caller keeps inflight
  console.log(`${ctx.key} -> ${upstream.id}`)
  upstream.inflight--
  wasp.onEnd(upstream, ctx, { latencyMs: 1, statusCode: 200, cache: 'HIT' })
}
console.log(JSON.stringify({ picks: wasp.snapshot().picks, keys: wasp.snapshot().keys }))

// The same on every run (the random source is seeded); each page keeps its upstream.
// prints:
// /page1 -> a
// /page2 -> b
// /page3 -> c
// /page1 -> a
// /page2 -> b
// /page3 -> c
// /page1 -> a
// /page2 -> b
// /page3 -> c
// /page1 -> a
// /page2 -> b
// /page3 -> c
// {"picks":12,"keys":3}
