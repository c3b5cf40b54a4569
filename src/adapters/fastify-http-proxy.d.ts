import type { PolicyRouter, PolicyRouterOptions, UpstreamSpec } from './policy-router'

export type { PolicyRouterOptions, UpstreamSpec } from './policy-router'

/**
 * Options to spread into @fastify/http-proxy's (its `upstream` and `replyOptions`), typed so that
 * @fastify/http-proxy 11 / @fastify/reply-from 12 accept them: the hooks take what reply-from passes.
 */
export interface PolicyProxyOptions {
  upstream: string
  replyOptions: {
    /** picks the upstream with the policy; returns its origin */
    getUpstream: (request: { raw: { url?: string }, method: string }, base: string) => string
    /** reports status and `X-Cache` when the upstream's response ends; reply-from passes `{ statusCode, headers, stream }` (its types leave `headers` out) */
    onResponse: (request: { raw: object }, reply: { send (payload: unknown): unknown }, res: { statusCode: number, headers?: Record<string, string | string[] | undefined>, stream: NodeJS.ReadableStream }) => void
    /** reports the failed attempt, then answers the error */
    onError: (reply: { request: { raw: object }, send (payload: unknown): unknown }, error: { error: Error }) => void
  }
  /** not enumerable: left out of a spread */
  readonly policyRouter: PolicyRouter
}

export declare function policyProxyOptions (upstreams: Array<string | UpstreamSpec>, options?: PolicyRouterOptions): PolicyProxyOptions
