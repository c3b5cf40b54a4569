'use strict'

const { createAdminRouter } = require('../src/observe/admin-router')

describe('createAdminRouter', () => {
  test('tries handlers in the order they were added, until one answers', () => {
    const router = createAdminRouter()
    const calls = []
    router.add((req) => { calls.push('a'); return req.url === '/_polistes/a' })
    router.add((req) => { calls.push('b'); return req.url === '/_polistes/b' })
    expect(router.handle({ url: '/_polistes/b' }, {})).toBe(true)
    expect(router.handle({ url: '/_polistes/c' }, {})).toBe(false)
    expect(calls).toEqual(['a', 'b', 'a', 'b'])
    expect(() => router.add('stats')).toThrow(TypeError)
  })
})
