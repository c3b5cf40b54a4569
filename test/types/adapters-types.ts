// Compiled with `tsc --noEmit --strict` by test/types.test.js; never run.
import { createServer } from 'node:http'
import httpProxy from 'http-proxy'
import * as httpProxy3 from 'http-proxy-3'
import { withPolicy } from 'polistes/http-proxy'
import { policyRouting } from 'polistes/http-proxy-middleware'
import { policyProxyOptions } from 'polistes/fastify-http-proxy'
import type { PolicyRouting } from 'polistes/http-proxy-middleware'

const proxy = httpProxy.createProxyServer({})
const routed = withPolicy(proxy, ['http://127.0.0.1:9101'], { policy: 'wasp', retries: 0, failTimeoutMs: 1000 })
createServer((req, res) => routed.web(req, res))
// as docs/api.md writes it: the proxy made inline (TypeScript infers its generics from ProxyLike)
withPolicy(httpProxy.createProxyServer({}), ['http://127.0.0.1:9101'])
withPolicy(httpProxy3.createProxyServer({}), ['http://127.0.0.1:9101'])
// @ts-expect-error a proxy has web() and on()
withPolicy({ web () {} }, ['http://127.0.0.1:9101'])
const members: number = routed.router.members.length
const routing: PolicyRouting = policyRouting([{ url: 'http://127.0.0.1:9101', id: 'a' }])
const target: string = routing.target
const fastifyOptions = policyProxyOptions(['http://127.0.0.1:9101'], { routingKey: (path) => path })
const upstream: string = fastifyOptions.upstream
// @ts-expect-error the upstreams are a list
policyRouting('http://127.0.0.1:9101')
// @ts-expect-error policy is a name or a policy object
policyProxyOptions(['http://127.0.0.1:9101'], { policy: 42 })
void members
void target
void upstream
