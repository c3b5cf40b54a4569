#!/usr/bin/env node
'use strict'

/**
 * The `polistes` command (and `npm start`): the CLI of src/run/cli.js, plus the embedded fleet of page
 * backends from servers/ when no --backends are given. The fleet is wired in here, not in src/,
 * so that the library never depends on its test backends.
 */

const path = require('node:path')
const { main, onError } = require('../src/run/cli')

const PUBLIC = path.join(__dirname, '..', 'public')

/**
 * The embedded fleet, on loopback, with a random stats token: the balancer forwards any path, so
 * without one the backends' `/_stats` would be readable through its public port; with it, only the
 * balancer's health checker (given `statsPath`) reads it, and anyone else gets a 404.
 * @type {import('../src/run/cli').StartFleet}
 */
function startEmbeddedFleet (fleet) {
  const { startFleet } = require('../servers/fleet') // loaded only when it is used
  return startFleet({ ...fleet, host: '127.0.0.1', root: PUBLIC, statsToken: true })
}

main(process.argv.slice(2), { startFleet: startEmbeddedFleet }).catch(onError)
