/**
 * Run in a child process with a small heap (see test/hostile/classes.test.ts):
 * sends every route that scans for repeated names or unsafe numbers its
 * pointer bomb (a long member name above many occurrences) through the real
 * app, and prints one JSON line per request with the status and the heap
 * growth. A scan that keeps one copy of the long path per occurrence runs
 * this process out of memory instead.
 */
import { testApp } from './app.js';

const K = 'io.modelcontextprotocol/trust-annotations';
const BODY = Number(process.env.BOMB_BYTES ?? 2_000_000);
const name = 'n'.repeat(BODY / 4);
const repeats = Math.floor((BODY - name.length) / 6);
const dup = `{"${name}":{${'"a":1,'.repeat(repeats - 1)}"a":1}}`;
const unsafe = `{"${name}":[${new Array(Math.floor((BODY - name.length) / 19)).fill('9007199254740993.0').join(',')}]}`;
const ref = `{"type":"data-class.v1","digest":"sha256:${'0'.repeat(64)}","canonicalization":"jcs/rfc8785","ref":"r"}`;
const withRef = `{"_meta":{"${K}":{"evidenceRef":${ref}}},"content":[]}`;

const cases: Array<{ label: string; url: string; text: string }> = [
  { label: 'evaluate: evidence record, repeated names', url: '/v1/evaluate', text: `{"result":${withRef},"evidence":[{"ref":"r","record":${dup}}]}` },
  { label: 'evaluate: evidence record, unsafe numbers', url: '/v1/evaluate', text: `{"result":${withRef},"evidence":[{"ref":"r","record":${unsafe}}]}` },
  { label: 'evaluate: omitUnmodifiedResult', url: '/v1/evaluate', text: `{"result":{"content":[],"structuredContent":${dup}},"options":{"omitUnmodifiedResult":true}}` },
  { label: 'digest: repeated names', url: '/v1/digest', text: `{"record":${dup},"canonicalization":"jcs/rfc8785"}` },
  { label: 'digest: unsafe numbers', url: '/v1/digest', text: `{"record":${unsafe},"canonicalization":"cbor/rfc8949"}` },
  { label: 'interceptor', url: '/v1/interceptors/docker-mcp-gateway', text: `{"content":[],"structuredContent":${dup}}` },
];

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_BODY_LIMIT: String(2 * BODY) });
for (const c of cases) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const r = await t.app.inject({ method: 'POST', url: c.url, payload: c.text, headers: { 'content-type': 'application/json' } });
  // No collection in between: what the request allocated is still on the heap (or was collected as garbage it made).
  const growth = process.memoryUsage().heapUsed - before;
  let detail = '';
  try {
    const j = JSON.parse(r.body) as { evidence?: Array<{ status: string }>; code?: string; resultOmitted?: boolean; content?: unknown };
    detail = j.evidence?.map((e) => e.status).join(',') ?? j.code ?? (j.content !== undefined ? 'replaced' : '');
    if (j.resultOmitted === true) detail = 'omitted';
  } catch {
    detail = r.body === '' ? 'empty' : 'not JSON';
  }
  process.stdout.write(JSON.stringify({ label: c.label, status: r.statusCode, bytes: Buffer.byteLength(c.text), growth, detail }) + '\n');
}
await t.close();
