import type { IncomingMessage, ServerResponse } from 'node:http'
import type { PolicyRouter, PolicyRouterOptions, UpstreamSpec } from './policy-router'

export type { PolicyRouterOptions, UpstreamSpec } from './policy-router'

/**
 * The part of a node-http-proxy server this glue uses: what `createProxyServer()` of `http-proxy`
 * (typed by @types/http-proxy) and of `http-proxy-3` (its own types) both return. The listener's
 * last arguments are `any` on purpose: @types/http-proxy's `on` is generic over the request and
 * response types, and a narrower type here makes TypeScript infer them badly when the proxy is
 * created inline (`withPolicy(httpProxy.createProxyServer({}), urls)`).
 */
export interface ProxyLike {
  web (req: IncomingMessage, res: ServerResponse, options: object, callback: (err: Error, ...rest: unknown[]) => void): void
  on (event: 'proxyRes', listener: (proxyRes: IncomingMessage, req: IncomingMessage, ...rest: any[]) => void): unknown
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
