/**
 * One version number: package.json's. The OpenAPI document, the MCP
 * bindings' serverInfo and the code read it from there (the Dockerfile label
 * and the Kubernetes image tag are checked in test/deploy/).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { API_VERSION } from '../../src/app/app.js';
import { BINDING_VERSION } from '../../src/bindings/interceptors/mcp-server.js';
import { VERSION } from '../../src/version.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

describe('the version number', () => {
  it('is package.json\'s everywhere it is reported', () => {
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(VERSION).toBe(pkg.version);
    expect(API_VERSION).toBe(pkg.version);
    expect(BINDING_VERSION).toBe(pkg.version);
    const doc = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as { info: { version: string } };
    expect(doc.info.version).toBe(pkg.version);
  });
});
