/**
 * The live dashboard: reads `frame` events from /_polistes/events (Server-Sent Events, about one
 * a second), keeps the last WINDOW_S seconds, and draws three uPlot charts and the heat map of
 * pages x backends. No build step, no network beyond the balancer. `window.polistes` exposes the
 * charts and counters for tests.
 */
(function () {
  'use strict'
  const Plot = window.uPlot
  const WINDOW_S = 300
  const PALETTE = [
    '#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'
  ]
  const colour = (i) => PALETTE[i % PALETTE.length]

  const state = {
    frames: 0,
    ids: [],
    t: [],
    p50: [],
    p99: [],
    hitAll: [],
    rps: new Map(), // id -> number[]
    hit: new Map(), // id -> (number | null)[]
    charts: {},
    heatKey: '',
    failures: new Map(), // id -> { count, at } (at: frame number of the last increase)
    down: new Set()
  }
  window.polistes = state

  const $ = (id) => document.getElementById(id)
  const fmtMs = (v) =>
    (v == null ? '-' : v < 1 ? `${v.toFixed(2)} ms` : v < 10 ? `${v.toFixed(1)} ms` : `${Math.round(v)} ms`)
  const fmtPct = (v) => (v == null ? '-' : `${(v * 100).toFixed(1)} %`)

  function width (el) {
    return Math.max(280, el.clientWidth)
  }

  /** (Re)create the three charts for the current backends. */
  function buildCharts () {
    for (const c of Object.values(state.charts)) c.destroy()
    const time = { label: '', stroke: '#6b7385', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#eef0f3' } }
    const axisY = (label, values) =>
      ({ label, stroke: '#6b7385', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#eef0f3' }, size: 56, values })
    const perBackend = (fmt) =>
      state.ids.map((id, i) => ({ label: id, stroke: colour(i), width: 1.6, spanGaps: true, value: (u, v) => fmt(v) }))
    const el = $('chart-rps')
    const common = { height: 190, cursor: { points: { size: 5 } }, legend: { live: false } }
    state.charts.rps = new Plot({
      ...common,
      width: width(el),
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [time, axisY('req/s')],
      series: [{}, ...perBackend((v) => (v == null ? '-' : v.toFixed(0)))]
    }, rpsData(), el)
    const hitEl = $('chart-hit')
    state.charts.hit = new Plot({
      ...common,
      width: width(hitEl),
      scales: { x: { time: true }, y: { range: [0, 1] } },
      axes: [time, axisY('hit rate', (u, vals) => vals.map((v) => `${Math.round(v * 100)}%`))],
      series: [
        {},
        { label: 'all', stroke: '#1d2433', width: 2, dash: [6, 4], spanGaps: true, value: (u, v) => fmtPct(v) },
        ...perBackend(fmtPct)
      ]
    }, hitData(), hitEl)
    const latEl = $('chart-lat')
    state.charts.lat = new Plot({
      ...common,
      width: width(latEl),
      scales: { x: { time: true }, y: { distr: 3 } },
      axes: [
        time,
        axisY('ms', (u, vals) => vals.map((v) => (v == null ? '' : v < 1 ? v.toFixed(2) : String(+v.toFixed(1)))))
      ],
      series: [{},
        { label: 'p50', stroke: '#4e79a7', width: 2, spanGaps: true, value: (u, v) => fmtMs(v) },
        { label: 'p99', stroke: '#e15759', width: 2, spanGaps: true, value: (u, v) => fmtMs(v) }]
    }, latData(), latEl)
  }

  const rpsData = () => [state.t, ...state.ids.map((id) => state.rps.get(id))]
  const hitData = () => [state.t, state.hitAll, ...state.ids.map((id) => state.hit.get(id))]
  const latData = () => [state.t, state.p50.map(positive), state.p99.map(positive)]
  const positive = (v) => (v > 0 ? v : null)

  /** Append a frame's seconds (or replace everything on a full frame) and trim to the window. */
  function absorb (frame) {
    const s = frame.series
    if (frame.full) {
      state.t = []
      state.p50 = []
      state.p99 = []
      state.hitAll = []
      state.rps = new Map()
      state.hit = new Map()
    }
    const ids = frame.upstreams.map((u) => u.id)
    const known = new Set(state.ids)
    const changed = ids.length !== state.ids.length || ids.some((id) => !known.has(id)) || frame.full
    for (const id of ids) {
      if (!state.rps.has(id)) {
        state.rps.set(id, state.t.map(() => null))
        state.hit.set(id, state.t.map(() => null))
      }
    }
    const byId = new Map(s.upstreams.map((u) => [u.id, u]))
    s.t.forEach((t, k) => {
      state.t.push(t)
      state.p50.push(s.p50[k])
      state.p99.push(s.p99[k])
      state.hitAll.push(s.hitRate[k])
      for (const id of state.rps.keys()) {
        const u = byId.get(id)
        state.rps.get(id).push(u ? u.rps[k] : null)
        state.hit.get(id).push(u ? u.hitRate[k] : null)
      }
    })
    const extra = state.t.length - WINDOW_S
    if (extra > 0) {
      for (const a of [state.t, state.p50, state.p99, state.hitAll, ...state.rps.values(), ...state.hit.values()]) {
        a.splice(0, extra)
      }
    }
    state.ids = ids
    return changed
  }

  function drawCharts (rebuild) {
    if (rebuild || !state.charts.rps) return buildCharts()
    state.charts.rps.setData(rpsData())
    state.charts.hit.setData(hitData())
    state.charts.lat.setData(latData())
  }

  /** A backend is down when ejected, or when its failure count grew in the last FAILING_FRAMES frames. */
  const FAILING_FRAMES = 10
  function health (frame) {
    state.down = new Set()
    for (const u of frame.upstreams) {
      const seen = state.failures.get(u.id)
      if (!seen || u.failures > seen.count) {
        state.failures.set(u.id, { count: u.failures, at: seen ? state.frames : -Infinity })
      }
      const failing = state.frames - state.failures.get(u.id).at < FAILING_FRAMES
      if (!u.healthy || failing) state.down.add(u.id)
    }
  }

  function summary (frame) {
    $('policy').textContent = frame.policy
    const last = state.t.length - 1
    const rps = frame.upstreams.reduce((a, u) => a + u.rps, 0)
    $('rps').textContent = rps.toFixed(rps < 10 ? 1 : 0)
    let hits = 0
    let n = 0
    for (const u of frame.upstreams) if (u.hitRate != null) { hits += u.hitRate * u.rps; n += u.rps }
    $('hit').textContent = n > 0 ? fmtPct(hits / n) : (last >= 0 ? fmtPct(state.hitAll[last]) : '-')
    $('p50').textContent = fmtMs(frame.summary.p50)
    $('p99').textContent = fmtMs(frame.summary.p99)
    const up = frame.upstreams.filter((u) => !state.down.has(u.id)).length
    $('up').textContent = `${up} / ${frame.upstreams.length}`
    $('up').style.color = up < frame.upstreams.length ? '#c0392b' : ''
  }

  /** Blues: share 0 -> near white, 1 -> dark blue. */
  function shade (share) {
    const stops = [[247, 251, 255], [107, 174, 214], [8, 48, 107]]
    const x = Math.max(0, Math.min(1, share)) * 2
    const i = Math.min(1, Math.floor(x))
    const f = x - i
    const c = stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * f))
    return `rgb(${c[0]},${c[1]},${c[2]})`
  }

  function drawHeat (frame) {
    const heat = frame.heat
    const table = $('heat')
    const key = heat.pages.join('|') + '#' + heat.upstreams.join('|')
    $('half-life').textContent = String(heat.halfLifeS)
    if (key !== state.heatKey) {
      state.heatKey = key
      const head = ['<tr><th></th>']
      heat.upstreams.forEach((id, j) => head.push(
        `<th data-upstream="${esc(id)}"><span class="sw" style="background:${colour(j)}"></span>${esc(id)}</th>`
      ))
      table.tHead.innerHTML = head.join('') + '</tr>'
      table.tBodies[0].innerHTML = heat.pages.map((page) => `<tr><th>${esc(page)}</th>${
        heat.upstreams.map((id) => `<td class="cell" data-page="${esc(page)}" ` +
          `data-upstream="${esc(id)}"></td>`).join('')}</tr>`).join('')
      table.tFoot.innerHTML = '<tr><th title="pages where this backend served at least half of the recent ' +
        `requests">pages led</th>${heat.upstreams.map(() => '<th></th>').join('')}</tr>`
    }
    heat.upstreams.forEach((id, j) => {
      const th = table.tHead.rows[0].cells[j + 1]
      th.classList.toggle('down', state.down.has(id))
    })
    const led = heat.upstreams.map(() => 0)
    let owners = 0
    const rows = table.tBodies[0].rows
    heat.pages.forEach((page, i) => {
      const owner = frame.owners[page]
      heat.upstreams.forEach((id, j) => {
        const share = heat.share[i][j]
        const td = rows[i].cells[j + 1]
        td.style.background = shade(share)
        td.classList.toggle('dark', share > 0.55)
        td.textContent = share >= 0.05 ? String(Math.round(share * 100)) : ''
        td.dataset.share = String(share)
        const isOwner = owner !== undefined && owner.upstream === id
        td.classList.toggle('owner', isOwner)
        if (isOwner) owners++
        td.title = `${page} on ${id}: ${(share * 100).toFixed(1)} % of recent ` +
          `requests${isOwner ? ` (specialist, threshold ${owner.theta.toFixed(1)})` : ''}`
        if (share >= 0.5) led[j]++
      })
    })
    $('owner-note').hidden = owners === 0
    led.forEach((n, j) => { table.tFoot.rows[0].cells[j + 1].textContent = String(n) })
  }

  function esc (text) {
    return String(text).replace(
      /[&<>"']/g,
      (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]
    )
  }

  function onFrame (event) {
    const frame = JSON.parse(event.data)
    const rebuild = absorb(frame)
    drawCharts(rebuild)
    health(frame)
    summary(frame)
    drawHeat(frame)
    state.frames++
    state.last = frame
  }

  function setStatus (name) {
    const el = $('status')
    el.className = `status ${name}`
    el.dataset.state = name
    el.textContent = name
  }

  let source = null
  function connect () {
    source = new EventSource('events')
    source.addEventListener('frame', onFrame)
    source.onopen = () => setStatus('live')
    source.onerror = () => {
      setStatus('reconnecting')
      // the browser retries by itself unless the stream failed for good (e.g. the server restarted
      // and answered with an error): then start a new one
      if (source.readyState === EventSource.CLOSED) setTimeout(connect, 2000)
    }
  }

  window.addEventListener('resize', () => {
    for (const [name, chart] of Object.entries(state.charts)) {
      chart.setSize({ width: width($(`chart-${name}`)), height: 190 })
    }
  })
  connect()
})()
