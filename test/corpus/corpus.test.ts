/**
 * Real results from the official MCP reference servers (see load.ts and
 * scripts/capture-corpus.ts) through /v1/validate and /v1/evaluate at every
 * protocol revision, 2024-10-07 included: no 4xx, and exactly the
 * validation errors that revision's rules make of what the servers sent
 * (features that came later: `structuredContent`, `resource_link`, `audio`,
 * block `_meta`; `resultType` from 2026-07-28). From 2025-06-18 the
 * results are valid. Then the same results with trust claims added, through
 * the shipped policies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRUST_KEY } from '../../src/mcp/meta-key.js';
import { PROTOCOL_VERSIONS, REVISION_ALIASES, atLeast, rulesRevision, type Revision } from '../../src/mcp/revisions.js';
import { deriveDigest } from '../../src/evidence/digest.js';
import { believingServersFile, post, testApp, type TestApp } from '../helpers/app.js';
import { loadCorpus, resultOf, type CorpusFixture } from './load.js';

const corpus = loadCorpus();
/**
 * These checks are about claims, validation and the effects they drive: the
 * tools are declared closed-world, so the shipped label rule for open-world
 * results (test/corpus/detectors.test.ts covers it) leaves them as they are.
 */
const CLOSED_WORLD = { openWorldHint: false };
const closedTool = (f: CorpusFixture) => ({ name: f.tool, annotations: CLOSED_WORLD });
let t: TestApp;
beforeAll(async () => {
  // About decisions, not overload: a busy machine must not turn answers into 503s.
  // The tools' own openWorldHint decides here: the operator believes the servers (docs/behaviour/operator.md).
  t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_SERVERS: believingServersFile() });
});
afterAll(() => t.close());

type Obj = Record<string, any>;
const blocksOf = (r: Obj): Obj[] => r.content as Obj[];

/**
 * The validation errors a revision's rules make of a result whose members
 * are all well-formed MCP of 2025-11-25: its later features, by pointer.
 */
function expectedErrors(result: Obj, rev: Revision): string[] {
  const out: string[] = [];
  if (!atLeast(rev, '2025-06-18') && 'structuredContent' in result) out.push('mcp.result.shape /structuredContent');
  if (atLeast(rev, '2026-07-28') && !('resultType' in result)) out.push('mcp.result.shape ');
  blocksOf(result).forEach((b, i) => {
    if (b.type === 'resource_link' && !atLeast(rev, '2025-06-18')) return void out.push(`mcp.content.type /content/${i}/type`);
    if (b.type === 'audio' && !atLeast(rev, '2025-03-26')) return void out.push(`mcp.content.type /content/${i}/type`);
    if (!atLeast(rev, '2025-06-18')) {
      if ('_meta' in b) out.push(`mcp.content.members /content/${i}/_meta`);
      if (b.type === 'resource' && '_meta' in b.resource) out.push(`mcp.content.members /content/${i}/resource/_meta`);
      if (b.annotations && 'lastModified' in b.annotations) out.push(`mcp.annotations.members /content/${i}/annotations/lastModified`);
    }
  });
  return out.sort();
}

const errorsOf = (validation: Obj[]) =>
  validation
    .filter((v) => v.severity === 'error')
    .map((v) => `${v.rule} ${v.pointer}`)
    .sort();

/** Indexes of blocks the shipped audience policy drops for the model (an audience without "assistant"). */
const notForModel = (result: Obj) =>
  blocksOf(result)
    .map((b, i) => (Array.isArray(b.annotations?.audience) && b.annotations.audience.length > 0 && !b.annotations.audience.includes('assistant') ? i : -1))
    .filter((i) => i >= 0);

const cases = corpus.flatMap((f) => PROTOCOL_VERSIONS.map((v) => [f.file, v, f] as [string, string, CorpusFixture]));

describe('the corpus', () => {
  it('holds results of every reference server, some negotiated at 2024-10-07', () => {
    expect(new Set(corpus.map((f) => f.server))).toEqual(new Set(['everything', 'filesystem', 'memory', 'pdf', 'sequential-thinking']));
    expect(corpus.length).toBeGreaterThanOrEqual(50);
    expect(corpus.filter((f) => f.protocolVersion === '2024-10-07').length).toBeGreaterThanOrEqual(5);
    for (const f of corpus) expect(rulesRevision(f.protocolVersion), f.file).toBeDefined();
    // The shapes the servers send, so that the checks below meet each of them.
    const types = new Set(corpus.flatMap((f) => blocksOf(f.result).map((b) => b.type)));
    expect([...types].sort()).toEqual(['audio', 'image', 'resource', 'resource_link', 'text']);
    expect(corpus.some((f) => 'structuredContent' in f.result)).toBe(true);
    expect(corpus.some((f) => f.result.isError === true)).toBe(true);
  });
});

