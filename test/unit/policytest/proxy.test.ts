/**
 * What only the proxy and a full pin store produce can be tested (contract
 * sections 15 and 17): a step's `proxy` passes the core what the proxy
 * passes (the judged message's `call`, a call of a tool the server did not
 * list), a case's `maxPins` bounds its pin store, and both are read as
 * strictly as the rest of a test file: anything else is a load error
 * naming the file and line, never a case that passes without checking.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTestFile, TestLoadError } from '../../../src/policytest/cases.js';
import { runCases } from '../../../src/policytest/runner.js';

const dir = mkdtempSync(join(tmpdir(), 'tg-proxy-cases-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Each rule reads one thing only the proxy or a full store sets, and names it in its effect.
writeFileSync(
  join(dir, 'probe.yaml'),
  `id: probe
mode: enforce
rules:
  - id: sampling-all-servers
    scope: result
    when: call.method == "sampling/createMessage" && call.arguments.includeContext == "allServers" && call.name == "files"
    effect: deny
  - id: unlisted
    scope: call
    when: tool.pin == "unlisted"
    effect: deny
  - id: unavailable
    scope: call
    when: tool.pin == "unavailable"
    effect: consent
  - id: first-seen
    scope: call
    when: tool.pin == "first-seen"
    effect: flag
`,
);

let n = 0;
async function load(text: string) {
  const p = join(dir, `t${++n}.test.yaml`);
  writeFileSync(p, text);
  return { path: p, cases: await readTestFile(p) };
}

/** The names of the cases that failed, and of those that passed. */
async function run(text: string) {
  const { cases } = await load(text);
  const report = await runCases(cases);
  return {
    passed: report.cases.filter((c) => c.passed).map((c) => c.name),
    failed: report.cases.filter((c) => !c.passed).map((c) => c.name),
  };
}

const SAMPLING = `
    evaluate:
      tool: { name: files, annotations: { openWorldHint: false } }
      result: { content: [ { type: text, text: summarise } ] }`;

describe('proxy on an evaluate step: the call of the judged message', () => {
  it('passes method and arguments, with call.name the body\'s tool.name, as the proxy does', async () => {
    const r = await run(`cases:
  - name: denied with the proxy's call${SAMPLING}
    proxy: { method: sampling/createMessage, arguments: { includeContext: allServers } }
    expect: { outcome: deny, findings: [ { policy: probe, rule: sampling-all-servers } ] }
  - name: without proxy the call is a tools/call result${SAMPLING}
    expect: { outcome: allow, findings: [] }
  - name: other arguments do not match${SAMPLING}
    proxy: { method: sampling/createMessage, arguments: { includeContext: none } }
    expect: { outcome: allow, findings: [] }
  - name: arguments default to none, so reading one fails closed${SAMPLING}
    proxy: { method: sampling/createMessage }
    expect: { outcome: deny, findings: [ { rule: sampling-all-servers } ] }
  - name: call.name is the tool's name
    evaluate:
      tool: { name: other, annotations: { openWorldHint: false } }
      result: { content: [ { type: text, text: summarise } ] }
    proxy: { method: sampling/createMessage, arguments: { includeContext: allServers } }
    expect: { outcome: allow, findings: [] }
  - name: a case that expects the wrong outcome fails${SAMPLING}
    proxy: { method: sampling/createMessage, arguments: { includeContext: allServers } }
    expect: { outcome: allow }
`);
    expect(r.failed).toEqual(['a case that expects the wrong outcome fails']);
    expect(r.passed).toHaveLength(5);
  });

  it('works in steps, under the case\'s session', async () => {
    const r = await run(`cases:
  - name: steps
    steps:
      - ${SAMPLING.trim().replace(/\n {4}/g, '\n        ')}
        proxy: { method: sampling/createMessage, arguments: { includeContext: allServers } }
        expect: { outcome: deny }
      - ${SAMPLING.trim().replace(/\n {4}/g, '\n        ')}
        expect: { outcome: allow }
`);
    expect(r).toEqual({ passed: ['steps'], failed: [] });
  });
});

describe('proxy on a call step: a tool the server did not list', () => {
  it('unlisted: true reads as tool.pin "unlisted" and pins nothing; false is an ordinary call', async () => {
    const r = await run(`cases:
  - name: unlisted
    call: { call: { name: delete_all }, server: { name: files } }
    proxy: { unlisted: true }
    expect: { outcome: deny, findings: [ { policy: probe, rule: unlisted } ], absent: [ { rule: first-seen } ] }
  - name: listed
    call: { call: { name: read }, server: { name: files }, tool: { name: read } }
    proxy: { unlisted: false }
    expect: { outcome: allow, findings: [ { rule: first-seen } ], absent: [ { rule: unlisted } ] }
  - name: no proxy
    call: { call: { name: read }, server: { name: files } }
    expect: { outcome: allow, findings: [] }
  - name: nothing is pinned for an unlisted tool
    maxPins: 1
    steps:
      - call: { call: { name: read }, server: { name: files } }
        proxy: { unlisted: true }
        expect: { outcome: deny }
      - call: { call: { name: read }, server: { name: files }, tool: { name: read } }
        expect: { findings: [ { rule: first-seen } ], absent: [ { rule: unavailable } ] }
`);
    expect(r).toEqual({ passed: ['unlisted', 'listed', 'no proxy', 'nothing is pinned for an unlisted tool'], failed: [] });
  });
});

