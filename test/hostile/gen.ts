/**
 * Shared pieces of the hostile-input and law suites: generators of valid
 * requests (every block type, claims, evidenceRefs with their records),
 * structure-aware mutations of them, raw-text attacks, and the invariants
 * every answer of the service must keep.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { deriveDigest } from '../../src/evidence/digest.js';
import type { Canonicalization, DigestAlgorithm } from '../../src/evidence/algorithms.js';
import { PROTOCOL_VERSIONS, REVISIONS } from '../../src/mcp/revisions.js';

export const K = 'io.modelcontextprotocol/trust-annotations';
export const INTERCEPTOR = '/v1/interceptors/docker-mcp-gateway';
export const ROUTES = ['/v1/evaluate', '/v1/validate', '/v1/digest', INTERCEPTOR, '/v1/evaluate-call'] as const;
export type Route = (typeof ROUTES)[number];

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

// ------------------------------------------------------------ error registry

/** The registry table of docs/errors.md: code -> status. */
export function errorRegistry(): Map<string, number> {
  const text = readFileSync(fileURLToPath(new URL('../../docs/errors.md', import.meta.url)), 'utf8');
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^\|\s*`(TG_ERR_[A-Z0-9_]+)`\s*\|\s*(\d{3})\s*\|/gm)) out.set(m[1]!, Number(m[2]));
  if (out.size < 10) throw new Error('docs/errors.md: registry table not found');
  return out;
}

// ------------------------------------------------------------ answers and invariants

export interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

const HEX = /^[0-9a-f]+$/;
const DIGEST_LEN: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };
const TRI = (v: unknown) => v === true || v === false || v === null;

/**
 * Every invariant an answer must keep, whatever the request was. Returns
 * the first violation found, or undefined.
 */
export function violation(route: string, a: Answer, registry: Map<string, number>): string | undefined {
  const type = String(a.headers['content-type'] ?? '');
  if (a.status >= 500) return `status ${a.status} (5xx): ${a.body.slice(0, 300)}`;
  if (route === INTERCEPTOR) {
    if (a.status !== 200) return `interceptor answered ${a.status}`;
    if (/problem/.test(type)) return `interceptor answered problem+json`;
    if (a.body.length === 0) return undefined;
    let j: any;
    try {
      j = JSON.parse(a.body);
    } catch {
      return `interceptor body is not JSON: ${a.body.slice(0, 200)}`;
    }
    if (typeof j !== 'object' || j === null || Array.isArray(j)) return 'interceptor body is not a JSON object';
    if (!Array.isArray(j.content)) return `interceptor body has no content array: ${a.body.slice(0, 200)}`;
    return undefined;
  }
  if (a.status >= 400 && a.status < 500) {
    if (!/^application\/problem\+json/.test(type)) return `4xx with content-type ${type}: ${a.body.slice(0, 200)}`;
    let p: any;
    try {
      p = JSON.parse(a.body);
    } catch {
      return `4xx body is not JSON: ${a.body.slice(0, 200)}`;
    }
    if (typeof p?.code !== 'string' || !registry.has(p.code)) return `4xx code ${String(p?.code)} is not in docs/errors.md`;
    if (registry.get(p.code) !== a.status || p.status !== a.status) return `code ${p.code} came with status ${a.status}/${p.status}`;
    if (p.type !== `urn:trustgate:problem:${p.code}`) return `problem type ${p.type}`;
    if (typeof p.title !== 'string' || typeof p.detail !== 'string') return 'problem lacks title/detail';
    if (p.errors !== undefined && !(Array.isArray(p.errors) && p.errors.every((e: any) => typeof e?.pointer === 'string' && typeof e?.message === 'string'))) {
      return 'problem errors[] malformed';
    }
    return undefined;
  }
  if (a.status !== 200) return `unexpected status ${a.status}`;
  let j: any;
  try {
    j = JSON.parse(a.body);
  } catch {
    return `200 body is not JSON: ${a.body.slice(0, 200)}`;
  }
  if (route === '/v1/evaluate') {
    if (typeof j.decisionId !== 'string' || j.decisionId.length === 0) return 'no decisionId';
    if (!['allow', 'warn', 'deny'].includes(j.outcome)) return `outcome ${j.outcome}`;
    const hasResult = Object.prototype.hasOwnProperty.call(j, 'result');
    if (j.resultOmitted === true && (hasResult || j.modified !== false || j.outcome === 'deny')) return 'resultOmitted on a modified or denied result, or with a result';
    if (j.resultOmitted !== true && (j.outcome === 'deny') === hasResult) return `outcome ${j.outcome} with result ${hasResult ? 'present' : 'absent'}`;
    if (j.result !== undefined && (typeof j.result !== 'object' || j.result === null || Array.isArray(j.result))) return 'result is not an object';
    if (typeof j.modified !== 'boolean' || typeof j.requiresConsent !== 'boolean') return 'modified/requiresConsent not booleans';
    if (!j.labels || !TRI(j.labels.sensitive) || !TRI(j.labels.untrusted)) return 'labels not tri-state';
    if (!Array.isArray(j.blocks) || !j.blocks.every((b: any) => Number.isInteger(b.index) && TRI(b.sensitive) && TRI(b.untrusted) && Array.isArray(b.actions))) {
      return 'blocks malformed';
    }
    if (!Array.isArray(j.findings) || !Array.isArray(j.validation) || !Array.isArray(j.evidence)) return 'findings/validation/evidence not arrays';
    if (typeof j.policyRevision !== 'string') return 'no policyRevision';
  } else if (route === '/v1/validate') {
    if (typeof j.valid !== 'boolean' || !Array.isArray(j.validation)) return 'validate answer malformed';
    if (j.valid !== !j.validation.some((v: any) => v.severity === 'error')) return 'valid disagrees with the findings';
  } else if (route === '/v1/digest') {
    const m = /^(sha256|sha384|sha512):(.*)$/.exec(String(j.digest));
    if (!m || !HEX.test(m[2]!) || m[2]!.length !== DIGEST_LEN[m[1]!]) return `digest ${j.digest}`;
    if (typeof j.canonical !== 'string') return 'no canonical';
  }
  return undefined;
}

