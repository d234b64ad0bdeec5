import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OPENAPI_HEADER, renderOpenApiFile } from '../../scripts/openapi.js';
import { testApp, type TestApp } from '../helpers/app.js';

const committed = readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8');

describe('OpenAPI document', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp();
  });
  afterAll(() => t.close());

  it('openapi.yaml is what the route schemas generate (run `npm run openapi` after changing a route)', async () => {
    expect(await renderOpenApiFile()).toBe(committed);
  });

  it('openapi.yaml says it is generated, and how to regenerate it', () => {
    expect(committed.startsWith(OPENAPI_HEADER)).toBe(true);
    expect(OPENAPI_HEADER).toMatch(/^# GENERATED FILE: do not edit\. `npm run openapi`/);
  });

  it('GET /openapi.json serves the same document', async () => {
    const r = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(r.statusCode).toBe(200);
    expect(JSON.parse(r.body)).toEqual(parse(committed));
  });

  it('documents every /v1 route with its problem answers, and every $ref resolves', () => {
    const doc = parse(committed);
    for (const [path, method] of [
      ['/v1/evaluate', 'post'],
      ['/v1/validate', 'post'],
      ['/v1/digest', 'post'],
      ['/v1/policies', 'get'],
      ['/v1/policies/reload', 'post'],
      ['/healthz', 'get'],
      ['/readyz', 'get'],
    ] as const) {
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    }
    expect(doc.paths['/v1/evaluate'].post.responses['400'].content['application/problem+json']).toBeDefined();
    const refs = [...committed.matchAll(/\$ref: "?#\/components\/schemas\/([A-Za-z0-9_-]+)"?/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(5);
    for (const r of refs) expect(doc.components.schemas[r], r).toBeDefined();
  });

  it('serves Swagger UI at /docs', async () => {
    const r = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(r.statusCode).toBe(200);
    expect(r.body).toContain('swagger');
  });

  it('names its server relatively, so that Swagger UI\'s "Try it out" reaches the service it is served from, whatever its host and PORT', async () => {
    for (const url of ['/openapi.json', '/docs/json']) {
      const doc = JSON.parse((await t.app.inject({ method: 'GET', url })).body) as { servers: Array<{ url: string }> };
      expect(doc.servers.map((s) => s.url)).toEqual(['/']);
    }
  });
});
