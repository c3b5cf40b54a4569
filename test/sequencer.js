'use strict'

// jest's testSequencer. jest runs the longest suites first, as it timed them in its cache; a fresh
// clone has no cache, and jest then orders by file size, which put lint (a short file, 17 s cold)
// and bench-seeds (33 s) last on the run's critical path: a cold run took 192 s against a warm 174 s.
// Here a suite jest has not timed takes its seconds from test/suite-seconds.json (a cold run's
// figures, for order only), or 1 s; once every suite is timed, jest's own order stands.

const Sequencer = require('@jest/test-sequencer').default
const path = require('node:path')
const SECONDS = require('./suite-seconds.json')

/** The seconds a suite took on a cold run, by its file name without `.test.js`; 1 when not listed. */
const hint = (test) => SECONDS[path.basename(test.path, '.test.js')] ?? 1

class ColdRunSequencer extends Sequencer {
  /**
   * Longest first: jest's timings where it has them, the cold run's hints where it has not.
   * @param {import('@jest/test-result').Test[]} tests
   */
  sort (tests) {
    const sorted = super.sort(tests) // sets test.duration from jest's cache where it has one
    if (sorted.every((test) => test.duration != null)) return sorted
    return sorted
      .map((test) => ({ test, seconds: test.duration != null ? test.duration / 1000 : hint(test) }))
      .sort((a, b) => b.seconds - a.seconds)
      .map(({ test }) => test)
  }
}

module.exports = ColdRunSequencer
