import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readTrust, type TrustReading } from '../../../src/annotations/claims.js';
import { DIALECTS, FIDES_KEY, MAX_SHARED_SOURCES, parseDialectList } from '../../../src/annotations/dialects.js';
import { TRUST_KEY } from '../../../src/mcp/meta-key.js';
import { type Tri } from '../../../src/annotations/tri.js';
import { resultArb } from '../../hostile/gen.js';

const K = TRUST_KEY;
/** `/_meta/com.github.ifc~1labels`, the base of every fides pointer. */
const FT = '/_meta/com.github.ifc~1labels';
const text = (meta?: Record<string, unknown>): Record<string, unknown> => ({ type: 'text', text: 'x', ...(meta === undefined ? {} : { _meta: meta }) });
const rules = (r: TrustReading): string[] => r.findings.map((f) => f.rule);
const flags = (r: { sensitive: Tri; untrusted: Tri }) => ({ sensitive: r.sensitive, untrusted: r.untrusted });

describe('parseDialectList (TRUSTGATE_DIALECTS)', () => {
  it.each([
    ['trust-annotations,ifc,fides', ['trust-annotations', 'ifc', 'fides']],
    ['ifc', ['ifc']],
    [' fides , ifc ', ['fides', 'ifc']],
    ['ifc,ifc', ['ifc']],
  ])('reads %j', (raw, want) => {
    expect(parseDialectList(raw)).toEqual(want);
  });

  it.each([
    ['IFC', /unknown dialect "IFC"; known: trust-annotations, ifc, fides/],
    ['ifc,fidess', /unknown dialect "fidess"/],
    ['ifc,', /empty name/],
    [',', /empty name/],
    ['trust_annotations', /unknown dialect/],
  ])('refuses %j', (raw, message) => {
    expect(() => parseDialectList(raw)).toThrow(message);
  });

  it('defaults to every dialect, in the documented order', () => {
    expect(DIALECTS).toEqual(['trust-annotations', 'ifc', 'fides']);
    expect(Object.isFrozen(DIALECTS)).toBe(true);
  });
});

