'use strict'

const { HotKeys } = require('./hot-keys')

/**
 * Telemetry: what the balancer saw, one observation per finished request, aggregated in plain
 * numbers and typed arrays so that recording stays cheap on the hot path (no allocation, no
 * labels, no prom-client call per request; `npm run bench:observe` measures it). Everything else
 * (Prometheus text, the dashboard's SSE frames) is derived from these numbers when someone asks.
 *
 * Pure and synchronous: the clock is injected, nothing here touches a socket or a timer.
 *
 * Kept per upstream:
 * - since start: responses by status class, cache hits and misses (the `X-Cache` header), bytes,
 *   and a latency histogram with fixed buckets (from 0.25 ms, so a cache hit and a 20 ms miss land
 *   in different buckets);
 * - per second, over the last `windowS` seconds: requests, hits, misses;
 * - per page: requests with an exponential decay (half-life `halfLifeS`), so the pages x upstreams
 *   heat map shows who serves what now, and re-forms when an upstream dies. The rows are the
 *   `maxPages` hottest routing keys by decayed requests (`hot-keys.js`, a filtered space-saving
 *   table: O(maxPages) memory however many distinct keys come); the others are counted in the
 *   `(other)` row, and a key that loses its row hands its counts to `(other)`, so rows plus
 *   `(other)` always hold every request, decayed.
 * And for the balancer as a whole, per second: a log-scale latency histogram (2^(1/8) steps,
 * about 4 % wide), from which p50 and p99 per second are read.
 */

/** Upper bounds (ms) of the since-start latency histogram; +Inf is implied. */
const LATENCY_BUCKETS_MS = Object.freeze([
  0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 50, 75, 100, 250, 500, 1000, 2500, 5000, 10000
])
/** Status classes: index 0..4 for 1xx..5xx, 5 for anything else (0: no status). */
const STATUS_CLASSES = Object.freeze(['1xx', '2xx', '3xx', '4xx', '5xx', 'other'])
/** The upstream id recorded when no upstream took part (503 without candidates). */
const NO_UPSTREAM = '-'
/** The page row that collects routing keys beyond `maxPages`. */
const OTHER_PAGE = '(other)'

// per-second log histogram: bucket b holds latencies in [LOG_BASE_MS × 2^(b/8), … × 2^((b+1)/8))
const LOG_STEPS = 8
const LOG_BASE_MS = 0.01
const LOG_BUCKETS = 200 // 0.01 ms × 2^(200/8) ≈ 335 s

/**
 * One finished request, as the balancer hands it to the telemetry and the access log: one named
 * record, so that a new field is added where the record is made and read where it is used.
 * @typedef {object} RequestRecord
 * @property {string} method
 * @property {string} path the request target
 * @property {string} key the routing key
 * @property {number} status status code the client got (499: the client left before any response
 *   header; 0 or anything out of 100-599 counts as "other")
 * @property {string | null | undefined} upstream who answered (null: nobody, e.g. 503)
 * @property {number} attempts upstreams tried
 * @property {number} ms from request arrival to response end
 * @property {string | undefined} cache the upstream's X-Cache header
 * @property {number} bytes bytes written to the client (headers included)
 */

/**
 * @typedef {object} UpstreamRecord
 * @property {string} id
 * @property {number} index position in `upstreams()`
 * @property {Float64Array} statuses responses by class (STATUS_CLASSES)
 * @property {number} hits responses with X-Cache: HIT
 * @property {number} misses responses with X-Cache: MISS
 * @property {number} bytes bytes written to clients
 * @property {Float64Array} buckets latency histogram counts (LATENCY_BUCKETS_MS, then +Inf)
 * @property {number} latencySumMs
 * @property {number} count observations
 * @property {Float64Array} secRequests per-second ring
 * @property {Float64Array} secHits per-second ring
 * @property {Float64Array} secMisses per-second ring
 * @property {Float64Array} pages decayed requests per page row
 */

