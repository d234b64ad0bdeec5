/**
 * Writes openapi.yaml from the route schemas (the same document GET
 * /openapi.json serves). `npm run openapi` after changing a route; a test
 * fails while the two differ.
 */
import { writeFileSync } from 'node:fs';
import { renderOpenApiYaml } from '../src/openapi.js';

const yaml = await renderOpenApiYaml();
writeFileSync(new URL('../openapi.yaml', import.meta.url), yaml);
process.stdout.write(`openapi.yaml written (${yaml.length} bytes)\n`);
