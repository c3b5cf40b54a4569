'use strict'

/**
 * Pure judgement of the probes (bench/peers/probes.js): parse what a client got, classify one
 * target's answer to a probe, check a forward's framing, and compare polistes with the peers.
 *
 * An outcome (bench/peers/probe-run.js builds it):
 * `{ client: { raw, closed, timedOut }, upstream: [{ method, target, httpVersion, headers, rawHeaders, body, complete
 * }],
 *    upstreamErrors: [{ code }], victim: { status, body } | null, crashed, upstreamPort }`
 * where `upstream` holds every request the upstream parsed while the probe and the victim ran (the
 * victim's `GET /victim` included) and `upstreamErrors` every request it could not parse.
 */

/**
 * The first HTTP response at the start of `buffer`.
 * @param {Buffer} buffer
 * @param {{ ended?: boolean, head?: boolean }} [options] ended: the connection closed (a body
 *   without a length ends there); head: the request was a HEAD
 * @returns {{ complete: boolean, statusLine?: string, status?: number, httpVersion?: string, headers?: object,
 *   framing?: 'chunked' | 'length' | 'close' | 'none', body?: Buffer, trailers?: string[] }}
 */
function parseResponse (buffer, { ended = false, head = false } = {}) {
  const headEnd = buffer.indexOf('\r\n\r\n')
  if (headEnd === -1) return { complete: false }
  const lines = buffer.subarray(0, headEnd).toString('latin1').split('\r\n')
  const statusLine = lines[0]
  const m = /^HTTP\/(1\.[01]) (\d{3})/.exec(statusLine)
  if (!m) return { complete: false, statusLine }
  const headers = {}
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':')
    if (colon === -1) continue
    const key = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    headers[key] = key in headers ? `${headers[key]}, ${value}` : value
  }
  const status = Number(m[2])
  const out = { complete: false, statusLine, status, httpVersion: m[1], headers }
  let cursor = headEnd + 4
  if (head || status === 204 || status === 304 || (status >= 100 && status < 200)) {
    return { ...out, complete: true, framing: 'none', body: Buffer.alloc(0) }
  }
  if (/chunked/i.test(headers['transfer-encoding'] || '')) {
    const chunks = []
    for (;;) {
      const lineEnd = buffer.indexOf('\r\n', cursor)
      if (lineEnd === -1) return { ...out, framing: 'chunked' }
      const size = parseInt(buffer.subarray(cursor, lineEnd).toString('latin1'), 16)
      if (Number.isNaN(size)) return { ...out, framing: 'chunked', body: Buffer.concat(chunks) }
      if (size === 0) {
        const end = buffer.indexOf('\r\n\r\n', lineEnd)
        if (end === -1) return { ...out, framing: 'chunked' }
        const trailers = buffer.subarray(lineEnd + 2, end + 2).toString('latin1').split('\r\n').filter(Boolean)
        return { ...out, complete: true, framing: 'chunked', body: Buffer.concat(chunks), trailers }
      }
      if (buffer.length < lineEnd + 2 + size + 2) return { ...out, framing: 'chunked' }
      chunks.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size))
      cursor = lineEnd + 2 + size + 2
    }
  }
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length'])
    const body = buffer.subarray(cursor, cursor + length)
    return { ...out, complete: body.length === length, framing: 'length', body }
  }
  return { ...out, complete: ended, framing: 'close', body: buffer.subarray(cursor) }
}

/** Whether the probe is about a response (the upstream answers raw bytes, possibly none). */
function isResponseProbe (probe) {
  return typeof probe.upstreamResponse === 'string'
}

/** A target list of acceptable values, as a list. */
function targets (expect) {
  return Array.isArray(expect.target) ? expect.target : [expect.target]
}

/**
 * Classify one target's answer to one probe.
 * @param {object} probe
 * @param {object} outcome see the module comment
 * @returns {{ outcome: 'refused' | 'forwarded' | 'held' | 'answered', response: object, probeRequests: object[],
 *   faults: string[] }}
 *   refused: the client got a 4xx/5xx status (or a closed connection) and nothing reached the
 *   upstream; held: no answer in time and nothing forwarded; forwarded: the upstream saw something;
 *   answered (response probes): the client got a response. `faults`: what is wrong whatever the peers do.
 */
