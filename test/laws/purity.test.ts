/**
 * A decision is a pure function of the request and the policy set
 * (src/decision/result.ts, docs/behaviour/decisions.md): evaluating the same
 * request twice gives deep-equal answers except `decisionId` and the
 * per-decision spotlight boundary (normalised before comparing), with the
 * shipped policies and with an inline set that applies every effect.
 * `options.explain` only adds provenance (`labelSources`, `blocks[].sources`):
 * the same request with and without it gives the same decision otherwise.
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

describe.each(['shipped', 'inline'] as const)('options.explain adds provenance and the trace and changes nothing else (%s policies)', (set) => {
  it('with and without explain: equal answers but for labelSources, blocks[].sources and trace', async () => {
    const app = () => (set === 'shipped' ? apps.shipped : apps.inline);
    let withSources = 0;
    await fc.assert(
      fc.asyncProperty(evaluateRequestArb, async (req) => {
        const ask = (explain: boolean) => evaluate(app(), JSON.stringify({ ...req, options: { ...(req.options as object), explain } }));
        const plain = await ask(false);
        const explained = await ask(true);
        expect(plain.status).toBe(200);
        expect(explained.status).toBe(200);
        expect(plain.json.labelSources).toBeUndefined();
        expect(plain.json.blocks.every((b: any) => b.sources === undefined)).toBe(true);
        expect(plain.json.trace).toBeUndefined();
        expect(explained.json.labelSources).toBeDefined();
        expect(Array.isArray(explained.json.trace)).toBe(true);
        if (explained.json.labelSources.sensitive.length + explained.json.labelSources.untrusted.length > 0) withSources++;
        const { labelSources: _ls, trace: _t, traceOmitted: _to, ...rest } = explained.json;
        const stripped = { ...rest, blocks: rest.blocks.map(({ sources: _s, ...b }: any) => b) };
        expect(comparable(stripped)).toEqual(comparable(plain.json));
      }),
      { seed: LAW_SEED + 21, numRuns: 300 },
    );
    // The generator reaches results whose flags have claims behind them.
    expect(withSources).toBeGreaterThan(50);
  }, 120_000);
});
