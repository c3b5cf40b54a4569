import type { Server } from 'node:http'
import type { Logger } from 'pino'
import type { Policy, PolicyDeps, Upstream, PickContext, Outcome } from './policies/types'

export type { Policy, PolicyDeps, Upstream, PickContext, Outcome }

/** A backend as the pool needs it. */
export interface BackendSpec {
  id: string
  url: string
  weight: number
  region?: string
}

export type BackendInput = string | { url: string, id?: string, weight?: number, region?: string }

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
  /** consecutive failures that eject an upstream, 1 to 1000 (default 1) */
  maxFails?: number
  /** how long an ejected upstream is left out, ms (default 5000) */
  failTimeoutMs?: number
  /** path of the balancer's own stats endpoint (default '/_polistes/stats'; null: off) */
  statsPath?: string | null
  /** the proxy library, for measurement (default 'http-proxy') */
  library?: 'http-proxy' | 'http-proxy-3'
  logger?: Logger
  random?: () => number
  now?: () => number
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
  inflight: number
  upstreams: Array<{ id: string, url: string, weight: number, region?: string, inflight: number, requests: number, failures: number, ejections: number, healthy: boolean, downUntil: number | null }>
  policy: { name: string, state: unknown }
}

export interface Balancer {
  readonly server: Server
  /** set once listening, e.g. 'http://127.0.0.1:8080' */
  readonly url: string | undefined
  readonly port: number
  listen (): Promise<this>
  close (options?: { graceMs?: number }): Promise<void>
  stats (): BalancerStats
}

export function createBalancer (options: BalancerOptions): Balancer
export function startBalancer (options: BalancerOptions): Promise<Balancer>
export function createPolicy (name: string, options?: Record<string, unknown>, deps?: PolicyDeps): Policy
export function policyNames (): string[]
export function parseBackend (input: BackendInput, index?: number): BackendSpec
export function parseBackends (list: BackendInput[] | string): BackendSpec[]
export function routingKey (url: string): string
/** A seeded PRNG (mulberry32) in [0, 1), e.g. for a policy's injected `random`. */
export function mulberry32 (seed: number): () => number

export type PolistesErrorCode =
  | 'ERR_POLISTES_UNKNOWN_ALGO'
  | 'ERR_POLISTES_BAD_URL'
  | 'ERR_POLISTES_BAD_CONFIG'
  | 'ERR_POLISTES_BAD_OPTION'
  | 'ERR_POLISTES_PORT_IN_USE'
  | 'ERR_POLISTES_NO_BACKENDS'

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
