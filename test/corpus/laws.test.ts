/**
 * The four laws of what is forwarded (contract section 11) over the real
 * results of the corpus, with trust claims added to them: the checks of
 * test/laws/check.ts, planted with the results' own strings instead of
 * generated markers. Each string of at least MIN_LENGTH characters is
 * remembered with its owner (the block it is in; for `structuredContent`,
 * `toolResult` and other envelope members, the block it repeats, as real
 * servers mirror their text there, else the envelope) and whether fencing
 * exempts it (`type`, `mimeType`, `uri`, `annotations`, the trust claim,
 * image and audio `data`). A string that another block, or an exempt value,
 * also holds cannot tell whose it is where it is found, and is not planted.
 *
 * Four claims, each with the inline law policies (test/laws/support.ts):
 * a block marked sensitive and sent to an external model (redacted), a
 * block marked untrusted for the user (dropped), an untrusted result kept
 * local (every block spotlit), a sensitive result for the assistant
 * (scope-result redact).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRUST_KEY } from '../../src/mcp/meta-key.js';
import { PROTOCOL_VERSIONS, atLeast, rulesRevision, type Revision } from '../../src/mcp/revisions.js';
import { checkLaws, type Built, type Planted } from '../laws/check.js';
import type { Obj } from '../hostile/gen.js';
import { lawApps, type LawApps } from '../laws/support.js';
import { loadCorpus, resultOf, type CorpusFixture } from './load.js';

const MIN_LENGTH = 12;
const corpus = loadCorpus();
let apps: LawApps;
beforeAll(async () => {
  apps = await lawApps();
});
afterAll(() => apps.close());

interface Leaf {
  path: Array<string | number>;
  value: string;
  exempt: boolean;
}

/** Every string value of the result with its path, and whether section 11 exempts it from fencing. */
function leaves(result: Obj): Leaf[] {
  const out: Leaf[] = [];
  const walk = (v: unknown, path: Array<string | number>, exempt: boolean) => {
    if (typeof v === 'string') return void out.push({ path, value: v, exempt });
    if (v === null || typeof v !== 'object') return;
    const entries: Array<[string | number, unknown]> = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
    for (const [k, x] of entries) {
      const inBlock = path.length === 2 && path[0] === 'content';
      const type = inBlock ? (v as Obj).type : undefined;
      const ex =
        exempt ||
        k === 'type' ||
        k === 'mimeType' ||
        k === 'uri' ||
        k === 'annotations' ||
        (k === TRUST_KEY && path[path.length - 1] === '_meta') ||
        (inBlock && k === 'data' && (type === 'image' || type === 'audio'));
      walk(x, [...path, k], ex);
    }
  };
  walk(result, [], false);
  return out;
}

/** The result's own strings, planted with their owners (see the file comment). */
function plant(result: Obj): Planted[] {
  const all = leaves(result);
  const blockOf = (l: Leaf): number | undefined => (l.path[0] === 'content' && typeof l.path[1] === 'number' ? l.path[1] : undefined);
  const planted: Planted[] = [];
  for (const l of all) {
    if (l.exempt || l.value.length < MIN_LENGTH) continue;
    const own = blockOf(l);
    // Exempt values go out unfenced: a string one of them holds cannot be told apart.
    if (all.some((o) => o.exempt && o.value.includes(l.value))) continue;
    const holders = new Set(all.filter((o) => !o.exempt && o !== l && o.value.includes(l.value)).map(blockOf).filter((b) => b !== undefined));
    if (own !== undefined) {
      if ([...holders].some((b) => b !== own)) continue;
      planted.push({ marker: l.value, block: own, exempt: false });
    } else if (holders.size === 0) {
      planted.push({ marker: l.value, block: 'result', exempt: false });
    } else if (holders.size === 1) {
      planted.push({ marker: l.value, block: 'result', exempt: false, mirrorOf: [...holders][0]! });
    }
  }
  return planted;
}

function withClaim(result: Obj, claim: Obj, where: 'result' | number): Obj {
  const target = (where === 'result' ? result : (result.content as Obj[])[where]!) as Obj;
  target._meta = { ...((target._meta as Obj | undefined) ?? {}), [TRUST_KEY]: claim };
  return result;
}

async function evaluate(request: Obj): Promise<any> {
  const r = await apps.inline.app.inject({ method: 'POST', url: '/v1/evaluate', payload: JSON.stringify(request), headers: { 'content-type': 'application/json' } });
  expect(r.statusCode, r.body).toBe(200);
  return JSON.parse(r.body);
}

function built(request: Obj): Built {
  return { request, planted: plant(request.result as Obj), colliding: [], shadowFlags: [] };
}

