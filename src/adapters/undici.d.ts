import { Dispatcher, Pool } from 'undici'
import type { Policy } from '../policies/types'
import type { PolicyMember, PolicyRouterOptions, UpstreamSpec } from './policy-router'

export type { PolicyMember, UpstreamSpec } from './policy-router'

export interface PolicyDispatcherOptions extends PolicyRouterOptions {
  /** options of each upstream's undici Pool */
  poolOptions?: Pool.Options
  /** other upstreams tried for a request that could not be sent (refused, unreachable); default 2 */
  retries?: number
}

/**
 * An undici Dispatcher whose upstream choice is a polistes policy (wasp by default); it reports
 * latency, status and `X-Cache` back to the policy by itself. Use it as the `dispatcher` of undici's
 * `fetch`/`request` and of @fastify/reply-from (`replyFromOptions(dispatcher)`).
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

/**
 * The options of @fastify/reply-from that send `reply.from(request.url)` through `dispatcher`:
 * `{ undici: dispatcher, base }`, `base` being the first upstream's origin (reply-from needs one to
 * make a URL of a path; the dispatcher ignores it and picks). `options` are merged in.
 */
export declare function replyFromOptions<O extends object = {}> (dispatcher: PolicyDispatcher, options?: O): O & { base: string, undici: PolicyDispatcher }

/** The default routing key: the path without its query string. */
export declare function pathKey (path: string): string