class Telemetry {
  /**
   * @param {object} [options]
   * @param {number} [options.windowS=300] seconds of per-second history kept (the dashboard's span)
   * @param {number} [options.maxPages=64] routing keys tracked one by one in the heat map: the
   *   hottest by decayed requests (the rest share the `(other)` row)
   * @param {number} [options.halfLifeS=5] half-life of the heat map's request counts (a page that
   *   moves to another upstream shows there within seconds)
   * @param {() => number} [options.now=Date.now] wall clock in ms (injected for tests)
   */
  constructor ({ windowS = 300, maxPages = 64, halfLifeS = 5, now = Date.now } = {}) {
    for (const [name, value] of Object.entries({ windowS, maxPages })) {
      if (!(Number.isInteger(value) && value >= 1)) {
        throw new TypeError(`telemetry: ${name} must be a positive integer, got ${value}`)
      }
    }
    if (!(halfLifeS > 0)) throw new TypeError(`telemetry: halfLifeS must be > 0, got ${halfLifeS}`)
    this.windowS = windowS
    this.maxPages = maxPages
    this.halfLifeS = halfLifeS
    this.decayPerS = Math.pow(2, -1 / halfLifeS)
    this.now = now
    /** @type {Map<string, UpstreamRecord>} */
    this.byId = new Map()
    /** @type {UpstreamRecord[]} */
    this.list = []
    /** upstreams removed from the pool -> the second of their removal: their records (dashboard
     * column, /stats and metrics series) stay for one window, then go, so a fleet whose members come
     * and go keeps a bounded number of records */
    this.retired = new Map()
    /** the heat map's rows: routing key <-> page row (row `maxPages` is OTHER_PAGE) */
    this.hotPages = new HotKeys(maxPages, (row) => this.toOther(row))
    /** whether the `(other)` row has received anything (it is shown from then on) */
    this.otherUsed = false
    this.secLatency = new Uint32Array(windowS * LOG_BUCKETS)
    this.secCount = new Float64Array(windowS)
    this.sec = Math.floor(now() / 1000)
    this.startSec = this.sec
    this.total = 0
  }

  /**
   * Record one finished request. Cheap, and allocation-free once its upstream is known
   * (except when a page takes over a heat map row: `hot-keys.js`).
   * @param {RequestRecord} request what the balancer recorded of it (the access log's line too)
   */
  record ({ upstream: upstreamId, key, status, ms: latencyMs, cache, bytes }) {
    const sec = Math.floor(this.now() / 1000)
    if (sec !== this.sec) this.advance(sec)
    const u = this.byId.get(upstreamId || NO_UPSTREAM) || this.upstream(upstreamId || NO_UPSTREAM)
    const cls = (status / 100) | 0
    u.statuses[cls >= 1 && cls <= 5 ? cls - 1 : 5]++
    const slot = sec % this.windowS
    u.secRequests[slot]++
    if (cache === 'HIT') {
      u.hits++
      u.secHits[slot]++
    } else if (cache === 'MISS') {
      u.misses++
      u.secMisses[slot]++
    }
    if (bytes > 0) u.bytes += bytes
    const ms = latencyMs > 0 ? latencyMs : 0
    let b = 0
    while (b < LATENCY_BUCKETS_MS.length && ms > LATENCY_BUCKETS_MS[b]) b++
    u.buckets[b]++
    u.latencySumMs += ms
    u.count++
    let lb = ms > LOG_BASE_MS ? Math.floor(Math.log2(ms / LOG_BASE_MS) * LOG_STEPS) : 0
    if (lb >= LOG_BUCKETS) lb = LOG_BUCKETS - 1
    this.secLatency[slot * LOG_BUCKETS + lb]++
    this.secCount[slot]++
    const row = this.hotPages.touch(key)
    if (row === this.maxPages) this.otherUsed = true
    u.pages[row]++
    this.total++
  }

  /**
   * The record of an upstream, created on first sight (so a member that served nothing yet still
   * gets a column).
   * @param {string} id
   * @returns {UpstreamRecord}
   */
  upstream (id) {
    let u = this.byId.get(id)
    if (u !== undefined) {
      if (this.retired.size > 0) this.retired.delete(id) // back in the pool before its record went
      return u
    }
    const w = this.windowS
    u = {
      id,
      index: this.list.length,
      statuses: new Float64Array(STATUS_CLASSES.length),
      hits: 0,
      misses: 0,
      bytes: 0,
      buckets: new Float64Array(LATENCY_BUCKETS_MS.length + 1),
      latencySumMs: 0,
      count: 0,
      secRequests: new Float64Array(w),
      secHits: new Float64Array(w),
      secMisses: new Float64Array(w),
      pages: new Float64Array(this.maxPages + 1)
    }
    this.byId.set(id, u)
    this.list.push(u)
    return u
  }

  /** @returns {UpstreamRecord[]} every upstream seen, in order of first sight (a retired one until its window has
   * passed) */
  upstreams () {
    this.tick() // a reader catches up with the clock, so retired records past their window are gone
    return this.list
  }