/** Block claims need block `_meta` (2025-06-18 on); result claims are read at every revision. */
const BLOCK_REVS: Revision[] = ['2025-06-18', '2025-11-25'];
const blockCases = corpus.flatMap((f) => BLOCK_REVS.map((v) => [f.file, v, f] as [string, Revision, CorpusFixture]));
const resultCases = corpus.flatMap((f) => PROTOCOL_VERSIONS.map((v) => [f.file, v, f] as [string, string, CorpusFixture]));
const withResultType = (r: Obj, version: string): Obj => (rulesRevision(version) === '2026-07-28' ? { ...r, resultType: 'complete' } : r);

/** How many planted strings each law was checked against, over the whole file. */
const checked = { redacted: 0, dropped: 0, spotlit: 0, envelope: 0 };

describe('the four laws over the corpus with claims added', () => {
  /**
   * Each block of `f` in turn given `claim` and sent with `context`: the block
   * takes `action` and the laws hold; `more` checks the rest of the answer.
   * Returns how many planted strings the withheld blocks held.
   */
  async function eachBlockWithheld(f: CorpusFixture, rev: Revision, claim: Obj, context: Obj, action: 'redact' | 'drop', more: (i: number, d: any) => void): Promise<number> {
    let planted = 0;
    for (let i = 0; i < (f.result.content as unknown[]).length; i++) {
      const request = { result: withClaim(resultOf(f) as Obj, claim, i), protocolVersion: rev, context };
      const b = built(request);
      const d = await evaluate(request);
      expect(d.blocks[i].actions).toContain(action);
      checkLaws(b, d);
      planted += b.planted.filter((p) => (p.mirrorOf ?? p.block) === i).length;
      more(i, d);
    }
    return planted;
  }

  it.each(blockCases)('%s at %s: each block marked sensitive, to an external model, is redacted and nothing of it goes out', async (_file, rev, f) => {
    checked.redacted += await eachBlockWithheld(f, rev, { sensitive: true }, { destination: 'external-model' }, 'redact', (_i, d) => {
      // Withholding any block withholds structuredContent (its mirror), and says so.
      if ('structuredContent' in f.result) {
        expect(d.result).not.toHaveProperty('structuredContent');
        expect(d.withheld).toContain('/structuredContent');
      }
    });
  });

  it.each(blockCases)('%s at %s: each block marked untrusted is dropped for the user, the others are forwarded as they came', async (_file, rev, f) => {
    checked.dropped += await eachBlockWithheld(f, rev, { untrusted: true }, { reader: 'user' }, 'drop', (i, d) => {
      const kept = (f.result.content as Obj[]).filter((_, k) => k !== i);
      expect(d.result.content).toEqual(kept);
    });
  });

  it.each(resultCases)('%s at %s: an untrusted result kept local has every string fenced or withheld', async (_file, version, f) => {
    const request = { result: withResultType(withClaim(resultOf(f) as Obj, { untrusted: true }, 'result'), version), protocolVersion: version, context: { destination: 'local' } };
    const b = built(request);
    const d = await evaluate(request);
    expect(d.labels.untrusted).toBe(true);
    const rev = rulesRevision(version)!;
    // Every block the revision defines is spotlit (images and audio: spotlight-skipped).
    (f.result.content as Obj[]).forEach((blk, i) => {
      const defined = (blk.type !== 'resource_link' || atLeast(rev, '2025-06-18')) && (blk.type !== 'audio' || atLeast(rev, '2025-03-26'));
      const skipped = blk.type === 'image' || blk.type === 'audio' || !defined;
      expect(d.blocks[i].actions).toContain(skipped ? 'spotlight-skipped' : 'spotlight');
    });
    checkLaws(b, d);
    checked.spotlit += b.planted.length;
  });

  it.each(resultCases)('%s at %s: a sensitive result for the assistant forwards the placeholder envelope alone', async (_file, version, f) => {
    const request = { result: withResultType(withClaim(resultOf(f) as Obj, { sensitive: true }, 'result'), version), protocolVersion: version, context: { reader: 'assistant' } };
    const b = built(request);
    const d = await evaluate(request);
    expect(d.findings.some((x: Obj) => x.applied && x.rule === 'withhold-sensitive-result')).toBe(true);
    checkLaws(b, d);
    checked.envelope += b.planted.length;
    // The placeholder stands for every block: no string of any of them goes out.
    const text = JSON.stringify(d.result);
    for (const p of b.planted) expect(text.includes(JSON.stringify(p.marker).slice(1, -1)), p.marker).toBe(false);
  });

  it('checked real strings under every law (the planting is not vacuous)', () => {
    // Each corpus result has text the servers wrote; every scenario saw some of it.
    for (const [law, n] of Object.entries(checked)) expect(n, law).toBeGreaterThan(100);
    // Mirrors were met: structuredContent strings traced to the block they repeat.
    const mirrors = corpus.flatMap((f) => plant(resultOf(f) as Obj)).filter((p) => p.mirrorOf !== undefined);
    expect(mirrors.length).toBeGreaterThan(5);
  });
});
