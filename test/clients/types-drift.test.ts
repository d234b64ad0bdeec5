/**
 * clients/trustgate-api.d.ts is what openapi-typescript generates from
 * openapi.yaml (`npm run clients`, also run by `npm run openapi`).
 */
import { readFileSync } from 'node:fs';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { describe, expect, it } from 'vitest';

const spec = new URL('../../openapi.yaml', import.meta.url);
const committed = new URL('../../clients/trustgate-api.d.ts', import.meta.url);

const withoutTrailingNewline = (s: string) => s.replace(/\n$/, '');

describe('generated client types', () => {
  it('clients/trustgate-api.d.ts matches openapi.yaml (run `npm run clients` after `npm run openapi`)', async () => {
    // The same call the openapi-typescript CLI makes, with its default options.
    const ast = await openapiTS(spec, { silent: true });
    const generated = COMMENT_HEADER + astToString(ast);
    expect(withoutTrailingNewline(readFileSync(committed, 'utf8'))).toBe(withoutTrailingNewline(generated));
  });
});
