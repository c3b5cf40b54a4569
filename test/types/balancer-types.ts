// Type test for the package's main entry (src/index.d.ts): compiled by tsc --strict in test/types.test.js, never run.
import { startBalancer, createPolicy, policyNames, parseBackend, PolistesError, ERR_POLISTES_PORT_IN_USE, errorCodes, createTelemetry, createAccessLog } from 'polistes'
import type { Balancer, BalancerStats, Policy, Upstream } from 'polistes'

async function main (): Promise<void> {
  const lb: Balancer = await startBalancer({ backends: ['http://127.0.0.1:9101#eu&w=2'], algo: 'wasp', port: 0, keepAlive: false })
  const stats: BalancerStats = lb.stats()
  const failures: number = stats.failures.connect + stats.failures.timeout + stats.failures.stream
  const url: string | undefined = lb.url
  const secure: Balancer = await startBalancer({
    backends: ['https://127.0.0.1:8443'],
    tlsCert: 'cert.pem',
    tlsKey: 'key.pem',
    upstreamCa: 'ca.pem',
    maxConnections: 1000,
    headersTimeoutMs: 5000,
    requestTimeoutMs: 30000,
    keepAliveTimeoutMs: 65000,
    maxHeaderSize: 32768,
    maxBodySize: 0,
    adminPort: 0,
    adminHost: '::1',
    maxEventStreams: 4,
    trustedProxies: ['10.0.0.0/8', '::1/128']
  })
  const openStreams: number = secure.admin.streams().open + secure.admin.streams().refused
  void openStreams
  secure.addAdminHandler((req, res) => {
    if (req.url !== '/_polistes/hello') return false
    res.end('hello')
    return true
  })
  const adminUrl: string | undefined = secure.adminUrl
  const refused: number = stats.bodyTooLarge + stats.droppedConnections
  void adminUrl, refused
  // @ts-expect-error an admin handler says whether it answered
  secure.addAdminHandler((req, res) => { res.end() })
  const state: 'up' | 'falling' | 'down' | 'rising' | 'ejected' = stats.upstreams[0].state
  const ramp: number = stats.upstreams[0].ramp
  const lastStatus: number | null | undefined = stats.upstreams[0].check?.last?.status
  void state, ramp, lastStatus
  const reloaded = lb.reconfigure({ backends: ['http://127.0.0.1:9102'], slowStartMs: 5000, healthCheck: { path: '/health', rise: 3 } })
  const removed: string[] = reloaded.removed
  void removed
  await lb.close({ graceMs: 1000 })
  void failures
  void url

  const policy: Policy = createPolicy('round-robin')
  const ups: Upstream[] = [{ id: 'a', inflight: 0 }]
  const picked: Upstream | undefined = policy.pick(ups, { key: '/page1.html' })
  void picked
  const names: string[] = policyNames()
  void names
  const spec = parseBackend('http://127.0.0.1:9101')
  const weight: number | undefined = spec.weight // only when given (#w=, weight)
  void weight
  const err = new PolistesError('ERR_POLISTES_BAD_URL', 'x')
  const code: string = err.code
  void code
  const inUse = new ERR_POLISTES_PORT_IN_USE('balancer', '127.0.0.1', 8080)
  const base: PolistesError = inUse
  const inUseCode: 'ERR_POLISTES_PORT_IN_USE' = inUse.code
  const described: string = errorCodes.ERR_POLISTES_PORT_IN_USE
  void base, inUseCode, described
  // @ts-expect-error a factory takes facts, not a ready message
  void new ERR_POLISTES_PORT_IN_USE('polistes: 127.0.0.1:8080 is in use')

  // @ts-expect-error backends is required
  await startBalancer({ algo: 'wasp' })
  // @ts-expect-error healthCheck.rise is a number
  await startBalancer({ backends: [], healthCheck: { rise: 'two' } })
  // 'direct' is the default engine
  await startBalancer({ backends: [], engine: 'direct' })
  // @ts-expect-error an engine is one of the names
  await startBalancer({ backends: [], engine: 'nginx' })
  // @ts-expect-error keepAlive is a boolean
  await startBalancer({ backends: [], keepAlive: 'yes' })

  const telemetry = createTelemetry({ windowS: 60, maxPages: 25 })
  const accessLog = createAccessLog({ file: '/tmp/access.log' })
  const observed = await startBalancer({ backends: ['http://127.0.0.1:9101'], admin: false, telemetry, accessLog })
  const handled: boolean = observed.admin.handle(null as never, null as never)
  const share: number = observed.telemetry.heatmap().share[0][0]
  void handled
  void share
  await accessLog.close()
  // @ts-expect-error statsPath is gone: admin turns /_polistes/* on or off
  await startBalancer({ backends: [], statsPath: null })
  // @ts-expect-error an access log is made by createAccessLog
  await startBalancer({ backends: [], accessLog: true })

  // routing key, sticky cookie, DNS re-resolution, backups and the admin state
  const keyed = await startBalancer({
    backends: ['http://app.internal:9101', { url: 'http://127.0.0.1:9109', backup: true }],
    routingKey: 'cookie:session',
    stickyCookie: { name: 'srv', secure: true, sameSite: 'None', maxAgeS: 3600 },
    resolveMs: 30000
  })
  const adminState: 'ready' | 'drain' | 'maint' = keyed.stats().upstreams[0].adminState
  const isBackup: boolean = keyed.stats().upstreams[1].backup
  void adminState, isBackup
  await startBalancer({ backends: [], stickyCookie: 'srv', resolveMs: null })
  // @ts-expect-error sameSite is Strict, Lax or None
  await startBalancer({ backends: [], stickyCookie: { sameSite: 'loose' } })
  // @ts-expect-error backup is a boolean
  await startBalancer({ backends: [{ url: 'http://127.0.0.1:1', backup: 'yes' }] })
}
void main
