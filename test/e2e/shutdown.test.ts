/**
 * Graceful shutdown (contract section 1): SIGTERM in the middle of 200
 * concurrent evaluations stops accepting, finishes what was accepted, and
 * exits 0. Every request that got an answer got all of it; the rest were
 * refused at the connection, never cut off mid-answer.
 */
import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { isRunning, startService } from '../helpers/process.js';

const body = JSON.stringify({
  result: { content: Array.from({ length: 50 }, (_, i) => ({ type: 'text', text: `block ${i} `.repeat(20) })) },
  context: { destination: 'local' },
});

type Outcome = { kind: 'answer'; status: number; body: string } | { kind: 'refused'; code: string };

function send(port: number): Promise<Outcome> {
  return new Promise((resolve) => {
    // One connection per request, so each is on the wire before the signal.
    const req = httpRequest(
      { host: '127.0.0.1', port, path: '/v1/evaluate', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (data += d));
        res.on('end', () => resolve({ kind: 'answer', status: res.statusCode ?? 0, body: data }));
        res.on('error', () => resolve({ kind: 'answer', status: res.statusCode ?? 0, body: data + '\u0000cut' }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ kind: 'refused', code: err.code ?? err.message }));
    req.end(body);
  });
}

describe('graceful shutdown', () => {
  it('finishes every accepted evaluation and exits 0 on SIGTERM mid-way', async () => {
    const s = await startService({ LOG_LEVEL: 'warn' });
    if (!isRunning(s)) throw new Error(`service did not start: ${s.stderr}`);
    const all: Array<Promise<Outcome>> = [];
    let signalled = false;
    for (let i = 0; i < 200; i++) {
      const p = send(s.port);
      all.push(p);
      void p.then(() => {
        if (!signalled) {
          signalled = true;
          process.kill(s.pid, 'SIGTERM');
        }
      });
    }
    const outcomes = await Promise.all(all);
    const code = await s.exited;
    expect(signalled).toBe(true);
    expect(code).toBe(0);
    const answers = outcomes.filter((o): o is Extract<Outcome, { kind: 'answer' }> => o.kind === 'answer');
    expect(answers.length).toBeGreaterThan(1);
    for (const a of answers) {
      // 200 with a whole decision, or 503 from a request that arrived while closing: both complete.
      expect([200, 503]).toContain(a.status);
      const parsed = JSON.parse(a.body);
      if (a.status === 200) expect(parsed.decisionId).toMatch(/^[0-9a-f-]{36}$/);
    }
    for (const o of outcomes) if (o.kind === 'refused') expect(['ECONNREFUSED', 'ECONNRESET', 'EPIPE']).toContain(o.code);
    expect(s.stderr()).not.toMatch(/Error|fatal/i);
  });
});