describe('ifc dialect: the mapping (contract section 13)', () => {
  const integrity: Array<[unknown, Tri, boolean]> = [
    ['untrusted', true, false],
    ['trusted', false, false],
    ['Trusted', true, true],
    ['TRUSTED', true, true],
    ['', true, true],
    [null, true, true],
    [0, true, true],
    [['trusted'], true, true],
    [{}, true, true],
  ];
  it.each(integrity)('integrity %j -> untrusted %j (finding: %j)', (value, want, finding) => {
    const r = readTrust({ content: [text()], _meta: { ifc: { integrity: value } } });
    expect(r.labels).toEqual({ sensitive: null, untrusted: want });
    expect(flags(r.blocks[0]!)).toEqual({ sensitive: null, untrusted: want });
    expect(r.labelSources.untrusted).toEqual(['/_meta/ifc/integrity']);
    expect(r.findings).toEqual(finding ? [{ rule: 'trust.dialect.shape', severity: 'error', pointer: '/_meta/ifc/integrity', message: expect.stringContaining('counts as untrusted') }] : []);
  });

  const confidentiality: Array<[unknown, Tri, boolean]> = [
    ['public', false, false],
    ['private', true, false],
    [['public'], false, false],
    [['octocat', 'public'], false, false],
    [['octocat', 'hubot'], true, false],
    [[], true, false],
    ['Public', true, true],
    ['internal', true, true],
    ['', true, true],
    [['public', 1], true, true],
    [[null], true, true],
    [null, true, true],
    [true, true, true],
    [{ readers: ['public'] }, true, true],
  ];
  it.each(confidentiality)('confidentiality %j -> sensitive %j (finding: %j)', (value, want, finding) => {
    const r = readTrust({ content: [text({ ifc: { confidentiality: value } })] });
    expect(flags(r.blocks[0]!)).toEqual({ sensitive: want, untrusted: null });
    expect(r.blocks[0]!.ownUnion).toEqual({ sensitive: want });
    expect(r.blocks[0]!.sources.sensitive).toEqual(['/content/0/_meta/ifc/confidentiality']);
    // A block-level false never makes the result's label false (section 2).
    expect(r.labels.sensitive).toBe(want === true ? true : null);
    expect(rules(r)).toEqual(finding ? ['trust.dialect.shape'] : []);
  });

  it('claims nothing for absent members, and ignores members it does not define', () => {
    const r = readTrust({ content: [text({ ifc: { metadata: { user: 'x' }, readers: 5 } })], _meta: { ifc: {} } });
    expect(r.labels).toEqual({ sensitive: null, untrusted: null });
    expect(flags(r.blocks[0]!)).toEqual({ sensitive: null, untrusted: null });
    expect(r.findings).toEqual([]);
  });

  it.each([['private'], [null], [['untrusted']], [7], [true]])('counts a label that is not an object (%j) as both flags, reported once', (value) => {
    const r = readTrust({ content: [text({ ifc: value })] });
    expect(flags(r.blocks[0]!)).toEqual({ sensitive: true, untrusted: true });
    expect(r.blocks[0]!.sources).toEqual({ sensitive: ['/content/0/_meta/ifc'], untrusted: ['/content/0/_meta/ifc'] });
    expect(r.findings).toEqual([{ rule: 'trust.dialect.shape', severity: 'error', pointer: '/content/0/_meta/ifc', message: expect.stringContaining('must be an object') }]);
  });

  it('counts a member spelt like integrity or confidentiality in another case as true for its flag (Go decoders match names without regard to case)', () => {
    const r = readTrust({ content: [text({ ifc: { integrity: 'trusted', Integrity: 'trusted', CONFIDENTIALITY: 'public' } })], _meta: { [FIDES_KEY]: { $: { confidentiality: ['public'], Confidentiality: ['public'] } } } });
    expect(flags(r.blocks[0]!)).toEqual({ sensitive: true, untrusted: true });
    expect(r.findings.map((f) => [f.rule, f.pointer])).toEqual([
      ['trust.dialect.shape', `${FT}/$/Confidentiality`],
      ['trust.dialect.shape', '/content/0/_meta/ifc/Integrity'],
      ['trust.dialect.shape', '/content/0/_meta/ifc/CONFIDENTIALITY'],
    ]);
    expect(readTrust({ content: [text({ ifc: { integrityy: 'x', İntegrity: 'x', confidential: 'x' } })] }).findings).toEqual([]);
  });

  it('reads an embedded resource _meta like the trust key, for its block', () => {
    const block = { type: 'resource', resource: { uri: 'file:///a', text: 'a', _meta: { ifc: { integrity: 'untrusted', confidentiality: 'public' } } } };
    const r = readTrust({ content: [block, text()] });
    expect(flags(r.blocks[0]!)).toEqual({ sensitive: false, untrusted: true });
    expect(r.blocks[0]!.sources.untrusted).toEqual(['/content/0/resource/_meta/ifc/integrity']);
    expect(flags(r.blocks[1]!)).toEqual({ sensitive: null, untrusted: null });
  });

  it('governs structuredContent from the result only', () => {
    const r = readTrust({ content: [text({ ifc: { integrity: 'untrusted' } })], structuredContent: {}, _meta: { ifc: { confidentiality: 'private' } } });
    expect(r.structuredClaim).toEqual({ sensitive: true, untrusted: null });
    expect(r.resultClaim).toEqual({ sensitive: true, untrusted: null });
  });

  it('never reads through the prototype chain', () => {
    const r = readTrust(JSON.parse('{"content":[{"type":"text","text":"x","_meta":{"__proto__":{"ifc":{"integrity":"untrusted"}}}}],"_meta":{"constructor":{"ifc":"x"}}}'));
    expect(r.labels).toEqual({ sensitive: null, untrusted: null });
    expect(r.findings).toEqual([]);
    const own = readTrust(JSON.parse('{"content":[],"_meta":{"ifc":{"__proto__":{"integrity":"untrusted"},"integrity":"trusted"}}}'));
    expect(own.labels.untrusted).toBe(false);
  });
});