describe('/v1/validate at every revision', () => {
  it.each(cases)('%s at %s', async (_file, version, f) => {
    const r = await post(t.app, '/v1/validate', { result: f.result, protocolVersion: version });
    expect(r.status, r.body).toBe(200);
    const rev = rulesRevision(version)!;
    expect(r.json.protocolVersion).toBe(rev);
    expect(errorsOf(r.json.validation)).toEqual(expectedErrors(f.result, rev));
    if (atLeast(rev, '2025-06-18') && rev !== '2026-07-28') expect(r.json.valid).toBe(true);
  });

  it('2024-10-07 gives the answer of 2024-11-05, word for word', async () => {
    for (const f of corpus) {
      const a = await post(t.app, '/v1/validate', { result: f.result, protocolVersion: '2024-10-07' });
      const b = await post(t.app, '/v1/validate', { result: f.result, protocolVersion: REVISION_ALIASES['2024-10-07'] });
      expect(a.json, f.file).toEqual(b.json);
    }
  });

  it('at 2026-07-28 the results are valid once they say resultType "complete"', async () => {
    for (const f of corpus) {
      const r = await post(t.app, '/v1/validate', { result: { ...f.result, resultType: 'complete' }, protocolVersion: '2026-07-28' });
      expect(r.json, f.file).toMatchObject({ valid: true });
      expect(errorsOf(r.json.validation), f.file).toEqual([]);
    }
  });

  it('with no protocolVersion, each result is judged by 2025-11-25 and valid', async () => {
    for (const f of corpus) {
      const r = await post(t.app, '/v1/validate', { result: f.result });
      expect(r.json, f.file).toMatchObject({ valid: true, protocolVersion: '2025-11-25' });
    }
  });
});

describe('/v1/evaluate at every revision, shipped policies', () => {
  it.each(cases)('%s at %s', async (_file, version, f) => {
    const r = await post(t.app, '/v1/evaluate', { result: f.result, protocolVersion: version, tool: { name: f.tool, annotations: CLOSED_WORLD }, server: { name: f.server } });
    expect(r.status, r.body).toBe(200);
    const d = r.json;
    const rev = rulesRevision(version)!;
    expect(d.protocolVersion).toBe(rev);
    expect(errorsOf(d.validation)).toEqual(expectedErrors(f.result, rev));
    // No claim in any real result: nothing is sensitive or untrusted, nothing asks for consent.
    expect(d.labels).toEqual({ sensitive: null, untrusted: null });
    expect(d.requiresConsent).toBe(false);
    expect(d.outcome).toBe('allow');
    const flagged = d.findings.filter((x: Obj) => x.rule === 'flag-validation-errors');
    expect(flagged.length).toBe(expectedErrors(f.result, rev).length > 0 ? 1 : 0);
    const dropped = notForModel(f.result);
    expect(d.findings.filter((x: Obj) => x.effect !== 'flag').map((x: Obj) => `${x.rule} ${x.pointer}`)).toEqual(
      dropped.map((i) => `drop-audience-mismatch /content/${i}`),
    );
    expect(d.modified).toBe(dropped.length > 0);
    if (dropped.length === 0) expect(d.result).toEqual(f.result);
    else {
      expect(d.result.content).toHaveLength(blocksOf(f.result).length - dropped.length);
      for (const i of dropped) expect(JSON.stringify(d.result)).not.toContain(JSON.stringify(blocksOf(f.result)[i]));
    }
  });
});

/** Put a claim on the result, or on block `i` (and, for a resource, leave its inner resource alone). */
function withClaim(f: CorpusFixture, claim: Obj, where: 'result' | number): Obj {
  const r = resultOf(f);
  const target = where === 'result' ? r : blocksOf(r)[where]!;
  target._meta = { ...(target._meta ?? {}), [TRUST_KEY]: claim };
  return r;
}

/** The fence spotlight puts around untrusted text, around `original`. */
function expectFenced(text: string, original: string): void {
  const m = /^<untrusted-content boundary="([0-9a-f]{32})">\n/.exec(text);
  expect(m, 'fence opens with a boundary').not.toBeNull();
  expect(text).toContain(`\n${original}\n`);
  expect(text.endsWith(`</untrusted-content boundary="${m![1]}">`)).toBe(true);
}

const REVS: Revision[] = ['2025-06-18', '2025-11-25'];
const withRevs = corpus.flatMap((f) => REVS.map((v) => [f.file, v, f] as [string, Revision, CorpusFixture]));

