'use strict'

/**
 * Console output: the results table (medians over trials, with ratio columns against the
 * baseline) and the single progress line shown while the bench runs.
 */

const fmt = (digits) => (x) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '-')
const ms = fmt(2)

/**
 * How the peers ran, in words: threads and processes, and whose CPU the "balancer" column holds.
 * @param {number} n HAProxy threads and nginx worker processes (`--peer-workers`)
 * @returns {string}
 */
function peerThreads (n) {
  if (n <= 1) {
    return 'one thread / one process each (HAProxy nbthread 1, nginx master_process off), like one polistes ' +
      'process; their "balancer" CPU is the peer process\'s'
  }
  return `HAProxy nbthread ${n} (one process), nginx a master and worker_processes ${n}, like polistes ` +
    `--workers ${n}; ` +
    'their "balancer" CPU is the sum over the peer\'s threads and processes'
}

/** Known columns; a scenario lists the ones it shows. `ratio` adds a column "x<baseline>". */
const COLUMNS = {
  rps: { header: 'req/s', get: (s) => s.rps, format: fmt(1), ratio: 'rps' },
  mean: { header: 'mean ms', get: (s) => s.mean, format: ms, ratio: 'mean' },
  p50: { header: 'p50 ms', get: (s) => s.p50, format: ms },
  p90: { header: 'p90 ms', get: (s) => s.p90, format: ms },
  p95: { header: 'p95 ms', get: (s) => s.p95, format: ms },
  p99: { header: 'p99 ms', get: (s) => s.p99, format: ms, ratio: 'p99' },
  p999: { header: 'p99.9 ms', get: (s) => s.p999, format: ms },
  max: { header: 'max ms', get: (s) => s.max, format: ms },
  hitRate: { header: 'hit rate', get: (s) => s.hitRate, format: fmt(3) },
  distance: { header: 'to optimum', get: (s) => s.distance, format: fmt(3) },
  hotReplicas: {
    header: 'replicas top-3',
    get: (s) => [s.hot1Replicas, s.hot2Replicas, s.hot3Replicas],
    format: (xs) => xs.map((x) => (Number.isFinite(x) ? String(x) : '-')).join('/')
  },
  specialization: { header: 'special.', get: (s) => s.specialization, format: fmt(3) },
  cpuPer10k: { header: 'cpu s/10k', get: (s) => s.cpuPer10k, format: fmt(3) },
  errors: { header: 'errors', get: (s) => s.errors + s.non2xx, format: (x) => String(x) },
  share: { header: 'share %', get: (s) => s.share, format: (xs) => xs.map((x) => (x * 100).toFixed(0)).join('/') }
}

function pad (text, width, left) {
  return left ? text.padEnd(width) : text.padStart(width)
}

/**
 * @param {object} doc the result document (summary.js buildDocument)
 * @param {string[]} columns column keys
 * @returns {string} the table, targets and a legend, several lines
 */
function formatTable (doc, columns) {
  const base = doc.settings.baseline
  const short = base === 'round-robin' ? 'rr' : base
  const header = ['algo']
  for (const c of columns) {
    const def = COLUMNS[c]
    if (!def) continue
    header.push(def.header)
    if (def.ratio) header.push(`x${short}`)
  }
  const rows = [header]
  for (const [label, s] of Object.entries(doc.summary)) {
    const row = [label]
    for (const c of columns) {
      const def = COLUMNS[c]
      if (!def) continue
      row.push(def.format(def.get(s)))
      if (def.ratio) row.push(fmt(2)(s.vsBaseline[def.ratio]))
    }
    rows.push(row)
  }
  const widths = header.map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  const lines = rows.map((r) => r.map((cell, i) => pad(cell, widths[i], i === 0)).join('  '))
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '))

  const st = doc.settings
  const title = `scenario ${doc.scenario}: ${doc.description}\n` +
    `${st.trials} trial(s) x (${st.warmup} s learning + ` +
      `${st.requests ? `${st.requests} requests` : `${st.duration} s`} measured), ${st.connections} connections, ` +
    `${st.popularity}${st.rate ? `, open loop at ${st.rate} req/s (latency from the intended send time)` : ''}, ` +
      `${st.pages} pages` +
    `${st.pageSize ? ` (${st.pageSize} B)` : ''}, cache ` +
      `${st.cacheBytes ? `${st.cacheBytes} bytes` : `${st.cachePages} pages`}, miss ${st.missMs} ms` +
    `${st.shift ? `, ranking rotated by ${st.shift.step} every ${st.shift.seconds} s` : ''}` +
    `${st.churn ? ', churn (backend a SIGKILLed a third into the window, restarted cold a third later)' : ''}` +
    `, keep-alive ${st.keepAlive}; medians over trials`
  const out = [title, '', ...lines]
  const optima = [...new Set(Object.values(doc.summary).map((s) => s.optimum).filter(Number.isFinite))]
  if (optima.length) {
    out.push(
      '',
      'static optimum (the hottest pages that fit in the fleet\'s pooled cache' +
        `${st.churn ? ', time-averaged over the churn' : ''}): ${optima.map(fmt(3)).join(', ')}; "to ` +
        'optimum" = optimum - hit rate'
    )
  }
  const hot = Object.entries(doc.summary).filter(([, s]) => Number.isFinite(s.hot1Replicas))
  if (hot.length) {
    out.push('replicas top-3: backends serving >= 5 % of each of the three hottest pages\' requests ' +
      '(backends\' own counts, median over trials)')
    for (const run of firstTrials(doc)) {
      const pages = run.hotPages.slice(0, 3).map((h) => `${h.page} ${(h.share * 100).toFixed(1)} % on ` +
        `${Object.entries(h.backends).map(([id, n]) => `${id} ${Math.round((n / h.requests) * 100)}%`).join(' ')}`)
      out.push(`  ${run.algo} (trial ${run.trial}): ${pages.join('; ')}`)
    }
  }
  const churned = doc.runs.filter((r) => r.churn)
  if (churned.length) {
    const failed = Object.entries(doc.summary).map(([label, s]) => `${label} ${s.errors + s.non2xx}`)
    out.push(`churn: failed requests over all trials (errors + non-2xx, the kill included): ${failed.join('; ')}`)
  }
  const rev = doc.revision
  if (rev && rev.modified && rev.modified.length) {
    out.push(
      '',
      `measured code: ${String(rev.commit).slice(0, 7)} plus uncommitted changes to ${rev.modified.join(', ')}`
    )
  }

  const learning = Object.entries(doc.summary)
    .map(([label, s]) => `${label} ${fmt(1)(s.learningRps)} req/s hit ${fmt(3)(s.learningHitRate)}`)
  if (st.warmup > 0) out.push('', `learning phase (first ${st.warmup} s): ${learning.join('; ')}`)
  const cpu = Object.entries(doc.summary)
    .map(([label, s]) => `${label} ${fmt(2)(s.cpuBalancer)}/${fmt(2)(s.cpuFleet)}/${fmt(2)(s.cpuLoad)}`)
  out.push(`CPU cores used in the window, balancer/fleet/load: ${cpu.join('; ')} (of ` +
    `${doc.machine ? doc.machine.cpus : '?'})`)
  out.push(loadLine(doc))
  const peers = Object.entries(doc.summary).filter(([, s]) => s.peer)
  if (peers.length) {
    const versions = [...new Set(peers.map(([, s]) => s.peer.version).filter(Boolean))]
    out.push(`peers (${versions.join(', ')}): ${peerThreads(doc.settings.peerWorkers || 1)}`)
  }

  if (doc.targets && doc.targets.length) {
    out.push('', 'targets:')
    for (const t of doc.targets) {
      const mark = t.pass === undefined ? '?' : t.pass ? 'ok  ' : 'MISS'
      const what = t.ratio ? `${t.metric} ${t.algo}/${base}` : `${t.metric} ${t.algo}`
      const bound = [
        t.min !== undefined ? `>= ${t.min}` : '',
        t.max !== undefined ? `<= ${t.max}` : ''
      ].filter(Boolean).join(' ')
      const value = typeof t.value === 'number' ? String(Math.round(t.value * 1000) / 1000) : 'n/a'
      out.push(`  ${mark} ${what} = ${value} (target ${bound})`)
    }
  }
  return out.join('\n')
}

