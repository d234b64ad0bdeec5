/**
 * The four laws of what is forwarded (contract section 11), as properties
 * over generated results of every revision, with every block type, nested
 * resources, unknown members, `_meta` entries, a `structuredContent` and a
 * `toolResult` that mirror the blocks' text, and case-fold collisions.
 *
 * Every string the generator writes is a unique marker (`zq0001zq`, ...)
 * remembered with the block it belongs to and whether the contract exempts
 * it from fencing (`uri`, `annotations`, the trust claim). The forwarded
 * result is then searched for every marker:
 *
 * 1. withheld means withheld: no marker of a redacted or dropped block (nor
 *    its mirrors) appears anywhere; after a scope-result redact or drop the
 *    result holds only `content`, `isError`, `resultType` and a `_meta`
 *    holding the trust claim alone;
 * 2. untrusted text is fenced or absent: every marker of a spotlit block
 *    that is not exempt (and its mirrors) appears only inside a fence with
 *    the decision's boundary, member names included;
 * 3. no member a case-insensitive host could misread is forwarded, such a
 *    result is answered as modified, and a case-folded flag never loosens a
 *    label;
 * 4. every member of the input missing from the forwarded result is inside
 *    a redacted or dropped block or listed (itself or an ancestor) in
 *    `withheld`, and every pointer in `withheld` names a member of the input.
 *
 * The same requests go through the Docker interceptor route and with
 * `options.omitUnmodifiedResult`: neither ever leaves a result that was
 * changed, or holds a case-fold collision, for the host to forward itself.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REVISIONS } from '../../src/mcp/revisions.js';
import { INTERCEPTOR, K, type Json, type Obj } from '../hostile/gen.js';
import { checkLaws, type Built, type Planted } from './check.js';
import { lawApps, LAW_SEED, type LawApps } from './support.js';

let apps: LawApps;
beforeAll(async () => {
  apps = await lawApps();
});
afterAll(() => apps.close());

const RUNS = 150;

const KINDS = ['text', 'image', 'audio', 'resource_link', 'resource-text', 'resource-blob-text', 'resource-blob-bin', 'resource-both', 'unknown', 'not-object'] as const;
type Kind = (typeof KINDS)[number];
const COLLISIONS = ['main', 'Annotations', 'Type', 'shadow-flag', 'shadow-key', 'twins'] as const;
/** For collision `main`: a case-folded copy of a member the block's type defines. */
const MAIN: Record<Kind, string> = {
  text: 'TEXT',
  image: 'MimeType',
  audio: 'DATA',
  resource_link: 'NAME',
  'resource-text': 'Resource',
  'resource-blob-text': 'Resource',
  'resource-blob-bin': 'Resource',
  'resource-both': 'Resource',
  unknown: 'TEXT',
  'not-object': '',
};
type CollisionKind = (typeof COLLISIONS)[number];

const claimSpec = fc.record({ sensitive: fc.boolean(), untrusted: fc.boolean() }, { requiredKeys: [] });

const blockSpec = fc.record({
  kind: fc.constantFrom(...KINDS),
  claim: fc.option(claimSpec, { nil: undefined }),
  claimOnResource: fc.boolean(),
  claimExtra: fc.boolean(),
  audience: fc.option(fc.subarray(['user', 'assistant']), { nil: undefined }),
  extra: fc.boolean(),
  metaExtra: fc.boolean(),
  collision: fc.option(fc.constantFrom(...COLLISIONS), { nil: undefined, freq: 3 }),
});
type BlockSpec = typeof blockSpec extends fc.Arbitrary<infer T> ? T : never;

const specArb = fc.record({
  revision: fc.constantFrom(...REVISIONS),
  blocks: fc.array(blockSpec, { maxLength: 5 }),
  resultClaim: fc.option(claimSpec, { nil: undefined }),
  resultMetaExtra: fc.boolean(),
  mirror: fc.boolean(),
  toolResult: fc.boolean(),
  unknownTop: fc.boolean(),
  resultCollision: fc.boolean(),
  isError: fc.option(fc.boolean(), { nil: undefined }),
  destination: fc.option(fc.constantFrom('local', 'external-model'), { nil: undefined }),
  reader: fc.option(fc.constantFrom('user', 'assistant'), { nil: undefined }),
  policies: fc.constantFrom('shipped', 'inline'),
});
type Spec = typeof specArb extends fc.Arbitrary<infer T> ? T : never;


