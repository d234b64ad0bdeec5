/**
 * A decision is a pure function of the request and the policy set
 * (src/decision/pipeline.ts, contract section 3): evaluating the same
 * request twice gives deep-equal answers except `decisionId` and the
 * per-decision spotlight boundary (normalised before comparing), with the
 * shipped policies and with an inline set that applies every effect.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateRequestArb } from '../hostile/gen.js';
import { comparable, evaluate, lawApps, LAW_SEED, type LawApps } from './support.js';

let apps: LawApps;
beforeAll(async () => {
  apps = await lawApps();
});
afterAll(() => apps.close());

describe.each(['shipped', 'inline'] as const)('decisions are pure with the %s policies', (set) => {
  it('the same request twice: equal answers but for decisionId and the boundary', async () => {
    const app = () => (set === 'shipped' ? apps.shipped : apps.inline);
    let fenced = 0;
    await fc.assert(
      fc.asyncProperty(evaluateRequestArb, async (req) => {
        const text = JSON.stringify(req);
        const a = await evaluate(app(), text);
        const b = await evaluate(app(), text);
        expect(a.status).toBe(200);
        expect(b.status).toBe(200);
        expect(b.json.decisionId).not.toBe(a.json.decisionId);
        const boundaries = (raw: string) => [...raw.matchAll(/boundary=\\"([0-9a-f]{32})\\"/g)].map((m) => m[1]);
        const ba = new Set(boundaries(a.raw));
        const bb = new Set(boundaries(b.raw));
        if (ba.size > 0) {
          fenced++;
          // One boundary per decision, drawn afresh each time.
          expect(ba.size).toBe(1);
          expect(bb.size).toBe(1);
          expect([...bb][0]).not.toBe([...ba][0]);
        }
        expect(comparable(b.json)).toEqual(comparable(a.json));
        expect(b.json.validation).toEqual(a.json.validation);
      }),
      { seed: LAW_SEED + 20, numRuns: 300 },
    );
    expect(fenced).toBeGreaterThan(10);
  }, 120_000);
});
