'use strict'

const { intOption, numberOption, listOption } = require('../servers/cli-support')

describe('numeric options', () => {
  test('intOption takes trimmed integers within the bounds', () => {
    expect(intOption('port', ' 8080 ', { min: 0, max: 65535 })).toBe(8080)
    expect(intOption('count', 0)).toBe(0)
  })

  test.each([
    [() => intOption('port', '1.5', { min: 0, max: 65535 }), '--port must be an integer from 0 to 65535, got "1.5"'],
    [() => intOption('port', '70000', { min: 0, max: 65535 }), '--port must be an integer from 0 to 65535, got "70000"'],
    [() => intOption('count', ' '), '--count must be an integer >= 0, got " "'],
    [() => numberOption('miss-ms', 'x'), '--miss-ms must be a number >= 0, got "x"'],
    [() => numberOption('error-rate', '1.5', { min: 0, max: 1 }), '--error-rate must be a number from 0 to 1, got "1.5"'],
    [() => numberOption('miss-ms', 'Infinity'), '--miss-ms must be a number >= 0, got "Infinity"']
  ])('a bad value is one ERR_POLISTES_BAD_OPTION line (%#)', (parse, message) => {
    expect(parse).toThrow(expect.objectContaining({ code: 'ERR_POLISTES_BAD_OPTION', message }))
  })

  test('numberOption takes fractions; listOption parses each item', () => {
    expect(numberOption('error-rate', '0.25', { min: 0, max: 1 })).toBe(0.25)
    expect(listOption('latency-profile', '10, 15,20', numberOption)).toEqual([10, 15, 20])
    expect(listOption('latency-profile', '', numberOption)).toEqual([])
  })
})
