// Compiled by test/types.test.js in a consumer's folder, where the packed package is installed beside
// the libraries it wraps with their own types (@types/http-proxy, http-proxy-3's, fastify 5,
// @fastify/http-proxy 11, @fastify/reply-from 12, http-proxy-middleware 3, undici 7): every subpath
// export, used as docs/api.md writes it, under `tsc --strict` (module nodenext). Never run.
import { createServer } from 'node:http'
import { request } from 'undici'
import httpProxy from 'http-proxy'
import * as httpProxy3 from 'http-proxy-3'
import { createProxyMiddleware } from 'http-proxy-middleware'
import Fastify from 'fastify'
import fastifyHttpProxy from '@fastify/http-proxy'
import replyFrom from '@fastify/reply-from'
import { startBalancer, createPolicy } from 'polistes'
import type { Balancer } from 'polistes'
import { createWasp } from 'polistes/wasp'
import { PolicyDispatcher, replyFromOptions } from 'polistes/undici'
import { withPolicy } from 'polistes/http-proxy'
import { policyRouting } from 'polistes/http-proxy-middleware'
import { policyProxyOptions } from 'polistes/fastify-http-proxy'
import { startFleet, createBackend } from 'polistes/fleet'
import type { Fleet } from 'polistes/fleet'

async function main (): Promise<void> {
  const fleet: Fleet = await startFleet({ count: 3, basePort: 0, cachePages: [2, 4, 8] })
  const urls: string[] = fleet.backends.map((b) => b.url)
  const backend = createBackend({ id: 'z', missMs: 1 })
  const { port } = await backend.listen(0, '127.0.0.1')
  void port

  // polistes: the balancer, on its default engine named
  const lb: Balancer = await startBalancer({ backends: urls, engine: 'direct', port: 0 })
  await lb.close()
  const rr = createPolicy('round-robin')
  void rr

  // polistes/wasp
  const wasp = createWasp()
  const holders: string[] = wasp.snapshot().recent[0].holders
  void holders

  // polistes/undici: undici's request, and @fastify/reply-from registered as documented
  const dispatcher = new PolicyDispatcher(urls)
  await request('http://site.example/page1.html', { dispatcher })
  const app = Fastify()
  await app.register(replyFrom, replyFromOptions(dispatcher, { retryMethods: ['GET'] }))
  app.get('/*', (req, reply) => reply.from(req.url))

  // polistes/http-proxy: the proxy made inline, with http-proxy (@types/http-proxy) and http-proxy-3
  const routed = withPolicy(httpProxy.createProxyServer({}), urls)
  createServer((req, res) => routed.web(req, res))
  const routed3 = withPolicy(httpProxy3.createProxyServer({}), urls, { retries: 1 })
  createServer((req, res) => routed3.web(req, res))
  // @ts-expect-error a proxy has web() and on()
  withPolicy({}, urls)

  // polistes/http-proxy-middleware
  const middleware = createProxyMiddleware({ ...policyRouting(urls) })
  createServer((req, res) => middleware(req, res, () => res.end()))

  // polistes/fastify-http-proxy
  const proxied = Fastify()
  await proxied.register(fastifyHttpProxy, { ...policyProxyOptions(urls), prefix: '/' })
  // @ts-expect-error the upstreams are a list
  policyProxyOptions(urls[0])

  // polistes/fleet
  // @ts-expect-error count is a number
  await startFleet({ count: '3' })
  // finite backends: workers per backend, hit and miss service times, spent as timers or CPU work
  const finite = await startFleet({ count: 3, basePort: 0, workers: [2, 3, 4], hitMs: 5, missMs: 20, service: 'timer' })
  const busy: number = backend.stats().busy
  const missServiceMs: number | null = backend.stats().missServiceMs
  void busy
  void missServiceMs
  // @ts-expect-error service is 'timer' or 'cpu'
  createBackend({ service: 'gpu' })
  await finite.close()
  await fleet.close()
}
void main
