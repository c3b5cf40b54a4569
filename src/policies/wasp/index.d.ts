import type { Policy, PolicyDeps, Upstream, PickContext, Outcome } from '../types'

export type { Policy, PolicyDeps, Upstream, PickContext, Outcome }

/** Which parts of a response reinforce the thresholds. */
export interface WaspFeedback {
  /** use `outcome.cache` ('HIT' | 'MISS'): a MISS keeps only `missLearning` of the learning (default false) */
  cache?: boolean
  /** scale each upstream's load by its latency EWMA relative to the mean (default false) */
  latency?: boolean
}

/** Every parameter of the wasp policy; all optional, see `createWasp.defaults`. */
export interface WaspOptions {
  /** lowest threshold (default 1) */
  thetaMin?: number
  /** highest threshold (default 1000) */
  thetaMax?: number
  /** threshold of a key an upstream has not met yet (default 500) */
  thetaStart?: number
  /** learning ξ: θ falls by this much each time the upstream serves the key (default 100) */
  xi?: number
  /** forgetting φ: θ rises by this much per request of the key served elsewhere (default 3) */
  phi?: number
  /** first-round stimulus s (default 3) */
  stimulus?: number
  /** factor by which s grows per unanswered round (default 2) */
  stimulusGrowth?: number
  /** response rounds before the deterministic fallback, integer 0..64 (default 8) */
  rounds?: number
  /** bounded-load guard c: an upstream at ≥ ceil(c × (total in-flight + 1) / n) is skipped (default 5) */
  loadFactor?: number
  /**
   * spill (with shareGap): once an upstream's latencies show a queue, a key's request goes to its
   * holder with the shortest expected wait, and to an upstream with a free worker when that wait
   * exceeds spill × the holder's miss penalty; a request its holders would miss and not keep goes
   * to the shortest expected wait; 0 = off (default 1; see docs/algorithms.md "Finite backends")
   */
  spill?: number
  /** replication threshold (as `replicate`) for a key whose holder shows a queue; 0 = off (default 0.15) */
  replicateQueued?: number
  /** unequal workers nobody weighted: weigh each upstream by the worker count read from its busy
   * workers while saturated (the snapshot's `workers`); off: exact in the model, over HTTP it misreads
   * under a flood that saturates the balancer (docs/algorithms.md; default false) */
  learnWorkers?: boolean
  /** unequal backends nobody weighted: where no `weight` was given, each upstream's share of the keys
   * follows its queue against the others' (a backend whose responses wait longer holds fewer keys);
   * only while an upstream shows a queue (docs/algorithms.md "Sixth pass"; default true) */
  capacityWeights?: boolean
  /** key table capacity, LRU (default 10000) */
  maxKeys?: number
  /** response feedback switches (default both off) */
  feedback?: WaspFeedback
  /** with feedback.cache, the fraction of the learning a MISS keeps, 0..1 (default 0.5) */
  missLearning?: number
  /**
   * idleness, in fair gaps: an upstream that has served nothing for more than idleGaps × n picks
   * (n upstreams listed) bids with its thresholds halved per further pick and keeps that for the key
   * it wins, so a re-added upstream takes keys; >= 0, 0 turns it off (default 8)
   */
  idleGaps?: number
  /**
   * several colonies (balancer processes without shared state): 0 = off; B >= 1 = every key has an
   * owner in a balanced packing of the keys onto the upstreams that every process computes alike,
   * and every other upstream bids with its threshold read as at least thetaStart, times B
   * (default 0; `polistes --workers N > 1` uses 16)
   */
  balanced?: number
  /**
   * holdings contest: a key's holder that holds at least shareGap more keys of the key's popularity
   * band than the least-held listed upstream hands the key over, and a key short of holders goes to
   * the least-held; 0 = off (thresholds alone), otherwise an integer >= 2 (default 3). An upstream
   * whose responses report `X-Cache` (outcome.cache) gets a capacity from the hit ratio of its held
   * keys: when full it takes no more keys and sheds its coldest (no weights needed for unequal caches)
   */
  shareGap?: number
  /**
   * replication (with shareGap): a key whose share of the requests exceeds replicate × 1/n (one
   * upstream's fair share) gets another holder, up to ceil(share × n / replicate); 0 = off (default 1)
   */
  replicate?: number
  /**
   * admission (with shareGap): an upstream whose cache results (X-Cache) show a cache of at least 8
   * keys that keeps fewer keys than it holds is told not to keep (`ctx.noStore`, sent upstream as
   * `Cache-Control: no-store`) the keys it holds beyond that size by popularity, nor keys it does
   * not hold (default true)
   */
  admission?: boolean
}