// ------------------------------------------------------------ valid requests

const ALGS: DigestAlgorithm[] = ['sha256', 'sha384', 'sha512'];
const SCHEMES: Canonicalization[] = ['jcs/rfc8785', 'cbor/rfc8949'];

/** Placeholder for an evidenceRef, resolved against the request's records once they exist. */
interface RefSpec {
  '@ref': { idx: number; alg: number; scheme: number; type: string; tamper: boolean; byRef: boolean; oddScheme: boolean };
}

const flagValue = fc.oneof({ weight: 6, arbitrary: fc.boolean() }, { weight: 1, arbitrary: fc.constantFrom<Json>('yes', 1, null, [], {}) });

const refSpec: fc.Arbitrary<RefSpec> = fc
  .record({
    idx: fc.nat(7),
    alg: fc.nat(2),
    scheme: fc.nat(1),
    type: fc.constantFrom('data-class.v1', 'data-class.v1', 'ifc.fides.v1'),
    tamper: fc.nat(6).map((n) => n === 0),
    byRef: fc.boolean(),
    oddScheme: fc.constantFrom(false, false, false, false, true),
  })
  .map((r) => ({ '@ref': r }));

/** A trust claim: a map with optional flags and evidenceRef, sometimes not a map at all. */
export const claimArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ sensitive: flagValue, untrusted: flagValue, evidenceRef: refSpec as fc.Arbitrary<any> }, { requiredKeys: [] }) as fc.Arbitrary<Json> },
  { weight: 1, arbitrary: fc.constantFrom<Json>('sensitive', true, null, [], 3) },
);

