/**
 * `trustgate proxy` options and its --config file (src/bindings/proxy/
 * options.ts), and how an upstream failure is put in words (upstream.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { parseProxyArgs, UsageError } from '../../../src/bindings/proxy/options.js';
import { describeFailure, storeName } from '../../../src/bindings/proxy/upstream.js';

const dir = mkdtempSync(join(tmpdir(), 'tg-proxy-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (body: unknown): string => {
  const p = join(dir, `c-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(p, typeof body === 'string' ? body : JSON.stringify(body));
  return p;
};

describe('operator entries in the proxy options', () => {
  it('--hints and --labels are the one server\'s entry; --destination is read', () => {
    const a = parseProxyArgs(['--hints', 'declared', '--labels', 'untrusted,sensitive', '--destination', 'local', 'srv'], {});
    expect(a.servers[0]!.operator).toEqual({ hints: 'declared', labels: { untrusted: true, sensitive: true } });
    expect(a.destination).toBe('local');
    expect(parseProxyArgs(['srv'], {}).servers[0]!.operator).toBeUndefined();
    expect(() => parseProxyArgs(['--hints', 'trusted', 'srv'], {})).toThrow(/--hints is declared or defaults/);
    expect(() => parseProxyArgs(['--labels', 'secret', 'srv'], {})).toThrow(/--labels/);
  });

  it('a gateway server\'s "trustgate" member is its entry; an unknown key is refused, naming it and the server', () => {
    const ok = parseProxyArgs(['--config', file({ mcpServers: { a: { command: 'x', trustgate: { hints: 'declared', tools: { t: { annotations: { openWorldHint: false } } } } }, b: { command: 'y' } } })], {});
    expect(ok.servers[0]!.operator).toEqual({ hints: 'declared', tools: { t: { annotations: { openWorldHint: false } } } });
    expect(ok.servers[1]!.operator).toBeUndefined();
    expect(() => parseProxyArgs(['--config', file({ mcpServers: { a: { command: 'x', trustgate: { hint: 'declared' } } } })], {})).toThrow(/server "a": "trustgate": unknown key "hint"/);
    expect(() => parseProxyArgs(['--config', file({ mcpServers: { a: { command: 'x', trustgate: { tools: { t: { annotations: { readOnly: true } } } } } } })], {})).toThrow(/unknown key "readOnly"/);
  });

  it('server keys whose tool names could meet (a + _send, a_ + send) are refused with both keys named', () => {
    expect(() => parseProxyArgs(['--config', file({ mcpServers: { a: { command: 'x' }, a_: { command: 'y' } } })], {})).toThrow(/servers "a" and "a_"/);
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z][a-z_]{0,6}$/).filter((k) => !k.includes('__') && !k.endsWith('_')), (k) => {
        const keys = [k, `${k}_`];
        expect(() => parseProxyArgs(['--config', file({ mcpServers: Object.fromEntries(keys.map((n) => [n, { command: 'x' }])) })], {})).toThrow(UsageError);
      }),
      { numRuns: 20 },
    );
  });
});

describe('trustgate proxy options', () => {
  it('the command starts at -- or at the first word that is not an option', () => {
    for (const argv of [['--', 'npx', '-y', 'srv', '--flag'], ['npx', '-y', 'srv', '--flag'], ['--policies', 'p', 'npx', '-y', 'srv', '--flag']]) {
      const a = parseProxyArgs(argv, {});
      expect(a.servers).toEqual([expect.objectContaining({ command: 'npx', args: ['-y', 'srv', '--flag'] })]);
    }
  });

  it('pins are kept under --name, else the command line or the URL, never what the server reports', () => {
    expect(parseProxyArgs(['--name', 'files', 'srv'], {}).servers[0]!.name).toBe('files');
    expect(parseProxyArgs(['srv', 'a'], {}).servers[0]!.name).toBe('srv a');
    expect(parseProxyArgs(['--upstream', 'https://x.example/mcp?q=1'], {}).servers[0]!.name).toBe('https://x.example/mcp');
  });

  it('--session, else TRUSTGATE_PROXY_SESSION; --store, --poll-us, --session-ttl and --user-audience are read', () => {
    expect(parseProxyArgs(['srv'], { TRUSTGATE_PROXY_SESSION: 'host-1' }).session).toBe('host-1');
    expect(parseProxyArgs(['--session', 'mine', 'srv'], { TRUSTGATE_PROXY_SESSION: 'host-1' }).session).toBe('mine');
    const a = parseProxyArgs(['--store', 'redis://h:1/2', '--poll-us', '0', '--session-ttl', '600', '--user-audience', 'srv'], {});
    expect(a).toMatchObject({ store: 'redis://h:1/2', pollUs: '0', sessionTtl: '600', userAudience: true });
  });

  it.each([
    [['--policies'], '--policies needs a value'],
    [['--policies', '--', 'srv'], '--policies needs a value'],
    [[], 'name the server to start'],
    [['--what', 'srv'], 'unknown option'],
    [['--upstream', 'ftp://x'], 'must be an http or https URL'],
    [['--upstream', 'https://x', 'srv'], 'give one of'],
    [['--header', 'A: b', 'srv'], '--header needs --upstream'],
    [['--listen', '127.0.0.1:1', 'srv'], '--listen needs --config'],
    [['--name', 'a', '--name', 'b', 'srv'], 'given twice'],
  ])('%j is a usage error: %s', (argv, message) => {
    expect(() => parseProxyArgs(argv as string[], {})).toThrow(UsageError);
    expect(() => parseProxyArgs(argv as string[], {})).toThrow(message);
  });

  it('any command line is read or refused with a usage error, never another error', () => {
    const word = fc.oneof(fc.constantFrom('--', '--policies', '--name', '--session', '--store', '--poll-us', '--session-ttl', '--upstream', '--header', '--config', '--listen', '--help', '--user-audience', '-x', 'srv', 'http://h/mcp', 'a: b', '127.0.0.1:80'), fc.string({ maxLength: 8 }));
    fc.assert(
      fc.property(fc.array(word, { maxLength: 8 }), (argv) => {
        try {
          parseProxyArgs(argv, {});
        } catch (err) {
          expect(err).toBeInstanceOf(UsageError);
          expect((err as Error).message).not.toContain('\n');
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('trustgate proxy --config', () => {
  it('reads servers of both kinds and the trustgate settings; a flag wins over the file', () => {
    const p = file({
      mcpServers: { fs: { command: 'npx', args: ['-y', 'fs'], env: { A: '1' } }, gh: { url: 'https://api.example/mcp', headers: { Authorization: 'Bearer t' } } },
      trustgate: { policies: '/p', store: 'memory', session: 's', pollUs: 0, sessionTtl: 3600, userAudience: true },
    });
    const a = parseProxyArgs(['--config', p, '--policies', '/mine'], { B: '2' });
    expect(a.gateway).toBe(true);
    expect(a).toMatchObject({ policies: '/mine', store: 'memory', session: 's', pollUs: '0', sessionTtl: '3600', userAudience: true });
    expect(a.servers[0]).toMatchObject({ name: 'fs', command: 'npx', args: ['-y', 'fs'], env: { A: '1', B: '2' } });
    expect(a.servers[1]).toMatchObject({ name: 'gh', headers: { authorization: 'Bearer t' } });
  });

  it.each([
    ['{', 'not JSON'],
    [{}, 'needs an object "mcpServers"'],
    [{ mcpServers: {} }, 'names no server'],
    [{ mcpServers: { 'a__b': { command: 'x' } } }, 'holds no "__"'],
    [{ mcpServers: { a: {} } }, 'needs "command"'],
    [{ mcpServers: { a: { command: 'x', args: [1] } } }, '"args" must be a list of strings'],
    [{ mcpServers: { a: { url: 'file:///x' } } }, 'must be an http or https URL'],
    [{ mcpServers: { a: { command: 'x' } }, trustgate: { what: 1 } }, 'unknown setting "trustgate.what"'],
  ])('%j is refused: %s', (body, message) => {
    expect(() => parseProxyArgs(['--config', file(body)], {})).toThrow(message);
  });

  it('a missing file says so', () => {
    expect(() => parseProxyArgs(['--config', join(dir, 'none.json')], {})).toThrow('no such file');
  });
});

describe('upstream failures in words', () => {
  it('an HTTP status, a refused connection, a missing command', () => {
    expect(describeFailure(new StreamableHTTPError(401, 'x'))).toMatch(/^HTTP 401 from the upstream/);
    expect(describeFailure(new StreamableHTTPError(500, 'x'))).toBe('HTTP 500 from the upstream');
    expect(describeFailure(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } }))).toBe('connection refused');
    expect(describeFailure(Object.assign(new Error('spawn x ENOENT'), { code: 'ENOENT' }), { name: 'x', command: 'x', args: [], env: {} })).toBe('command not found ("x")');
  });

  it('a store is named without its password', () => {
    expect(storeName('redis://user:secret@h:6379/3')).toBe('redis://h:6379/3');
    expect(storeName('memory')).toBe('memory');
  });
});