describe('the corpus with trust claims, shipped policies', () => {
  it.each(withRevs)('%s at %s: a sensitive result needs consent to leave the host, not to stay local', async (_file, rev, f) => {
    const result = withClaim(f, { sensitive: true }, 'result');
    const away = await post(t.app, '/v1/evaluate', { result, protocolVersion: rev, tool: closedTool(f), context: { destination: 'external-model' } });
    expect(away.status).toBe(200);
    expect(away.json).toMatchObject({ outcome: 'warn', requiresConsent: true, labels: { sensitive: true } });
    expect(away.json.blocks.every((b: Obj) => b.sensitive === true)).toBe(true);
    const local = await post(t.app, '/v1/evaluate', { result, protocolVersion: rev, tool: closedTool(f), context: { destination: 'local' } });
    expect(local.json).toMatchObject({ outcome: 'allow', requiresConsent: false, labels: { sensitive: true } });
  });

  it.each(withRevs)('%s at %s: an untrusted result has every text fenced', async (_file, rev, f) => {
    const result = withClaim(f, { untrusted: true }, 'result');
    const r = await post(t.app, '/v1/evaluate', { result, protocolVersion: rev, tool: closedTool(f), context: { destination: 'local' } });
    expect(r.status).toBe(200);
    const d = r.json;
    expect(d).toMatchObject({ outcome: 'allow', labels: { untrusted: true } });
    const dropped = new Set(notForModel(f.result));
    const hasText = blocksOf(f.result).some((b, i) => !dropped.has(i) && (b.type === 'text' || typeof b.resource?.text === 'string'));
    // A result of images, audio, blobs or links alone may have nothing spotlight changes.
    if (hasText || dropped.size > 0) expect(d.modified).toBe(true);
    let out = 0;
    blocksOf(f.result).forEach((b, i) => {
      const actions = d.blocks[i].actions;
      if (dropped.has(i)) return void expect(actions).toEqual(['drop']);
      const forwarded = d.result.content[out++];
      if (b.type === 'text') {
        expect(actions).toEqual(['spotlight']);
        expectFenced(forwarded.text, b.text);
      } else if (b.type === 'resource' && typeof b.resource.text === 'string') {
        expect(actions).toEqual(['spotlight']);
        expectFenced(forwarded.resource.text, b.resource.text);
      } else if (b.type === 'image' || b.type === 'audio') {
        expect(actions).toEqual(['spotlight-skipped']);
        expect(forwarded.data).toBe(b.data);
      }
    });
    // No text of an untrusted block goes out unfenced.
    for (const b of blocksOf(f.result)) {
      if (b.type !== 'text' || b.text.length < 8) continue;
      for (const c of d.result.content) if (c.type === 'text' && c.text.includes(b.text)) expectFenced(c.text, b.text);
    }
  });

  it.each(withRevs)('%s at %s: a sensitive first block makes the result sensitive', async (_file, rev, f) => {
    const result = withClaim(f, { sensitive: true }, 0);
    const r = await post(t.app, '/v1/evaluate', { result, protocolVersion: rev, tool: closedTool(f) });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ outcome: 'warn', requiresConsent: true, labels: { sensitive: true } });
    expect(r.json.blocks[0].sensitive).toBe(true);
    expect(r.json.blocks.slice(1).every((b: Obj) => b.sensitive === null)).toBe(true);
    expect(r.json.validation.filter((v: Obj) => v.severity === 'error')).toEqual([]);
  });

  it.each(withRevs)('%s at %s: verified confidential data-class evidence makes it sensitive; a tampered record denies it', async (_file, rev, f) => {
    const record = { class: 'confidential', regulatory: ['GDPR'] };
    const digest = deriveDigest(record, 'jcs/rfc8785', 'sha256').digest;
    const result = withClaim(f, { evidenceRef: { type: 'data-class.v1', digest, canonicalization: 'jcs/rfc8785' } }, 'result');
    const ok = await post(t.app, '/v1/evaluate', { result, protocolVersion: rev, tool: closedTool(f), evidence: [{ digest, record }] });
    expect(ok.json).toMatchObject({ outcome: 'warn', requiresConsent: true, labels: { sensitive: true } });
    expect(ok.json.evidence).toMatchObject([{ status: 'verified' }]);
    const bad = await post(t.app, '/v1/evaluate', { result, protocolVersion: rev, tool: closedTool(f), evidence: [{ digest, record: { ...record, class: 'public' } }] });
    expect(bad.json).toMatchObject({ outcome: 'deny', evidence: [{ status: 'mismatch' }] });
    expect(bad.json).not.toHaveProperty('result');
  });
});
