'use strict'

/**
 * The wasp policy's options: each one's default and its check, apart from the algorithm (./index.js).
 * The comments say what each option does; why each default has its value, and the measurements
 * behind it, are in docs/algorithms.md, "Wasp options" (numbers go stale in comments).
 */

const { ERR_POLISTES_BAD_OPTION } = require('../../common/errors')
const { checkOptions } = require('../shared')

/** Every option and its default (docs/algorithms.md, "Wasp options", gives the reasons). */
const defaults = Object.freeze({
  /** lowest threshold: that of a full specialist (a holder answers as one) */
  thetaMin: 1,
  /** highest threshold: that of an upstream that has forgotten a key */
  thetaMax: 1000,
  /** threshold of a key an upstream has not met: mid-range, an unseen key is nobody's and everybody's */
  thetaStart: 500,
  /** learning ξ: θ falls by ξ each time the upstream serves the key */
  xi: 100,
  /** forgetting φ: θ rises by φ per request of the key served elsewhere (lazily); ξ/φ is the smallest
   * share of a key's requests with which a specialist keeps it */
  phi: 3,
  /** first-round stimulus s: low, so that a specialist answers before a stranger has had a chance */
  stimulus: 3,
  /** factor by which the stimulus grows per unanswered round (a waiting job's stimulus is its wait) */
  stimulusGrowth: 2,
  /** response rounds before the deterministic fallback (the lowest effective threshold), integer
   * 0..64: enough for the stimulus to climb across the threshold range */
  rounds: 8,
  /** bounded-load guard c: an upstream at ≥ ceil(c × (total in-flight + 1) / n) is not eligible.
   * Every shed request is a miss that evicts one of the stranger's own pages, so the guard must
   * only catch real hot spots, not the in-flight jitter of real servers */
  loadFactor: 5,
  /** key table cap (LRU): memory stays bounded whatever the key space */
  maxKeys: 10000,
  /** feedback from the response. cache: a MISS keeps only `missLearning` of the learning; latency:
   * the load is scaled by the upstream's latency EWMA. Both off (they measured worse on equal
   * caches). Errors and 5xx always take the learning back */
  feedback: Object.freeze({ cache: false, latency: false }),
  /** with feedback.cache, the fraction of the learning a MISS keeps (never 0: cold caches must warm) */
  missLearning: 0.5,
  /** idleness (Cicirello & Smith's idle machine): an upstream that has served nothing for more than
   * `idleGaps` fair gaps (idleGaps × n picks, n = upstreams listed) bids with its thresholds halved
   * per further pick, and keeps the discount for the key it wins, so that a re-added upstream takes
   * keys; large enough that a specialist at its fair share almost never goes that long. 0 = off */
  idleGaps: 8,
  /** colonies (`--workers`): 0 = off; B >= 1 = every key has an owner in a balanced packing of the
   * keys onto the upstreams (./packing.js: consistent hashing with bounded loads over keys, in
   * proportion to weights), a deterministic function of the keys and upstream ids and weights, so
   * independent balancer processes compute the same owners; every other upstream bids as a
   * stranger, its threshold read as at least thetaStart (whatever it learnt, however idle) times B.
   * Off for one process, whose learnt division adapts to unequal caches nobody weighted;
   * `polistes --workers N` (N > 1) uses 16 unless policyOptions sets it */
  balanced: 0,
  /** holdings contest (./holdings.js): a key's holder that holds at least shareGap more keys at
   * least as popular as the key (its popularity band) than the least-held listed upstream loses the
   * key to it, and a key short of holders goes to the least-held: an even division of every
   * popularity band, and a re-added upstream wins its share back. 0 = off (thresholds alone);
   * otherwise an integer >= 2 (1 would swap back and forth; a large gap moves too few keys when each
   * upstream holds only a few) */
  shareGap: 3,
  /** replication (with shareGap): a key whose share of the requests exceeds replicate × 1/n (one
   * upstream's fair share) gets another holder, up to ceil(share × n / replicate), so that no
   * backend carries a page hotter than its fair share alone; 0 = off */
  replicate: 1,
  /** admission (with shareGap; ./admission.js): an upstream whose cache results show it keeps
   * fewer keys than it holds is told (ctx.noStore, sent as Cache-Control: no-store) not to keep
   * those beyond its learnt cache size, by popularity, nor the keys it does not hold */
  admission: true,
  /** spill (with shareGap; ./spill.js): once an upstream's latencies show a queue, a key's request
   * goes to its holder with the shortest expected wait, and to another upstream when that wait
   * exceeds spill × the holder's miss penalty (miss less hit service time) and the other, with about
   * a free worker and fewer in flight than the holder, would answer sooner even with a miss; and a
   * request its holders would miss and not keep (admission) goes to the shortest expected wait; 0 = off */
  spill: 1,
  /** replication once the upstreams queue (with spill): `replicate` for a key whose holder shows a
   * queue (./queueing.js), where a holder must carry its other keys besides a hot one; 0 = off */
  replicateQueued: 0.15,
  /** unequal workers nobody weighted (./queueing.js `observeThroughput`): each upstream's worker count,
   * read from its busy workers while it is saturated, weighs it in the holdings and scales its
   * in-flight count, where no `weight` was given. Off by default: exact in the model, but over HTTP a
   * flood that saturates the balancer makes it read several times the real count, and in the model a
   * backend whose requests never wait 8 service times in the first flood is never read
   * (docs/algorithms.md, "Worker counts learnt"; the counts are shown in the snapshot either way) */
  learnWorkers: false,
  /** capacity weights (./capacity.js): where no `weight` was given, each upstream's share of the keys
   * follows its queue against the others' (a backend that waits longer holds fewer) */
  capacityWeights: true
})