const textArb = fc.oneof(
  { weight: 5, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
);

function metaArb(): fc.Arbitrary<Obj | undefined> {
  return fc.option(
    fc
      .record(
        {
          claim: claimArb,
          other: fc.constantFrom<Obj>({}, { 'com.example/trace': 'abc' }, { 'bad key!': 1 }),
        },
        { requiredKeys: ['other'] },
      )
      .map(({ claim, other }) => (claim === undefined ? { ...other } : { ...other, [K]: claim })),
    { nil: undefined, freq: 2 },
  );
}

const annotationsArb: fc.Arbitrary<Obj | undefined> = fc.option(
  fc.record(
    {
      audience: fc.subarray(['user', 'assistant']),
      priority: fc.double({ min: 0, max: 1, noNaN: true }),
      lastModified: fc.constantFrom('2025-01-01T00:00:00Z', '2025-06-18T12:00:00.5+02:00', 'yesterday'),
      sensitive: fc.constantFrom<Json>(true, false),
      untrusted: fc.constantFrom<Json>(true, false),
    },
    { requiredKeys: [] },
  ) as fc.Arbitrary<Obj>,
  { nil: undefined, freq: 2 },
);

function withCommon(block: Obj, annotations: Obj | undefined, meta: Obj | undefined): Obj {
  const out: Obj = { ...block };
  if (annotations !== undefined) out.annotations = annotations;
  if (meta !== undefined) out._meta = meta;
  return out;
}

/** One content block of any MCP type, with optional annotations and claims. */
export const blockArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(textArb, annotationsArb, metaArb()).map(([text, a, m]) => withCommon({ type: 'text', text }, a, m)) },
  { weight: 1, arbitrary: fc.tuple(annotationsArb, metaArb()).map(([a, m]) => withCommon({ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }, a, m)) },
  { weight: 1, arbitrary: fc.tuple(annotationsArb, metaArb()).map(([a, m]) => withCommon({ type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' }, a, m)) },
  { weight: 1, arbitrary: fc.tuple(annotationsArb, metaArb()).map(([a, m]) => withCommon({ type: 'resource_link', uri: 'file:///tmp/x', name: 'x', mimeType: 'text/plain' }, a, m)) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.boolean(), textArb, annotationsArb, metaArb(), metaArb()).map(([isText, text, a, m, rm]) => {
      const resource: Obj = isText ? { uri: 'file:///r.txt', mimeType: 'text/plain', text } : { uri: 'file:///r.bin', blob: 'AAEC' };
      if (rm !== undefined) resource._meta = rm;
      return withCommon({ type: 'resource', resource }, a, m);
    }),
  },
);

/** A data-class.v1 record (sometimes with extra members). */
export const recordArb: fc.Arbitrary<Json> = fc
  .record(
    {
      class: fc.constantFrom('public', 'personal', 'confidential', 'highly_confidential', 'internal', 'restricted', 'unknown', 'Public'),
      regulatory: fc.subarray(['GDPR', 'hipaa', 'PCI']),
      labels: fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 }),
      n: fc.oneof(fc.integer(), fc.double({ min: -1e15, max: 1e15, noNaN: true })),
    },
    { requiredKeys: ['class'] },
  )
  .map((r) => r as Json);

export interface RequestParts {
  result: Obj;
  protocolVersion?: string;
  tool?: Obj;
  server?: Obj;
  context?: Obj;
  records: Json[];
  withEvidence: boolean;
}

export const resultArb = (maxBlocks = 6): fc.Arbitrary<Obj> =>
  fc
    .record(
      {
        content: fc.array(blockArb, { maxLength: maxBlocks }),
        _meta: metaArb().filter((m) => m !== undefined) as fc.Arbitrary<Obj>,
        structuredContent: fc.constantFrom<Json>({ rows: [1, 2] }, {}),
        isError: fc.boolean(),
      },
      { requiredKeys: ['content'] },
    )
    .map((r) => r as Obj);

