import { describe, expect, it } from 'vitest';
import { flowDigest, newFlowKey } from '../../../src/flows/origin.js';

describe('flowDigest', () => {
  it('is HMAC-SHA-256 (RFC 4231 test case 2), its first 22 base64url characters', () => {
    // Key "Jefe", data "what do ya want for nothing?": 5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843.
    const full = Buffer.from('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843', 'hex').toString('base64url');
    expect(flowDigest(Buffer.from('Jefe'), 'what do ya want for nothing?')).toBe(full.slice(0, 22));
  });

  it('depends on the key: one value under two keys gives two digests', () => {
    expect(flowDigest(newFlowKey(), 'alice@example.com')).not.toBe(flowDigest(newFlowKey(), 'alice@example.com'));
  });
});
