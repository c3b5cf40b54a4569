'use strict'

const { CHROMIUM, chromiumPath, launchBrowser, startCli, driveLoad, openDashboard, waitForFrames, readDashboard } = require('../bench/runners/dashboard-browser')

const installed = chromiumPath() !== null
const title = installed
  ? 'the dashboard in headless Chromium'
  : `the dashboard in headless Chromium (SKIPPED: no Chromium at ${CHROMIUM}; apt-get install chromium, or set CHROMIUM_PATH)`

;(installed ? describe : describe.skip)(title, () => {
  let browser
  let cli
  beforeAll(async () => { browser = await launchBrowser({ timeoutMs: 30000 }) }, 40000)
  afterAll(async () => {
    if (cli) await cli.stop()
    if (browser) await browser.close()
  }, 20000)

  test('charts draw the load, the heat map has a cell per page and backend, and the page reconnects to a restarted balancer', async () => {
    cli = await startCli(['--fleet-base-port', '0'])
    const load = await driveLoad(cli.url, { seconds: 3, connections: 6, pages: 25 })
    expect(load.statuses[200]).toBe(load.requests)
    expect(load.requests).toBeGreaterThan(100)

    const page = await openDashboard(browser.context, cli.url, { minFrames: 2, minSeconds: 3 })
    const shown = await readDashboard(page)
    expect(shown.status).toBe('live')
    expect(shown.policy).toBe('wasp')
    for (const name of ['rps', 'hit', 'lat']) {
      expect(shown.charts[name].points).toBeGreaterThanOrEqual(3)
      expect(shown.charts[name].seriesWithData).toBeGreaterThan(0)
      expect(shown.charts[name].painted).toBeGreaterThan(0.005) // axes, grid and lines on the canvas
    }
    expect(shown.charts.rps.series).toBe(7)
    expect(shown.charts.rps.seriesWithData).toBe(7)
    expect(shown.upstreams).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g'])
    expect(shown.pages).toHaveLength(25)
    expect(shown.cells).toHaveLength(25 * 7)
    for (const p of shown.pages) {
      const sum = shown.cells.filter((c) => c.page === p).reduce((a, c) => a + c.share, 0)
      expect(sum).toBeCloseTo(1, 2)
    }

    // restart on the same port with another policy: the page reconnects by itself
    const port = cli.port
    await cli.stop()
    await page.waitForFunction(() => document.getElementById('status').dataset.state === 'reconnecting', null, { timeout: 5000 })
    cli = await startCli(['--port', String(port), '--fleet-base-port', '0', '--algo', 'round-robin'])
    // seed 1's first 56 draws cover 21 of the 25 pages, however few requests a loaded machine makes in 1 s
    await driveLoad(cli.url, { seconds: 1, connections: 4, pages: 25, minRequests: 60 })
    await page.waitForFunction(() => document.getElementById('policy').textContent === 'round-robin', null, { timeout: 10000 })
    await waitForFrames(page, { minFrames: shown.frames + 2 })
    const again = await readDashboard(page)
    expect(again.status).toBe('live')
    expect(again.cells.length).toBe(again.pages.length * 7)
    expect(again.pages.length).toBeGreaterThan(20)
  }, 60000)
})