export const partsArb: fc.Arbitrary<RequestParts> = fc
  .record(
    {
      result: resultArb(),
      protocolVersion: fc.constantFrom(...PROTOCOL_VERSIONS),
      tool: fc.record({ name: fc.constantFrom('fetch', 'export_all', ''), annotations: fc.record({ openWorldHint: fc.boolean() }) }, { requiredKeys: [] }),
      server: fc.record({ name: fc.constantFrom('web', 'billing') }),
      context: fc.record({ destination: fc.constantFrom('local', 'external-model'), reader: fc.constantFrom('user', 'assistant') }, { requiredKeys: [] }),
      records: fc.array(recordArb, { minLength: 1, maxLength: 4 }),
      withEvidence: fc.nat(4).map((n) => n !== 0),
    },
    { requiredKeys: ['result', 'records', 'withEvidence'] },
  )
  .map((p) => p as RequestParts);

/** Replace every RefSpec placeholder with a real evidenceRef (and collect the evidence entries). */
export function buildRequest(parts: RequestParts): Obj {
  const entries: Obj[] = [];
  const recs = parts.records;
  const resolve = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(resolve);
    if (v === null || typeof v !== 'object') return v;
    if (Object.prototype.hasOwnProperty.call(v, '@ref')) {
      const s = (v as unknown as RefSpec)['@ref'];
      const idx = s.idx % recs.length;
      const alg = ALGS[s.alg % 3]!;
      const scheme = SCHEMES[s.scheme % 2]!;
      let digest = deriveDigest(recs[idx], scheme, alg).digest;
      if (s.tamper) digest = digest.slice(0, -1) + (digest.endsWith('0') ? '1' : '0');
      const ref: Obj = { type: s.type, digest, canonicalization: s.oddScheme ? 'xml/c14n' : scheme, schema: 'https://example.com/data-class/v1' };
      if (s.byRef) ref.ref = `audit://rec/${idx}`;
      return ref;
    }
    const out: Obj = {};
    for (const k of Object.keys(v)) out[k] = resolve((v as Obj)[k]!);
    return out;
  };
  const result = resolve(parts.result) as Obj;
  for (let i = 0; i < recs.length; i++) {
    const byRef = i % 2 === 1;
    const e: Obj = { record: recs[i]! };
    if (byRef) e.ref = `audit://rec/${i}`;
    else e.digest = deriveDigest(recs[i], 'jcs/rfc8785', 'sha256').digest.toUpperCase().replace('SHA256', 'sha256');
    entries.push(e);
  }
  const req: Obj = { result };
  if (parts.protocolVersion !== undefined) req.protocolVersion = parts.protocolVersion;
  if (parts.tool !== undefined) req.tool = parts.tool;
  if (parts.server !== undefined) req.server = parts.server;
  if (parts.context !== undefined) req.context = parts.context;
  if (parts.withEvidence) req.evidence = entries;
  return req;
}

export const evaluateRequestArb: fc.Arbitrary<Obj> = partsArb.map(buildRequest);

// ------------------------------------------------------------ hostile values and mutations

/** Snippets written into the text as-is (nesting, number literals, escapes JSON.stringify would never produce). */
export const deep = (d: number, obj = false) => (obj ? '{"a":'.repeat(d) + '1' + '}'.repeat(d) : '['.repeat(d) + ']'.repeat(d));
const RAW_NUMBERS = [
  '-0', '-0.0', '0e0', '1e308', '-1e308', '1e309', '-1e309', '1E400', '1e-400', '5e-324', '9007199254740991', '9007199254740992', '9007199254740993',
  '-9007199254740993', '123456789012345678901234567890', '1.0', '1e2', '0.1', '1.7976931348623157e308', '100000000000000000000000',
  '-123456789012345678901234567890.5',
];
const RAW_STRINGS = ['"\\ud800"', '"x\\udfffy"', '"\\udbff\\udbff"', '"\\u0000"', '"\\ud83d\\ude00"', '"\\/\\b\\f\\n\\r\\t"'];

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

export type Mutation =
  | { kind: 'delete'; at: number; pick: number }
  | { kind: 'replace'; at: number; pick: number; value: number }
  | { kind: 'proto'; at: number; key: number; payload: number }
  | { kind: 'deep'; at: number; pick: number; depth: number; obj: boolean }
  | { kind: 'dup'; at: number; pick: number }
  | { kind: 'long'; at: number; pick: number; len: number; unit: number }
  | { kind: 'surrogate'; at: number; pick: number; inKey: boolean }
  | { kind: 'raw'; at: number; pick: number; snippet: number }
  | { kind: 'many'; at: number; count: number };