  /**
   * Upstream `id` left the pool: its record stays for `windowS` seconds (its history is still on the
   * dashboard), then goes, unless `upstream(id)` brought it back meanwhile.
   * @param {string} id
   */
  retire (id) {
    if (this.byId.has(id) && !this.retired.has(id)) this.retired.set(id, this.sec)
  }

  /** Drop the records retired at least a window ago; the others keep their order. */
  dropRetired () {
    let dropped = false
    for (const [id, at] of this.retired) {
      if (this.sec - at < this.windowS) continue
      this.retired.delete(id)
      this.byId.delete(id)
      dropped = true
    }
    if (!dropped) return
    this.list = this.list.filter((u) => this.byId.get(u.id) === u)
    this.list.forEach((u, i) => { u.index = i })
  }

  /**
   * Page row `row` goes to another key: what its evicted key had, per upstream, moves to `(other)`
   * (so the new key's cells start from zero and the totals stay whole). O(upstreams).
   * @param {number} row
   */
  toOther (row) {
    const other = this.maxPages
    for (const u of this.list) {
      const p = u.pages
      p[other] += p[row]
      p[row] = 0
    }
    this.otherUsed = true
  }

  /**
   * Move the clock to second `sec`: clear the ring slots of the seconds that start now and decay
   * the heat map. Called by `record`, and by readers so that an idle balancer's history moves on.
   * @param {number} sec
   */
  advance (sec) {
    if (sec <= this.sec) return
    const w = this.windowS
    const steps = Math.min(sec - this.sec, w)
    for (let i = 1; i <= steps; i++) {
      const slot = (this.sec + i) % w
      this.secCount[slot] = 0
      this.secLatency.fill(0, slot * LOG_BUCKETS, (slot + 1) * LOG_BUCKETS)
      for (const u of this.list) {
        u.secRequests[slot] = 0
        u.secHits[slot] = 0
        u.secMisses[slot] = 0
      }
    }
    const decay = Math.pow(this.decayPerS, sec - this.sec)
    for (const u of this.list) {
      const p = u.pages
      for (let i = 0; i < p.length; i++) p[i] *= decay
    }
    this.hotPages.decay(decay)
    this.sec = sec
    if (this.retired.size > 0) this.dropRetired()
  }

  /** Catch up with the clock (for readers: an idle balancer records nothing). */
  tick () {
    this.advance(Math.floor(this.now() / 1000))
  }

  /**
   * Per-second series over the completed seconds in the window (the current second is still
   * filling, so it is left out).
   * @param {number} [fromSec] first second wanted (unix seconds); default: the whole window
   * @returns {{ t: number[], rps: number[], hitRate: Array<number | null>, p50: Array<number | null>, p99: Array<number
   *   | null>, upstreams: Array<{ id: string, rps: number[], hitRate: Array<number | null> }> }}
   *   hit rates are hits / (hits + misses) of that second, null when no response carried X-Cache;
   *   percentiles in ms, null for a second without requests
   */
  series (fromSec = -Infinity) {
    this.tick()
    const w = this.windowS
    const first = Math.max(fromSec, this.sec - w + 1, this.startSec)
    const out = { t: [], rps: [], hitRate: [], p50: [], p99: [], upstreams: [] }
    const ups = this.list.filter((u) => u.id !== NO_UPSTREAM)
    for (const u of ups) out.upstreams.push({ id: u.id, rps: [], hitRate: [] })
    for (let s = first; s < this.sec; s++) {
      const slot = s % w
      out.t.push(s)
      out.rps.push(this.secCount[slot])
      let hits = 0
      let known = 0
      ups.forEach((u, i) => {
        const h = u.secHits[slot]
        const k = h + u.secMisses[slot]
        hits += h
        known += k
        out.upstreams[i].rps.push(u.secRequests[slot])
        out.upstreams[i].hitRate.push(k > 0 ? h / k : null)
      })
      out.hitRate.push(known > 0 ? hits / known : null)
      const [p50, p99] = quantilesOf(this.secLatency, slot * LOG_BUCKETS, [0.5, 0.99])
      out.p50.push(p50)
      out.p99.push(p99)
    }
    return out
  }

