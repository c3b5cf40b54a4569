import type { IncomingMessage } from 'node:http'
import type { PolicyRouter, PolicyRouterOptions, UpstreamSpec } from './policy-router'

export type { PolicyRouterOptions, UpstreamSpec } from './policy-router'

/** Options to spread into http-proxy-middleware's `createProxyMiddleware` (v3). */
export interface PolicyRouting {
  target: string
  router: (req: IncomingMessage) => string
  on: {
    proxyRes: (proxyRes: IncomingMessage, req: IncomingMessage, res: unknown) => void
    error: (err: Error, req: IncomingMessage, res: unknown) => void
  }
  /** not enumerable: left out of a spread */
  readonly policyRouter: PolicyRouter
}

export declare function policyRouting (upstreams: Array<string | UpstreamSpec>, options?: PolicyRouterOptions): PolicyRouting
