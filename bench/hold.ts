/**
 * `npm run bench:hold`: how long one decision on a large crafted result holds
 * the process (a decision is synchronous: in the gateway, every other
 * server's messages wait that long), against the decision's budget
 * (TRUSTGATE_EVAL_BUDGET_MS, default 250 ms). In process, shipped policies,
 * memory stores, with a session (its values read) and without; 7 MiB of text
 * per input (the body limit is 8 MiB), or the most blocks a result may hold.
 *
 * Each result is parsed from its JSON text, as the HTTP API and the proxy
 * read it. Each input is decided once to warm up, then BENCH_ROUNDS times (default 3);
 * the median is shown, and its ratio to the budget (target: about 1; what is
 * past it is the work no deadline bounds: checking the result's shape,
 * reading its claims, joining its strings).
 */
import { randomBytes } from 'node:crypto';
import { createDecisionCore } from '../src/decision/core.js';
import { loadConfig } from '../src/config.js';
import { PolicyStore } from '../src/policy/reload.js';
import { MemorySessionStore } from '../src/session/memory.js';
import { MemoryFlowStore } from '../src/session/flows.js';
import { prose } from './fixtures.js';
import { envNumber, machine, median } from './lib.js';

const ROUNDS = envNumber('BENCH_ROUNDS', 3);
const config = loadConfig({ TRUSTGATE_POLICY_DIR: new URL('../policies', import.meta.url).pathname });
const store = new PolicyStore(config.policyDir);
await store.load();
const core = createDecisionCore({
  config,
  policies: () => store.current,
  sessions: new MemorySessionStore({ maxSessions: 10_000, maxPins: 100, ttlMs: 600_000 }),
  flows: new MemoryFlowStore({ maxValues: config.maxFlowValues, ttlMs: 600_000 }),
});

const MB = 7 * 1024 * 1024;

/** 4 MiB less a little (within BINARY_READ_MAX): random bytes with a line of text every 4 KiB, as an archive of files is. */
function binaryBlob(): string {
  const bytes = randomBytes(4 * 1024 * 1024 - 64);
  for (let at = 0; at + 100 < bytes.length; at += 4096) bytes.write(`${prose(at, 80)}\n`, at, 'latin1');
  return bytes.toString('base64');
}
const inputs: Record<string, () => Record<string, unknown>> = {
  prose: () => ({ content: [{ type: 'text', text: prose(1, MB) }] }),
  'one-digit groups': () => ({ content: [{ type: 'text', text: '4 5 '.repeat(MB / 4) }] }),
  'bare at-signs': () => ({ content: [{ type: 'text', text: 'a@b '.repeat(MB / 4) }] }),
  'marked words': () => ({ content: [{ type: 'text', text: 'ab-cd.ef '.repeat(MB / 9) }] }),
  // One rule's keyword and an assignment, again and again: the windows around its keywords run into one another.
  'URL-like words': () => ({ content: [{ type: 'text', text: 'a://b '.repeat(MB / 6) }] }),
  'escapes and confusables': () => ({ content: [{ type: 'text', text: '%41KIA\u0430\u200b%EF%BC%AB '.repeat(MB / 18) }] }),
  'escapes that are no UTF-8': () => ({ content: [{ type: 'text', text: '%FF '.repeat(MB / 4) }] }),
  'keyword lines': () => ({ content: [{ type: 'text', text: 'sourcegraph_token = "0123456789abcdef0123456789abcdef01234567" '.repeat(MB / 64) }] }),
  // Base64 runs that each decode to text and are read again as it (credentials).
  'base64 of text': () => ({ content: [{ type: 'text', text: `${Buffer.from('api_key = "Zx9Lm2Pq8Rt5Vw3Yb7Nc" and more text here').toString('base64')} `.repeat(MB / 69) }] }),
  'one base64 run of text': () => ({ content: [{ type: 'text', text: Buffer.from(prose(2, (MB / 4) * 3)).toString('base64') }] }),
  '10,000 blocks': () => ({ content: Array.from({ length: config.maxBlocks }, (_, i) => ({ type: 'text', text: prose(i, Math.floor(MB / config.maxBlocks)) })) }),
  // Links whose name, title and description are each one token: every seam between them is read, at its longest.
  '10,000 links of tokens': () => ({
    content: Array.from({ length: config.maxBlocks }, (_, i) => {
      const token = (k: number) => Buffer.from(prose(i + k, 180)).toString('base64url').slice(0, Math.floor(MB / config.maxBlocks / 3) - 8);
      return { type: 'resource_link', uri: `file:///f/${i}`, name: token(0), title: token(1), description: token(2) };
    }),
  }),
  // The largest binary blob whose stretches of text are read (BINARY_READ_MAX), random bytes and lines of text among them.
  'binary blob of 4 MiB': () => ({ content: [{ type: 'resource', resource: { uri: 'file:///backup.tar', mimeType: 'application/x-tar', blob: binaryBlob() } }] }),
  'structuredContent rows': () => ({ content: [], structuredContent: { rows: Array.from({ length: 70_000 }, (_, i) => ({ id: i, t: prose(i, 90) })) } }),
};

let n = 0;
process.stdout.write(`${machine()}\nbudget ${config.evalBudgetMs} ms; median of ${ROUNDS} decisions after one warm-up\n`);
process.stdout.write(`${'input'.padEnd(24)} ${'session'.padEnd(8)} ${'ms'.padStart(6)}  ${'× budget'.padStart(8)}  outcome\n`);
for (const [name, make] of Object.entries(inputs)) {
  for (const session of [false, true]) {
    const times: number[] = [];
    let outcome = '';
    for (let r = 0; r <= ROUNDS; r++) {
      // As every binding hands it over: parsed from its JSON text (flat strings; a string built by concatenation, as the
      // fixtures build them, is a rope that the first read flattens, a cost no message read from a socket or a pipe has).
      const result = JSON.parse(JSON.stringify(make())) as Record<string, unknown>;
      const t0 = performance.now();
      const d = await core.evaluateResult({
        request: { result, tool: { name: 'read' }, server: { name: 'files' }, ...(session ? { session: { id: `hold-${n++}` } } : {}) },
      });
      if (r > 0) times.push(performance.now() - t0);
      outcome = d.outcome;
    }
    const ms = median(times);
    process.stdout.write(`${name.padEnd(24)} ${(session ? 'yes' : 'no').padEnd(8)} ${ms.toFixed(0).padStart(6)}  ${(ms / config.evalBudgetMs).toFixed(2).padStart(8)}  ${outcome}\n`);
  }
}
