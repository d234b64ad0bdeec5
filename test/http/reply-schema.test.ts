/**
 * /v1/evaluate and /v1/evaluate-call replies are serialized with
 * JSON.stringify (faster than the schema serializer on these routes); every
 * reply must still match the documented reply schema. Checked on every
 * decision case's request, the steps of sequence cases included.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateReply } from '../../src/wire/evaluate.js';
import { evaluateCallReply } from '../../src/wire/evaluate-call.js';
import { sharedSchemas } from '../../src/wire/shared.js';
import { post, testApp, type TestApp } from '../helpers/app.js';

const CASES = fileURLToPath(new URL('../cases', import.meta.url));
const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : n.endsWith('.json') ? [join(dir, n)] : []));

describe('evaluate replies match the reply schema', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await testApp({ TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
  });
  afterAll(() => t.close());

  it('for every case request answered 200', async () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    for (const s of sharedSchemas) ajv.addSchema(s as object);
    const validate = ajv.compile(evaluateReply as object);
    const validateCall = ajv.compile(evaluateCallReply as object);
    let checked = 0;
    let calls = 0;
    for (const f of files(CASES)) {
      const c = JSON.parse(readFileSync(f, 'utf8'));
      const requests: Array<[string, unknown]> = c.steps
        ? (c.steps as any[]).flatMap((s) => (s.evaluate ? [['/v1/evaluate', s.evaluate]] : s.evaluateCall ? [['/v1/evaluate-call', s.evaluateCall]] : []))
        : [['/v1/evaluate', c.request]];
      for (const [url, body] of requests) {
        const r = await post(t.app, url, body);
        if (r.status !== 200) continue;
        const v = url === '/v1/evaluate' ? validate : validateCall;
        if (v === validateCall) calls++;
        else checked++;
        expect(v(r.json), `${f}: ${JSON.stringify(v.errors)}`).toBe(true);
      }
    }
    expect(checked).toBeGreaterThan(80);
    expect(calls).toBeGreaterThan(30);
  });
});
