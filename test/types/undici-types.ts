// Compiled with `tsc --noEmit --strict` by test/types.test.js; never run.
import { request } from 'undici'
import { PolicyDispatcher, createPolicyDispatcher, pathKey } from 'polistes/undici'
import type { PolicyDispatcherOptions } from 'polistes/undici'

const options: PolicyDispatcherOptions = { policy: 'wasp', policyOptions: { maxKeys: 1000 }, routingKey: (path) => path, retries: 1, maxFails: 2, failTimeoutMs: 10000 }
const dispatcher = new PolicyDispatcher(['http://127.0.0.1:9101', { url: 'http://127.0.0.1:9102', id: 'b', weight: 2 }], options)
const same: PolicyDispatcher = createPolicyDispatcher(['http://127.0.0.1:9101'])
const origins: string[] = dispatcher.upstreams
const key: string = pathKey('/a?b')
dispatcher.addUpstream('http://127.0.0.1:9103').removeUpstream('http://127.0.0.1:9103')
void request('http://x/page1.html', { dispatcher })
// @ts-expect-error the upstreams are a list
void new PolicyDispatcher('http://127.0.0.1:9101')
// @ts-expect-error routingKey is a function of the path
void new PolicyDispatcher([], { routingKey: 'path' })
void same
void origins
void key
