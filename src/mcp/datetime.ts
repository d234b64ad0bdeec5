/**
 * RFC 3339 section 5.6 `date-time` recognition in one left-to-right pass.
 *
 * A hand-written scanner instead of a regular expression: the input is
 * attacker-controlled and may be hundreds of kilobytes long, so the check
 * must be linear with no backtracking. Every character is read at most once.
 */

const ZERO = 0x30;
const NINE = 0x39;

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** Value of the `n` decimal digits at `at`, or -1 when any of them is not a digit. */
function digits(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) {
    const c = s.charCodeAt(i);
    if (!isDigit(c)) return -1;
    v = v * 10 + (c - ZERO);
  }
  return v;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * True when `s` is an RFC 3339 `date-time`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|±hh:mm)`.
 *
 * Choices where RFC 3339 leaves room:
 * - `t` and `z` are accepted in lower case: the RFC's ABNF is case-insensitive
 *   (RFC 5234) and section 5.6 says so explicitly.
 * - A space instead of `T` is rejected: section 5.6 allows it only "by mutual
 *   agreement", which a validator cannot assume.
 * - The day is checked against the month and the leap-year rule (section 5.7),
 *   so `2025-02-29` is rejected and `2024-02-29` accepted.
 * - Second 60 (leap second) is accepted at any time of day: whether a leap
 *   second actually occurred needs a leap-second table, which section 5.7
 *   leaves to the application.
 * - The fraction may have any number of digits, and the offset hour and minute
 *   are limited to 00-23 and 00-59.
 */
export function isRfc3339DateTime(s: string): boolean {
  const len = s.length;
  // The fixed-width part "YYYY-MM-DDTHH:MM:SS" plus at least a one-character offset.
  if (len < 20) return false;
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  const hour = digits(s, 11, 2);
  const minute = digits(s, 14, 2);
  const second = digits(s, 17, 2);
  if (year < 0 || s[4] !== '-' || s[7] !== '-' || s[13] !== ':' || s[16] !== ':') return false;
  if (s[10] !== 'T' && s[10] !== 't') return false;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) return false;

  let i = 19;
  if (s[i] === '.') {
    const start = ++i;
    while (i < len && isDigit(s.charCodeAt(i))) i++;
    if (i === start) return false;
  }
  const c = s[i];
  if (c === 'Z' || c === 'z') return i + 1 === len;
  if (c === '+' || c === '-') {
    if (i + 6 !== len || s[i + 3] !== ':') return false;
    const oh = digits(s, i + 1, 2);
    const om = digits(s, i + 4, 2);
    return oh >= 0 && oh <= 23 && om >= 0 && om <= 59;
  }
  return false;
}
