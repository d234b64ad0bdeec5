/**
 * clients/trustgate-api.d.ts is what openapi-typescript generates from
 * openapi.yaml (`npm run clients`, also run by `npm run openapi`), with the
 * results typed as MCP's own CallToolResult (scripts/clients.ts).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clientTypes, OUT } from '../../scripts/clients.js';

const committed = OUT;

const withoutTrailingNewline = (s: string) => s.replace(/\n$/, '');

describe('generated client types', () => {
  it('clients/trustgate-api.d.ts matches openapi.yaml (run `npm run clients` after `npm run openapi`)', async () => {
    const generated = await clientTypes();
    expect(withoutTrailingNewline(readFileSync(committed, 'utf8'))).toBe(withoutTrailingNewline(generated));
  });
});
