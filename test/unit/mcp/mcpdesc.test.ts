/**
 * MCP Description 0.8.0 conformance fixtures (test/vectors/mcpdesc) run
 * through POST /v1/validate (and validateMcp, which must agree).
 *
 * Every CallToolResult a fixture carries (`/tools/{i}/examples/{name}/result`,
 * `/tools/{i}/interactionExamples/{name}/result`, `/components/toolExamples/{name}/result`,
 * with `$componentRef` resolved) is validated at each revision that applies to
 * it (the tool's `protocolVersions`, else the document's). Expected-valid
 * fixtures must yield no error unless listed below as a disagreement with the
 * contract; every example of an expected-invalid fixture is listed with what
 * it must yield. Fixture files and examples that are neither checked nor
 * listed fail the suite, as do listings that match nothing.
 *
 * Fixtures whose problems lie outside tool results (declarations, prompts,
 * resources) are out of scope for validateMcp; where such a fixture holds an
 * MCP object that a CallToolResult can carry as well (an Annotations object,
 * a `_meta` object), it is re-used inside a minimal result ("derived" cases)
 * so that the rules still meet real fixture data.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pointer } from '../../../src/json/pointer.js';
import { hasOwn, isRecord } from '../../../src/json/record.js';
import type { ValidationFinding } from '../../../src/mcp/findings.js';
import { isRevision, type Revision } from '../../../src/mcp/revisions.js';
import { validateMcp } from '../../../src/mcp/shape.js';
import { afterAll, beforeAll } from 'vitest';
import { resultWith } from './helpers.js';
import { post, testApp, type TestApp } from '../../helpers/app.js';

let app: TestApp;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

async function validateViaHttp(result: unknown, rev: Revision): Promise<ValidationFinding[]> {
  const r = await post(app.app, '/v1/validate', { result, protocolVersion: rev });
  expect(r.status, r.body).toBe(200);
  expect(r.json.valid).toBe(!r.json.validation.some((f: ValidationFinding) => f.severity === 'error'));
  return r.json.validation;
}

const DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'vectors', 'mcpdesc');
const GROUPS = ['expected-valid', 'expected-invalid'] as const;

interface Expected {
  rule: string;
  pointer: string;
}

/** What one tool example result must yield (error-severity findings; warnings are free). */
type Outcome =
  /** Exactly these errors. */
  | { errors: Expected[]; why: string }
  /** No error: the fixture's problem at this example is not one contract section 5 checks. */
  | { outside: string };

/** A fixture object re-used inside a minimal CallToolResult. */
interface Derived {
  /** RFC 6901 pointer into the fixture. */
  from: string;
  /** `block-annotations`: the object becomes a text block's `annotations`; `result-meta`: the result's `_meta`. */
  as: 'block-annotations' | 'result-meta';
  /** Exactly these errors ([] = none). */
  errors: Expected[];
  why: string;
}

interface Entry {
  /**
   * Outcomes by example pointer (`/tools/{i}/examples/{name}`). Expected-invalid
   * fixtures list every example; expected-valid fixtures list only examples
   * where the contract disagrees with the fixture.
   */
  examples?: Record<string, Outcome>;
  /** Examples that carry no result, with why that is expected. */
  withoutResult?: Record<string, string>;
  /** Why the fixture's problems (or, for a fixture without tool results, its content) are not judged by validateMcp. */
  outOfScope?: string;
  derived?: Derived[];
}

const DECLARATIONS = 'declarations are MCP Description document structure, not a CallToolResult; Trustgate validates only tool results';