describe('maxPins: the most pins the case\'s store holds', () => {
  it('past maxPins a new pin is refused (tool.pin "unavailable"); pins held still match', async () => {
    const r = await run(`cases:
  - name: a full store
    maxPins: 0
    call: { call: { name: read }, server: { name: files }, tool: { name: read } }
    expect: { requiresConsent: true, findings: [ { policy: probe, rule: unavailable } ], absent: [ { rule: first-seen } ] }
  - name: the default holds more than a case pins
    call: { call: { name: read }, server: { name: files }, tool: { name: read } }
    expect: { requiresConsent: false, findings: [ { rule: first-seen } ], absent: [ { rule: unavailable } ] }
  - name: two pins, then refused
    maxPins: 2
    steps:
      - call: { call: { name: a }, server: { name: files }, tool: { name: a } }
        expect: { findings: [ { rule: first-seen } ] }
      - call: { call: { name: b }, server: { name: files }, tool: { name: b } }
        expect: { findings: [ { rule: first-seen } ] }
      - call: { call: { name: c }, server: { name: files }, tool: { name: c } }
        expect: { requiresConsent: true, findings: [ { rule: unavailable } ] }
      - call: { call: { name: a }, server: { name: files }, tool: { name: a } }
        expect: { outcome: allow, findings: [] }
  - name: cases do not share a store
    maxPins: 1
    call: { call: { name: z }, server: { name: files }, tool: { name: z } }
    expect: { findings: [ { rule: first-seen } ] }
`);
    expect(r).toEqual({ passed: ['a full store', 'the default holds more than a case pins', 'two pins, then refused', 'cases do not share a store'], failed: [] });
  });
});

describe('proxy and maxPins are read strictly', () => {
  const call = 'call: { call: { name: read } }';
  const evaluate = 'evaluate: { result: { content: [] } }';
  const bad: Array<[string, string, RegExp]> = [
    ['a typo in proxy', `${evaluate}\n    proxy: { methd: sampling/createMessage }`, /:2: proxy \(of an evaluate\): unknown key "methd"; allowed keys: method, arguments/],
    ['method on a call', `${call}\n    proxy: { method: tools/call }`, /:2: proxy \(of a call\): unknown key "method"; allowed keys: unlisted/],
    ['unlisted on an evaluate', `${evaluate}\n    proxy: { unlisted: true }`, /:2: proxy \(of an evaluate\): unknown key "unlisted"/],
    ['no method', `${evaluate}\n    proxy: { arguments: {} }`, /:2: proxy\.method must be the MCP method/],
    ['an empty method', `${evaluate}\n    proxy: { method: "" }`, /:2: proxy\.method must be/],
    ['arguments not a mapping', `${evaluate}\n    proxy: { method: sampling/createMessage, arguments: [ none ] }`, /:2: proxy\.arguments must be a mapping/],
    ['unlisted not a boolean', `${call}\n    proxy: { unlisted: "yes" }`, /:2: proxy\.unlisted must be true or false/],
    ['unlisted with a definition', `call: { call: { name: read }, tool: { name: read } }\n    proxy: { unlisted: true }`, /:2: proxy\.unlisted: the proxy sends no tool definition/],
    ['proxy not a mapping', `${call}\n    proxy: true`, /:2: proxy must be a mapping such as \{ unlisted: true \}/],
    ['proxy beside steps', `proxy: { unlisted: true }\n    steps: [ { ${call} } ]`, /:2: a case with steps puts evaluate, call, expect and proxy in its steps/],
    ['maxPins in a step', `steps:\n      - ${call}\n        maxPins: 1`, /:4 \(step 1 of case .*\): unknown key "maxPins"/],
    ['a negative maxPins', `maxPins: -1\n    ${call}`, /:2: maxPins must be a whole number from 0/],
    ['a fractional maxPins', `maxPins: 1.5\n    ${call}`, /:2: maxPins must be a whole number/],
    ['a string maxPins', `maxPins: "3"\n    ${call}`, /:2: maxPins must be a whole number/],
    ['a huge maxPins', `maxPins: 1e12\n    ${call}`, /:2: maxPins must be a whole number/],
  ];
  it.each(bad)('%s is a load error naming file and line', async (_what, body, message) => {
    const err = await load(`cases:\n  - name: x\n    ${body}\n`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TestLoadError);
    expect((err as Error).message).toMatch(/t\d+\.test\.yaml:/);
    expect((err as Error).message).toMatch(message);
  });
});
