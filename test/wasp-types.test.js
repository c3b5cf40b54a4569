'use strict'

const { typeCheck } = require('./tsc')

test('the hand-written wasp.d.ts type-checks under strict tsc and rejects a wrong option type', () => {
  // test/types/wasp-types.ts holds `// @ts-expect-error` lines: tsc fails if any of them is not an error
  const result = typeCheck('tsconfig.json')
  expect(result.output).toBe('')
  expect(result.status).toBe(0)
}, 60000)
