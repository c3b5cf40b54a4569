#!/usr/bin/env node
'use strict'

/**
 * Turn an access log (pino JSON lines, as `--access-log-file` writes them or as the CLI logs them
 * with `--log-format json`) into the CSV shape of the seed's request log, for spreadsheets:
 *
 *   timestamp,backend,latency_ms,status,cache
 *   2025-11-23T09:30:00.123Z,c,0.62,200,HIT
 *
 *   npm run log:csv -- access.log > requests.csv
 *   node src/observe/log-to-csv.js < access.log
 *
 * Lines that are JSON but not access lines (start-up messages, warnings) are left out; lines that
 * are not JSON are counted and reported on stderr. A log without a single access line is an error
 * (exit 2), so a pretty-printed log is not silently turned into an empty CSV.
 */

const fs = require('node:fs')
const readline = require('node:readline')
const { PolistesError, ERR_POLISTES_BAD_OPTION } = require('../common/errors')

const HEADER = 'timestamp,backend,latency_ms,status,cache'

/**
 * One access-log line as a CSV row.
 * @param {string} line
 * @returns {string | null | undefined} the row; null for JSON that is not an access line;
 *   undefined for a line that is not JSON
 */
function csvRow (line) {
  const text = line.trim()
  if (text === '') return null
  let entry
  try {
    entry = JSON.parse(text)
  } catch {
    return undefined
  }
  if (entry === null || typeof entry !== 'object' || typeof entry.status !== 'number' || !('upstream' in entry)) {
    return null
  }
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString() : String(entry.time ?? '')
  return [time, entry.upstream ?? '', entry.ms ?? '', entry.status, entry.cache ?? ''].map(cell).join(',')
}

function cell (value) {
  const text = String(value)
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

/**
 * Convert a stream of pino JSON lines into CSV.
 * @param {import('stream').Readable} input
 * @param {import('stream').Writable} output
 * @returns {Promise<{ rows: number, skipped: number, notJson: number }>}
 */
async function convert (input, output) {
  const counts = { rows: 0, skipped: 0, notJson: 0 }
  output.write(HEADER + '\n')
  const lines = readline.createInterface({ input, crlfDelay: Infinity })
  for await (const line of lines) {
    const row = csvRow(line)
    if (row === undefined) counts.notJson++
    else if (row === null) counts.skipped++
    else {
      counts.rows++
      if (!output.write(row + '\n')) await new Promise((resolve) => output.once('drain', resolve))
    }
  }
  return counts
}

/**
 * The command: `log-to-csv [file]` (stdin without a file or with `-`), CSV on stdout.
 * @param {string[]} argv
 */
async function main (argv) {
  const args = argv.filter((a) => a !== '--')
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write('usage: log-to-csv [access.log]   (stdin when no file is given)\nwrites CSV: ' + HEADER + '\n')
    return
  }
  const unknown = args.find((a) => a.startsWith('-') && a !== '-')
  if (unknown) throw new ERR_POLISTES_BAD_OPTION(`unknown option ${unknown} (usage: log-to-csv [file])`)
  if (args.length > 1) throw new ERR_POLISTES_BAD_OPTION(`one file at most, got ${args.length}`)
  const file = args[0] && args[0] !== '-' ? args[0] : undefined
  let input = process.stdin
  if (file) {
    try {
      fs.accessSync(file, fs.constants.R_OK)
    } catch (err) {
      throw new ERR_POLISTES_BAD_OPTION(`cannot read ${file}: ${err.code || err.message}`)
    }
    input = fs.createReadStream(file)
  }
  const counts = await convert(input, process.stdout)
  const where = file || 'stdin'
  if (counts.rows === 0) {
    throw new ERR_POLISTES_BAD_OPTION(`no access-log line in ${where}` + (counts.notJson
      ? ` (${counts.notJson} line(s) are not JSON: log with --log-format json or --access-log-file)`
      : ''))
  }
  if (counts.notJson > 0) {
    process.stderr.write(`log-to-csv: ${counts.notJson} line(s) of ${where} are not JSON and were left out\n`)
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    if (err instanceof PolistesError) {
      process.stderr.write(`log-to-csv: ${err.message}\n`)
      process.exit(2)
    }
    process.stderr.write(`log-to-csv: unexpected error: ${err && err.stack}\n`)
    process.exit(1)
  })
}

module.exports = { csvRow, HEADER }
