/**
 * Writes openapi.yaml from the route schemas (the same document GET
 * /openapi.json serves), under a header that says so. `npm run openapi`
 * after changing a route (it also regenerates clients/trustgate-api.d.ts);
 * test/http/openapi.test.ts fails while the two differ.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { renderOpenApiYaml } from '../src/app/openapi.js';

/** Path of the committed document. */
export const OPENAPI_FILE = fileURLToPath(new URL('../openapi.yaml', import.meta.url));

/** The comment openapi.yaml starts with. */
export const OPENAPI_HEADER = [
  '# GENERATED FILE: do not edit. `npm run openapi` writes it from the wire schemas',
  '# (src/wire/), the document GET /openapi.json serves; a test fails while they differ.',
  '',
].join('\n');

/** The text openapi.yaml holds: the header, then the document. */
export async function renderOpenApiFile(): Promise<string> {
  return OPENAPI_HEADER + (await renderOpenApiYaml());
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(resolve(entry)).href) {
  const text = await renderOpenApiFile();
  writeFileSync(OPENAPI_FILE, text);
  process.stdout.write(`openapi.yaml written (${text.length} bytes)\n`);
}