function classify (probe, outcome) {
  const response = parseResponse(outcome.client.raw, { ended: outcome.client.closed })
  const faults = []
  if (outcome.crashed) faults.push('the process exited')
  const victimTarget = '/victim'
  const probeRequests = outcome.upstream.filter((r) => r.target !== victimTarget)
  const victims = outcome.upstream.filter((r) => r.target === victimTarget)
  if (!outcome.victim || outcome.victim.status !== 200 || outcome.victim.body !== `GET ${victimTarget}`) {
    faults.push('the next client\'s GET /victim got ' +
      `${outcome.victim ? `${outcome.victim.status} ${JSON.stringify(outcome.victim.body)}` : 'no answer'}`)
  }
  if (victims.length > 1) faults.push(`the upstream saw GET /victim ${victims.length} times`)

  if (isResponseProbe(probe)) {
    const c = probe.client
    if (!response.status) {
      faults.push(`the client got ${outcome.client.timedOut ? 'no answer' : 'no status line'}`)
    } else {
      if (response.status !== c.status) faults.push(`status ${response.status}, expected ${c.status}`)
      if (!response.complete) faults.push('incomplete response')
      if (c.body !== undefined && response.body && response.body.toString('latin1') !== c.body) {
        faults.push(`body ${JSON.stringify(response.body.toString('latin1'))}, expected ${JSON.stringify(c.body)}`)
      }
      if (c.notChunked && response.framing === 'chunked') faults.push('chunked response to an HTTP/1.0 client')
      const text = (response.body || Buffer.alloc(0)).toString('latin1')
      for (const h of c.hides || []) {
        const s = h.replace('{upstreamPort}', String(outcome.upstreamPort))
        if (text.includes(s)) faults.push(`the body reveals ${JSON.stringify(s)}`)
      }
    }
    return {
      outcome: response.status ? 'answered' : outcome.client.timedOut ? 'held' : 'refused',
      response,
      probeRequests,
      faults
    }
  }

  const forwarded = probeRequests.length > 0 || outcome.upstreamErrors.length > 0
  if (probe.group === 'control' && !forwarded) faults.push('a plain request was not forwarded')
  if (forwarded) {
    faults.push(...framingFaults(probe, probeRequests, outcome.upstreamErrors))
    return { outcome: 'forwarded', response, probeRequests, faults }
  }
  if (response.status >= 400 || (!response.status && outcome.client.closed)) {
    return { outcome: 'refused', response, probeRequests, faults }
  }
  if (!response.status) return { outcome: 'held', response, probeRequests, faults }
  faults.push(`status ${response.status} while nothing reached the upstream`)
  return { outcome: 'refused', response, probeRequests, faults }
}

/**
 * What is wrong with a forward: anything but exactly one well-framed request as the probe expects.
 * @param {object} probe
 * @param {object[]} requests the requests the upstream parsed, the victim's left out
 * @param {object[]} errors requests the upstream could not parse
 * @returns {string[]}
 */
function framingFaults (probe, requests, errors) {
  const faults = []
  const e = probe.expect
  for (const err of errors) faults.push(`the upstream could not parse a request (${err.code})`)
  if (requests.length !== 1) {
    faults.push(`the upstream saw ${requests.length} requests: ` +
      `${requests.map((r) => `${r.method} ${r.target}`).join(', ') || 'none'}`)
  }
  const r = requests[0]
  if (!r) return faults
  if (r.method !== e.method) faults.push(`method ${r.method}, expected ${e.method}`)
  if (!targets(e).includes(r.target)) faults.push(`target ${r.target}, expected ${targets(e).join(' or ')}`)
  if (!r.complete) faults.push('the upstream did not get the whole body')
  else if (r.body !== e.body) faults.push(`body ${JSON.stringify(r.body)}, expected ${JSON.stringify(e.body)}`)
  const hosts = []
  for (let i = 0; i < r.rawHeaders.length; i += 2) {
    if (r.rawHeaders[i].toLowerCase() === 'host') hosts.push(r.rawHeaders[i + 1])
  }
  if (r.httpVersion === '1.1' && hosts.length !== 1) {
    faults.push(`an HTTP/1.1 request with ${hosts.length} Host headers`)
  }
  return faults
}

