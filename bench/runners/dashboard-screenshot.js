'use strict'

/**
 * `npm run screenshot`: the dashboard as the README shows it (docs/images/dashboard.png).
 * Seven backends in their own processes, polistes in front of them (a child process), the
 * dashboard open in headless Chromium from the start; load for `--before` seconds (specialization
 * forms), then one backend is killed (SIGKILL) and the load goes on for `--after` seconds (its
 * pages move to the others), then a full-page screenshot.
 *
 *   npm run screenshot
 *   npm run screenshot -- --algo round-robin --out /tmp/rr.png --before 20 --after 10
 */

const path = require('node:path')
const fs = require('node:fs')
const { yargsFor } = require('../../servers/cli-support')
const { PolistesError, ERR_POLISTES_BAD_OPTION } = require('../../src/common/errors')
const { startFleet } = require('../../servers/fleet')
const { launchBrowser, startCli, driveLoad, openDashboard, readDashboard } = require('./dashboard-browser')

const DEFAULT_OUT = path.join(__dirname, '..', '..', 'docs', 'images', 'dashboard.png')

async function main (argv) {
  const args = yargsFor(argv, 'Load the embedded fleet, kill a backend midway, and save a screenshot of the dashboard.')
    .scriptName('npm run screenshot --')
    .exitProcess(false)
    .option('algo', { type: 'string', default: 'wasp', describe: 'routing policy' })
    .option('before', { type: 'number', default: 40, describe: 'seconds of load before a backend is killed' })
    .option('after', { type: 'number', default: 30, describe: 'seconds of load after' })
    .option('kill', { type: 'string', default: 'c', describe: 'id of the backend to kill ("" for none)' })
    .option('connections', { type: 'number', default: 8, describe: 'client connections' })
    .option('out', { type: 'string', default: DEFAULT_OUT, defaultDescription: 'docs/images/dashboard.png' })
    .parse()
  if (args.help) return
  for (const name of ['before', 'after', 'connections']) {
    if (!(Number.isFinite(args[name]) && args[name] > 0)) {
      throw new ERR_POLISTES_BAD_OPTION(`--${name} must be a positive number`)
    }
  }

  const fleet = await startFleet({ basePort: 0, processes: true }) // the default fleet
  const victim = fleet.backends.find((b) => b.id === args.kill)
  if (args.kill && !victim) {
    await fleet.close()
    throw new ERR_POLISTES_BAD_OPTION(`--kill: no backend "${args.kill}" (a to g)`)
  }
  let cli = null
  let browser = null
  try {
    cli = await startCli([
      '--algo',
      args.algo,
      '--backends',
      fleet.backends.map((b) => `${b.url}#id=${b.id}`).join(',')
    ])
    browser = await launchBrowser({ width: 1400, height: 900 })
    const load = driveLoad(cli.url, { seconds: args.before, connections: args.connections })
    const page = await openDashboard(browser.context, cli.url, { minFrames: 1, minSeconds: 0 })
    const first = await load
    process.stdout.write(`${first.requests} requests in ${args.before} s\n`)
    if (victim) {
      process.kill(victim.pid, 'SIGKILL')
      process.stdout.write(`killed backend ${victim.id} (pid ${victim.pid})\n`)
    }
    const second = await driveLoad(cli.url, { seconds: args.after, connections: args.connections, seed: 2 })
    process.stdout.write(`${second.requests} requests in ${args.after} s (${second.errors} errors, statuses ` +
      `${JSON.stringify(second.statuses)})\n`)
    await page.waitForTimeout(1200) // one more frame
    const shown = await readDashboard(page)
    fs.mkdirSync(path.dirname(args.out), { recursive: true })
    await page.screenshot({ path: args.out, fullPage: true })
    process.stdout.write(`${args.out}: ${shown.frames} frames, ${shown.pages.length} pages x ` +
      `${shown.upstreams.length} backends\n`)
  } finally {
    if (browser) await browser.close()
    if (cli) await cli.stop()
    await fleet.close()
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`screenshot: ${err instanceof PolistesError ? err.message : err.stack}\n`)
    process.exit(err instanceof PolistesError ? 2 : 1)
  })
}
