import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, testApp, type TestApp } from '../helpers/app.js';

const K = 'io.modelcontextprotocol/trust-annotations';
let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(() => t.close());

describe('POST /v1/validate (contract section 5)', () => {
  it('a clean result is valid with no findings', async () => {
    const r = await post(t.app, '/v1/validate', { result: { content: [{ type: 'text', text: 'hi', annotations: {} }] } });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ valid: true, protocolVersion: '2025-11-25', validation: [] });
  });

  it('reports MCP and trust findings together, with pointers into the result', async () => {
    const r = await post(t.app, '/v1/validate', {
      protocolVersion: '2025-06-18',
      result: {
        _meta: { [K]: { sensitive: true } },
        content: [
          { type: 'text', text: 'a', annotations: { priority: 2, sensitive: true } },
          { type: 'text', text: 'b', _meta: { [K]: { sensitive: false, untrusted: 'yes' } } },
        ],
      },
    });
    expect(r.json.valid).toBe(false);
    const got = r.json.validation.map((v: any) => [v.rule, v.severity, v.pointer]);
    expect(got).toEqual(
      expect.arrayContaining([
        ['mcp.annotations.priority', 'error', '/content/0/annotations/priority'],
        ['mcp.annotations.members', 'error', '/content/0/annotations/sensitive'],
        ['trust.annotation.type', 'error', `/content/1/_meta/${K.replace('/', '~1')}/untrusted`],
        ['trust.no-weakening', 'warning', `/content/1/_meta/${K.replace('/', '~1')}/sensitive`],
      ]),
    );
    expect(r.json.validation.map((v: any) => v.rule)).not.toContain('trust.sensitive.missing');
  });

  it('chooses 2026-07-28 when the result carries resultType, else 2025-11-25', async () => {
    const a = await post(t.app, '/v1/validate', { result: { resultType: 'complete', content: [] } });
    expect(a.json).toMatchObject({ valid: true, protocolVersion: '2026-07-28' });
    const b = await post(t.app, '/v1/validate', { result: { content: [] } });
    expect(b.json).toMatchObject({ valid: true, protocolVersion: '2025-11-25' });
    const c = await post(t.app, '/v1/validate', { result: { content: [] }, protocolVersion: '2026-07-28' });
    expect(c.json.validation).toContainEqual(expect.objectContaining({ rule: 'mcp.result.shape', severity: 'error' }));
  });

  it('checks the label dialects (trust.dialect.shape), whose _meta keys follow the MCP key grammar, in the dialects TRUSTGATE_DIALECTS lists', async () => {
    const body = {
      protocolVersion: '2025-06-18',
      result: {
        _meta: { ifc: { integrity: 'untrusted', confidentiality: 'public' }, 'com.github.ifc/labels': { '$[*]': { integrity: 'untrusted', confidentiality: [] } } },
        content: [{ type: 'text', text: 'a', _meta: { ifc: { integrity: 'Trusted' } } }],
      },
    };
    const r = await post(t.app, '/v1/validate', body);
    expect(r.json.valid).toBe(false);
    expect(r.json.validation.map((v: any) => [v.rule, v.severity, v.pointer])).toEqual([
      ['trust.dialect.shape', 'error', "/_meta/com.github.ifc~1labels/$[*]"],
      ['trust.dialect.shape', 'error', '/content/0/_meta/ifc/integrity'],
    ]);
    const only = await testApp({ TRUSTGATE_DIALECTS: 'trust-annotations' });
    try {
      const k = await post(only.app, '/v1/validate', body);
      expect(k.json).toEqual({ valid: true, protocolVersion: '2025-06-18', validation: [] });
    } finally {
      await only.close();
    }
  });

  it('a lastModified that is not RFC 3339 is a warning and leaves the result valid', async () => {
    const r = await post(t.app, '/v1/validate', {
      protocolVersion: '2025-06-18',
      result: { content: [{ type: 'text', text: 'a', annotations: { lastModified: 'yesterday' } }] },
    });
    expect(r.json.valid).toBe(true);
    expect(r.json.validation).toEqual([expect.objectContaining({ rule: 'mcp.annotations.lastModified', severity: 'warning' })]);
  });

  it('accepts 2024-10-07 (section 11), applies the 2024-11-05 rules and says so', async () => {
    // audio and structuredContent came later: both are errors under the 2024-11-05 rules.
    const result = { content: [{ type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' }], structuredContent: { a: 1 } };
    const old = await post(t.app, '/v1/validate', { result, protocolVersion: '2024-10-07' });
    const ref = await post(t.app, '/v1/validate', { result, protocolVersion: '2024-11-05' });
    expect(old.status).toBe(200);
    expect(old.json.protocolVersion).toBe('2024-11-05');
    expect(old.json).toEqual(ref.json);
    expect(old.json.validation.map((v: any) => [v.rule, v.pointer])).toEqual([
      ['mcp.result.shape', '/structuredContent'],
      ['mcp.content.type', '/content/0/type'],
    ]);
    const ev = await post(t.app, '/v1/evaluate', { result: { content: [{ type: 'text', text: 'hi' }] }, protocolVersion: '2024-10-07' });
    expect(ev.status).toBe(200);
    expect(ev.json.protocolVersion).toBe('2024-11-05');
  });

  it('an unknown revision is a 400 that lists 2024-10-07 among the known ones', async () => {
    const r = await post(t.app, '/v1/validate', { result: { content: [] }, protocolVersion: '2024-10-08' });
    expect(r.status).toBe(400);
    expect(r.json.code).toBe('TG_ERR_PROTOCOL_VERSION_UNKNOWN');
    expect(r.json.detail).toContain('2024-10-07');
  });
});