const FIXTURES: Record<string, Entry> = {
  // ---- expected-valid ------------------------------------------------------
  'expected-valid/named-tool-examples.json': {},
  'expected-valid/meta-literal-values.json': {
    derived: [
      {
        from: '/tools/0/_meta',
        as: 'result-meta',
        errors: [],
        why: 'prefixed and unprefixed (display_hint) keys follow the MCP key grammar',
      },
      {
        from: '/resources/0/examples/current/result/contents/0/_meta',
        as: 'result-meta',
        errors: [],
        why: 'an underscore inside a name is allowed',
      },
    ],
  },
  'expected-valid/object-level-specification-extensions.json': {},
  'expected-valid/distinct-tool-and-resource-annotations.json': {
    outOfScope: 'no tool example result: Tool annotations and Resource/ResourceTemplate declaration annotations only',
    derived: [
      {
        // DISAGREEMENT. mcpdesc 0.8.0 leaves resource annotations open and this
        // fixture expects `futureResourceHint` to be accepted. The contract
        // follows MCP Description 0.9.0-rc.3 instead: annotations (the same
        // Annotations type on resources and content blocks) hold only
        // audience, priority and lastModified.
        from: '/resources/0/annotations',
        as: 'block-annotations',
        errors: [{ rule: 'mcp.annotations.members', pointer: '/content/0/annotations/futureResourceHint' }],
        why: 'closed annotations (contract section 5, MCP Description 0.9.0-rc.3) reject the unknown member 0.8.0 accepted',
      },
      {
        from: '/resourceTemplates/0/annotations',
        as: 'block-annotations',
        errors: [],
        why: 'audience and priority only',
      },
    ],
  },
  'expected-valid/named-prompt-examples.json': {
    outOfScope: 'no tool example result: prompt examples (GetPromptResult) only',
  },

  // ---- expected-invalid ----------------------------------------------------
  'expected-invalid/invalid-tool-example-result-semantics.json': {
    examples: {
      '/tools/0/examples/missing': {
        outside: "a success without structuredContent is wrong only against the tool's outputSchema, which the result does not carry",
      },
      '/tools/1/examples/business-error': {
        errors: [{ rule: 'mcp.result.shape', pointer: '/structuredContent' }],
        why: 'structuredContent must be absent when isError is true',
      },
      '/tools/2/examples/enveloped': {
        outside: 'JSON-RPC envelope members (jsonrpc, id) in the result: Result is open in every MCP schema and section 5 has no rule for them',
      },
      '/tools/3/examples/task-result': {
        outside: 'a `task` member next to resultType "complete": Result is open and section 5 has no task-workflow rule',
      },
    },
  },
  'expected-invalid/object-level-extension-in-native-content.json': {
    examples: {
      '/tools/0/examples/default': {
        errors: [{ rule: 'mcp.content.members', pointer: '/content/0/x-example-style' }],
        why: 'content blocks are closed; x- names included',
      },
    },
  },
  'expected-invalid/revision-incompatible-tool-example.json': {
    examples: {
      '/tools/0/examples/future-result': {
        errors: [
          { rule: 'mcp.result.shape', pointer: '/resultType' },
          { rule: 'mcp.result.shape', pointer: '/structuredContent' },
          { rule: 'mcp.content.type', pointer: '/content/0/type' },
        ],
        why: 'resultType, structuredContent and resource_link do not exist at 2025-03-26',
      },
    },
  },
  'expected-invalid/malformed-tool-examples.json': {
    outOfScope: 'the problems are in the example wrappers (empty examples map, example name, missing or non-object input, missing result)',
    examples: {
      '/tools/1/examples/contains spaces': { outside: 'the example name is wrong; its result is a valid CallToolResult' },
      '/tools/2/examples/missing': { outside: '`input` is missing; the result is valid' },
      '/tools/3/examples/array': { outside: '`input` is an array; the result is valid' },
    },
    withoutResult: {
      '/tools/4/examples/missing': 'the fixture checks that a missing result is reported; there is nothing to validate',
    },
  },
  'expected-invalid/meta-reserved-key-misuse.json': {
    outOfScope:
      'progressToken in a tool declaration _meta is a declaration problem; the result _meta problem is the VALUE of the reserved ' +
      'key io.modelcontextprotocol/serverInfo, and section 5 checks _meta key grammar, not values of reserved keys',
    examples: {
      '/tools/0/examples/invalid-server-info': {
        outside: 'io.modelcontextprotocol/serverInfo is a grammatical key; its value is not checked by section 5',
      },
    },
  },
  'expected-invalid/tool-example-schema-mismatches.json': {
    outOfScope: "input and structuredContent are judged against the tool's inputSchema/outputSchema, which the result does not carry",
    examples: {
      '/tools/0/examples/wrong-types': { outside: 'structuredContent is an object, as 2026-07-28 allows; only the outputSchema rejects it' },
    },
  },
  'expected-invalid/meta-invalid-key.json': {
    outOfScope: `the bad key is in a tool declaration _meta; ${DECLARATIONS}`,
    derived: [
      {
        from: '/tools/0/_meta',
        as: 'result-meta',
        errors: [{ rule: 'mcp.meta.key', pointer: '/_meta/bad key' }],
        why: 'the same key grammar applies to a result _meta',
      },
    ],
  },
  'expected-invalid/invalid-resource-annotations.json': {
    outOfScope: `the bad annotations are on Resource and ResourceTemplate declarations; ${DECLARATIONS}`,
    derived: [
      {
        from: '/resources/0/annotations',
        as: 'block-annotations',
        errors: [{ rule: 'mcp.annotations.members', pointer: '/content/0/annotations/lastModified' }],
        why: 'lastModified is defined from 2025-06-18',
      },
      {
        from: '/resourceTemplates/0/annotations',
        as: 'block-annotations',
        errors: [
          { rule: 'mcp.annotations.audience', pointer: '/content/0/annotations/audience/0' },
          { rule: 'mcp.annotations.priority', pointer: '/content/0/annotations/priority' },
        ],
        why: 'audience "operator" and priority 2',
      },
    ],
  },
  'expected-invalid/object-level-unknown-property.json': {
    outOfScope: `the unknown member is on a Tool declaration; ${DECLARATIONS}`,
  },
  'expected-invalid/invalid-prompt-example-semantics.json': {
    outOfScope: 'prompt examples (GetPromptResult) only; no tool example result',
  },
  'expected-invalid/resource-example-result-semantics.json': {
    outOfScope: 'resource read examples (ReadResourceResult) only; no tool example result',
  },
};

