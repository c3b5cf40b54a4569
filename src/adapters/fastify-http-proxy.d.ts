import type { PolicyRouter, PolicyRouterOptions, UpstreamSpec } from './policy-router'

export type { PolicyRouterOptions, UpstreamSpec } from './policy-router'

/** Options to spread into @fastify/http-proxy's (its `upstream` and `replyOptions`). */
export interface PolicyProxyOptions {
  upstream: string
  replyOptions: {
    getUpstream: (request: { raw: object, method: string }, base: string) => string
    onResponse: (request: { raw: object }, reply: { send: (payload: unknown) => unknown }, res: { statusCode: number, headers: Record<string, string | string[] | undefined>, stream: NodeJS.ReadableStream }) => void
    onError: (reply: { request: { raw: object }, send: (payload: unknown) => unknown }, error: { error: Error }) => void
  }
  /** not enumerable: left out of a spread */
  readonly policyRouter: PolicyRouter
}

export declare function policyProxyOptions (upstreams: Array<string | UpstreamSpec>, options?: PolicyRouterOptions): PolicyProxyOptions
