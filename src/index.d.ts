import type { Server, IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import type { Policy, PolicyDeps, Upstream, PickContext, Outcome } from './policies/types'

export type { Policy, PolicyDeps, Upstream, PickContext, Outcome }

/** A backend as the pool needs it. */
export interface BackendSpec {
  id: string
  url: string
  /** only when given: the weighted policies read 1 without, and wasp learns one from the queue */
  weight?: number
  region?: string
  /** used only while no primary backend is up (nginx's and HAProxy's `backup`); `#backup` in a URL */
  backup?: boolean
  /** overrides the balancer's `healthCheck` for this backend; false: no active checks */
  healthCheck?: Partial<HealthCheckOptions> | false
}

export type BackendInput = string | { url: string, id?: string, weight?: number, region?: string, backup?: boolean, healthCheck?: Partial<HealthCheckOptions> | false }

/** Active HTTP health checks (HAProxy's `check inter … rise … fall …`). */
export interface HealthCheckOptions {
  /** path to GET on every upstream; null: no active checks (default null) */
  path: string | null
  /** ms from the end of one check to the next (default 2000) */
  intervalMs: number
  /** ms a check may take (default 1000) */
  timeoutMs: number
  /** passing statuses: 200, '200-399', '2xx' or a comma list (default '200-399') */
  expectStatus: string | number
  /** passed checks in a row that bring a down upstream back (default 2) */
  rise: number
  /** failed checks in a row that take an upstream down (default 3) */
  fall: number
}

export interface BalancerOptions {
  /** upstream URLs (`http://host:port#region&w=2&id=name`), specs, or one comma-separated string */
  backends: BackendInput[] | string
  /** policy name from the registry (default 'wasp') */
  algo?: string
  policyOptions?: Record<string, unknown>
  /** a ready policy object; overrides `algo` */
  policy?: Policy
  /** default 8080; 0 picks a free port */
  port?: number
  /** default '127.0.0.1' */
  host?: string
  /** upstream keep-alive (default true) */
  keepAlive?: boolean
  /** upstream inactivity timeout in ms, answered with 504 (default 30000) */
  timeoutMs?: number
  /** extra attempts on other upstreams for idempotent requests without a body, 0 to 100 (default 2) */
  retries?: number
  /** ms an attempt may wait for its response head once the request is sent; then 504, or a retry
   * with 'timeout' in `retryOn` (default null: only `timeoutMs`; at most `timeoutMs`) */
  tryTimeoutMs?: number | null
  /** also retried like a failed connection: upstream 5xx statuses and 'timeout' (no response head
   * in time), e.g. [503, 'timeout'] (default []) */
  retryOn?: Array<number | 'timeout'>
  /** consecutive failures that eject an upstream, 1 to 1000 (default 1) */
  maxFails?: number
  /** how long an ejected upstream is left out, ms (default 5000) */
  failTimeoutMs?: number
  /** open client connections; beyond, new ones are closed at once, unanswered (default 10000) */
  maxConnections?: number
  /** ms a client gets to send its request headers, and to finish a TLS handshake; then 408 (default 10000) */
  headersTimeoutMs?: number
  /** ms a client gets to send its whole request, body included; then 408 (default 60000, ≥ headersTimeoutMs) */
  requestTimeoutMs?: number
  /** ms an idle client connection is kept open (default 5000) */
  keepAliveTimeoutMs?: number
  /** bytes of request line and headers; beyond, 431 (default 16384) */
  maxHeaderSize?: number
  /** bytes of request body; beyond, 413 (default 1048576; 0: no limit) */
  maxBodySize?: number
  /** 'fast' (default): simple GET/HEAD requests parsed and answered by polistes' own front, the rest by node:http; 'node': node:http for all */
  front?: 'fast' | 'node'
  /** PEM certificate (chain) file; with `tlsKey` the balancer serves HTTPS (default null) */
  tlsCert?: string | null
  /** PEM private key file of `tlsCert` (default null) */
  tlsKey?: string | null
  /** PEM CA file https:// backends are verified against instead of Node's bundled CAs (default null) */
  upstreamCa?: string | null
  /** serve `/_polistes/*` on a listener of its own, and not on the public one (0: any free port; default null: public) */
  adminPort?: number | null
  /** address of the admin listener (default '127.0.0.1') */
  adminHost?: string
  /** dashboards' event streams (`/_polistes/events`) open at once; one more is answered 503 with
   * Retry-After (default 16; 0: none). Reloadable */
  maxEventStreams?: number
  /** CIDRs (IPv4 and IPv6, or single addresses) of proxies in front of the balancer, e.g.
   * ['10.0.0.0/8', '::1/128']: from such a peer the client's X-Forwarded-*, Forwarded and X-Real-IP
   * are kept (X-Forwarded-For appended to) and the client address (ip-hash's key) is the right-most
   * X-Forwarded-For entry that is not itself trusted; from any other peer they are replaced by the
   * balancer's own (default []: nobody is trusted). Reloadable */
  trustedProxies?: string[]
  /** serve `/_polistes/*` (stats, Prometheus metrics, the live dashboard and its events) on the public
   * listener (default true; false: proxied like any path); with `adminPort` it is served on the admin
   * listener only. `balancer.admin.handle` can be mounted on another server either way */
  admin?: boolean
  /** the per-request aggregates behind metrics and dashboard (default: a new `createTelemetry()`) */
  telemetry?: Telemetry
  /** one line per finished request (default none; see `createAccessLog`) */
  accessLog?: AccessLog | null
  /** ms over which an upstream that comes back or is added ramps up (default 0: off) */
  slowStartMs?: number
  /** active health checks, merged over the defaults (off while `path` is null) */
  healthCheck?: Partial<HealthCheckOptions>
  /** what moves the bytes (default 'direct'; see src/proxy/proxy-engine.js); 'undici' reaches http:// backends only */
  engine?: 'direct' | 'http-proxy' | 'node-http' | 'undici'
  /** what the keyed policies (wasp, chash-bounded) route by: 'path' (default, without the query), 'url'
   * (with it), 'host', 'header:<name>', 'cookie:<name>' or 'param:<name>'; a request without that
   * header, cookie or parameter is routed by its path */
  routingKey?: string
  /** cookie stickiness (default null: off): a cookie name, or its attributes; the first response sets
   * the cookie naming its upstream by an opaque token, and a request bearing it goes there while it can serve */
  stickyCookie?: string | StickyCookieOptions | null
  /** look backend host names up again every this many ms (>= 10); a changed answer closes the pooled
   * connections to that backend after their request and new ones go to the new addresses (default null:
   * each new connection is resolved by the OS, pooled ones keep their address) */
  resolveMs?: number | null
  /** the lookup of backend host names, as node:dns's (default: node:dns) */
  lookup?: typeof import('node:dns').lookup
  logger?: Logger
  random?: () => number
  now?: () => number
}

/** The sticky cookie's attributes (HAProxy `cookie <name> insert indirect`, nginx Plus `sticky cookie`). */
export interface StickyCookieOptions {
  /** default 'polistes_upstream' */
  name?: string
  /** default '/' */
  path?: string
  /** default null: the request's host only */
  domain?: string | null
  /** seconds; default null: a session cookie */
  maxAgeS?: number | null
  /** default false; required with sameSite 'None' */
  secure?: boolean
  /** default true */
  httpOnly?: boolean
  /** default 'Lax' */
  sameSite?: 'Strict' | 'Lax' | 'None'
}

export interface BalancerStats {
  /** the process that answered: with `polistes --workers N`, which worker */
  pid: number
  requests: number
  responses: number
  retries: number
  failures: { connect: number, timeout: number, stream: number }
  noUpstream: number
  clientAborts: number
  /** requests refused with 413 (Content-Length or streamed body over maxBodySize) */
  bodyTooLarge: number
  /** connections closed on arrival because maxConnections were open */
  droppedConnections: number
  inflight: number
  upstreams: Array<{
    id: string, url: string, weight: number, region?: string, inflight: number, requests: number, failures: number, ejections: number,
    downUntil: number | null,
    /** a backup: used only while no primary is up */
    backup: boolean
    /** set through POST /_polistes/backends/<id>/state: drain (no new requests), maint (no traffic), ready */
    adminState: 'ready' | 'drain' | 'maint'
    /** health: down/rising by active checks, ejected by passive health, falling while checks fail */
    state: 'up' | 'falling' | 'down' | 'rising' | 'ejected'
    healthy: boolean
    /** slow-start ramp in [0, 1] (1: full share) */
    ramp: number
    check: null | {
      rise: number, fall: number, passed: number, failed: number, downs: number,
      last: null | { ok: boolean, status: number | null, ms: number | null, error: string | null, at: number }
    }
  }>
  policy: { name: string, state: unknown }
}

/** Answers a request of the admin surface and returns true, or returns false and writes nothing. */
export type AdminHandler = (req: IncomingMessage, res: ServerResponse) => boolean

/** The `/_polistes/*` endpoints of one balancer, mountable on any HTTP server. */
export interface Admin {
  /** serve the request and return true when its path is under `/_polistes`; false otherwise */
  handle (req: IncomingMessage, res: ServerResponse): boolean
  /** the event streams' counters */
  streams (): EventStreams
  /** end the dashboards' event streams */
  close (): void
}

/** The dashboards' event streams (`/_polistes/events`) of one balancer. */
export interface EventStreams {
  /** streams open now */
  open: number
  /** the cap (`maxEventStreams`) */
  max: number
  /** streams answered 503 because `max` were open */
  refused: number
  /** streams closed because their client left more than 256 KiB unread */
  dropped: number
  /** tick frames built: one per tick, the same bytes written to every stream */
  framesBuilt: number
  /** full frames built for new streams: at most one per tick, shared too */
  fullFramesBuilt: number
}

/** One finished request, as the balancer hands it to the telemetry and the access log. */
export interface RequestRecord {
  method: string
  /** the request target */
  path: string
  /** the routing key */
  key: string
  /** the status the client got (499: it left before any response header) */
  status: number
  /** who answered (null: nobody, e.g. 503) */
  upstream: string | null | undefined
  /** upstreams tried */
  attempts: number
  /** from request arrival to response end */
  ms: number
  /** the upstream's X-Cache header */
  cache: string | undefined
  /** bytes written to the client (headers included) */
  bytes: number
}

/** Per-request aggregates: counters per upstream, per-second series, the pages x upstreams matrix. */
export interface Telemetry {
  /** one finished request (the balancer calls it once per request, with the record it gives the access log) */
  record (request: RequestRecord): void
  upstream (id: string): TelemetryUpstream
  /** every upstream seen, in order of first sight; one retired more than a window ago is gone */
  upstreams (): TelemetryUpstream[]
  /** upstream `id` left the pool: its record stays one window (`windowS`), then goes (the balancer calls this on a reload) */
  retire (id: string): void
  series (fromSec?: number): {
    t: number[], rps: number[], hitRate: Array<number | null>, p50: Array<number | null>, p99: Array<number | null>,
    upstreams: Array<{ id: string, rps: number[], hitRate: Array<number | null> }>
  }
  recent (seconds?: number): Map<string, { rps: number, hitRate: number | null }>
  recentQuantiles (seconds: number, quantiles: number[]): Array<number | null>
  heatmap (columns?: string[]): { pages: string[], upstreams: string[], counts: number[][], share: number[][], halfLifeS: number }
}

export interface TelemetryUpstream {
  readonly id: string
  /** responses by status class: 1xx, 2xx, 3xx, 4xx, 5xx, other */
  readonly statuses: Float64Array
  readonly hits: number
  readonly misses: number
  readonly bytes: number
  readonly count: number
  readonly latencySumMs: number
}

export interface TelemetryOptions {
  /** seconds of per-second history (default 300) */
  windowS?: number
  /** routing keys tracked one by one in the heat map: the hottest by decayed requests; the rest share `(other)` (default 64) */
  maxPages?: number
  /** half-life of the heat map's counts in seconds (default 5) */
  halfLifeS?: number
  /** wall clock in ms (default Date.now) */
  now?: () => number
}

export interface AccessLog {
  /** one line: method, path, status, upstream, attempts, ms (rounded to 0.01), cache, bytes */
  write (request: RequestRecord): void
  /** flush and close the file, if any */
  close (): Promise<void>
  readonly file: string | undefined
}

export interface Balancer {
  /** the public listener: an https.Server (a subclass of tls.Server) when tlsCert is given */
  readonly server: Server
  readonly admin: Admin
  readonly telemetry: Telemetry
  /** set once listening, e.g. 'http://127.0.0.1:8080' or 'https://127.0.0.1:8443' */
  readonly url: string | undefined
  readonly port: number
  /** the admin listener's URL when adminPort is set, once listening */
  readonly adminUrl: string | undefined
  /** the admin listener when adminPort is set, else null */
  readonly adminServer: Server | null
  /** add a handler to the admin surface (/_polistes/*), tried after those added before and before the built-in endpoints */
  addAdminHandler (handler: AdminHandler): this
  listen (): Promise<this>
  close (options?: { graceMs?: number }): Promise<void>
  stats (): BalancerStats
  /** apply a new config live (hot reload); throws a PolistesError and changes nothing when it is invalid */
  reconfigure (options: BalancerOptions): ReconfigureResult
}

/** What a reconfigure changed: upstream ids, setting names, and settings that need a restart. */
export interface ReconfigureResult {
  added: string[]
  removed: string[]
  updated: string[]
  changed: string[]
  restartNeeded: string[]
}

export function createBalancer (options: BalancerOptions): Balancer
export function startBalancer (options: BalancerOptions): Promise<Balancer>
export function createPolicy (name: string, options?: Record<string, unknown>, deps?: PolicyDeps): Policy
export function policyNames (): string[]
export function parseBackend (input: BackendInput, index?: number): BackendSpec
export function parseBackends (list: BackendInput[] | string): BackendSpec[]
export function routingKey (url: string): string
export function createTelemetry (options?: TelemetryOptions): Telemetry
/** One pino line per request, to `file` (asynchronously) or else to `logger`; throws ERR_POLISTES_BAD_OPTION when the file cannot be opened. */
export function createAccessLog (options: { file: string } | { logger: Logger }): AccessLog
/** A seeded PRNG (mulberry32) in [0, 1), e.g. for a policy's injected `random`. */
export function mulberry32 (seed: number): () => number

export type PolistesErrorCode =
  | 'ERR_POLISTES_UNKNOWN_ALGO'
  | 'ERR_POLISTES_BAD_URL'
  | 'ERR_POLISTES_BAD_CONFIG'
  | 'ERR_POLISTES_BAD_OPTION'
  | 'ERR_POLISTES_PORT_IN_USE'
  | 'ERR_POLISTES_NO_BACKENDS'
  | 'ERR_POLISTES_MISSING_PACKAGE'

/** Base of every polistes error: a stable `code`, a one-line `message`, `exitCode` 2 for a CLI. */
export class PolistesError extends Error {
  constructor (code: string, message: string)
  code: string
  exitCode: number
}
/** code → what it means */
export const errorCodes: Record<PolistesErrorCode, string>

/** One class per code: the call passes facts, the message template is polistes's. */
export class ERR_POLISTES_UNKNOWN_ALGO extends PolistesError {
  constructor (name: unknown, known: string[])
  code: 'ERR_POLISTES_UNKNOWN_ALGO'
}
export class ERR_POLISTES_BAD_URL extends PolistesError {
  constructor (where: string, problem: string)
  code: 'ERR_POLISTES_BAD_URL'
}
export class ERR_POLISTES_BAD_CONFIG extends PolistesError {
  constructor (problem: string)
  code: 'ERR_POLISTES_BAD_CONFIG'
}
export class ERR_POLISTES_BAD_OPTION extends PolistesError {
  constructor (problem: string)
  code: 'ERR_POLISTES_BAD_OPTION'
}
export class ERR_POLISTES_PORT_IN_USE extends PolistesError {
  constructor (who: string, host: string, port: number)
  code: 'ERR_POLISTES_PORT_IN_USE'
}
export class ERR_POLISTES_NO_BACKENDS extends PolistesError {
  constructor ()
  code: 'ERR_POLISTES_NO_BACKENDS'
}
/** A feature needs an optional peer dependency that is not installed; the message names the package to install. */
export class ERR_POLISTES_MISSING_PACKAGE extends PolistesError {
  constructor (names: string[], feature: string, ranges?: Record<string, string>)
  code: 'ERR_POLISTES_MISSING_PACKAGE'
}
