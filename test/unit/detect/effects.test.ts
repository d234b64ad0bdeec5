/**
 * Effects `label` and `mask` (contract section 16) through the decision
 * pipeline with real policy files: label rules run first in one order-free
 * pass, the other rules read what they raised, the forwarded claims,
 * placeholders and the session carry it; masks replace spans in place, with
 * drop > redact > mask and spotlight fencing what is left; load errors name
 * file, rule and cause.
 */
import { describe, expect, it } from 'vitest';
import { decideResult as decide } from '../../../src/decision/result.js';
import type { EvaluateRequest } from '../../../src/decision/types.js';
import { decisionLogEntry } from '../../../src/decision/log.js';
import type { ForwardedFlow } from '../../../src/decision/flow.js';
import { compilePolicyFiles, PolicyLoadError } from '../../../src/policy/load.js';
import { TRUST_KEY } from '../../../src/mcp/meta-key.js';

const enc = new TextEncoder();
const set = (...docs: string[]) => compilePolicyFiles(docs.map((text, i) => ({ name: `p${i}.yaml`, bytes: enc.encode(text) })), 'policies');
const run = (policies: ReturnType<typeof set>, req: EvaluateRequest) => {
  const flow: { forwarded?: ForwardedFlow } = {};
  const d = decide(req, { policies, decisionId: 'd', boundary: 'b0', maxBlocks: 100, maxEvidence: 10, flow });
  return { d, flow: flow.forwarded };
};
const text = (t: string, meta?: object) => ({ type: 'text', text: t, ...(meta ? { _meta: meta } : {}) });
const KEY = 'AKIAIOSFODNN7EXAMPLE';

const LABEL_ALL = `id: lab
mode: enforce
rules:
  - id: all-untrusted
    scope: result
    when: "true"
    effect: label
    labels: { untrusted: true }
  - id: second-sees-nothing
    scope: result
    when: result.untrusted
    effect: label
    labels: { sensitive: true }
`;
const SPOT = `id: spot
mode: enforce
rules:
  - id: fence
    when: block.untrusted
    effect: spotlight
`;

describe('effect label', () => {
  it('raises before the other rules, in one pass, and is forwarded, fenced and taken in by the session', () => {
    const { d, flow } = run(set(LABEL_ALL, SPOT), { protocolVersion: '2025-06-18', result: { content: [text('hello')] }, options: { explain: true } });
    expect(d.labels).toEqual({ sensitive: null, untrusted: true });
    expect(d.findings.map((f) => f.rule)).toEqual(['all-untrusted', 'fence']);
    expect(d.blocks[0]).toMatchObject({ untrusted: true, actions: ['label', 'spotlight'], sources: { untrusted: ['policy:lab/all-untrusted'] } });
    expect(d.labelSources?.untrusted).toEqual(['policy:lab/all-untrusted']);
    expect(d.modified).toBe(true);
    expect((d.result as any)._meta[TRUST_KEY]).toEqual({ untrusted: true });
    expect((d.result as any).content[0].text).toContain('<untrusted-content boundary="b0">');
    expect(flow).toMatchObject({ untrusted: true, sensitive: false });
  });

  it('never lowers a label, and an asserted false is raised', () => {
    const meta = { [TRUST_KEY]: { untrusted: false, sensitive: true } };
    const { d } = run(set(LABEL_ALL), { protocolVersion: '2025-06-18', result: { content: [text('x', meta)] } });
    expect(d.blocks[0]).toMatchObject({ untrusted: true, sensitive: true });
    expect((d.result as any).content[0]._meta[TRUST_KEY]).toEqual({ untrusted: false, sensitive: true });
    expect((d.result as any)._meta[TRUST_KEY].untrusted).toBe(true);
  });

  it('block scope writes the block claim from 2025-06-18, the result claim before; a redact placeholder carries it', () => {
    const doc = `id: b
mode: enforce
rules:
  - id: first-block
    when: block.index == 0
    effect: label
    labels: { sensitive: true }
  - id: hide
    when: block.sensitive && block.index == 0
    effect: redact
`;
    const now = run(set(doc), { protocolVersion: '2025-06-18', result: { content: [text('a'), text('b')] } }).d;
    expect(now.blocks.map((b) => b.actions)).toEqual([['label', 'redact'], []]);
    expect((now.result as any).content[0]._meta[TRUST_KEY]).toEqual({ sensitive: true });
    expect((now.result as any).content[1]).toEqual(text('b'));
    const noRedact = set(doc.replace(/  - id: hide[\s\S]*/, ''));
    const before = run(noRedact, { protocolVersion: '2025-03-26', result: { content: [text('a'), text('b')] } }).d;
    expect((before.result as any).content[0]).toEqual(text('a'));
    expect((before.result as any)._meta[TRUST_KEY]).toEqual({ sensitive: true });
    const after = run(noRedact, { protocolVersion: '2025-06-18', result: { content: [text('a'), text('b')] } }).d;
    expect((after.result as any).content[0]._meta[TRUST_KEY]).toEqual({ sensitive: true });
    expect((after.result as any)._meta).toBeUndefined();
  });

  it('in audit mode is listed and raises nothing', () => {
    const { d } = run(set(LABEL_ALL.replace('mode: enforce', 'mode: audit')), { protocolVersion: '2025-06-18', result: { content: [text('hello')] } });
    expect(d.findings.map((f) => [f.rule, f.applied])).toEqual([['all-untrusted', false]]);
    expect(d.labels.untrusted).toBeNull();
    expect(d.modified).toBe(false);
  });
});

