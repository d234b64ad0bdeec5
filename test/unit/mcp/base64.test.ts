/**
 * The base64 rule of contract section 11 (RFC 4648 section 4): `data` of
 * image/audio blocks and a resource `blob`, else `mcp.content.type`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isBase64 } from '../../../src/mcp/base64.js';
import { REVISIONS, atLeast } from '../../../src/mcp/revisions.js';
import { validateMcp } from '../../../src/mcp/shape.js';
import { expectFindings, validateBlock } from './helpers.js';

/** The RFC 4648 grammar written as a regular expression: a reference for the property test only. */
const REFERENCE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

describe('isBase64', () => {
  it('accepts the RFC 4648 section 10 test vectors', () => {
    for (const v of ['', 'Zg==', 'Zm8=', 'Zm9v', 'Zm9vYg==', 'Zm9vYmE=', 'Zm9vYmFy']) expect(isBase64(v), v).toBe(true);
  });

  it('accepts non-zero bits before the padding (section 3.5: decoders may)', () => {
    expect(isBase64('Zh==')).toBe(true);
    expect(isBase64('Zm9=')).toBe(true);
  });

  it('refuses missing padding, misplaced padding and whitespace (sections 3.1 to 3.3)', () => {
    for (const v of ['Zg', 'Zm8', 'Zm9vYg', '=', '====', 'Z===', 'Zg=a', 'Z=g=', 'Zg==Zg==', 'Zm9v\nYmFy', 'Zm9v YmFy', ' Zm9v', 'Zm9v\r\n']) {
      expect(isBase64(v), JSON.stringify(v)).toBe(false);
    }
  });

  it('refuses the URL-safe alphabet (section 5) and characters outside ASCII', () => {
    for (const v of ['Zm-v', 'Zm_v', 'Zm9ü', 'Zm9v\u0000AAA', '😀AA']) expect(isBase64(v), JSON.stringify(v)).toBe(false);
  });

  it('accepts every encoding Buffer produces', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => isBase64(Buffer.from(bytes).toString('base64'))));
  });

  it('agrees with the RFC grammar on arbitrary strings over the alphabet, padding and intruders', () => {
    const ch = fc.constantFrom(...'AZaz09+/=-_ \n\u00e9'.split(''));
    fc.assert(fc.property(fc.array(ch, { maxLength: 24 }).map((a) => a.join('')), (s) => isBase64(s) === REFERENCE.test(s)));
  });

  it('reads a long string in one pass', () => {
    const long = 'A'.repeat(8 * 1024 * 1024);
    expect(isBase64(long)).toBe(true);
    expect(isBase64(long.slice(1) + '!')).toBe(false);
  });
});

describe('mcp.content.type for base64 members', () => {
  it('reports image and audio data that is not base64', () => {
    expectFindings(validateBlock('2025-06-18', { type: 'image', data: 'not base64!', mimeType: 'image/png' }), [
      { rule: 'mcp.content.type', pointer: '/content/0/data' },
    ]);
    expectFindings(validateBlock('2025-06-18', { type: 'audio', data: 'UklGRg', mimeType: 'audio/wav' }), [
      { rule: 'mcp.content.type', pointer: '/content/0/data' },
    ]);
  });

  it('reports a resource blob that is not base64, in every revision', () => {
    for (const rev of REVISIONS) {
      expectFindings(validateBlock(rev, { type: 'resource', resource: { uri: 'file:///a.bin', blob: 'AA\nAA==' } }), [
        { rule: 'mcp.content.type', pointer: '/content/0/resource/blob' },
      ]);
    }
  });

  it('is an error and the message never quotes the value', () => {
    const f = validateMcp({ content: [{ type: 'image', data: 'secret-value', mimeType: 'image/png' }] }, '2025-11-25');
    expect(f).toHaveLength(1);
    expect(f[0]!.severity).toBe('error');
    expect(f[0]!.message).not.toContain('secret-value');
  });

  it('accepts valid base64, the empty string included, in every revision that has the type', () => {
    for (const rev of REVISIONS) {
      expect(validateBlock(rev, { type: 'image', data: '', mimeType: 'image/png' })).toEqual([]);
      expect(validateBlock(rev, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' })).toEqual([]);
      if (atLeast(rev, '2025-03-26')) expect(validateBlock(rev, { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' })).toEqual([]);
    }
  });

  it('leaves text members alone', () => {
    expect(validateBlock('2025-06-18', { type: 'text', text: 'not base64!' })).toEqual([]);
    expect(validateBlock('2025-06-18', { type: 'resource', resource: { uri: 'a:b', text: 'not base64!' } })).toEqual([]);
  });
});
