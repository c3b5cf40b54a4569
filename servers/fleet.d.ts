// Types of `polistes/fleet` (servers/fleet.js): page backends that answer X-Cache, for trying a
// policy or an adapter on one machine.
import type { Server } from 'node:http'

/** Extra ms per response by wall time (experiment B; servers/periodic-load.js). */
export interface PeriodicSpec {
  shape: 'square' | 'sine'
  /** ms, > 0 */
  period: number
  /** extra ms in the fast phase */
  fast: number
  /** extra ms in the slow phase */
  slow: number
  /** square: fraction of the period spent slow, in [0, 1] (default 0.5) */
  duty?: number
  /** ms added to the time before taking the position in the period (default 0) */
  phase?: number
}

/** Injected faults: probabilities in [0, 1], summing to at most 1. */
export interface FaultRates {
  errorRate?: number
  hangRate?: number
  dropRate?: number
}

/** How a backend spends its hit and miss service times. */
export type BackendService = 'timer' | 'cpu'

/** Options of one backend (createBackend). */
export interface BackendOptions {
  /** name sent as `X-Server` and in /_stats (default 'a') */
  id?: string
  /** directory served (default: the package's `public/`, 25 pages) */
  root?: string
  /** page cache capacity, 0 = no cache (default 4) */
  cachePages?: number
  /** page cache capacity in bytes of page bodies instead, 0 = bounded in pages (default 0) */
  cacheBytes?: number
  /** I/O wait paid by each miss, ms (default 20) */
  missMs?: number
  /** synchronous CPU work paid by each miss, ms (default 0) */
  missCpuMs?: number
  /** service time of each hit, ms (default 0) */
  hitMs?: number
  /** workers: a page request holds one for its whole service time and waits in a FIFO queue when
   * all are busy; /_stats takes none (default 0 = unlimited, no queue) */
  workers?: number
  /** how hitMs / missMs are spent: 'timer' (a wait, the event loop stays free) or 'cpu' (busy
   * work, the event loop is blocked) (default 'timer') */
  service?: BackendService
  /** extra ms per response, cycling (default none) */
  latencyProfile?: number[]
  periodic?: PeriodicSpec | null
  /** wall clock of the periodic load, ms */
  now?: () => number
  /** beyond this many in-flight page requests answer 503 + Retry-After (default 0 = unlimited) */
  maxInflight?: number
  faults?: FaultRates
  /** randomness of the faults (default Math.random) */
  random?: () => number
  /** how long close() lets in-flight requests finish, ms (default 2000) */
  closeGraceMs?: number
  /** pages whose requests /_stats counts, least recently served out (default 4096) */
  statsKeys?: number
  /** answer /_stats only as /_stats?token=<token> (default: the POLISTES_STATS_TOKEN environment variable, else none) */
  statsToken?: string | null
}

/** The body of a backend's `GET /_stats` (the main fields). */
export interface BackendStats {
  id: string
  pid: number
  requests: number
  hits: number
  misses: number
  evictions: number
  cachedKeys: string[]
  inflight: number
  cachePages: number
  hitMs: number
  missMs: number
  service: BackendService
  /** the worker count, 0 = unlimited */
  workers: number
  /** page requests holding a worker now */
  busy: number
  /** page requests waiting for a worker now */
  queued: number
  /** the longest the queue has been since the start */
  maxQueued: number
  /** page requests that had to queue since the start */
  waited: number
  /** hits answered (a client gone before the head is not counted), and the time they held a worker in total (ms) and on average
   * (ms, null before the first): measured from taking the worker to the response's end */
  hitServiceCount: number
  hitServiceTotalMs: number
  hitServiceMs: number | null
  /** the same for the misses (404s included) */
  missServiceCount: number
  missServiceTotalMs: number
  missServiceMs: number | null
  [field: string]: unknown
}

export interface Backend {
  id: string
  server: Server
  /** start listening (port 0 = any; host default '127.0.0.1'); rejects with ERR_POLISTES_PORT_IN_USE */
  listen (port?: number, host?: string): Promise<{ port: number, url: string }>
  stats (): BackendStats
  close (): Promise<void>
}

/** One backend; throws ERR_POLISTES_BAD_OPTION for a bad option. Not listening until `listen()`. */
export declare function createBackend (options?: BackendOptions): Backend

/** A per-backend option: one value for all, or one value per backend. */
type PerBackend<T> = T | T[]

export interface FleetOptions {
  /** number of backends, 1..1000 (default 7) */
  count?: number
  /** backend i listens on basePort + i; 0 = ephemeral ports (default 9101) */
  basePort?: number
  /** interface (default '127.0.0.1') */
  host?: string
  /** one child process per backend (default false) */
  processes?: boolean
  root?: PerBackend<string>
  cachePages?: PerBackend<number>
  cacheBytes?: PerBackend<number>
  missMs?: PerBackend<number>
  missCpuMs?: PerBackend<number>
  hitMs?: PerBackend<number>
  /** e.g. [2, 3, 4, 5, 6, 7, 8]: unequal backends */
  workers?: PerBackend<number>
  service?: PerBackend<BackendService>
  maxInflight?: PerBackend<number>
  closeGraceMs?: PerBackend<number>
  statsKeys?: PerBackend<number>
  /** true: draw a random token; a string: that token; /_stats then answers only with ?token= (default none) */
  statsToken?: boolean | string | null
  errorRate?: PerBackend<number>
  hangRate?: PerBackend<number>
  dropRate?: PerBackend<number>
  faults?: FaultRates
  /** one repeating profile for every backend */
  latencyProfile?: number[]
  /** one profile per backend */
  latencyProfiles?: number[][]
  periodic?: PeriodicSpec
  random?: () => number
  /** overrides for backend i */
  perBackend?: BackendOptions[]
}

export interface Fleet {
  /** ids a, b, c, …; `url` is e.g. 'http://127.0.0.1:9101' */
  backends: Array<{ id: string, url: string, port: number, pid?: number }>
  close (): Promise<void>
  /** the token /_stats asks for, or null */
  statsToken: string | null
  /** the path of every backend's /_stats, token included */
  statsPath: string
  /** crash backend `index`: with `processes` SIGKILL, in-process its listening socket and connections closed at once */
  kill: (index: number) => Promise<void>
  /** start backend `index` again, cold, on its old port */
  restart: (index: number) => Promise<{ id: string, url: string, port: number, pid?: number }>
}

/** Start a fleet of backends; rejects with a PolistesError (bad option, port in use), leaving nothing running. */
export declare function startFleet (options?: FleetOptions): Promise<Fleet>

/** The id of the i-th backend: a … z, then s27, s28, … */
export declare function backendId (index: number): string
