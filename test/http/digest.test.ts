import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packItems } from '../helpers/pack.js';
import { post, testApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(() => t.close());

const items = packItems();

describe('POST /v1/digest (contract section 7)', () => {
  it('the conformance pack holds 9 digests', () => {
    expect(items).toHaveLength(9);
  });

  it.each(items.map((i) => [i.name, i] as const))('re-derives %s byte for byte', async (_name, item) => {
    const alg = item.evidenceRef.digest.split(':')[0];
    const r = await post(t.app, '/v1/digest', { record: item.record, canonicalization: item.evidenceRef.canonicalization, algorithm: alg });
    expect(r.status).toBe(200);
    expect(r.json.digest).toBe(item.evidenceRef.digest);
    expect(r.json.canonicalization).toBe(item.evidenceRef.canonicalization);
  });

  it('answers the JCS text, or the base64 of the CBOR bytes, as canonical', async () => {
    const jcs = await post(t.app, '/v1/digest', { record: { b: 1, a: [true, null, 'x'] }, canonicalization: 'jcs/rfc8785' });
    expect(jcs.json.canonical).toBe('{"a":[true,null,"x"],"b":1}');
    expect(jcs.json.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const cbor = await post(t.app, '/v1/digest', { record: { b: 1, a: 0.5 }, canonicalization: 'cbor/rfc8949', algorithm: 'sha512' });
    // {"a": 0.5 (f93800), "b": 1}
    expect(Buffer.from(cbor.json.canonical, 'base64').toString('hex')).toBe('a26161f93800616201');
    expect(cbor.json.digest).toMatch(/^sha512:[0-9a-f]{128}$/);
  });

  it.each([
    ['repeated member name', '{"record":{"a":1,"a":2},"canonicalization":"jcs/rfc8785"}', 'TG_ERR_RECORD_NOT_IJSON', '/record'],
    ['integer beyond 2^53-1', '{"record":{"n":9007199254740993},"canonicalization":"jcs/rfc8785"}', 'TG_ERR_RECORD_NOT_IJSON', '/record/n'],
    ['lone surrogate', '{"record":{"s":"\\ud800"},"canonicalization":"cbor/rfc8949"}', 'TG_ERR_RECORD_NOT_CANONICALIZABLE', '/record'],
    ['129 levels', `{"record":${'['.repeat(129)}${']'.repeat(129)},"canonicalization":"jcs/rfc8785"}`, 'TG_ERR_RECORD_TOO_DEEP', '/record'],
    ['unknown canonicalization', '{"record":{},"canonicalization":"xml/c14n"}', 'TG_ERR_BODY_SCHEMA', '/canonicalization'],
    ['unknown algorithm', '{"record":{},"canonicalization":"jcs/rfc8785","algorithm":"md5"}', 'TG_ERR_BODY_SCHEMA', '/algorithm'],
    ['missing record', '{"canonicalization":"jcs/rfc8785"}', 'TG_ERR_BODY_SCHEMA', '/record'],
  ])('a record with a %s is a 400 problem', async (_what, body, code, ptr) => {
    const r = await post(t.app, '/v1/digest', body);
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(r.json.code).toBe(code);
    expect(r.json.errors.map((e: any) => e.pointer)).toContain(ptr);
  });

  it('accepts a record nesting exactly 128 levels', async () => {
    const r = await post(t.app, '/v1/digest', `{"record":${'['.repeat(128)}${']'.repeat(128)},"canonicalization":"cbor/rfc8949"}`);
    expect(r.status).toBe(200);
  });
});

describe('the conformance pack through POST /v1/evaluate', () => {
  it.each(items.map((i) => [i.name, i] as const))('%s: the evidenceRef is verified', async (_name, item) => {
    const r = await post(t.app, '/v1/evaluate', {
      result: item.result,
      protocolVersion: '2025-06-18',
      context: { destination: 'local' },
      evidence: [{ digest: item.evidenceRef.digest, record: item.record }],
    });
    expect(r.status).toBe(200);
    expect(r.json.evidence).toHaveLength(1);
    expect(r.json.evidence[0]).toMatchObject({
      status: 'verified',
      expected: item.evidenceRef.digest,
      derived: item.evidenceRef.digest,
      canonicalization: item.evidenceRef.canonicalization,
      type: item.evidenceRef.type,
    });
    // A verified non-public data-class record makes the scope it governs sensitive.
    const rec = item.record as { class?: unknown };
    if (item.evidenceRef.type === 'data-class.v1' && rec.class !== 'public') expect(r.json.labels.sensitive).toBe(true);
    if (item.level === 'block') {
      expect(item.effectiveSensitive).toBe(true);
      expect(r.json.blocks[1].sensitive).toBe(true);
      expect(r.json.blocks[0].sensitive).toBeNull();
    }
  });
});
