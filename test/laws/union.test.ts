/**
 * Union semantics as laws (contract section 2), checked on generated
 * requests through /v1/evaluate with the shipped policies and with an
 * inline set that reads every flag back through findings:
 *
 * - block order: permuting `content` permutes `blocks[]`, their actions,
 *   the findings, evidence and validation pointers, and the forwarded
 *   blocks accordingly; labels, outcome and consent do not change;
 * - member order: writing every object's members in another order (claims,
 *   `_meta`, records, the whole request) changes nothing;
 * - monotonicity: adding a `true` claim anywhere never turns a true flag
 *   into anything else, and makes the flag true where it governs;
 * - absence: a flag no claim mentions is `null`, never `false`, in labels,
 *   in every block, and for policies (`has(asserted.x)` is false).
 *
 * Policies see what the answer says: the inline set's read-back equals
 * `labels` and `blocks[]` in every run.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRequest, K, partsArb, type Json, type Obj } from '../hostile/gen.js';
import { comparable, evaluate, FLAGS, flagErrors, flagsSeen, lawApps, LAW_SEED, shuffledText, type Flag, type LawApps } from './support.js';

let apps: LawApps;
beforeAll(async () => {
  apps = await lawApps();
});
afterAll(() => apps.close());

const RUNS = 200;
const which = ['shipped', 'inline'] as const;

/** The inline read-back must agree with the answer (else the other laws would test nothing). */
function expectReadBack(answer: any, where: string): void {
  expect(flagErrors(answer), `${where}: flag policy errors`).toEqual([]);
  const seen = flagsSeen(answer);
  expect(seen.labels, `${where}: labels as policies see them`).toEqual({ sensitive: answer.labels.sensitive, untrusted: answer.labels.untrusted });
  for (const b of answer.blocks) {
    expect(seen.blocks.get(b.index), `${where}: block ${b.index} as policies see it`).toEqual({ sensitive: b.sensitive, untrusted: b.untrusted });
  }
  const falses = answer.findings.filter((f: any) => f.policy === 'flags' && /-false$/.test(f.rule));
  for (const f of falses) {
    const flag = f.rule.includes('sensitive') ? 'sensitive' : 'untrusted';
    const value = f.pointer === '' ? answer.labels[flag] : answer.blocks[Number(f.pointer.split('/')[2])][flag];
    expect(value, `${where}: ${f.rule} at ${f.pointer}`).toBe(false);
  }
}

const mapPointer = (p: string, perm: number[]) => p.replace(/^\/content\/(\d+)/, (_m, i) => `/content/${perm[Number(i)]}`);

/** The forwarded blocks by input index (dropped blocks have none). */
function forwardedByIndex(answer: any): Map<number, unknown> {
  const out = new Map<number, unknown>();
  if (!answer.result || !Array.isArray(answer.result.content)) return out;
  let k = 0;
  for (const b of answer.blocks) {
    if (b.actions.includes('drop')) continue;
    out.set(b.index, answer.result.content[k++]);
  }
  return out;
}

const permutationOf = (n: number) => fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: n, maxLength: n }).map((keys) => keys.map((k, i) => [k, i] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, i]) => i));

