/**
 * The one version number: package.json's. The OpenAPI document
 * (`info.version`) and the MCP bindings (`serverInfo`, interceptor
 * descriptors) report it; the Dockerfile label and the Kubernetes image tag
 * are checked against it by tests. Read once, next to `dist/` and `src/`
 * alike (package.json ships with the package and the container image).
 */
import { readFileSync } from 'node:fs';

export const VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