/** One CallToolResult found in a fixture. */
interface ExampleRef {
  /** Pointer of the example (its `result` is below it). */
  key: string;
  /** Pointer of the object that holds `result` (differs from `key` through `$componentRef`). */
  source: string;
  result: unknown;
  revisions: Revision[];
}

interface Collected {
  refs: ExampleRef[];
  withoutResult: string[];
  problems: string[];
}

function unescapeToken(t: string): string {
  return t.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Resolves an RFC 6901 pointer (own members only); undefined when it does not resolve. */
function resolvePointer(doc: unknown, ptr: string): unknown {
  if (ptr === '') return doc;
  if (!ptr.startsWith('/')) return undefined;
  let cur: unknown = doc;
  for (const raw of ptr.slice(1).split('/')) {
    const tok = unescapeToken(raw);
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(tok)) return undefined;
      cur = cur[Number(tok)];
    } else if (isRecord(cur) && hasOwn(cur, tok)) {
      cur = cur[tok];
    } else {
      return undefined;
    }
  }
  return cur;
}

function revisionsOf(v: unknown, where: string, problems: string[]): Revision[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length === 0) {
    problems.push(`${where}/protocolVersions is not a non-empty array`);
    return [];
  }
  const out: Revision[] = [];
  for (const r of v) {
    if (isRevision(r)) out.push(r);
    else problems.push(`${where}/protocolVersions holds ${JSON.stringify(r)}, which is not a revision Trustgate knows`);
  }
  return out;
}