const DEPTHS = [126, 127, 128, 129, 130, 200, 254, 255, 256, 257, 258, 1000, 5000];

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), pick: fc.nat() }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), pick: fc.nat(), value: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('proto' as const), at: fc.nat(), key: fc.nat(2), payload: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('deep' as const), at: fc.nat(), pick: fc.nat(), depth: fc.constantFrom(...DEPTHS), obj: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('dup' as const), at: fc.nat(), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('long' as const), at: fc.nat(), pick: fc.nat(), len: fc.constantFrom(1000, 65_536, 200_000), unit: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('surrogate' as const), at: fc.nat(), pick: fc.nat(), inKey: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('raw' as const), at: fc.nat(), pick: fc.nat(), snippet: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('many' as const), at: fc.nat(), count: fc.constantFrom(500, 3000, 10_000, 10_001, 20_000) }) },
);

const PROTO_PAYLOADS = ['{"polluted":true}', '{"prototype":{"polluted":true}}', '{"sensitive":true,"untrusted":true}', '[{"polluted":true}]'];

/** Values of the wrong type, or hostile ones, to put in place of a member. */
const REPLACEMENTS: string[] = [
  'null', 'true', 'false', '0', '-1', '1.5', '""', '"x"', '[]', '{}', '[null]', '{"a":{}}', '"2099-01-01"', '"text"', '[{"type":"text","text":"x"}]',
  `{"${K}":{"sensitive":"yes"}}`, '{"type":7}', ...RAW_NUMBERS, ...RAW_STRINGS,
];

/** A value being mutated: a JSON tree plus snippets to splice into its text. */
class Draft {
  readonly raws: string[] = [];
  constructor(public root: Json) {}

  rawToken(text: string): string {
    this.raws.push(text);
    return `@@RAW:${this.raws.length - 1}@@`;
  }

  /** Containers in document order (bounded), for picking a mutation site. */
  containers(limit = 400): Array<Obj | Json[]> {
    const out: Array<Obj | Json[]> = [];
    const stack: Json[] = [this.root];
    while (stack.length > 0 && out.length < limit) {
      const v = stack.pop()!;
      if (v === null || typeof v !== 'object') continue;
      out.push(v as Obj | Json[]);
      const kids = Array.isArray(v) ? v : Object.values(v);
      for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]!);
    }
    return out;
  }

  text(): string {
    let s = JSON.stringify(this.root);
    s = s.replace(/"@@DUP@@/g, '"');
    s = s.replace(/"@@RAW:(\d+)@@"/g, (_m, i) => this.raws[Number(i)] ?? 'null');
    return s;
  }
}

function setMember(o: Obj | Json[], key: string | number, value: Json): void {
  if (Array.isArray(o)) o[Number(key)] = value;
  else Object.defineProperty(o, String(key), { value, enumerable: true, writable: true, configurable: true });
}

function keysOf(o: Obj | Json[]): Array<string | number> {
  return Array.isArray(o) ? o.map((_, i) => i) : Object.keys(o);
}

const LONG_UNITS = ['a', '9', '\u00e9', ' '];

