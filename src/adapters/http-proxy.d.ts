import type { IncomingMessage, ServerResponse } from 'node:http'
import type { PolicyRouter, PolicyRouterOptions, UpstreamSpec } from './policy-router'

export type { PolicyRouterOptions, UpstreamSpec } from './policy-router'

/** The part of a node-http-proxy server this glue uses. */
export interface ProxyLike {
  web (req: IncomingMessage, res: ServerResponse, options: object, callback: (err: Error, ...rest: unknown[]) => void): void
  on (event: 'proxyRes', listener: (proxyRes: IncomingMessage, req: IncomingMessage, res: ServerResponse) => void): unknown
}

/**
 * A policy in front of a node-http-proxy (`http-proxy` / `http-proxy-3`) server: `web()` picks the
 * target, proxies, and reports latency, status and `X-Cache` back.
 */
export interface WithPolicyOptions extends PolicyRouterOptions {
  /** other upstreams tried for an idempotent bodiless request whose attempt failed before any response; default 2 */
  retries?: number
}

export declare function withPolicy (proxy: ProxyLike, upstreams: Array<string | UpstreamSpec>, options?: WithPolicyOptions): {
  router: PolicyRouter
  web (req: IncomingMessage, res: ServerResponse, options?: object, callback?: (err: Error, ...rest: unknown[]) => void): void
}