describe.each(which)('union laws with the %s policies', (set) => {
  const app = () => (set === 'shipped' ? apps.shipped : apps.inline);

  it('permuting blocks permutes blocks[] flags, actions, findings and forwarded blocks; labels unchanged', async () => {
    const seen = new Set<string>();
    const arb = partsArb.chain((parts) => fc.tuple(fc.constant(parts), permutationOf((parts.result.content as Json[]).length)));
    await fc.assert(
      fc.asyncProperty(arb, async ([parts, perm]) => {
        const req = buildRequest(parts);
        const content = (req.result as Obj).content as Json[];
        const permuted: Obj = { ...req, result: { ...(req.result as Obj), content: perm.map((j) => content[j]!) } };
        const a = (await evaluate(app(), JSON.stringify(req))).json;
        const b = (await evaluate(app(), JSON.stringify(permuted))).json;
        if (set === 'inline') {
          expectReadBack(a, 'original');
          expectReadBack(b, 'permuted');
        }
        expect(b.labels).toEqual(a.labels);
        expect(b.outcome).toBe(a.outcome);
        expect(b.requiresConsent).toBe(a.requiresConsent);
        expect(b.modified).toBe(a.modified);
        expect(b.blocks).toHaveLength(a.blocks.length);
        b.blocks.forEach((blk: any, i: number) => {
          const was = a.blocks[perm[i]!];
          expect({ type: blk.type, sensitive: blk.sensitive, untrusted: blk.untrusted, actions: blk.actions }, `block ${i} (was ${perm[i]})`).toEqual({
            type: was.type,
            sensitive: was.sensitive,
            untrusted: was.untrusted,
            actions: was.actions,
          });
        });
        const key = (f: any) => JSON.stringify([f.policy, f.rule, f.mode, f.effect, f.applied, f.pointer]);
        expect(b.findings.map((f: any) => key({ ...f, pointer: mapPointer(f.pointer, perm) })).sort()).toEqual(a.findings.map(key).sort());
        const ev = (e: any) => JSON.stringify([e.pointer, e.status, e.type, e.canonicalization]);
        expect(b.evidence.map((e: any) => ev({ ...e, pointer: mapPointer(e.pointer, perm) })).sort()).toEqual(a.evidence.map(ev).sort());
        const val = (v: any) => JSON.stringify([v.rule, v.severity, v.pointer]);
        expect(b.validation.map((v: any) => val({ ...v, pointer: mapPointer(v.pointer, perm) })).sort()).toEqual(a.validation.map(val).sort());
        for (const blk of a.blocks) {
          for (const f of FLAGS) seen.add(`${f}:${blk[f]}`);
          for (const act of blk.actions) seen.add(`action:${act}`);
        }
        for (const e of a.evidence) seen.add(`evidence:${e.status}`);
        if (a.outcome) seen.add(`outcome:${a.outcome}`);
        const fa = forwardedByIndex(a);
        const fb = forwardedByIndex(b);
        perm.forEach((j, i) => expect(fb.get(i), `forwarded block ${i} (was ${j})`).toEqual(fa.get(j)));
      }),
      { seed: LAW_SEED, numRuns: RUNS },
    );
    // The runs were not vacuous: every flag value, the effects of the policy set and every evidence status occurred.
    const expected = ['sensitive:true', 'sensitive:false', 'sensitive:null', 'untrusted:true', 'untrusted:false', 'untrusted:null', 'evidence:verified', 'evidence:mismatch', 'evidence:unresolved', 'evidence:unsupported', 'action:spotlight', 'action:drop'];
    if (set === 'inline') expected.push('action:redact', 'outcome:warn');
    else expected.push('outcome:deny', 'outcome:warn', 'outcome:allow');
    for (const e of expected) expect([...seen], `no run showed ${e}`).toContain(e);
  }, 120_000);

  it('the order members are written in (claims, _meta, records, the whole request) changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(partsArb, fc.nat(), async (parts, order) => {
        const req = buildRequest(parts);
        const a = await evaluate(app(), JSON.stringify(req));
        const b = await evaluate(app(), shuffledText(req, order));
        expect(a.status).toBe(200);
        expect(b.status).toBe(200);
        if (set === 'inline') expectReadBack(b.json, 'reordered');
        expect(comparable(b.json)).toEqual(comparable(a.json));
      }),
      { seed: LAW_SEED + 1, numRuns: RUNS },
    );
  }, 120_000);

  it('adding a true claim anywhere never lowers a flag, and raises it where the claim governs', async () => {
    const site = fc.record({ where: fc.constantFrom('result', 'block-meta', 'resource-meta', 'annotations'), block: fc.nat(), flag: fc.constantFrom<Flag>(...FLAGS) });
    await fc.assert(
      fc.asyncProperty(partsArb, site, async (parts, s) => {
        const req = buildRequest(parts);
        const result = req.result as Obj;
        const content = result.content as Obj[];
        const more = structuredClone(req);
        const mr = more.result as Obj;
        const blocks = mr.content as Obj[];
        let governs: number[] | 'all';
        const setTrue = (holder: Obj) => {
          const meta = (holder._meta !== null && typeof holder._meta === 'object' && !Array.isArray(holder._meta) ? holder._meta : (holder._meta = {})) as Obj;
          const claim = meta[K];
          if (claim !== null && typeof claim === 'object' && !Array.isArray(claim)) (claim as Obj)[s.flag] = true;
          else meta[K] = { [s.flag]: true };
        };
        if (s.where === 'result' || blocks.length === 0) {
          setTrue(mr);
          governs = 'all';
        } else {
          const i = s.block % blocks.length;
          const blk = blocks[i]!;
          governs = [i];
          if (s.where === 'resource-meta' && blk.type === 'resource' && typeof blk.resource === 'object' && blk.resource !== null) setTrue(blk.resource as Obj);
          else if (s.where === 'annotations') {
            const ann = (typeof blk.annotations === 'object' && blk.annotations !== null ? blk.annotations : (blk.annotations = {})) as Obj;
            ann[s.flag] = true;
          } else setTrue(blk);
        }
        const a = (await evaluate(app(), JSON.stringify(req))).json;
        const b = (await evaluate(app(), JSON.stringify(more))).json;
        if (set === 'inline') {
          expectReadBack(a, 'before');
          expectReadBack(b, 'after');
        }
        for (const f of FLAGS) {
          if (a.labels[f] === true) expect(b.labels[f], `label ${f}`).toBe(true);
          a.blocks.forEach((blk: any, i: number) => {
            if (blk[f] === true) expect(b.blocks[i][f], `block ${i} ${f}`).toBe(true);
          });
        }
        expect(b.labels[s.flag], 'the added claim shows in the labels').toBe(true);
        const raised = governs === 'all' ? content.map((_, i) => i) : governs;
        for (const i of raised) expect(b.blocks[i][s.flag], `block ${i} governed by the added claim`).toBe(true);
      }),
      { seed: LAW_SEED + 2, numRuns: RUNS },
    );
  }, 120_000);

  it('a flag no claim mentions is null everywhere, never false', async () => {
    /** Remove every mention of `flag` (claims and misplaced annotations), or every claim when flag is 'all'. */
    const strip = (v: Json, flag: Flag | 'all'): Json => {
      if (Array.isArray(v)) return v.map((x) => strip(x, flag));
      if (v === null || typeof v !== 'object') return v;
      const out: Obj = {};
      for (const [k, x] of Object.entries(v)) {
        if (flag === 'all' && k === K) continue;
        if (k === flag || (flag === 'all' && (k === 'sensitive' || k === 'untrusted') && x === true)) continue;
        out[k] = strip(x, flag);
      }
      return out;
    };
    await fc.assert(
      fc.asyncProperty(partsArb, fc.constantFrom<Flag | 'all'>('all', 'sensitive', 'untrusted'), async (parts, flag) => {
        const req = buildRequest(parts);
        req.result = strip(req.result!, flag);
        // The shipped label rule raises untrusted for open-world tools (section 16): a policy's label, not a claim's.
        if (set === 'shipped') req.tool = { ...((req.tool as Obj | undefined) ?? { name: 'fetch' }), annotations: { openWorldHint: false } };
        const a = (await evaluate(app(), JSON.stringify(req))).json;
        if (set === 'inline') expectReadBack(a, 'stripped');
        const absent: Flag[] = flag === 'all' ? [...FLAGS] : [flag];
        for (const f of absent) {
          // A verified non-public data class asserts sensitive: true, never false.
          const allowed = f === 'sensitive' && flag !== 'all' ? [null, true] : [null];
          expect(allowed, `labels.${f}`).toContain(a.labels[f]);
          for (const b of a.blocks) expect(allowed, `block ${b.index} ${f}`).toContain(b[f]);
          if (set === 'inline') {
            expect(a.findings.filter((x: any) => x.rule.endsWith(`${f}-false`)), `${f} read as false by a policy`).toEqual([]);
            if (allowed.length === 1) expect(a.findings.filter((x: any) => x.rule.endsWith(`${f}-asserted`)), `${f} asserted`).toEqual([]);
          }
        }
      }),
      { seed: LAW_SEED + 3, numRuns: RUNS },
    );
  }, 120_000);
});