/** The first trial's run of each arm that has hot pages. */
function firstTrials (doc) {
  const seen = new Set()
  const out = []
  for (const r of doc.runs) {
    if (!r.hotPages || !r.hotPages.length || seen.has(r.algo)) continue
    seen.add(r.algo)
    out.push(r)
  }
  return out
}

/**
 * The load generator and its CPU share (the largest over the arms' medians), so a reader can see
 * it had headroom; in open loop also its lag.
 * @param {object} doc
 * @returns {string}
 */
function loadLine (doc) {
  const all = Object.values(doc.summary)
  const most = Math.max(...all.map((s) => s.cpuLoad).filter(Number.isFinite))
  const cores = doc.machine ? doc.machine.cpus : '?'
  const generator = doc.settings.load || 'autocannon'
  let line = `load generator: ${generator}, at most ${fmt(2)(Number.isFinite(most) ? most : NaN)} of ${cores} cores` +
    (most > 0.8 ? ' (near one core: it may have limited the throughput)' : '')
  if (generator === 'open-loop') {
    const lag = Math.max(...all.map((s) => s.lagP99).filter(Number.isFinite))
    const lagMax = Math.max(...all.map((s) => s.lagMax).filter(Number.isFinite))
    line += `; its own send lag p99 ${fmt(2)(lag)} ms, max ${fmt(2)(lagMax)} ms (medians over trials, worst arm)`
  }
  if (generator === 'wrk') {
    line += '; wrk cannot attribute pages to backends: specialization comes from the backends\' own per-page counts'
  }
  return line
}

/**
 * A progress reporter: one line rewritten with \r on a TTY; on anything else, one plain line
 * per run (start and end), so logs stay short.
 * @param {NodeJS.WriteStream} stream
 * @param {{ quiet?: boolean }} [options]
 */
function createProgress (stream, { quiet = false } = {}) {
  const tty = Boolean(stream.isTTY)
  let width = 0
  return {
    /** Per-second update while a run is going; `eta` (e.g. "ETA 1m10s") ends the line when given. */
    tick ({ arm, trial, trials, second, total, phase, rps, hitRate, index, runs, eta }) {
      if (quiet || !tty) return
      const line = `[${index}/${runs}] ${arm.label} trial ${trial}/${trials}  ${second}/${total} s ${phase}  ` +
        `${rps} req/s  hit ${Number.isFinite(hitRate) ? hitRate.toFixed(2) : '-'}${eta ? `  ${eta}` : ''}`
      stream.write('\r' + line.padEnd(width))
      width = line.length
    },
    /** A line that stays (a run started or ended). */
    line (text) {
      if (quiet) return
      if (tty) {
        stream.write('\r' + text.padEnd(width) + '\n')
        width = 0
      } else {
        stream.write(text + '\n')
      }
    },
    clear () {
      if (!quiet && tty && width) stream.write('\r' + ' '.repeat(width) + '\r')
      width = 0
    }
  }
}

module.exports = { formatTable, createProgress, loadLine, peerThreads }
