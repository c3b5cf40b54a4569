/** What the pool hands a policy: the eligible members, each with live counters. */
export interface Upstream {
  /** stable id, e.g. "a" or "127.0.0.1:9101" */
  readonly id: string
  /** origin URL, e.g. "http://127.0.0.1:9101" */
  readonly url?: string
  /** requests dispatched to this upstream and not yet ended */
  readonly inflight: number
  /** relative weight (default 1) */
  readonly weight?: number
  /** region label (e.g. "eu"), when configured */
  readonly region?: string
}

/** Per-request context. */
export interface PickContext {
  /** routing key: the URL path without query string, by default */
  key?: string
  clientAddress?: string
  method?: string
  /**
   * set by `pick`, a cache-admission hint: true asks that the picked upstream not keep
   * the response, and the balancer sends the request with `Cache-Control: no-store` (RFC 9111
   * §5.2.1.5), appended to the client's Cache-Control; false or left undefined forwards the
   * client's headers unchanged. A retry picks again with the same context, cleared first, so each
   * attempt follows its own pick's word. Feedback (`onEnd`) sees the value of the attempt it reports.
   */
  noStore?: boolean
}

/** What happened to a request, reported at its end. */
export interface Outcome {
  latencyMs?: number
  statusCode?: number
  error?: string | Error
  /** the backend's X-Cache header, when it sent one */
  cache?: 'HIT' | 'MISS'
}

/** The contract every routing algorithm implements (see docs/design.md, "The policy contract"). */
export interface Policy {
  readonly name: string
  pick (upstreams: readonly Upstream[], ctx?: PickContext): Upstream | undefined
  /** optional: callers check that a policy has it before calling it */
  onStart? (upstream: Upstream, ctx?: PickContext): void
  onEnd? (upstream: Upstream, ctx: PickContext | undefined, outcome: Outcome): void
  snapshot? (): unknown
  /** optional: take new options without forgetting what was learnt (hot reload); throws on bad options */
  configure? (options: Record<string, unknown>): void
}

/** Injected sources, for deterministic tests. */
export interface PolicyDeps {
  /** uniform random in [0, 1) */
  random?: () => number
  /** monotonic milliseconds */
  now?: () => number
}