/**
 * The label dialects (contract section 13) are claims of the same union: the
 * laws above hold for them too, checked with the inline read-back policies.
 */
describe('union laws for the ifc and fides dialects', () => {
  const FIDES = 'com.github.ifc/labels';
  const WHERE = ['result-ifc', 'block-ifc', 'resource-ifc', 'malformed-ifc', 'fides-root', 'fides-content', 'fides-block', 'fides-below-block', 'fides-structured', 'fides-unplaceable', 'fides-unparsed', 'fides-not-a-map'] as const;
  type Where = (typeof WHERE)[number];
  const site = fc.record({ where: fc.constantFrom<Where>(...WHERE), block: fc.nat(), flag: fc.constantFrom<Flag>(...FLAGS), value: fc.boolean(), list: fc.boolean() });

  const metaOf = (holder: Obj): Obj => (holder._meta !== null && typeof holder._meta === 'object' && !Array.isArray(holder._meta) ? holder._meta : (holder._meta = {})) as Obj;
  /** The member and value that say `flag` is `value` in ifc (GitHub's flat or older list form) or fides (lists only). */
  const member = (flag: Flag, value: boolean, list: boolean): [string, Json] =>
    flag === 'untrusted' ? ['integrity', value ? 'untrusted' : 'trusted'] : ['confidentiality', list ? (value ? ['octocat'] : ['public', 'octocat']) : value ? 'private' : 'public'];
  const setIfc = (holder: Obj, flag: Flag, value: boolean, list: boolean) => {
    const meta = metaOf(holder);
    const label = meta.ifc !== null && typeof meta.ifc === 'object' && !Array.isArray(meta.ifc) ? (meta.ifc as Obj) : (meta.ifc = {} as Obj);
    const [k, v] = member(flag, value, list);
    label[k] = v;
  };
  /** A fides entry: it always holds confidentiality (an entry without one reads as readable by no one). */
  const setFides = (result: Obj, path: string, flag: Flag, value: boolean) => {
    const meta = metaOf(result);
    const labels = (meta[FIDES] !== null && typeof meta[FIDES] === 'object' && !Array.isArray(meta[FIDES]) ? meta[FIDES] : (meta[FIDES] = {})) as Obj;
    labels[path] = flag === 'untrusted' ? { integrity: value ? 'untrusted' : 'trusted', confidentiality: ['public'] } : { confidentiality: value ? [] : ['public'] };
  };

  /** Add one dialect label: where it governs, the flags it makes true (none when it only says false). */
  function addLabel(result: Obj, s: { where: Where; block: number; flag: Flag; value: boolean; list: boolean }): { governs: number[] | 'all' | 'blocks' | 'labels'; flags: Flag[] } {
    const blocks = result.content as Obj[];
    const raised = s.value ? [s.flag] : [];
    const all = { governs: 'all' as const, flags: raised };
    const i = blocks.length === 0 ? -1 : s.block % blocks.length;
    const one = { governs: [i], flags: raised };
    const where: Where = i === -1 && !['result-ifc', 'fides-root', 'fides-unplaceable', 'fides-unparsed', 'fides-not-a-map', 'fides-structured'].includes(s.where) ? 'result-ifc' : s.where;
    switch (where) {
      case 'result-ifc':
        setIfc(result, s.flag, s.value, s.list);
        return all;
      case 'block-ifc':
        setIfc(blocks[i]!, s.flag, s.value, s.list);
        return one;
      case 'resource-ifc': {
        const b = blocks[i]!;
        setIfc(b.type === 'resource' && b.resource !== null && typeof b.resource === 'object' && !Array.isArray(b.resource) ? (b.resource as Obj) : b, s.flag, s.value, s.list);
        return one;
      }
      case 'malformed-ifc':
        metaOf(blocks[i]!).ifc = s.list ? ['untrusted'] : 'private';
        return { governs: [i], flags: [...FLAGS] };
      case 'fides-root':
        setFides(result, '$', s.flag, s.value);
        return all;
      case 'fides-content':
        setFides(result, s.list ? '$.content' : "$['content']", s.flag, s.value);
        return { governs: 'blocks', flags: raised };
      case 'fides-block':
        setFides(result, s.list ? `$.content[${i}]` : `$['content'][${i - blocks.length}]`, s.flag, s.value);
        return one;
      case 'fides-below-block':
        setFides(result, `$['content'][${i}]['text']`, s.flag, s.value);
        return one;
      case 'fides-structured':
        setFides(result, "$['structuredContent']['rows'][0]", s.flag, s.value);
        return { governs: result.structuredContent === undefined ? 'all' : 'labels', flags: raised };
      case 'fides-unplaceable':
        setFides(result, s.list ? "$['isError']" : `$['content'][${blocks.length + s.block}]`, s.flag, s.value);
        return all;
      case 'fides-unparsed':
        setFides(result, s.list ? '$..text' : '$[*]', s.flag, s.value);
        return all;
      case 'fides-not-a-map':
        metaOf(result)[FIDES] = s.list ? [] : 'untrusted';
        return { governs: 'all', flags: [...FLAGS] };
    }
  }

  it('adding a dialect claim never lowers a flag (once true stays true), and a true one raises it where it governs', async () => {
    const raisedBy = new Set<string>();
    await fc.assert(
      fc.asyncProperty(partsArb, site, async (parts, s) => {
        const req = buildRequest(parts);
        const more = structuredClone(req);
        const added = addLabel(more.result as Obj, s);
        const a = (await evaluate(apps.inline, JSON.stringify(req))).json;
        const b = (await evaluate(apps.inline, JSON.stringify(more))).json;
        expectReadBack(a, 'before');
        expectReadBack(b, 'after');
        for (const f of FLAGS) {
          if (a.labels[f] === true) expect(b.labels[f], `label ${f}`).toBe(true);
          a.blocks.forEach((blk: any, i: number) => {
            if (blk[f] === true) expect(b.blocks[i][f], `block ${i} ${f}`).toBe(true);
          });
        }
        for (const f of added.flags) {
          if (a.labels[f] !== true) raisedBy.add(s.where);
          expect(b.labels[f], `the added ${s.where} claim shows in the labels`).toBe(true);
          const g = added.governs;
          const raised = g === 'labels' ? [] : g === 'all' || g === 'blocks' ? b.blocks.map((_: unknown, i: number) => i) : g;
          for (const i of raised) {
            if (a.blocks[i][f] !== true) raisedBy.add(s.where);
            expect(b.blocks[i][f], `block ${i} ${f} governed by the added ${s.where} claim`).toBe(true);
          }
          // structuredContent is governed by result-level claims and fides paths into it, not by block ones.
          if (b.structuredContent !== undefined && (g === 'all' || g === 'labels')) expect(b.structuredContent[f], `structuredContent ${f}`).toBe(true);
        }
      }),
      { seed: LAW_SEED + 4, numRuns: 200 },
    );
    // Not vacuous: every kind of site raised a flag that was not true before.
    for (const w of WHERE) expect([...raisedBy], `no run raised a flag through ${w}`).toContain(w);
  }, 120_000);

  it('a flag no claim of any dialect mentions is null everywhere, never false', async () => {
    /** Remove every mention of `flag` by the trust key (and every evidenceRef, which can assert sensitive). */
    const strip = (v: Json, flag: Flag): Json => {
      if (Array.isArray(v)) return v.map((x) => strip(x, flag));
      if (v === null || typeof v !== 'object') return v;
      const out: Obj = {};
      for (const [k, x] of Object.entries(v)) {
        if (k === flag || k === 'evidenceRef') continue;
        out[k] = strip(x, flag);
      }
      return out;
    };
    const other = (f: Flag): Flag => (f === 'sensitive' ? 'untrusted' : 'sensitive');
    const labelsArb = fc.array(fc.record({ where: fc.constantFrom('result', 'block', 'resource', 'fides'), block: fc.nat(), value: fc.boolean(), list: fc.boolean() }), { minLength: 1, maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(partsArb, fc.constantFrom<Flag>(...FLAGS), labelsArb, async (parts, flag, labels) => {
        const req = buildRequest(parts);
        req.result = strip(req.result!, flag);
        const result = req.result as Obj;
        const blocks = result.content as Obj[];
        // Labels that mention only the other flag; fides entries always mention sensitive, so they only speak of it.
        for (const l of labels) {
          const g = other(flag);
          if (l.where === 'fides' && g === 'sensitive') setFides(result, blocks.length > 0 && l.list ? `$['content'][${l.block % blocks.length}]` : '$', 'sensitive', l.value);
          else if (l.where === 'result' || blocks.length === 0) setIfc(result, g, l.value, l.list);
          else {
            const b = blocks[l.block % blocks.length]!;
            const holder = l.where === 'resource' && b.type === 'resource' && b.resource !== null && typeof b.resource === 'object' ? (b.resource as Obj) : b;
            setIfc(holder, g, l.value, l.list);
          }
        }
        const a = (await evaluate(apps.inline, JSON.stringify(req))).json;
        expectReadBack(a, 'stripped');
        expect(a.labels[flag], `labels.${flag}`).toBeNull();
        for (const b of a.blocks) expect(b[flag], `block ${b.index} ${flag}`).toBeNull();
        expect(a.findings.filter((x: any) => x.rule.endsWith(`${flag}-asserted`)), `${flag} asserted`).toEqual([]);
      }),
      { seed: LAW_SEED + 5, numRuns: 150 },
    );
  }, 120_000);
});