  /**
   * Latency quantiles of the balancer over the last `seconds` completed seconds.
   * @param {number} seconds
   * @param {number[]} qs quantiles in [0, 1]
   * @returns {Array<number | null>} ms (null: no request in that span)
   */
  recentQuantiles (seconds, qs) {
    this.tick()
    const n = Math.min(seconds, this.windowS - 1, this.sec - this.startSec)
    const counts = new Float64Array(LOG_BUCKETS)
    for (let s = this.sec - n; s < this.sec; s++) {
      const base = (s % this.windowS) * LOG_BUCKETS
      for (let b = 0; b < LOG_BUCKETS; b++) counts[b] += this.secLatency[base + b]
    }
    return quantilesOf(counts, 0, qs)
  }

  /**
   * Recent hit ratio and request rate per upstream over the last `seconds` completed seconds.
   * @param {number} [seconds=60]
   * @returns {Map<string, { rps: number, hitRate: number | null }>}
   */
  recent (seconds = 60) {
    this.tick()
    const n = Math.max(1, Math.min(seconds, this.windowS - 1))
    const out = new Map()
    for (const u of this.list) {
      let req = 0
      let hits = 0
      let known = 0
      for (let s = this.sec - n; s < this.sec; s++) {
        const slot = ((s % this.windowS) + this.windowS) % this.windowS
        req += u.secRequests[slot]
        hits += u.secHits[slot]
        known += u.secHits[slot] + u.secMisses[slot]
      }
      out.set(u.id, { rps: req / n, hitRate: known > 0 ? hits / known : null })
    }
    return out
  }

  /**
   * The pages x upstreams matrix of recent requests (decayed, half-life `halfLifeS`): row i is
   * page `pages[i]`, column j upstream `upstreams[j]`; `share[i][j]` is the part of page i's recent
   * requests that upstream j served (0 when the page saw nothing lately). The pages are the
   * `maxPages` hottest routing keys lately (in natural order), then `(other)` once any request
   * went there; a page's counts start when it got its row.
   * @param {string[]} [columns] upstream ids to show, in this order (default: every one seen)
   * @returns {{ pages: string[], upstreams: string[], counts: number[][], share: number[][], halfLifeS: number }}
   */
  heatmap (columns) {
    this.tick()
    const ids = columns || this.list.filter((u) => u.id !== NO_UPSTREAM).map((u) => u.id)
    const recs = ids.map((id) => this.byId.get(id))
    const order = this.hotPages.names.map((name, row) => ({ name, row })).sort((a, b) => comparePages(a.name, b.name))
    if (this.otherUsed) order.push({ name: OTHER_PAGE, row: this.maxPages })
    const counts = []
    const share = []
    for (const { row } of order) {
      const line = recs.map((u) => (u ? round(u.pages[row], 3) : 0))
      const sum = line.reduce((a, b) => a + b, 0)
      counts.push(line)
      share.push(line.map((c) => (sum > 0 ? round(c / sum, 4) : 0)))
    }
    return { pages: order.map((o) => o.name), upstreams: ids, counts, share, halfLifeS: this.halfLifeS }
  }
}

/** Interpolated quantiles of a log histogram (LOG_BUCKETS counts starting at `base`). */
function quantilesOf (counts, base, qs) {
  let total = 0
  for (let b = 0; b < LOG_BUCKETS; b++) total += counts[base + b]
  if (total === 0) return qs.map(() => null)
  return qs.map((q) => {
    const rank = q * total
    let seen = 0
    for (let b = 0; b < LOG_BUCKETS; b++) {
      const c = counts[base + b]
      if (c > 0 && seen + c >= rank) {
        const lo = LOG_BASE_MS * Math.pow(2, b / LOG_STEPS)
        const hi = LOG_BASE_MS * Math.pow(2, (b + 1) / LOG_STEPS)
        const f = Math.max(0, Math.min(1, (rank - seen) / c))
        return round(lo * Math.pow(hi / lo, f), 3)
      }
      seen += c
    }
    return round(LOG_BASE_MS * Math.pow(2, LOG_BUCKETS / LOG_STEPS), 3)
  })
}

/** Natural order: page2 before page10. */
function comparePages (a, b) {
  return a.localeCompare(b, 'en', { numeric: true })
}

function round (x, digits) {
  const f = 10 ** digits
  return Math.round(x * f) / f
}

/**
 * Create a telemetry aggregator.
 * @param {ConstructorParameters<typeof Telemetry>[0]} [options]
 * @returns {Telemetry}
 */
function createTelemetry (options) {
  return new Telemetry(options)
}

module.exports = { createTelemetry, Telemetry, LATENCY_BUCKETS_MS, STATUS_CLASSES, NO_UPSTREAM, OTHER_PAGE }