describe('fides dialect: placement of JSONPath keys', () => {
  const fides = (labels: unknown, extra: Record<string, unknown> = {}, blocks = 2) => ({
    content: Array.from({ length: blocks }, () => text()),
    ...extra,
    _meta: { [FIDES_KEY]: labels },
  });
  const untrusted = { integrity: 'untrusted', confidentiality: ['public'] };

  it('$ governs the result, every block and structuredContent', () => {
    const r = readTrust(fides({ $: { integrity: 'trusted', confidentiality: [] } }, { structuredContent: {} }));
    expect(r.resultClaim).toEqual({ sensitive: true, untrusted: false });
    expect(r.structuredClaim).toEqual({ sensitive: true, untrusted: false });
    expect(r.blocks.map(flags)).toEqual([{ sensitive: true, untrusted: false }, { sensitive: true, untrusted: false }]);
    expect(r.labelSources).toEqual({ sensitive: [`${FT}/$/confidentiality`], untrusted: [`${FT}/$/integrity`] });
    expect(r.findings).toEqual([]);
  });

  it.each([
    ["$['content'][1]", 1],
    ['$.content[1]', 1],
    ['$["content"][1]', 1],
    ["$['content'][-1]", 1],
    ["$['content'][-2]", 0],
    ["$['content'][0]['text']", 0],
    ["$['content'][0]['_meta']['x'][3]", 0],
  ])('%s governs block %i only, as one of its own claims', (path, index) => {
    const r = readTrust(fides({ [path]: untrusted }, { structuredContent: {} }));
    expect(r.blocks[index]!.untrusted).toBe(true);
    expect(r.blocks[index]!.ownUnion).toEqual({ untrusted: true, sensitive: false });
    expect(r.blocks[1 - index]!.untrusted).toBeNull();
    expect(r.structuredClaim.untrusted).toBeNull();
    expect(r.labels.untrusted).toBe(true);
    expect(r.findings).toEqual([]);
  });

  it("$['content'] governs every block from above (a block's false under it is a weakening), not structuredContent", () => {
    const r = readTrust({ content: [text(), text({ [K]: { untrusted: false } })], structuredContent: {}, _meta: { [FIDES_KEY]: { "$['content']": untrusted } } });
    expect(r.blocks.map((b) => b.untrusted)).toEqual([true, true]);
    expect(r.blocks[0]!.ownUnion).toEqual({});
    expect(r.structuredClaim.untrusted).toBeNull();
    expect(r.resultClaim.untrusted).toBeNull();
    expect(r.labels.untrusted).toBe(true);
    expect(r.labelSources.untrusted).toEqual([`${FT}/$['content']/integrity`]);
    expect(rules(r)).toEqual(['trust.no-weakening']);
    // Its true reaches the labels even with no block to govern.
    expect(readTrust({ content: [], _meta: { [FIDES_KEY]: { '$.content': untrusted } } }).labels.untrusted).toBe(true);
  });

  it('structuredContent paths govern structuredContent and the labels, no block', () => {
    const r = readTrust(fides({ "$['structuredContent']['rows'][0]": untrusted, '$.structuredContent': { integrity: 'trusted', confidentiality: ['public'] } }, { structuredContent: { rows: [] } }));
    expect(r.structuredClaim).toEqual({ sensitive: false, untrusted: true });
    expect(r.resultClaim).toEqual({ sensitive: null, untrusted: null });
    expect(r.blocks.map((b) => b.untrusted)).toEqual([null, null]);
    expect(r.labels).toEqual({ sensitive: null, untrusted: true });
  });

  it.each([
    ["$['content'][2]", 'past the last block'],
    ["$['content'][-3]", 'before the first block'],
    ["$['content']['x']", 'a name into content'],
    ["$['isError']", 'isError'],
    ["$['_meta']", '_meta'],
    ["$['toolResult']", 'a member MCP does not define'],
  ])('%s (%s) governs the whole result with its trues only, without a finding', (path) => {
    const r = readTrust(fides({ [path]: { integrity: 'untrusted', confidentiality: ['public'] } }, { structuredContent: {} }));
    expect(r.resultClaim).toEqual({ sensitive: null, untrusted: true });
    expect(r.structuredClaim.untrusted).toBe(true);
    expect(r.blocks.map((b) => b.untrusted)).toEqual([true, true]);
    expect(r.findings).toEqual([]);
  });

  it('a path into content or structuredContent that the result lacks cannot be placed', () => {
    const noContent = readTrust({ content: 'x', _meta: { [FIDES_KEY]: { "$['content'][0]": untrusted } } });
    expect(noContent.resultClaim.untrusted).toBe(true);
    const noStructured = readTrust(fides({ "$['structuredContent']": { confidentiality: [] } }));
    expect(noStructured.resultClaim.sensitive).toBe(true);
    expect(noStructured.blocks.map((b) => b.sensitive)).toEqual([true, true]);
  });

  it('a path that does not parse is a finding, and its label governs the whole result (trues only)', () => {
    const r = readTrust(fides({ '$[*]': { integrity: 'untrusted', confidentiality: ['public'] }, "$ ['content'][0]": { integrity: 'trusted', confidentiality: ['public'] } }));
    expect(r.resultClaim).toEqual({ sensitive: null, untrusted: true });
    expect(r.findings.map((f) => [f.rule, f.pointer])).toEqual([
      ['trust.dialect.shape', `${FT}/$[*]`],
      ['trust.dialect.shape', `${FT}/$ ['content'][0]`],
    ]);
    expect(r.findings[0]!.message).toContain('wildcards');
  });

  it('escapes keys as RFC 6901 tokens in pointers', () => {
    const r = readTrust({ content: [text()], structuredContent: { 'a/b': { '~': 1 } }, _meta: { [FIDES_KEY]: { "$['structuredContent']['a/b']['~']": { confidentiality: [] } } } });
    expect(r.structuredClaimSources.sensitive).toEqual([`${FT}/$['structuredContent']['a~1b']['~0']/confidentiality`]);
  });

  it('reads an entry without confidentiality as readable by no one, as fides does; without integrity as no claim', () => {
    const r = readTrust(fides({ $: {} }));
    expect(r.resultClaim).toEqual({ sensitive: true, untrusted: null });
    expect(r.resultClaimSources.sensitive).toEqual([`${FT}/$`]);
    expect(r.findings).toEqual([]);
  });

  it.each([
    [{ confidentiality: 'public' }, 'sensitive', `${FT}/$/confidentiality`],
    [{ confidentiality: 'private' }, 'sensitive', `${FT}/$/confidentiality`],
    [{ confidentiality: [7] }, 'sensitive', `${FT}/$/confidentiality`],
    [{ integrity: 'low', confidentiality: ['public'] }, 'untrusted', `${FT}/$/integrity`],
  ] as const)('counts a malformed value (%j) as true for its flag, with a finding', (label, flag, p) => {
    const r = readTrust(fides({ $: label }));
    expect(r.resultClaim[flag]).toBe(true);
    expect(r.findings.map((f) => [f.rule, f.pointer])).toEqual([['trust.dialect.shape', p]]);
  });

  it.each([[[]], ['labels'], [null], [3]])('counts a labels value that is not a map (%j) as both flags for the whole result', (value) => {
    const r = readTrust(fides(value, { structuredContent: {} }));
    expect(r.resultClaim).toEqual({ sensitive: true, untrusted: true });
    expect(r.structuredClaim).toEqual({ sensitive: true, untrusted: true });
    expect(r.findings.map((f) => [f.rule, f.pointer])).toEqual([['trust.dialect.shape', FT]]);
  });

  it('keeps provenance linear: the entries that govern every block list at most MAX_SHARED_SOURCES pointers', () => {
    const labels: Record<string, unknown> = {};
    // Unplaceable paths govern the whole result, and so every block; so do the many spellings of $['content'].
    for (let i = 0; i < 20_000; i++) labels[`$['toolResult'][${i}]`] = { integrity: 'untrusted', confidentiality: [] };
    // 128 spellings of $['content']: each letter written as itself or as a \u escape.
    for (let mask = 0; mask < 128; mask++) {
      const name = [...'content'].map((c, j) => (mask & (1 << j) ? '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0') : c)).join('');
      labels[`$['${name}']`] = { integrity: 'untrusted', confidentiality: ['public'] };
    }
    const r = readTrust({ content: Array.from({ length: 5_000 }, () => text()), _meta: { [FIDES_KEY]: labels } });
    expect(r.labels).toEqual({ sensitive: true, untrusted: true });
    expect(r.resultClaimSources.sensitive).toHaveLength(MAX_SHARED_SOURCES);
    expect(r.resultClaimSources.untrusted).toHaveLength(MAX_SHARED_SOURCES);
    expect(r.labelSources.untrusted).toHaveLength(2 * MAX_SHARED_SOURCES);
    expect(r.findings).toEqual([]);
    for (const b of r.blocks) {
      expect(b.untrusted).toBe(true);
      expect(b.sources.untrusted).toHaveLength(2 * MAX_SHARED_SOURCES);
    }
  });

  it('is read on the result only: a fides key on a block is no claim', () => {
    const r = readTrust({ content: [text({ [FIDES_KEY]: { $: untrusted } })] });
    expect(r.labels).toEqual({ sensitive: null, untrusted: null });
  });
});