export function applyMutation(d: Draft, m: Mutation): void {
  const sites = d.containers();
  if (sites.length === 0) return;
  const site = sites[m.at % sites.length]!;
  const keys = keysOf(site);
  const pickKey = (pick: number): string | number | undefined => (keys.length === 0 ? undefined : keys[pick % keys.length]);
  switch (m.kind) {
    case 'delete': {
      const k = pickKey(m.pick);
      if (k === undefined) return;
      if (Array.isArray(site)) site.splice(Number(k), 1);
      else delete (site as Obj)[k];
      return;
    }
    case 'replace': {
      const k = pickKey(m.pick) ?? (Array.isArray(site) ? 0 : 'x');
      setMember(site, k, d.rawToken(REPLACEMENTS[m.value % REPLACEMENTS.length]!));
      return;
    }
    case 'proto': {
      const key = PROTO_KEYS[m.key % 3]!;
      const payload = d.rawToken(PROTO_PAYLOADS[m.payload % PROTO_PAYLOADS.length]!);
      if (Array.isArray(site)) site.push({ [key]: payload } as Obj);
      else setMember(site, key, payload);
      return;
    }
    case 'deep': {
      const k = pickKey(m.pick) ?? (Array.isArray(site) ? 0 : 'x');
      setMember(site, k, d.rawToken(deep(m.depth, m.obj)));
      return;
    }
    case 'dup': {
      if (Array.isArray(site)) return;
      const k = pickKey(m.pick);
      if (k === undefined) return;
      setMember(site, `@@DUP@@${k}`, d.rawToken('"duplicate"'));
      return;
    }
    case 'long': {
      const k = pickKey(m.pick) ?? (Array.isArray(site) ? 0 : 'x');
      setMember(site, k, LONG_UNITS[m.unit % LONG_UNITS.length]!.repeat(m.len));
      return;
    }
    case 'surrogate': {
      if (m.inKey && !Array.isArray(site)) setMember(site, 'k\ud800', 'v');
      else {
        const k = pickKey(m.pick) ?? (Array.isArray(site) ? 0 : 'x');
        setMember(site, k, 'a\ud800b\udc00');
      }
      return;
    }
    case 'raw': {
      const k = pickKey(m.pick) ?? (Array.isArray(site) ? 0 : 'x');
      const all = [...RAW_NUMBERS, ...RAW_STRINGS, '{"a":1,"a":2}', '[1,2,]', '{"a":1}'];
      setMember(site, k, d.rawToken(all[m.snippet % all.length]!));
      return;
    }
    case 'many': {
      const block = '{"type":"text","text":"x"}';
      const list = '[' + new Array(m.count).fill(block).join(',') + ']';
      if (!Array.isArray(site) && Object.prototype.hasOwnProperty.call(site, 'content')) setMember(site, 'content', d.rawToken(list));
      else {
        const k = pickKey(m.at) ?? (Array.isArray(site) ? 0 : 'content');
        setMember(site, k, d.rawToken(list));
      }
      return;
    }
  }
}

/** A body text built from a JSON value and mutations of it. */
export function mutatedText(value: Json, mutations: readonly Mutation[]): string {
  const d = new Draft(structuredClone(value));
  for (const m of mutations) applyMutation(d, m);
  return d.text();
}

// ------------------------------------------------------------ raw text attacks

export type TextAttack =
  | { kind: 'none' }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; char: string }
  | { kind: 'bom' }
  | { kind: 'badUtf8'; at: number; bytes: number }
  | { kind: 'trailing'; junk: string }
  | { kind: 'random'; bytes: Uint8Array }
  | { kind: 'empty' };

const BAD_UTF8 = [[0xff], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x80], [0xfe, 0xfe]];

export const textAttackArb: fc.Arbitrary<TextAttack> = fc.oneof(
  { weight: 36, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), char: fc.constantFrom('"', '{', '}', '[', ']', ',', ':', '\\', '\u0000', '\n', 'x', '\u2028') }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'bom' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('badUtf8' as const), at: fc.nat(), bytes: fc.nat(BAD_UTF8.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('trailing' as const), junk: fc.constantFrom(' ', '\n', 'x', '}', ',{}', '{}', '\u0000') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('random' as const), bytes: fc.uint8Array({ maxLength: 200 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'empty' as const }) },
);

