import type { Policy, Upstream } from '../policies/types'

/** An upstream: its URL (the origin is used), and optionally an id and a weight shown to the policy. */
export interface UpstreamSpec {
  url: string
  id?: string
  weight?: number
}

export interface PolicyRouterOptions {
  /** a policy name ('wasp', the default, 'round-robin', 'chash-bounded', ...) or a policy object */
  policy?: string | Policy
  /** options of a named policy */
  policyOptions?: Record<string, unknown>
  /** the key a request is routed by; default: the path without its query string */
  routingKey?: (path: string) => string
  /** injected into a named policy */
  random?: () => number
  /** clock in ms (default performance.now) */
  now?: () => number
  /** connection-level failures in a row that leave an upstream out of the choice (default 1) */
  maxFails?: number
  /** how long such an upstream is left out, in ms (default 5000) */
  failTimeoutMs?: number
}

/** An upstream as the policy sees it. */
export interface PolicyMember extends Upstream {
  origin: string
}

/** One request's pick, and the report of its outcome (once). */
export interface Ticket {
  member: PolicyMember
  end (statusCode?: number, cache?: string, error?: string): void
}

/** The upstreams as a policy sees them, the pick per request and the feedback when it ends. */
export declare class PolicyRouter {
  constructor (upstreams: Array<string | UpstreamSpec>, options?: PolicyRouterOptions)
  readonly policy: Policy
  readonly members: PolicyMember[]
  /** membership and passive health: the balancer's pool */
  readonly pool: { eligible (): PolicyMember[] }
  add (upstream: string | UpstreamSpec): PolicyMember | null
  remove (url: string): PolicyMember | null
  /** `tried`: members not to pick (this request's failed attempts) */
  start (path: string, method?: string, tried?: Set<PolicyMember>): Ticket | null
}

/** After a failed attempt on `member`: the members tried so far if another attempt may go out, else null. */
export declare function nextTry (router: PolicyRouter, tried: Set<PolicyMember> | undefined, member: PolicyMember, retries: number): Set<PolicyMember> | null

/** The default routing key: the path without its query string. */
export declare function pathKey (path: string): string