describe('dialects selected', () => {
  const all = {
    content: [text({ [K]: { untrusted: true }, ifc: { confidentiality: 'private' } })],
    _meta: { ifc: 'bad', [FIDES_KEY]: { '$[*]': {} } },
  };

  it('reads only the dialects listed', () => {
    expect(readTrust(all, []).labels).toEqual({ sensitive: null, untrusted: null });
    expect(readTrust(all, []).findings).toEqual([]);
    const k = readTrust(all, ['trust-annotations']);
    expect(k.labels).toEqual({ sensitive: null, untrusted: true });
    expect(k.findings).toEqual([]);
    const ifc = readTrust(all, ['ifc']);
    expect(ifc.labelSources).toEqual({ sensitive: ['/_meta/ifc', '/content/0/_meta/ifc/confidentiality'], untrusted: ['/_meta/ifc'] });
    expect(rules(ifc)).toEqual(['trust.dialect.shape']);
    const fides = readTrust(all, ['fides']);
    expect(fides.labelSources).toEqual({ sensitive: [`${FT}/$[*]`], untrusted: [] });
    expect(fides.findings.map((f) => f.pointer)).toEqual([`${FT}/$[*]`]);
  });

  it('leaves out the misplaced flags of annotations with the trust key', () => {
    const r = readTrust({ content: [{ type: 'text', text: 'x', annotations: { untrusted: true } }] }, ['ifc', 'fides']);
    expect(r.labels.untrusted).toBeNull();
  });

  it('changes nothing for a result without dialect keys', () => {
    fc.assert(
      fc.property(resultArb(), (result) => {
        fc.pre(!JSON.stringify(result).includes('"ifc"') && !JSON.stringify(result).includes(FIDES_KEY));
        expect(readTrust(result)).toEqual(readTrust(result, ['trust-annotations']));
      }),
      { numRuns: 300 },
    );
  });
});
