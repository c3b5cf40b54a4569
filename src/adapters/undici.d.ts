import { Dispatcher, Pool } from 'undici'
import type { Policy, Upstream } from '../policies/types'

/** An upstream: its URL (the origin is used), and optionally an id and a weight shown to the policy. */
export interface UpstreamSpec {
  url: string
  id?: string
  weight?: number
}

export interface PolicyDispatcherOptions {
  /** a policy name ('wasp', the default, 'round-robin', 'chash-bounded', ...) or a policy object */
  policy?: string | Policy
  /** options of a named policy */
  policyOptions?: Record<string, unknown>
  /** the key a request is routed by; default: the path without its query string */
  routingKey?: (path: string) => string
  /** options of each upstream's undici Pool */
  poolOptions?: Pool.Options
  /** injected into a named policy */
  random?: () => number
  /** clock in ms (default performance.now) */
  now?: () => number
}

/** An upstream as the policy sees it. */
export interface PolicyMember extends Upstream {
  origin: string
  pool: Pool
}

/**
 * An undici Dispatcher whose upstream choice is a polistes policy (wasp by default); it reports
 * latency, status and `X-Cache` back to the policy by itself. Use it as the `dispatcher` of undici's
 * `fetch`/`request` (and, untested, of @fastify/reply-from).
 */
export declare class PolicyDispatcher extends Dispatcher {
  constructor (upstreams: Array<string | UpstreamSpec>, options?: PolicyDispatcherOptions)
  readonly policy: Policy
  readonly members: PolicyMember[]
  /** the upstreams' origins */
  readonly upstreams: string[]
  addUpstream (upstream: string | UpstreamSpec): this
  removeUpstream (url: string): this
}

export declare function createPolicyDispatcher (upstreams: Array<string | UpstreamSpec>, options?: PolicyDispatcherOptions): PolicyDispatcher

/** The default routing key: the path without its query string. */
export declare function pathKey (path: string): string
