'use strict'

const { typeCheck } = require('./tsc')

test('the hand-written src/index.d.ts type-checks under strict tsc and rejects wrong options', () => {
  // balancer-types.ts imports 'polistes' (the package's own exports map) and holds @ts-expect-error
  // lines: tsc fails if one of them is not an error
  const result = typeCheck('tsconfig.balancer.json')
  expect(result.output).toBe('')
  expect(result.status).toBe(0)
}, 60000)