/** Revisions that govern the primitive a pointer lies under (`/tools/0/...`), else the document's. */
function revisionsAt(doc: Record<string, unknown>, ptr: string, problems: string[]): Revision[] {
  const root = revisionsOf(doc.protocolVersions, '', problems) ?? [];
  const m = /^\/(tools|resources|resourceTemplates|prompts)\/(\d+)(?:\/|$)/.exec(ptr);
  if (!m) return root;
  const primitive = resolvePointer(doc, `/${m[1]}/${m[2]}`);
  if (!isRecord(primitive)) return root;
  return revisionsOf(primitive.protocolVersions, `/${m[1]}/${m[2]}`, problems) ?? root;
}

function collect(doc: Record<string, unknown>): Collected {
  const out: Collected = { refs: [], withoutResult: [], problems: [] };
  const rootRevisions = revisionsOf(doc.protocolVersions, '', out.problems);
  if (!rootRevisions) out.problems.push('the document has no protocolVersions');
  const referenced = new Set<string>();

  const take = (key: string, holder: unknown, holderPtr: string, revisions: Revision[]): void => {
    if (!isRecord(holder)) {
      out.problems.push(`${holderPtr} is not an object`);
      return;
    }
    if (hasOwn(holder, 'result')) out.refs.push({ key, source: holderPtr, result: holder.result, revisions });
    else out.withoutResult.push(key);
  };

  const tools = doc.tools;
  if (tools !== undefined && !Array.isArray(tools)) out.problems.push('/tools is not an array');
  if (Array.isArray(tools)) {
    tools.forEach((tool: unknown, i) => {
      if (!isRecord(tool)) return void out.problems.push(`/tools/${i} is not an object`);
      const revisions = revisionsOf(tool.protocolVersions, `/tools/${i}`, out.problems) ?? rootRevisions ?? [];
      for (const map of ['examples', 'interactionExamples']) {
        if (!hasOwn(tool, map)) continue;
        const examples = tool[map];
        if (!isRecord(examples)) {
          out.problems.push(`/tools/${i}/${map} is not an object`);
          continue;
        }
        for (const name of Object.keys(examples)) {
          const key = pointer('tools', i, map, name);
          const ex = examples[name];
          if (isRecord(ex) && hasOwn(ex, '$componentRef')) {
            const ref = ex.$componentRef;
            const target = typeof ref === 'string' && ref.startsWith('#') ? ref.slice(1) : undefined;
            if (target === undefined || !target.startsWith('/components/toolExamples/') || resolvePointer(doc, target) === undefined) {
              out.problems.push(`${key}: $componentRef does not resolve to a tool example`);
              continue;
            }
            referenced.add(target);
            take(key, resolvePointer(doc, target), target, revisions);
          } else {
            take(key, ex, key, revisions);
          }
        }
      }
    });
  }

  const components = doc.components;
  const toolExamples = isRecord(components) ? components.toolExamples : undefined;
  if (toolExamples !== undefined) {
    if (!isRecord(toolExamples)) out.problems.push('/components/toolExamples is not an object');
    else {
      for (const name of Object.keys(toolExamples)) {
        const key = pointer('components', 'toolExamples', name);
        // A component a tool references is validated at that tool's revisions.
        if (!referenced.has(key)) take(key, toolExamples[name], key, rootRevisions ?? []);
      }
    }
  }
  return out;
}

function errorKeys(findings: readonly ValidationFinding[]): string[] {
  return findings
    .filter((f) => f.severity === 'error')
    .map((f) => `${f.rule} ${f.pointer}`)
    .sort();
}

function keysOf(expected: readonly Expected[]): string[] {
  return expected.map((e) => `${e.rule} ${e.pointer}`).sort();
}

function wrap(as: Derived['as'], value: unknown, rev: Revision): Record<string, unknown> {
  return as === 'block-annotations'
    ? resultWith(rev, [{ type: 'text', text: 'derived', annotations: value }])
    : resultWith(rev, [], { _meta: value });
}

function listFixtureFiles(): string[] {
  const files: string[] = [];
  for (const g of GROUPS) {
    for (const f of readdirSync(join(DIR, g)).sort()) files.push(`${g}/${f}`);
  }
  return files;
}

