/**
 * The real-server corpus (test/corpus, five official MCP reference servers)
 * through the shipped policies with the section 16 rules: results of tools
 * that reach the open world (no `openWorldHint: false`; the corpus keeps the
 * tool name only, so MCP's default `true` applies) are labelled untrusted,
 * fenced and carry the label in their claim; the same results from a tool
 * declared closed-world are left as they are. The content detectors fire
 * on none of them: the corpus holds no credential and no personal data, so
 * every finding of `mask-secrets` or `label-pii` would be a false positive.
 * The bound asserted: at most 2% of the results (the figure today is 0 of
 * 64, docs/behaviour/labels-and-detectors.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRUST_KEY } from '../../src/mcp/meta-key.js';
import { believingServersFile, post, testApp, type TestApp } from '../helpers/app.js';
import { loadCorpus, type CorpusFixture } from './load.js';

const corpus = loadCorpus();
let t: TestApp;
beforeAll(async () => {
  // This file is about decisions, not overload: the event-loop guard stays off so a busy machine cannot turn answers into 503s.
  // The tools' own openWorldHint decides here: the operator believes the servers (docs/behaviour/operator.md).
  t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_SERVERS: believingServersFile() });
});
afterAll(() => t.close());

type Obj = Record<string, any>;
const DETECTOR_RULES = new Set(['mask-secrets', 'label-pii']);
const NEW_RULES = new Set(['untrusted-open-world-result', ...DETECTOR_RULES]);
const cases = corpus.map((f) => [f.file, f] as [string, CorpusFixture]);

/** Whether the shipped audience policy drops block `b` for the model. */
const notForModel = (b: Obj) => Array.isArray(b.annotations?.audience) && b.annotations.audience.length > 0 && !b.annotations.audience.includes('assistant');

describe('open-world results (the default) are labelled untrusted and fenced', () => {
  it.each(cases)('%s', async (_file, f) => {
    const r = await post(t.app, '/v1/evaluate', { result: f.result, protocolVersion: f.protocolVersion, tool: { name: f.tool }, server: { name: f.server } });
    expect(r.status, r.body).toBe(200);
    const d = r.json;
    expect(d.labels.untrusted).toBe(true);
    expect(d.findings).toContainEqual(expect.objectContaining({ policy: 'labels', rule: 'untrusted-open-world-result', effect: 'label', applied: true }));
    expect(d.modified).toBe(true);
    expect(d.result._meta[TRUST_KEY].untrusted).toBe(true);
    let out = 0;
    (f.result.content as Obj[]).forEach((b, i) => {
      const block = d.blocks[i];
      expect(block.untrusted).toBe(true);
      expect(block.actions[0]).toBe('label');
      if (notForModel(b)) return;
      const forwarded = d.result.content[out++];
      if (b.type === 'text') {
        expect(block.actions).toEqual(['label', 'spotlight']);
        expect(forwarded.text).toMatch(/^<untrusted-content boundary="[0-9a-f]{32}">\n/);
        expect(forwarded.text).toContain(b.text);
      }
    });
    // The session would take the label in: untrusted content was forwarded.
    expect(d.findings.filter((x: Obj) => DETECTOR_RULES.has(x.rule))).toEqual([]);
  });
});

describe('closed-world results are left as they are', () => {
  it.each(cases)('%s', async (_file, f) => {
    const r = await post(t.app, '/v1/evaluate', {
      result: f.result,
      protocolVersion: f.protocolVersion,
      tool: { name: f.tool, annotations: { openWorldHint: false } },
      server: { name: f.server },
    });
    expect(r.status, r.body).toBe(200);
    const d = r.json;
    expect(d.findings.filter((x: Obj) => NEW_RULES.has(x.rule))).toEqual([]);
    expect(d.labels).toEqual({ sensitive: null, untrusted: null });
    expect(d.masked).toEqual([]);
    if (!(f.result.content as Obj[]).some(notForModel)) {
      expect(d.modified).toBe(false);
      expect(d.result).toEqual(f.result);
    }
  });
});

describe('false positives of the detectors on the corpus', () => {
  it('mask-secrets and label-pii fire on at most 1% of the real results', async () => {
    const fired: string[] = [];
    for (const f of corpus) {
      const r = await post(t.app, '/v1/evaluate', { result: f.result, protocolVersion: f.protocolVersion, tool: { name: f.tool, annotations: { openWorldHint: false } } });
      expect(r.status, r.body).toBe(200);
      for (const x of r.json.findings as Obj[]) if (DETECTOR_RULES.has(x.rule)) fired.push(`${f.file} ${x.rule}`);
    }
    expect(corpus.length).toBeGreaterThanOrEqual(50);
    expect(fired.length / corpus.length, fired.join('\n')).toBeLessThanOrEqual(0.01);
  });
});
