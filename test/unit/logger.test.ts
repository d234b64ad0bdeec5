import { execFileSync } from 'node:child_process';
import fs, { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { decisionLineWriter, loggerOptions } from '../../src/logger.js';
import { TurnBatchedDestination } from '../../src/main/log-destinations.js';

let dir: string;
let file: string;
let fd: number;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trustgate-log-'));
  file = join(dir, 'out.log');
  fd = openSync(file, 'w');
});
afterEach(() => {
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
});

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const lines = () => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));

describe('TurnBatchedDestination', () => {
  it('writes the lines of one event-loop turn at its end, whole and in order', async () => {
    const log = pino(loggerOptions('info'), new TurnBatchedDestination(fd));
    for (let i = 0; i < 50; i++) log.info({ i }, 'decision');
    expect(readFileSync(file, 'utf8')).toBe(''); // nothing yet: the turn is not over
    await turn();
    expect(lines().map((l) => l.i)).toEqual([...Array(50).keys()]);
    log.warn({ i: 50 }, 'next turn');
    await turn();
    expect(lines().map((l) => l.i)).toHaveLength(51);
  });

  it('flushSync writes what is pending at once (the exit path)', () => {
    const dest = new TurnBatchedDestination(fd);
    const log = pino(loggerOptions('info'), dest);
    log.info({ n: 1 }, 'a');
    log.error({ n: 2 }, 'b');
    dest.flushSync();
    expect(lines().map((l) => [l.msg, l.n])).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
  });

  it('with a write limit (processes sharing stdout), writes whole lines in writes of at most that many bytes', async () => {
    const writes: string[] = [];
    const spy = vi.spyOn(fs, 'writeSync').mockImplementation(((_fd: number, data: string | Uint8Array) => {
      const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
      writes.push(text);
      return Buffer.byteLength(text);
    }) as typeof fs.writeSync);
    try {
      const dest = new TurnBatchedDestination(fd, 4096);
      const sent = Array.from({ length: 30 }, (_, i) => `{"i":${i},"pad":"${'é'.repeat(100 + i * 37)}"}\n`);
      const long = `{"long":"${'x'.repeat(6000)}"}\n`;
      for (const line of [...sent.slice(0, 20), long, ...sent.slice(20)]) dest.write(line);
      await turn();
      expect(writes.join('')).toBe([...sent.slice(0, 20), long, ...sent.slice(20)].join(''));
      expect(writes.length).toBeGreaterThan(3);
      for (const w of writes) {
        expect(w.endsWith('\n')).toBe(true);
        // Only a line that is longer than the limit by itself goes out in a longer write.
        if (w !== long) expect(Buffer.byteLength(w)).toBeLessThanOrEqual(4096);
      }
      expect(writes).toContain(long);

      writes.length = 0;
      const unlimited = new TurnBatchedDestination(fd);
      for (const line of sent) unlimited.write(line);
      await turn();
      expect(writes).toEqual([sent.join('')]);
    } finally {
      spy.mockRestore();
    }
  });

  it('keeps the process up when the log cannot be written', async () => {
    const dest = new TurnBatchedDestination(fd);
    closeSync(fd);
    dest.write('{"msg":"lost"}\n');
    await turn();
    fd = openSync(file, 'r'); // for afterEach
  });
});

describe('TurnBatchedDestination at exit', () => {
  it('writes the lines logged just before process.exit()', () => {
    const script = [
      "import pino from 'pino';",
      "import { loggerOptions } from './src/logger.ts';",
      "import { TurnBatchedDestination } from './src/main/log-destinations.ts';",
      "const log = pino(loggerOptions('info'), new TurnBatchedDestination(1));",
      "log.info({ n: 1 }, 'before exit');",
      'process.exit(0);',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
    });
    expect(out.split('\n').filter(Boolean).map((l) => JSON.parse(l).msg)).toEqual(['before exit']);
  });
});

describe('decisionLineWriter', () => {
  /** A destination that keeps what is written. */
  const capture = () => {
    const out: string[] = [];
    return { out, write: (s: string) => void out.push(s) };
  };
  const entry = {
    decisionId: 'd-1',
    outcome: 'warn',
    policyRevision: 'sha256:ab',
    protocolVersion: '2025-11-25',
    modified: true,
    requiresConsent: false,
    labels: { sensitive: true, untrusted: null },
    findings: [{ policy: 'untrusted', rule: 'spotlight-untrusted', mode: 'enforce', effect: 'spotlight', pointer: '/content/1', applied: true, error: false }],
    evidence: [{ pointer: '/_meta/x~1y/evidenceRef', type: 'data-class.v1', status: 'verified' }],
    tool: 'quote " backslash \\ tab \t lone \ud800 naïve 🙂',
    server: null,
    blockCount: 5,
    durationMs: 0.042,
  };

  it("writes exactly the line logger.info(entry, 'decision') writes, without going through it", () => {
    vi.useFakeTimers({ now: 1_800_000_000_123 });
    try {
      const ours = capture();
      const theirs = capture();
      const a = pino(loggerOptions('info'), ours);
      const b = pino(loggerOptions('info'), theirs);
      const info = vi.spyOn(a, 'info');
      decisionLineWriter(a)(entry);
      b.info(entry, 'decision');
      expect(info).not.toHaveBeenCalled();
      // Byte for byte, except that a lone surrogate comes out escaped (pino writes it raw, which is not UTF-8).
      expect(ours.out).toEqual(theirs.out.map((l) => l.replace('\ud800', '\\ud800')));
      expect(JSON.parse(ours.out[0]!)).toMatchObject({ level: 30, time: 1_800_000_000_123, service: 'trustgate', msg: 'decision', ...entry });
    } finally {
      vi.useRealTimers();
    }
  });

  it('leaves the line to pino when the logger rewrites lines (redaction, mixins)', () => {
    for (const extra of [{ redact: ['tool'] }, { mixin: () => ({ extra: 1 }) }, { formatters: { log: (o: object) => ({ ...o, x: 1 }) } }]) {
      const dest = capture();
      const log = pino({ ...loggerOptions('info'), ...extra }, dest);
      const info = vi.spyOn(log, 'info');
      decisionLineWriter(log)(entry);
      expect(info).toHaveBeenCalledOnce();
      expect(dest.out).toHaveLength(1);
    }
  });
});
