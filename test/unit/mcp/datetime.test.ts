import { describe, expect, it } from 'vitest';
import { isRfc3339DateTime } from '../../../src/mcp/datetime.js';

describe('isRfc3339DateTime', () => {
  it.each([
    '2025-01-12T15:00:58Z',
    '2026-08-24T10:00:00Z',
    '2025-01-12T15:00:58.1Z',
    '2025-01-12T15:00:58.123456789Z',
    '2025-01-12T15:00:58+00:00',
    '2025-01-12T15:00:58-00:00',
    '2025-01-12T15:00:58+05:30',
    '2025-01-12T15:00:58.5-23:59',
    '2016-12-31T23:59:60Z', // leap second
    '2024-02-29T00:00:00Z', // leap year
    '2000-02-29T00:00:00Z', // divisible by 400
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
    // Lower-case separators: RFC 3339 section 5.6 allows them.
    '2025-01-12t15:00:58z',
    '2025-01-12t15:00:58+01:00',
  ])('accepts %s', (s) => {
    expect(isRfc3339DateTime(s)).toBe(true);
  });

  it.each([
    '',
    '2025-01-12',
    '2025-01-12T15:00:58', // no offset
    '2025-01-12 15:00:58Z', // space separator
    '2025-01-12T15:00Z', // no seconds
    '2025-13-01T00:00:00Z',
    '2025-00-01T00:00:00Z',
    '2025-01-00T00:00:00Z',
    '2025-01-32T00:00:00Z',
    '2025-04-31T00:00:00Z',
    '2025-02-29T00:00:00Z', // not a leap year
    '1900-02-29T00:00:00Z', // divisible by 100, not by 400
    '2025-01-12T24:00:00Z',
    '2025-01-12T23:60:00Z',
    '2025-01-12T23:59:61Z',
    '2025-01-12T15:00:58.Z', // empty fraction
    '2025-01-12T15:00:58,5Z', // comma fraction
    '2025-01-12T15:00:58+0530',
    '2025-01-12T15:00:58+5:30',
    '2025-01-12T15:00:58+24:00',
    '2025-01-12T15:00:58+05:60',
    '2025-01-12T15:00:58+05:30Z',
    '2025-01-12T15:00:58ZZ',
    '2025-01-12T15:00:58Z ',
    ' 2025-01-12T15:00:58Z',
    '20250112T150058Z', // ISO 8601 basic format
    '+2025-01-12T15:00:58Z',
    '12025-01-12T15:00:58Z',
    '２０２５-01-12T15:00:58Z', // full-width digits
    '2025-01-12T15:00:58UTC',
  ])('rejects %j', (s) => {
    expect(isRfc3339DateTime(s)).toBe(false);
  });

  it('completes on 100k-character adversarial strings', () => {
    const n = 100_000;
    expect(isRfc3339DateTime('2025-01-01T' + '0'.repeat(n))).toBe(false);
    expect(isRfc3339DateTime('2025-01-01T00:00:00.' + '0'.repeat(n))).toBe(false);
    expect(isRfc3339DateTime('2025-01-01T00:00:00.' + '0'.repeat(n) + 'Z')).toBe(true);
    expect(isRfc3339DateTime('2025-01-01T00:00:00.' + '0'.repeat(n) + '+01:00')).toBe(true);
    expect(isRfc3339DateTime('2025-01-01T00:00:00.' + '0'.repeat(n) + 'x')).toBe(false);
    expect(isRfc3339DateTime('1'.repeat(n))).toBe(false);
    expect(isRfc3339DateTime('2025-01-01T00:00:00Z'.repeat(n / 20))).toBe(false);
  });
});
