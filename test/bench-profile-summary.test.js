'use strict'

const { summarizeProfile, groupOf } = require('../bench/reports/profile-summary')

describe('bench/reports/profile-summary', () => {
  test('self time by function, module and group; groups are shares of the busy time', () => {
    const cwd = process.cwd()
    const frame = (id, functionName, url = '') => ({ id, callFrame: { functionName, url, lineNumber: 0 } })
    const profile = {
      nodes: [
        frame(1, '(idle)'),
        frame(2, 'writev'),
        frame(3, 'head', `file://${cwd}/src/proxy/engines/response-parser.js`),
        frame(4, 'pick', `file://${cwd}/src/policies/wasp/index.js`),
        frame(5, 'writeOrBuffer', 'node:internal/streams/writable'),
        frame(6, '(garbage collector)')
      ],
      samples: [1, 1, 2, 2, 2, 3, 4, 5, 6, 3],
      timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000]
    }
    const s = summarizeProfile(profile)
    expect(s.totalMs).toBe(10)
    expect(s.busyMs).toBe(8)
    expect(s.byGroup).toEqual([
      { name: 'socket I/O natives (system calls inside)', ms: 3, share: 3 / 8 },
      { name: 'polistes (src/, policies aside)', ms: 2, share: 2 / 8 },
      { name: 'polistes policy (src/policies)', ms: 1, share: 1 / 8 },
      { name: 'Node.js JavaScript (streams, net, events, timers)', ms: 1, share: 1 / 8 },
      { name: 'garbage collector', ms: 1, share: 1 / 8 }
    ])
    expect(s.byModule[0]).toEqual({ name: 'writev', ms: 3, share: 0.3 })
    expect(s.byFunction.find((f) => f.name.startsWith('head '))).toMatchObject({ name: 'head src/proxy/engines/response-parser.js:1', ms: 2 })
  })

  test.each([
    ['(idle)', '', 'idle'],
    ['(program)', '', 'unattributed native (program)'],
    ['RegExp: ^a$', '', 'regular expressions'],
    ['writeLatin1String', '', 'socket I/O natives (system calls inside)'],
    ['indexOfString', '', 'other natives (V8 and Node builtins)'],
    ['dispatch', 'node_modules/undici/lib/dispatcher/client.js', 'dependencies'],
    ['emit', 'node:events', 'Node.js JavaScript (streams, net, events, timers)'],
    ['start', 'bench/children/balancer-child.js', 'other JavaScript (bench, tools)'],
    ['parse', 'src/front/fast-front.js', 'polistes (src/, policies aside)'],
    ['pick', 'src/policies/wasp/index.js', 'polistes policy (src/policies)']
  ])('%s in "%s" is in the group %s', (name, file, group) => {
    expect(groupOf(name, file)).toBe(group)
  })
})
