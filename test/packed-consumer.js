'use strict'

// What a newcomer does: `npm pack`, then install the tarball into an empty folder beside the libraries
// they use. The libraries are installed at the versions of this repository's node_modules, from npm's
// cache when it has them (`--prefer-offline`: `npm ci` of this repository put them there).

const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const ROOT = path.join(__dirname, '..')
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

/** The environment of npm and of the consumer's programs: a newcomer's, without jest's NODE_OPTIONS. */
function plainEnv () {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  return env
}

function npm (args, cwd) {
  return execFileSync(NPM, args, { cwd, encoding: 'utf8', env: plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
}

/**
 * `name@version` of a package of this repository's node_modules (the version the tests ran against).
 * @param {string} name
 * @returns {string}
 */
function pinned (name) {
  const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8'))
  return `${name}@${version}`
}

/**
 * Pack the repository and install the tarball, with `packages`, into a new folder under the system's
 * temporary directory.
 *
 * @param {string[]} packages names (pinned to this repository's node_modules) or `name@version` specs
 * @returns {{ dir: string, files: string[], remove: () => void }} the consumer's folder, the packed
 *   file paths, and its removal (with the tarball's folder)
 */
function installPacked (packages = []) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-consumer-'))
  const remove = () => fs.rmSync(tmp, { recursive: true, force: true })
  try {
    const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', tmp], ROOT))
    const dir = path.join(tmp, 'consumer')
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }, null, 2))
    const specs = packages.map((p) => (p.lastIndexOf('@') > 0 ? p : pinned(p)))
    npm(['install', path.join(tmp, packed[0].filename), ...specs, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], dir)
    return { dir, files: packed[0].files.map((f) => f.path), remove }
  } catch (err) {
    remove()
    throw err
  }
}

module.exports = { installPacked, plainEnv, pinned, ROOT }
