import { describe, expect, it } from 'vitest';
import { isMetaKey } from '../../../src/mcp/meta-key.js';

describe('isMetaKey', () => {
  it.each([
    // Name only (the prefix is optional); the name may be empty.
    '',
    'a',
    '1',
    'display_hint',
    'traceparent',
    'progressToken',
    'a.b',
    'a-b_c.d',
    '123_mixed.name-456',
    // Prefix and name.
    'com.example/status',
    'com.example/render-mode',
    'io.modelcontextprotocol/trust-annotations',
    'io.modelcontextprotocol/serverInfo',
    'a/b',
    'A1/B',
    'a-b.c1/x.y_z-0',
    'x/1',
    // Prefix with an empty name.
    'com.example/',
    'a/',
  ])('accepts %j', (k) => {
    expect(isMetaKey(k)).toBe(true);
  });

  it.each([
    'bad key',
    ' a',
    'a ',
    '_private',
    'private_',
    '-a',
    'a-',
    '.a',
    'a.',
    '/x', // empty prefix
    '/',
    'a..b/c', // empty label
    '.a/x',
    'a./x',
    '1a/x', // label starts with a digit
    '-a/x',
    'a-/x', // label ends with a hyphen
    'a_b/x', // underscore in a label
    'com.exa_mple/x',
    'a/b/c', // second slash
    'a//b',
    'a/-x',
    'a/x-',
    'a/x y',
    'é',
    'café/x',
    'a/é',
    '\u0000',
    'a\nb',
  ])('rejects %j', (k) => {
    expect(isMetaKey(k)).toBe(false);
  });

  it('completes on long keys', () => {
    const n = 100_000;
    expect(isMetaKey('a'.repeat(n))).toBe(true);
    expect(isMetaKey('a.'.repeat(n) + 'a/x')).toBe(true);
    expect(isMetaKey('a.'.repeat(n) + '/x')).toBe(false);
    expect(isMetaKey('a-'.repeat(n) + ' ')).toBe(false);
    expect(isMetaKey('/'.repeat(n))).toBe(false);
  });
});