const files = listFixtureFiles();

describe('mcpdesc fixture inventory', () => {
  it('has fixture files in both groups', () => {
    expect(files.filter((f) => f.startsWith('expected-valid/')).length).toBeGreaterThan(0);
    expect(files.filter((f) => f.startsWith('expected-invalid/')).length).toBeGreaterThan(0);
  });

  it('lists every fixture file on disk and nothing else', () => {
    expect([...files].sort()).toEqual(Object.keys(FIXTURES).sort());
  });
});

for (const file of files) {
  const entry = FIXTURES[file];
  const invalid = file.startsWith('expected-invalid/');

  describe(file, () => {
    let doc: Record<string, unknown> | undefined;
    let readError: unknown;
    try {
      const parsed: unknown = JSON.parse(readFileSync(join(DIR, file), 'utf8'));
      if (!isRecord(parsed)) throw new Error('the fixture is not a JSON object');
      doc = parsed;
    } catch (e) {
      readError = e;
    }
    if (!doc || !entry) {
      it('is readable and listed', () => {
        expect(readError).toBeUndefined();
        expect(entry, `${file} has no entry in FIXTURES`).toBeDefined();
      });
      return;
    }
    const fixture = doc;
    const { refs, withoutResult, problems } = collect(fixture);
    const listed = entry.examples ?? {};
    const listedWithout = entry.withoutResult ?? {};

    it('is fully accounted for', () => {
      expect(problems).toEqual([]);
      const found = refs.map((r) => r.key);
      // Every listing matches something in the fixture.
      for (const k of Object.keys(listed)) expect(found, `listed example ${k}`).toContain(k);
      expect([...withoutResult].sort()).toEqual(Object.keys(listedWithout).sort());
      // Expected-invalid fixtures list every example.
      if (invalid) for (const k of found) expect(Object.keys(listed), `unlisted example ${k}`).toContain(k);
      // A fixture with no tool result, or an invalid one whose problem no example shows, says why.
      const showsProblem = Object.values(listed).some((o) => 'errors' in o);
      if (refs.length === 0 || (invalid && !showsProblem)) {
        expect(entry.outOfScope, 'outOfScope reason').toBeTruthy();
      }
      // Valid fixtures may list only disagreements (errors), never "outside".
      if (!invalid) for (const o of Object.values(listed)) expect('errors' in o).toBe(true);
      for (const r of refs) expect(r.revisions.length, `${r.key} has revisions`).toBeGreaterThan(0);
    });

    for (const ref of refs) {
      const outcome = listed[ref.key];
      for (const rev of ref.revisions) {
        const via = ref.source === ref.key ? '' : ` (via ${ref.source})`;
        it(`${ref.key}/result${via} @ ${rev}`, async () => {
          // Through the real route, as a host would send it.
          const got = errorKeys(await validateViaHttp(ref.result, rev));
          // The route only adds trust.* findings to what the MCP rules say.
          expect(errorKeys(validateMcp(ref.result, rev))).toEqual(got.filter((k) => !k.startsWith('trust.')));
          if (outcome && 'errors' in outcome) expect(got, outcome.why).toEqual(keysOf(outcome.errors));
          else expect(got, outcome?.outside ?? 'expected-valid').toEqual([]);
        });
      }
    }

    for (const d of entry.derived ?? []) {
      const revs = revisionsAt(fixture, d.from, []);
      for (const rev of revs) {
        it(`derived: ${d.from} as ${d.as} @ ${rev}`, () => {
          const value = resolvePointer(fixture, d.from);
          expect(value, `${d.from} resolves`).toBeDefined();
          expect(errorKeys(validateMcp(wrap(d.as, value, rev), rev)), d.why).toEqual(keysOf(d.errors));
        });
      }
      if (revs.length === 0) {
        it(`derived: ${d.from} has revisions`, () => {
          expect(revs.length).toBeGreaterThan(0);
        });
      }
    }
  });
}