/** Apply a text attack; invalid UTF-8 comes back as a Buffer. */
export function attackText(text: string, a: TextAttack): string | Buffer {
  switch (a.kind) {
    case 'none':
      return text;
    case 'truncate':
      return text.slice(0, a.at % Math.max(1, text.length));
    case 'insert': {
      const i = a.at % (text.length + 1);
      return text.slice(0, i) + a.char + text.slice(i);
    }
    case 'bom':
      return '\ufeff' + text;
    case 'badUtf8': {
      const buf = Buffer.from(text, 'utf8');
      // Inside a string when there is one, so the bytes reach a value rather than the grammar.
      const quote = buf.indexOf(0x22, a.at % Math.max(1, buf.length));
      const i = quote < 0 ? buf.length : quote + 1;
      return Buffer.concat([buf.subarray(0, i), Buffer.from(BAD_UTF8[a.bytes]!), buf.subarray(i)]);
    }
    case 'trailing':
      return text + a.junk;
    case 'random':
      return Buffer.from(a.bytes);
    case 'empty':
      return '';
  }
}

export const CONTENT_TYPES: Array<string | undefined> = [
  'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json; charset=utf-16', 'application/json;charset=latin1',
  'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/problem+json', 'application/jsonx',
  '*/*', '', undefined, 'application/json, text/plain', 'application/vnd.api+json',
];

/** Mostly application/json, so that most requests reach the pipeline; the others now and then. */
export const contentTypeArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 17, arbitrary: fc.constant('application/json') },
  { weight: 3, arbitrary: fc.nat(CONTENT_TYPES.length - 1).map((i) => CONTENT_TYPES[i]) },
);

// ------------------------------------------------------------ random JSON

const protoKey = fc.oneof({ weight: 8, arbitrary: fc.string({ maxLength: 8 }) }, { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', K, '_meta', 'content', 'type') });

/** Random JSON, in the style of fc.anything (null-prototype objects, `__proto__` keys, -0, odd numbers). */
export const randomJsonArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 5 }),
  fc.anything({ maxDepth: 4, key: protoKey, withNullPrototype: true, withBoxedValues: false, withMap: false, withSet: false }),
);

/** JSON text of any value (undefined and functions become null), keeping own `__proto__` members. */
export function toText(v: unknown): string {
  const s = JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x));
  return s === undefined ? 'null' : s;
}

// ------------------------------------------------------------ pollution check

export function prototypeSnapshot(): string[] {
  return [Object.prototype, Array.prototype, Function.prototype, String.prototype, Number.prototype].map((p) => Object.getOwnPropertyNames(p).sort().join(','));
}

export function pollutionCheck(before: string[]): string | undefined {
  const after = prototypeSnapshot();
  if (after.join('|') !== before.join('|')) return `a built-in prototype changed: ${after.filter((x, i) => x !== before[i]).join(' / ')}`;
  if (({} as any).polluted !== undefined || ([] as any).polluted !== undefined) return '({}).polluted is set';
  if ((Object.prototype as any).sensitive !== undefined || (Object.prototype as any).untrusted !== undefined) return 'Object.prototype carries a flag';
  return undefined;
}

export { type Json, type Obj };

// ------------------------------------------------------------ shapes that once cost more than linear (contract section 8)

/** Where a hostile shape is put: each route that scans the body for repeated names or unsafe numbers. */
export type ShapeRoute = '/v1/evaluate' | '/v1/evaluate#omit' | '/v1/digest' | '/v1/validate' | typeof INTERCEPTOR;
export const SHAPE_ROUTES: readonly ShapeRoute[] = ['/v1/evaluate', '/v1/evaluate#omit', '/v1/digest', '/v1/validate', INTERCEPTOR];

export type Shape =
  /** A long member name above an object that repeats one name many times. */
  | { kind: 'longOverRepeats'; nameLength: number; repeats: number }
  /** A long member name above many numbers of integral value outside ±(2^53-1), in every notation. */
  | { kind: 'unsafeUnderLongPath'; nameLength: number; count: number; notation: number }
  /** Many tiny blocks under a result-level claim: one finding, one block entry, one validation finding each. */
  | { kind: 'manyFindings'; blocks: number; claim: number; audience: boolean };

const UNSAFE_NOTATIONS = ['9007199254740993', '9007199254740993.0', '9.007199254740993e15', '-1e300', '90071992547409930e-1'];