const NUMERIC = ['thetaMin', 'thetaMax', 'thetaStart', 'xi', 'phi', 'stimulus', 'stimulusGrowth',
  'rounds', 'loadFactor', 'maxKeys', 'missLearning', 'idleGaps', 'balanced', 'shareGap', 'replicate', 'spill',
  'replicateQueued']

function badOption (message) {
  return new ERR_POLISTES_BAD_OPTION(`wasp: ${message}`)
}

/**
 * Merge `options` over the defaults and check them.
 * @param {Partial<typeof defaults>} [options]
 * @returns {typeof defaults} the resolved options
 * @throws {import('../../common/errors').PolistesError} ERR_POLISTES_BAD_OPTION
 */
function resolveOptions (options) {
  options = checkOptions('wasp', options, Object.keys(defaults))
  if (options.feedback !== undefined) checkOptions('wasp feedback', options.feedback, Object.keys(defaults.feedback))
  const o = { ...defaults, ...options, feedback: { ...defaults.feedback, ...(options.feedback || {}) } }
  for (const name of NUMERIC) {
    if (typeof o[name] !== 'number' || !Number.isFinite(o[name])) throw badOption(`${name} must be a finite number`)
  }
  if (!(o.thetaMin > 0)) throw badOption('thetaMin must be > 0')
  if (!(o.thetaMax >= o.thetaMin)) throw badOption('thetaMax must be >= thetaMin')
  if (!(o.thetaStart >= o.thetaMin && o.thetaStart <= o.thetaMax)) {
    throw badOption('thetaStart must lie in [thetaMin, thetaMax]')
  }
  if (!(o.xi >= 0) || !(o.phi >= 0)) throw badOption('xi and phi must be >= 0')
  if (!(o.stimulus > 0)) throw badOption('stimulus must be > 0')
  if (!(o.stimulusGrowth >= 1)) throw badOption('stimulusGrowth must be >= 1')
  if (!Number.isInteger(o.rounds) || o.rounds < 0 || o.rounds > 64) {
    throw badOption('rounds must be an integer in [0, 64]')
  }
  if (!(o.loadFactor >= 1)) throw badOption('loadFactor must be >= 1')
  if (!Number.isInteger(o.maxKeys) || o.maxKeys < 1) throw badOption('maxKeys must be a positive integer')
  if (!(o.missLearning >= 0 && o.missLearning <= 1)) throw badOption('missLearning must lie in [0, 1]')
  if (!(o.idleGaps >= 0)) throw badOption('idleGaps must be >= 0')
  if (!(o.balanced === 0 || (o.balanced >= 1 && o.balanced <= 1e6))) {
    throw badOption('balanced must be 0 (off) or lie in [1, 1e6]')
  }
  if (!(o.shareGap === 0 || (Number.isInteger(o.shareGap) && o.shareGap >= 2 && o.shareGap <= 1e6))) {
    throw badOption('shareGap must be 0 (off) or an integer in [2, 1e6]')
  }
  if (!(o.replicate >= 0 && o.replicate <= 1e6)) throw badOption('replicate must be 0 (off) or lie in (0, 1e6]')
  if (!(o.replicateQueued >= 0 && o.replicateQueued <= 1e6)) {
    throw badOption('replicateQueued must be 0 (off) or lie in (0, 1e6]')
  }
  if (!(o.spill >= 0 && o.spill <= 1e6)) throw badOption('spill must be 0 (off) or lie in (0, 1e6]')
  if (typeof o.admission !== 'boolean') throw badOption('admission must be a boolean')
  if (typeof o.learnWorkers !== 'boolean') throw badOption('learnWorkers must be a boolean')
  if (typeof o.capacityWeights !== 'boolean') throw badOption('capacityWeights must be a boolean')
  for (const f of ['cache', 'latency']) {
    if (typeof o.feedback[f] !== 'boolean') throw badOption(`feedback.${f} must be a boolean`)
  }
  return o
}

module.exports = { defaults, resolveOptions }