/** The resolved defaults. */
export interface WaspDefaults extends Readonly<Required<Omit<WaspOptions, 'feedback'>>> {
  readonly feedback: Readonly<Required<WaspFeedback>>
}

/** What `snapshot()` returns: plain JSON. */
export interface WaspSnapshot {
  name: 'wasp'
  /** decisions taken */
  picks: number
  /** decisions that fell back to the lowest effective threshold after all rounds */
  fallbacks: number
  /** decisions where the load guard made at least one upstream ineligible */
  guarded: number
  /** decisions won by an upstream bidding with its idle discount (see `idleGaps`) */
  idleWins: number
  /** keys given a holder because they had fewer than they needed (new keys, replicas, keys whose holder left) */
  joins: number
  /** holdings contests a holder lost: the key moved to the least-held upstream of its band */
  swaps: number
  /** decisions that sent a key's request past its holders, whose queue was too long (see `spill`) */
  spills: number
  /** decisions that sent a request its holders would miss and not keep to the upstream with the
   * shortest expected wait, once the backends queue (see `spill`) */
  freeMisses: number
  /** keys in the table held by more than one upstream (replicated hot keys) */
  replicated: number
  /** balanced packings computed so far (0 while `balanced` is off) */
  packings: number
  /** keys in the table, and its cap */
  keys: number
  maxKeys: number
  /** `idle`: picks since the upstream last served anything; `held`: keys it holds; `heldHitRatio`:
   * EWMA of the cache results (X-Cache HIT 1, MISS 0) of its warm held keys (1 before any);
   * `capacity`: its capacity estimate in keys, learnt from them (null: none, it is not full);
   * `admissionSize`: the keys its cache keeps, learnt from the results of kept keys (null: not
   * learnt, it keeps everything; see `admission`); `queued`: whether its latencies have shown a
   * queue (see `spill`); `workers`: its worker count, learnt from its busy workers while it was
   * saturated (null: not seen saturated; with `learnWorkers`, an upstream given no `weight` weighs it in
   * the holdings; over HTTP it can read several times too many); `weight`: the weight its holdings
   * are compared by (its given `weight`, else the one its queue earned with `capacityWeights`) */
  upstreams: Array<{
    id: string, latencyMs: number, idle: number, held: number, heldHitRatio: number,
    capacity: number | null, admissionSize: number | null, queued: boolean, workers: number | null,
    weight: number
  }>
  /** keys owned per upstream id: keys whose lowest threshold is that upstream's and below `thetaStart` */
  owned: Record<string, number>
  /** the 50 most recently used keys with their specialist (lowest threshold) */
  recent: Array<{ key: string, specialist: string | undefined, theta: number, requests: number, holders: string[] }>
}

export interface WaspPolicy extends Policy {
  readonly name: 'wasp'
  pick<U extends Upstream> (upstreams: readonly U[], ctx?: PickContext): U | undefined
  /** wasp has no `onStart` (optional in the contract): it learns at pick time and from `onEnd` */
  onStart?: undefined
  onEnd (upstream: Upstream, ctx: PickContext | undefined, outcome: Outcome): void
  snapshot (): WaspSnapshot
  /** take new options on a running policy, keeping thresholds and upstream records (hot reload) */
  configure (options: WaspOptions): void
}

export interface CreateWasp {
  (options?: WaspOptions, deps?: PolicyDeps): WaspPolicy
  readonly defaults: WaspDefaults
}

/** Create a wasp (response-threshold) policy. Throws ERR_POLISTES_BAD_OPTION on a bad option. */
export declare const createWasp: CreateWasp
export declare const defaults: WaspDefaults
