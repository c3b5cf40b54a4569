'use strict'

// What a newcomer does: `npm pack`, then install the tarball into an empty folder beside the libraries
// they use. The libraries are installed at the versions of this repository's node_modules, from npm's
// cache when it has them (`--prefer-offline`: `npm ci` of this repository put them there).

const { execFileSync } = require('node:child_process')
const crypto = require('node:crypto')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { oncePerRun } = require('./once-per-run')
const { SET_ASIDE } = require('./pack-setup')

const ROOT = path.join(__dirname, '..')
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

/** The environment of npm and of the consumer's programs: a newcomer's, without jest's NODE_OPTIONS. */
function plainEnv () {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  return env
}

/** npm's environment: the consumer's, with the NODE_EXTRA_CA_CERTS that test/pack-setup.js set aside for
 * the run's own processes (npm may reach the registry). */
function npmEnv () {
  const env = plainEnv()
  const extra = env[SET_ASIDE]
  if (extra !== undefined) env.NODE_EXTRA_CA_CERTS = extra
  return env
}

/** Run npm with `args` in `cwd` (npm's environment, above); its standard output. */
function npm (args, cwd) {
  return execFileSync(NPM, args, { cwd, encoding: 'utf8', env: npmEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
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
 * Pack the repository into `dir`: the tarball's path and the packed file paths.
 * @param {string} dir
 * @returns {{ file: string, files: string[] }}
 */
function packInto (dir) {
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], ROOT))[0]
  return { file: path.join(dir, packed.filename), files: packed.files.map((f) => f.path) }
}

/**
 * The repository's tarball, packed once per jest run (test/once-per-run.js): the first suite that asks
 * packs it, the others (in other workers) wait for that tarball. Without POLISTES_PACK_DIR (a suite run
 * outside this jest config), a tarball of its own in a new temporary folder.
 *
 * @returns {{ file: string, files: string[], remove: () => void }} the tarball's path, the packed file
 *   paths, and the removal of a tarball of its own (nothing for the shared one: the teardown removes it)
 */
function packedTarball () {
  const shared = oncePerRun('npm-pack', (dir) => packInto(dir))
  if (shared) return { ...shared, remove: () => {} }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-pack-'))
  const remove = () => fs.rmSync(tmp, { recursive: true, force: true })
  try {
    return { ...packInto(tmp), remove }
  } catch (err) {
    remove()
    throw err
  }
}

/**
 * What a consumer of the docs and the types installs beside polistes: the libraries the adapters wrap,
 * with their types, and TypeScript (test/package.test.js type-checks there; test/docs-examples.test.js
 * runs the docs' examples there, which use the libraries).
 */
const CONSUMER_PACKAGES = ['typescript', '@types/node', 'undici', 'http-proxy', '@types/http-proxy', 'http-proxy-3',
  'http-proxy-middleware', 'fastify', '@fastify/http-proxy', '@fastify/reply-from', 'node-static', 'lru-cache',
  '@types/ws@8.18.2'] // @fastify/http-proxy's types import 'ws', whose types it does not install

/**
 * Install the repository's tarball (packed once per run: packedTarball), with `packages`, into a new
 * folder: once per jest run for a given list (test/once-per-run.js; the suites that ask for the same
 * list share the folder, and write files of distinct names in it), else under the system's temporary
 * directory.
 *
 * @param {string[]} packages names (pinned to this repository's node_modules) or `name@version` specs
 * @returns {{ dir: string, files: string[], remove: () => void }} the consumer's folder, the packed
 *   file paths, and its removal (nothing for a shared one: the teardown removes it)
 */
function installPacked (packages = []) {
  const name = `consumer-${crypto.createHash('sha256').update(JSON.stringify(packages)).digest('hex').slice(0, 12)}`
  const shared = oncePerRun(name, (run) => {
    const folder = path.join(run, name)
    fs.mkdirSync(folder)
    return installInto(folder, packages)
  })
  if (shared) return { ...shared, remove: () => {} }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polistes-consumer-'))
  const remove = () => fs.rmSync(tmp, { recursive: true, force: true })
  try {
    return { ...installInto(tmp, packages), remove }
  } catch (err) {
    remove()
    throw err
  }
}

/** The tarball and `packages` installed in `folder`/consumer: its path and the packed file paths. */
function installInto (folder, packages) {
  const tarball = packedTarball()
  try {
    const dir = path.join(folder, 'consumer')
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }, null, 2))
    const specs = packages.map((p) => (p.lastIndexOf('@') > 0 ? p : pinned(p)))
    npm(['install', tarball.file, ...specs, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], dir)
    return { dir, files: tarball.files }
  } finally {
    tarball.remove()
  }
}

module.exports = { CONSUMER_PACKAGES, installPacked, npm, packedTarball, plainEnv, pinned, ROOT }
