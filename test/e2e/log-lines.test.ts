/**
 * Contract section 9 (v2): every decision line is one whole JSON object on a
 * line of its own, however many worker processes write and however large
 * the decision. Four workers write decisions of about 100 KB each at once
 * to one stdout pipe (a pipe takes a write whole only up to PIPE_BUF, 4096
 * bytes): every line must parse, none may pass 64 KiB, and a decision too
 * large for a line is summarized (its first findings and the count of the
 * rest), never cut.
 */
import { describe, expect, it } from 'vitest';
import { serviceStarter } from '../helpers/process.js';
import { call, waitFor } from '../helpers/http.js';

const K = 'io.modelcontextprotocol/trust-annotations';
const start = serviceStarter();

describe('decision log with 4 worker processes', () => {
  it('keeps every line whole and within 64 KiB while 4 workers write 100 KB decisions at once', async () => {
    // Overload shedding (503) is not what this judges: on a small machine four workers and the client share the cores.
    const s = await start({ TRUSTGATE_WORKERS: '4', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
    // 1,000 untrusted blocks: 1,000 spotlight findings, a decision line of about 110 KB unsummarized.
    const body = { result: { _meta: { [K]: { untrusted: true } }, content: Array.from({ length: 1000 }, () => ({ type: 'text', text: 'x' })) } };
    const N = 120;
    let sent = 0;
    const client = async (): Promise<void> => {
      while (sent < N) {
        sent += 1;
        expect((await call(s, 'POST', '/v1/evaluate', body)).status).toBe(200);
      }
    };
    await Promise.all(Array.from({ length: 12 }, client));
    await waitFor(() => s.stdout().split('"msg":"decision"').length - 1 >= N, 30_000, `${N} decision lines`);

    const raw = s.stdout().split('\n').filter((l) => l !== '' && !l.startsWith('> '));
    const unparseable = raw.filter((l) => {
      try {
        JSON.parse(l);
        return false;
      } catch {
        return true;
      }
    });
    expect(unparseable.length, `lines that are not one JSON object: ${unparseable.map((l) => l.slice(0, 80)).join(' | ')}`).toBe(0);
    expect(raw.filter((l) => Buffer.byteLength(l) > 64 * 1024)).toEqual([]);
    const decisions = raw.map((l) => JSON.parse(l)).filter((l) => l.msg === 'decision');
    expect(decisions).toHaveLength(N);
    // Written by all four workers, every one summarized rather than cut.
    expect(new Set(decisions.map((d) => d.pid)).size).toBe(4);
    for (const d of decisions) {
      expect(d.findingsOmitted).toBeGreaterThan(0);
      // 1,000 spotlight findings, more if the machine is so loaded that the CEL budget runs out (rules left count as matched).
      expect(d.findings.length + d.findingsOmitted).toBeGreaterThanOrEqual(1000);
      expect(d.blockCount).toBe(1000);
    }
    expect(await s.stop()).toBe(0);
  }, 120_000);
});