function build(spec: Spec): Built {
  let n = 0;
  const planted: Planted[] = [];
  const colliding: string[] = [];
  const shadowFlags: Built['shadowFlags'] = [];
  const mark = (block: number | 'result', exempt = false, mirrorOf?: number): string => {
    const m = `zq${String(++n).padStart(4, '0')}zq`;
    const p: Planted = { marker: m, block, exempt };
    if (mirrorOf !== undefined) p.mirrorOf = mirrorOf;
    planted.push(p);
    return m;
  };
  const texts: Array<{ block: number; text: string }> = [];
  const blockMeta = REVISIONS.indexOf(spec.revision) >= REVISIONS.indexOf('2025-06-18');
  const content: Json[] = spec.blocks.map((b: BlockSpec, i) => {
    if (b.kind === 'not-object') {
      const s = mark(i);
      return [s];
    }
    const text = (): string => {
      const t = mark(i);
      texts.push({ block: i, text: t });
      return t;
    };
    const claim = (): Obj | undefined => {
      if (b.claim === undefined && !b.claimExtra && b.collision !== 'shadow-flag') return undefined;
      const c: Obj = { ...(b.claim ?? {}) };
      if (b.claimExtra) c.note = mark(i, true);
      if (b.collision === 'shadow-flag') {
        const flag = b.claim?.untrusted === undefined ? 'untrusted' : 'sensitive';
        const name = flag === 'sensitive' ? 'ſensitive' : 'UNTRUSTED';
        c[name] = false;
        colliding.push(name);
        shadowFlags.push({ block: i, flag });
      }
      return c;
    };
    let block: Obj;
    let resource: Obj | undefined;
    switch (b.kind) {
      case 'text':
        block = { type: 'text', text: text() };
        break;
      case 'image':
        block = { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' };
        break;
      case 'audio':
        block = { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' };
        break;
      case 'resource_link':
        block = { type: 'resource_link', uri: `https://example.com/${mark(i, true)}`, name: text(), title: mark(i), description: mark(i), icons: [{ src: `https://example.com/${mark(i)}.png` }] };
        break;
      case 'unknown':
        block = { type: 'video', uri: `https://example.com/${mark(i, true)}`, caption: mark(i) };
        break;
      default: {
        const t = text();
        resource = { uri: `file:///${mark(i, true)}` };
        if (b.kind === 'resource-text') Object.assign(resource, { mimeType: 'text/plain', text: t });
        else if (b.kind === 'resource-both') Object.assign(resource, { mimeType: 'text/plain', text: t, blob: Buffer.from(mark(i)).toString('base64') });
        else {
          const blob = Buffer.from(t).toString('base64');
          // The base64 text is a string of the block too.
          planted.push({ marker: blob, block: i, exempt: false });
          Object.assign(resource, { mimeType: b.kind === 'resource-blob-text' ? 'application/json' : 'application/octet-stream', blob });
        }
        if (b.extra) resource[`x-${mark(i)}`] = mark(i);
        block = { type: 'resource', resource };
      }
    }
    if (b.audience !== undefined) block.annotations = { audience: b.audience, [`x-${mark(i, true)}`]: mark(i, true) };
    const c = claim();
    const meta: Obj = {};
    if (c !== undefined) meta[K] = c;
    if (b.metaExtra) meta['com.example/note'] = mark(i);
    if (b.collision === 'shadow-key') {
      meta[K.toUpperCase()] = { note: mark(i, true) };
      colliding.push(K.toUpperCase());
    }
    if (Object.keys(meta).length > 0) {
      if (b.claimOnResource && resource !== undefined) resource._meta = meta;
      else block._meta = meta;
    }
    if (b.extra) block[mark(i)] = mark(i);
    switch (b.collision) {
      case 'main':
        block[MAIN[b.kind]] = mark(i);
        colliding.push(MAIN[b.kind]);
        break;
      case 'Type':
        block.Type = mark(i);
        colliding.push('Type');
        break;
      case 'Annotations':
        block.Annotations = { audience: ['user'], note: mark(i, true) };
        colliding.push('Annotations');
        break;
      case 'twins':
        block.Zqtwin = mark(i);
        block.zqTWIN = mark(i);
        colliding.push('Zqtwin', 'zqTWIN');
        break;
    }
    return block;
  });

  const result: Obj = { content };
  if (spec.isError !== undefined) result.isError = spec.isError;
  if (spec.revision === '2026-07-28') result.resultType = 'complete';
  const meta: Obj = {};
  if (spec.resultClaim !== undefined) meta[K] = spec.resultClaim;
  if (spec.resultMetaExtra) meta['com.example/trace'] = mark('result');
  if (Object.keys(meta).length > 0) result._meta = meta;
  if (spec.mirror) result.structuredContent = { items: texts.map((t) => ({ text: t.text, note: mark('result', false, t.block) })) };
  if (spec.toolResult) result.toolResult = { text: texts.map((t) => t.text).join('\n') };
  if (spec.unknownTop) result['x-debug'] = mark('result');
  if (spec.resultCollision) {
    result.StructuredContent = { text: texts.map((t) => t.text).join('\n') };
    colliding.push('StructuredContent');
  }
  // Mirrors repeat each block's text marker: planted as the block's own, so both laws follow them.
  const context: Obj = {};
  if (spec.destination !== undefined) context.destination = spec.destination;
  if (spec.reader !== undefined) context.reader = spec.reader;
  const request: Obj = { result, protocolVersion: spec.revision, context };
  return { request, planted, colliding, shadowFlags };
}

async function post(set: 'shipped' | 'inline', url: string, body: unknown) {
  const app = set === 'shipped' ? apps.shipped : apps.inline;
  const r = await app.app.inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: r.statusCode, body: r.body, json: r.body.length > 0 ? JSON.parse(r.body) : undefined };
}

describe('what is forwarded (contract section 11)', () => {
  it('the four laws hold on /v1/evaluate for generated results of every revision', async () => {
    const seen = { redact: 0, drop: 0, spotlight: 0, collisions: 0, resultWithhold: 0 };
    await fc.assert(
      fc.asyncProperty(specArb, async (spec) => {
        const built = build(spec);
        const r = await post(spec.policies, '/v1/evaluate', built.request);
        expect(r.status, r.body).toBe(200);
        checkLaws(built, r.json);
        for (const b of r.json.blocks) {
          if (b.actions.includes('redact')) seen.redact++;
          if (b.actions.includes('drop')) seen.drop++;
          if (b.actions.includes('spotlight')) seen.spotlight++;
        }
        if (built.colliding.length > 0) seen.collisions++;
        if (r.json.findings.some((f: any) => f.applied && f.scope === 'result' && f.effect === 'redact')) seen.resultWithhold++;
      }),
      { numRuns: RUNS, seed: LAW_SEED },
    );
    // The generator must reach every branch the laws speak of.
    for (const [what, count] of Object.entries(seen)) expect(count, what).toBeGreaterThan(3);
  });

  it('the interceptor route and omitUnmodifiedResult never leave a changed or case-fold-colliding result to the host', async () => {
    await fc.assert(
      fc.asyncProperty(specArb, async (spec) => {
        const built = build(spec);
        const result = built.request.result;
        const omitted = (await post(spec.policies, '/v1/evaluate', { result, protocolVersion: spec.revision, options: { omitUnmodifiedResult: true } })).json;
        if (omitted.resultOmitted === true) {
          expect(omitted.modified).toBe(false);
          expect(built.colliding).toEqual([]);
        } else if (omitted.outcome !== 'deny') {
          checkLaws({ ...built, request: { ...built.request, context: {} } }, omitted);
        }
        // The gateway sends the bare result; the default revision applies.
        const viaGateway = await post(spec.policies, INTERCEPTOR, result);
        expect(viaGateway.status).toBe(200);
        const plain = (await post(spec.policies, '/v1/evaluate', { result })).json;
        if (plain.outcome === 'deny' || plain.requiresConsent) {
          expect(viaGateway.json?.isError).toBe(true);
        } else if (plain.modified) {
          const norm = (v: unknown) => JSON.stringify(v).replace(/boundary=\\"[0-9a-f]{32}\\"/g, 'B');
          expect(norm(viaGateway.json)).toBe(norm(plain.result));
        } else {
          expect(viaGateway.body, 'nothing applied: the original passes').toBe('');
          expect(plain.validation.some((v: any) => v.rule === 'mcp.member.casefold')).toBe(false);
        }
        if (built.colliding.length > 0) expect(viaGateway.body.length, 'an empty interceptor answer with a collision').toBeGreaterThan(0);
      }),
      { numRuns: 80, seed: LAW_SEED },
    );
  });
});
