import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loggerOptions, TurnBatchedDestination } from '../../src/logger.js';

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
      "import { loggerOptions, TurnBatchedDestination } from './src/logger.ts';",
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
