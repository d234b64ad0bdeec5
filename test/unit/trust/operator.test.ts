/**
 * The servers file (TRUSTGATE_SERVERS, docs/behaviour/operator.md): read with the policies, every key checked, `"*"`
 * for servers without an entry, and reread by a reload; what policies then see as `tool.hints` and `tool.declared`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadPolicyDir, PolicyLoadError } from '../../../src/policy/load.js';
import { PolicyStore } from '../../../src/policy/reload.js';
import { parseServersText } from '../../../src/trust/operator.js';

const SHIPPED = fileURLToPath(new URL('../../../policies', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tg-servers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the servers file', () => {
  it('gives a server its own entry, else "*", and "*" to requests that name no server', () => {
    const e = parseServersText('"*": { hints: defaults }\nfiles: { hints: declared }\n');
    expect(e.entryFor('files')).toEqual({ hints: 'declared' });
    expect(e.entryFor('other')).toEqual({ hints: 'defaults' });
    expect(e.entryFor('')).toEqual({ hints: 'defaults' });
    expect(e.entryFor(undefined)).toEqual({ hints: 'defaults' });
    expect(parseServersText('{}').entryFor('x')).toBeUndefined();
  });

  it('stops start-up naming the file and the key when a key is unknown or the file does not parse', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'files: { hints: declared, trust: full }\n');
    await expect(loadPolicyDir(SHIPPED, bad)).rejects.toThrow(PolicyLoadError);
    await expect(loadPolicyDir(SHIPPED, bad)).rejects.toThrow(new RegExp(`${bad}.*unknown key "trust" at /files`));
    writeFileSync(bad, '{ "files": ');
    await expect(loadPolicyDir(SHIPPED, bad)).rejects.toThrow(/does not parse/);
    writeFileSync(bad, 'files: { hints: believe }\n');
    await expect(loadPolicyDir(SHIPPED, bad)).rejects.toThrow(/\/files\/hints/);
    await expect(loadPolicyDir(SHIPPED, join(dir, 'missing.json'))).rejects.toThrow(/servers file .*missing\.json/);
  });

  it('is reread by a reload, and one that fails keeps the entries in force', async () => {
    const path = join(dir, 'servers.json');
    writeFileSync(path, JSON.stringify({ files: { hints: 'declared' } }));
    const store = new PolicyStore(SHIPPED, undefined, path);
    const first = await store.load();
    expect(first.servers?.entryFor('files')).toEqual({ hints: 'declared' });
    writeFileSync(path, JSON.stringify({ files: { labels: { untrusted: true } } }));
    const again = await store.reload();
    expect(again.ok && again.changed).toBe(true);
    expect(store.current?.servers?.entryFor('files')).toEqual({ labels: { untrusted: true } });
    writeFileSync(path, JSON.stringify({ files: { labels: { hostile: true } } }));
    const failed = await store.reload();
    expect(failed.ok).toBe(false);
    expect(store.current?.servers?.entryFor('files')).toEqual({ labels: { untrusted: true } });
  });
});