const MASK = (scope: string, kinds: string) => `id: m
mode: enforce
rules:
  - id: mask-it
    scope: ${scope}
    when: size(secrets(${scope === 'result' ? 'result' : 'block'}.text)) > 0 || size(pii(${scope === 'result' ? 'result' : 'block'}.text)) > 0
    effect: mask
    mask: [${kinds}]
`;

describe('effect mask', () => {
  it('replaces spans in place in blocks and structuredContent, lists them, and logs kinds and counts only', () => {
    const { d } = run(set(MASK('result', 'secrets, email')), {
      protocolVersion: '2025-06-18',
      result: { content: [text(`key ${KEY} mail a@example.com phone +1 650-253-0000`)], structuredContent: { key: KEY, n: 1 } },
    });
    const r = d.result as any;
    expect(r.content[0].text).toBe('key [aws-access-key-id withheld by m/mask-it] mail [email withheld by m/mask-it] phone +1 650-253-0000');
    expect(r.structuredContent).toEqual({ key: '[aws-access-key-id withheld by m/mask-it]', n: 1 });
    expect(d.masked).toEqual([
      { pointer: '/content/0/text', kind: 'aws-access-key-id', policy: 'm', rule: 'mask-it' },
      { pointer: '/content/0/text', kind: 'email', policy: 'm', rule: 'mask-it' },
      { pointer: '/structuredContent/key', kind: 'aws-access-key-id', policy: 'm', rule: 'mask-it' },
    ]);
    expect(d.blocks[0]!.actions).toEqual(['mask']);
    const line = JSON.stringify(decisionLogEntry(d, undefined, undefined, 1));
    expect(line).toContain('"masked":{"aws-access-key-id":2,"email":1}');
    expect(line).not.toContain(KEY);
    expect(line).not.toContain('a@example.com');
  });

  it('in scope block masks its block and the structuredContent strings holding a masked kind', () => {
    const { d } = run(set(MASK('block', 'secrets')), {
      protocolVersion: '2025-06-18',
      // (The key ends its string before a blank: a value at a string's end glued to the next string's start is read
      // as one token across the seam, and masked in both.)
      result: { content: [text(`k ${KEY}`), text('plain')], structuredContent: { a: `the key is ${KEY} (rotated)`, b: 'plain' } },
    });
    const r = d.result as any;
    expect(r.content[0].text).toBe('k [aws-access-key-id withheld by m/mask-it]');
    expect(r.content[1].text).toBe('plain');
    expect(r.structuredContent).toEqual({ a: 'the key is [aws-access-key-id withheld by m/mask-it] (rotated)', b: 'plain' });
  });

  it('drop > redact > mask, and spotlight fences the masked text', () => {
    const doc = `id: p
mode: enforce
rules:
  - id: drop0
    when: block.index == 0
    effect: drop
  - id: redact1
    when: block.index == 1
    effect: redact
  - id: fence2
    when: block.index == 2
    effect: spotlight
  - id: mask-all
    scope: result
    when: "true"
    effect: mask
    mask: [secrets]
`;
    const { d } = run(set(doc), { protocolVersion: '2025-06-18', result: { content: [text(KEY), text(KEY), text(`x ${KEY}`), text(`y ${KEY}`)] } });
    const r = d.result as any;
    expect(d.blocks.map((b) => b.actions)).toEqual([['drop'], ['redact'], ['mask', 'spotlight'], ['mask']]);
    expect(r.content).toHaveLength(3);
    expect(r.content[0].text).toBe('[content withheld by p/redact1]');
    expect(r.content[1].text).toContain('\nx [aws-access-key-id withheld by p/mask-all]\n</untrusted-content boundary="b0">');
    expect(r.content[2].text).toBe('y [aws-access-key-id withheld by p/mask-all]');
    expect(JSON.stringify(r)).not.toContain(KEY);
  });
});

describe('load errors name the file, the rule and the cause', () => {
  const bad = (rule: string) => `id: bad\nmode: enforce\nrules:\n${rule}`;
  it.each([
    ['labels with a false member', '  - id: r1\n    scope: result\n    when: "true"\n    effect: label\n    labels: { untrusted: false }\n', /labels\.untrusted must be true/],
    ['mask naming an unknown kind', '  - id: r1\n    scope: result\n    when: "true"\n    effect: mask\n    mask: [secrets, passport]\n', /mask names unknown kind "passport"; valid values: secrets, pii, aws-access-key-id/],
    ['secrets(1)', '  - id: r1\n    scope: result\n    when: size(secrets(1)) > 0\n    effect: flag\n', /when: CEL .*secrets/],
    ['label without labels', '  - id: r1\n    when: "true"\n    effect: label\n', /effect label needs labels/],
    ['label in scope call', '  - id: r1\n    scope: call\n    when: "true"\n    effect: label\n    labels: { untrusted: true }\n', /not valid in scope call/],
  ])('%s', (_name, rule, cause) => {
    let err: unknown;
    try {
      set(bad(rule));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PolicyLoadError);
    const e = err as PolicyLoadError;
    expect(e.file).toBe('p0.yaml');
    expect(e.rule).toBe('r1');
    expect(e.message).toMatch(/^policy file policies\/p0\.yaml(:\d+:\d+)?, rule r1: /);
    expect(e.detail).toMatch(cause);
  });
});