export const shapeArb: fc.Arbitrary<Shape> = fc.oneof(
  fc.record({ kind: fc.constant('longOverRepeats' as const), nameLength: fc.constantFrom(1, 1000, 20_000, 100_000), repeats: fc.constantFrom(2, 1000, 20_000, 80_000) }),
  fc.record({
    kind: fc.constant('unsafeUnderLongPath' as const),
    nameLength: fc.constantFrom(1, 1000, 20_000, 100_000),
    count: fc.constantFrom(1, 1000, 20_000),
    notation: fc.nat(UNSAFE_NOTATIONS.length - 1),
  }),
  fc.record({ kind: fc.constant('manyFindings' as const), blocks: fc.constantFrom(1, 100, 1000, 3000, 10_000), claim: fc.nat(2), audience: fc.boolean() }),
);

/** The hostile value, as JSON text (repeated names cannot be written any other way). */
function shapeValue(s: Shape): string {
  switch (s.kind) {
    case 'longOverRepeats':
      return `{"${'n'.repeat(s.nameLength)}":{${'"a":1,'.repeat(s.repeats - 1)}"a":1}}`;
    case 'unsafeUnderLongPath':
      return `{"${'n'.repeat(s.nameLength)}":[${new Array(s.count).fill(UNSAFE_NOTATIONS[s.notation]).join(',')}]}`;
    case 'manyFindings':
      return '';
  }
}

/** A request text of `route` carrying `shape` where that route reads it. */
export function shapeRequest(route: ShapeRoute, s: Shape): { path: string; text: string } {
  const path = route === '/v1/evaluate#omit' ? '/v1/evaluate' : route;
  if (s.kind === 'manyFindings') {
    const claim = [{ untrusted: true }, { untrusted: true, sensitive: true }, { sensitive: 'yes' }][s.claim]!;
    const block = s.audience ? '{"annotations":{"audience":["user"]}}' : '{}';
    const result = `{"_meta":{"${K}":${JSON.stringify(claim)}},"content":[${new Array(s.blocks).fill(block).join(',')}]}`;
    if (route === INTERCEPTOR) return { path, text: result };
    if (route === '/v1/digest') return { path, text: `{"record":${result},"canonicalization":"cbor/rfc8949"}` };
    if (route === '/v1/validate') return { path, text: `{"result":${result}}` };
    const options = route === '/v1/evaluate#omit' ? ',"options":{"omitUnmodifiedResult":true,"explain":true}' : '';
    return { path, text: `{"result":${result},"context":{"destination":"remote"}${options}}` };
  }
  const v = shapeValue(s);
  switch (route) {
    case '/v1/evaluate': {
      const ref = `{"type":"data-class.v1","digest":"sha256:${'0'.repeat(64)}","canonicalization":"jcs/rfc8785","ref":"r"}`;
      return { path, text: `{"result":{"_meta":{"${K}":{"evidenceRef":${ref}}},"content":[]},"evidence":[{"ref":"r","record":${v}},{"ref":"s","record":{"ok":1}}]}` };
    }
    case '/v1/evaluate#omit':
      return { path, text: `{"result":{"content":[],"structuredContent":${v}},"options":{"omitUnmodifiedResult":true}}` };
    case '/v1/digest':
      return { path, text: `{"record":${v},"canonicalization":"jcs/rfc8785"}` };
    case '/v1/validate':
      return { path, text: `{"result":{"content":[],"structuredContent":${v}}}` };
    default:
      return { path, text: `{"content":[],"structuredContent":${v}}` };
  }
}

/** The contract's size bound of an answer apart from its forwarded `result`: 10 x the request + 64 KiB. */
export const answerBound = (requestBytes: number): number => 10 * requestBytes + 64 * 1024;

/** Bytes of an answer body once its forwarded `result` is left out (the interceptor's replacement result is all `result`). */
export function answerWithoutResult(route: string, body: string): number {
  if (route === INTERCEPTOR || body === '') return 0;
  const j = JSON.parse(body) as Record<string, unknown>;
  delete j.result;
  return Buffer.byteLength(JSON.stringify(j));
}

/** The longest decision log line allowed (contract section 9: summarized past it, never cut). */
export const LOG_LINE_LIMIT = 64 * 1024;
