/**
 * Personal data written as a JSON number (a card number in `structuredContent`, `_meta` or a
 * block's annotations) is read as the text it is written as: the shipped set marks the result sensitive, and a mask
 * rule replaces the number by its placeholder, wherever it sits. Small numbers (counts, sizes, priorities) are not
 * read.
 */
import fc from 'fast-check';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, testApp, type TestApp } from '../helpers/app.js';

const MASK = mkdtempSync(join(tmpdir(), 'trustgate-numbers-'));
const SERVERS = join(mkdtempSync(join(tmpdir(), 'trustgate-numbers-servers-')), 'servers.json');
writeFileSync(SERVERS, JSON.stringify({ '*': { hints: 'declared' } }));
writeFileSync(
  join(MASK, 'cards.yaml'),
  `id: cards
mode: enforce
rules:
  - id: mask-pii
    scope: result
    when: size(pii(result.text)) > 0
    effect: mask
    mask: [pii]
    message: personal data is masked
`,
);

/** Card numbers a JSON number holds exactly (below 2^53); a phone number written as a number has lost its `+` and reads as none. */
const NUMBERS = [4111111111111111, 5555555555554444, 378282246310005, 6011111111111117, 4012888888881881];

/** `n` placed at a generated path inside the result. */
function place(where: string, path: string[], n: number): Record<string, unknown> {
  let v: unknown = n;
  for (let i = path.length - 1; i >= 0; i--) v = path[i] === '[]' ? [1, v] : { [path[i]!]: v };
  switch (where) {
    case 'structured':
      return { content: [{ type: 'text', text: 'done' }], structuredContent: { rows: v } };
    case 'block-meta':
      return { content: [{ type: 'text', text: 'done', _meta: { 'com.example/x': v } }] };
    default:
      return { content: [{ type: 'text', text: 'done' }], _meta: { 'com.example/x': v } };
  }
}

const paths = fc.array(fc.constantFrom('a', 'card', 'phone', '[]', 'deep'), { maxLength: 4 });
const wheres = fc.constantFrom('structured', 'block-meta', 'result-meta');
// A server the operator trusts: what reaches the host is its result as it came, less what a rule changed.
const trusted = { name: 'lookup', annotations: { openWorldHint: false } };

describe('personal data written as a number', () => {
  let shipped: TestApp;
  let masking: TestApp;
  beforeAll(async () => {
    shipped = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_SERVERS: SERVERS });
    masking = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_SERVERS: SERVERS }, MASK);
  });
  afterAll(async () => {
    await shipped?.close();
    await masking?.close();
  });

  it('marks the result sensitive, and a mask rule replaces it, wherever it sits', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...NUMBERS), wheres, paths, async (n, where, path) => {
        const result = place(where, path, n);
        const s = await post(shipped.app, '/v1/evaluate', { result, tool: trusted });
        expect(s.status, s.body).toBe(200);
        expect(s.json.labels.sensitive, JSON.stringify(result)).toBe(true);
        const m = await post(masking.app, '/v1/evaluate', { result, tool: trusted });
        expect(m.status, m.body).toBe(200);
        expect(JSON.stringify(m.json.result), JSON.stringify(result)).not.toContain(String(n));
        expect(m.json.masked.length).toBeGreaterThan(0);
      }),
      { numRuns: 150 },
    );
  });

  it('leaves small numbers alone', async () => {
    const result = { content: [{ type: 'text', text: 'done', annotations: { priority: 0.5 } }], structuredContent: { count: 42, size: 123456, year: 2026 } };
    const m = await post(masking.app, '/v1/evaluate', { result, tool: trusted });
    expect(m.json.labels.sensitive).not.toBe(true);
    expect(m.json.result).toEqual(result);
  });
});