/**
 * Is polistes at least as strict as the peers on this probe? Where a peer refuses (or holds) the
 * probe, polistes must refuse it too; whatever the peers do, polistes' own answer must have no
 * faults (a forward is exactly one request with the right framing, the next client is not
 * desynchronised, the process lives).
 * @param {object} probe
 * @param {object} polistes the outcome of polistes
 * @param {{ [peer: string]: object }} peers the peers' outcomes, by name
 * @returns {string[]} violations, empty when polistes is at least as strict
 */
function strictnessViolations (probe, polistes, peers) {
  const mine = classify(probe, polistes)
  const out = mine.faults.map((f) => f)
  if (probe.informational || isResponseProbe(probe)) return out
  for (const [name, outcome] of Object.entries(peers)) {
    const theirs = classify(probe, outcome)
    if ((theirs.outcome === 'refused' || theirs.outcome === 'held') && mine.outcome !== 'refused') {
      out.push(`${name} ${theirs.outcome === 'held' ? 'holds' : 'refuses'} it (` +
        `${theirs.response.statusLine || 'connection closed'}), polistes ` +
        `${mine.outcome === 'held' ? 'holds it' : mine.outcome === 'forwarded' ? 'forwards it' : mine.outcome}`)
    }
  }
  return out
}

/** A request as the tables print it: `POST /a CL 35` / `TE chunked` / `body 5 B`. */
function describeRequest (r) {
  const bits = [`${r.method} ${r.target}`]
  if (r.httpVersion !== '1.1') bits.push(`HTTP/${r.httpVersion}`)
  if (r.headers['content-length'] !== undefined) bits.push(`CL ${r.headers['content-length']}`)
  if (r.headers['transfer-encoding'] !== undefined) bits.push(`TE ${r.headers['transfer-encoding']}`)
  if (r.body && !(r.headers['content-length'] !== undefined && Number(r.headers['content-length']) === r.body.length)) {
    bits.push(`body ${r.body.length} B`)
  }
  return bits.join(' ')
}

/**
 * One table cell: the client's status and what reached the upstream, e.g.
 * "400 / -" or "200 / POST /a CL 35" or "200 / POST /a, GET /SMUGGLED".
 * @param {object} probe
 * @param {object} outcome
 * @returns {{ cell: string, verdict: ReturnType<typeof classify>, shown: { [header: string]: string | undefined } }}
 */
function describeOutcome (probe, outcome) {
  const verdict = classify(probe, outcome)
  const r = verdict.response
  let client = r.status ? String(r.status) : outcome.client.timedOut ? 'no answer' : 'closed'
  if (!r.status && outcome.client.raw.length) {
    client = `${JSON.stringify(outcome.client.raw.toString('latin1').slice(0, 24))} (no status line)` +
      `${outcome.client.timedOut ? ', held' : ''}`
  }
  if (isResponseProbe(probe) && r.status) {
    const body = r.body
      ? JSON.stringify(r.body.toString('latin1').replaceAll(String(outcome.upstreamPort), '<port>').slice(0, 32))
      : ''
    client += ` ${r.framing}${r.trailers && r.trailers.length ? ` +trailer ${r.trailers.join(' ')}` : ''} ${body}`
  }
  let upstream
  if (isResponseProbe(probe)) {
    upstream = `${verdict.probeRequests.length} req`
  } else {
    const parts = verdict.probeRequests.map(describeRequest)
    for (const e of outcome.upstreamErrors) parts.push(`unparsable (${e.code})`)
    upstream = parts.join(', ') || '-'
  }
  const shown = {}
  const first = verdict.probeRequests[0]
  for (const h of probe.show || []) shown[h] = first ? first.headers[h] : undefined
  for (const h of Object.keys(shown)) {
    if (shown[h] === '') shown[h] = '""'
    else if (typeof shown[h] === 'string') {
      shown[h] = shown[h].replaceAll(`127.0.0.1:${outcome.upstreamPort}`, '<upstream>')
    }
  }
  const flags = []
  if (outcome.crashed) flags.push('CRASHED')
  if (verdict.faults.some((f) => f.startsWith('the next client'))) flags.push('DESYNC')
  return { cell: `${client} / ${upstream}${flags.length ? ` ${flags.join(' ')}` : ''}`, verdict, shown }
}

module.exports = { isResponseProbe, parseResponse, classify, strictnessViolations, describeOutcome }
