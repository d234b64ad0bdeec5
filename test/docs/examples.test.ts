/**
 * Every example of the README and the docs is checked against the product
 * (CONTRIBUTING.md, "Examples in the docs", says how a block is marked):
 *
 * - `sh run` blocks run in bash against a service this test starts (the
 *   shipped policies, the memory store), with `localhost:8080` pointing at
 *   it and `trustgate` on the PATH; each HTTP answer must be below 400 (or
 *   the block's `status=`), and the `json answer` block after it must match
 *   the last answer, with `...` standing for what it leaves out;
 * - `sh not-run` blocks need what a test machine has not (a Docker engine,
 *   a global install, the MCP Inspector's Node 22): each `trustgate`
 *   command line in them, alone or as another program's arguments, must
 *   name a verb and flags that `trustgate <verb> --help` lists;
 * - policies and rules load, excerpts of the shipped set are what it ships,
 *   test cases pass under `trustgate test`, gateway and host configs and
 *   operator entries are read by the code that reads them;
 * - `sketch` blocks (a shape with `...` in it) must not parse, so that
 *   every example that could be checked is.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { parseProxyArgs } from '../../src/bindings/proxy/options.js';
import { compilePolicyFiles } from '../../src/policy/load.js';
import { checkOperatorEntry } from '../../src/trust/operator.js';
import { blocksOf, DOC_PAGES, KINDS, mismatch, mutants, type Block } from '../helpers/docs.js';
import { ROOT, startService, type Running } from '../helpers/process.js';
import { listeningGateway, EVERYTHING, type ListeningGateway } from '../helpers/mcp.js';

const CLI = join(ROOT, 'dist/cli.js');
const work = mkdtempSync(join(tmpdir(), 'trustgate-docs-'));
const SHIPPED = join(ROOT, 'policies');

const curl = spawnSync('sh', ['-c', 'command -v curl'], { encoding: 'utf8' }).stdout.trim();
if (curl === '' && process.env.TRUSTGATE_REQUIRE_CURL === '1') throw new Error('TRUSTGATE_REQUIRE_CURL=1 but curl is not on the PATH');
if (curl === '') console.warn('SKIPPED: the docs\' command lines (test/docs/examples.test.ts): no curl on the PATH (install the Debian package curl)');

// `trustgate` is the built CLI; `curl` is the real one, printing each answer's status after its body.
const bin = join(work, 'bin');
mkdirSync(bin);
writeFileSync(join(bin, 'trustgate'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`, { mode: 0o755 });
writeFileSync(join(bin, 'curl'), `#!/bin/sh\nexec "${curl}" -w '\\n@@status %{http_code}\\n' "$@"\n`, { mode: 0o755 });

const all = DOC_PAGES.map((page) => ({ page, blocks: blocksOf(page) }));

describe('every example block says what it is', () => {
  it('each sh, json and yaml block of README.md and docs/ carries a kind the test knows', () => {
    const unmarked = all.flatMap(({ blocks }) => blocks.filter((b) => !(KINDS[b.lang as keyof typeof KINDS] as readonly string[]).includes(b.kind)));
    expect(unmarked.map((b) => `${b.page}:${b.line} \`\`\`${b.lang} ${b.kind}`)).toEqual([]);
  });

  it('each page with examples has one checked against the running product, and an answer follows a command', () => {
    for (const { page, blocks } of all) {
      if (blocks.length === 0) continue;
      expect(blocks.some((b) => b.kind !== 'sketch' && b.kind !== 'not-run'), page).toBe(true);
      blocks.forEach((b, i) => {
        if (b.kind === 'answer') expect(blocks.slice(0, i).some((p) => p.kind === 'run'), `${page}:${b.line}: an answer with no command before it`).toBe(true);
      });
    }
  });
});

/** A service per page and profile, started when a page first needs it. */
type Profile = 'default' | 'token' | 'gateway';
const TOKEN = 'docs-example-token-8a7c3e1f0b9d4c2a';
const started: Array<{ stop(): Promise<unknown> }> = [];
afterAll(async () => {
  for (const s of started) await s.stop();
});

async function start(profile: Profile): Promise<{ port: number; env: Record<string, string> }> {
  if (profile === 'gateway') {
    // The page's gateway, over one real server, its token where the loopback gateway writes it.
    const runtime = mkdtempSync(join(work, 'run-'));
    const config = join(runtime, 'servers.json');
    writeFileSync(config, JSON.stringify({ mcpServers: { everything: { command: EVERYTHING[0], args: EVERYTHING.slice(1) } } }));
    // No token configured (whatever the machine's environment says), so the gateway makes one and writes it there.
    const g: ListeningGateway = await listeningGateway(config, [], { XDG_RUNTIME_DIR: runtime, TRUSTGATE_TOKEN: '', TRUSTGATE_TOKENS_FILE: '', TRUSTGATE_JWKS: '' });
    started.push(g);
    return { port: g.port, env: { XDG_RUNTIME_DIR: runtime } };
  }
  // The machine's own settings never decide what the docs' examples meet: no token unless the profile has one. Nor does
  // its load: a loaded run's requests are not shed (503) nor its decisions cut short by the time budget (the rules left
  // count as matched), which the pages' answers do not show.
  const env: Record<string, string> = { LOG_LEVEL: 'warn', TRUSTGATE_POLICY_DIR: SHIPPED, TRUSTGATE_TOKEN: profile === 'token' ? TOKEN : '', TRUSTGATE_TOKENS_FILE: '', TRUSTGATE_JWKS: '', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0', TRUSTGATE_EVAL_BUDGET_MS: '60000' };
  const s = await startService(env, [process.execPath, CLI, 'serve']);
  if (!('port' in s)) throw new Error(`the service did not start: ${s.stderr}`);
  started.push(s as Running);
  return { port: s.port, env: profile === 'token' ? { TRUSTGATE_TOKEN: TOKEN } : {} };
}

/** One answer a `run` block printed: the body and the HTTP status, or the output of a command that is not curl (status 0). */
interface Printed {
  body: string;
  status: number;
}

function runBlock(b: Block, port: number, env: Record<string, string>): { code: number | null; printed: Printed[]; stderr: string } {
  const script = (b.attrs.service === 'gateway' ? b.text.replaceAll('8931', String(port)) : b.text).replaceAll('localhost:8080', `127.0.0.1:${port}`).replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
  const r = spawnSync('bash', ['-e', '-c', script], { cwd: ROOT, env: { ...process.env, ...env, PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8', timeout: 60_000 });
  // Answers name the address the docs show, not the port this run got.
  const shownAddress = b.attrs.service === 'gateway' ? '127.0.0.1:8931' : 'localhost:8080';
  const parts = r.stdout.replaceAll(`127.0.0.1:${port}`, shownAddress).split(/\n@@status (\d{3})\n/);
  const printed: Printed[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) printed.push({ body: parts[i]!, status: Number(parts[i + 1]) });
  if (parts.at(-1)!.trim() !== '') printed.push({ body: parts.at(-1)!, status: 0 });
  return { code: r.status, printed, stderr: r.stderr };
}

/** Whether `text` is JSON. */
function jsonParses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const parseJson = (text: string, where: string): unknown => {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${where}: not JSON (${(err as Error).message}); mark a shape with "..." in it as sketch`);
  }
};

/** An answer's JSON: the body, or an event stream's last message (a Streamable HTTP answer). */
const messageOf = (body: string): string => (/^(event|data):/m.test(body) ? (body.match(/^data: ?(.*)$/gm) ?? []).map((l) => l.replace(/^data: ?/, '')).at(-1) ?? '' : body);

/** The policies of a page's `policy` and `rules` blocks, as files. */
function policyFiles(b: Block, n: number): Array<{ name: string; bytes: Uint8Array }> {
  const text = b.kind === 'rules' ? `id: doc-example-${n}\nmode: enforce\nrules:\n${b.text.replace(/^/gm, '  ')}\n` : b.text;
  return [{ name: `doc-${n}.${b.lang}`, bytes: new TextEncoder().encode(text) }];
}

const squash = (s: unknown) => String(s ?? '').replace(/\s+/g, ' ').trim();

/** Each rule of an excerpt of a shipped policy is the shipped rule: same scope, condition and effect. */
function sameAsShipped(b: Block): void {
  const doc = parseYaml(b.text) as { id: string; rules: Array<Record<string, unknown>> };
  const file = readdirSync(SHIPPED).find((f) => f.endsWith('.yaml') && !f.includes('.test.') && (parseYaml(readFileSync(join(SHIPPED, f), 'utf8')) as { id?: string })?.id === doc.id);
  expect(file, `${b.page}:${b.line}: no shipped policy ${doc.id}`).toBeDefined();
  const shipped = parseYaml(readFileSync(join(SHIPPED, file!), 'utf8')) as { mode?: string; rules: Array<Record<string, unknown>> };
  for (const rule of doc.rules) {
    const s = shipped.rules.find((r) => r.id === rule.id);
    expect(s, `${b.page}:${b.line}: ${doc.id} ships no rule ${String(rule.id)}`).toBeDefined();
    for (const k of ['scope', 'when', 'effect', 'mode'] as const) expect(squash(rule[k] ?? ''), `${b.page}:${b.line}: ${doc.id}/${String(rule.id)} ${k}`).toBe(squash(s![k] ?? ''));
  }
}

/** The flags `trustgate <verb> --help` lists. */
const helpOf = (verb: string) => spawnSync(process.execPath, [CLI, verb, '--help'], { encoding: 'utf8' });

for (const { page, blocks } of all) {
  if (blocks.length === 0) continue;
  describe(page, () => {
    const services = new Map<Profile, Promise<{ port: number; env: Record<string, string> }>>();
    let last: Printed[] = [];
    let lastConfig: string | undefined;
    const pagePolicies: Array<{ name: string; bytes: Uint8Array }> = [];

    for (const b of blocks) {
      const where = `${page}:${b.line}`;
      const title = `${b.lang} ${b.kind} at line ${b.line}`;
      if (b.kind === 'run') {
        it.runIf(curl !== '')(title, async () => {
          const profile = (b.attrs.service ?? 'default') as Profile;
          if (!services.has(profile)) services.set(profile, start(profile));
          const { port, env } = await services.get(profile)!;
          const r = runBlock(b, port, env);
          expect(r.code, `${where} exited ${r.code}: ${r.stderr}`).toBe(0);
          const http = r.printed.filter((p) => p.status !== 0);
          const want = b.attrs.status === undefined ? undefined : Number(b.attrs.status);
          http.forEach((p, i) => {
            if (want !== undefined && i === http.length - 1) expect(p.status, `${where}: the last answer`).toBe(want);
            else expect(p.status, `${where}: answer ${i + 1}: ${p.body.slice(0, 300)}`).toBeLessThan(400);
          });
          last = r.printed;
        }, 60_000);
      } else if (b.kind === 'answer') {
        it.runIf(curl !== '')(title, () => {
          const shown = parseJson(b.text, where);
          const printed = last.at(-1);
          expect(printed, `${where}: the command before it printed nothing`).toBeDefined();
          const actual = parseJson(messageOf(printed!.body), `${where} (what the service answered)`);
          const differs = mismatch(shown, actual);
          if (differs !== undefined) throw new Error(`${where}: the shown answer differs from the service's at ${differs}\n\nthe service answered:\n${JSON.stringify(actual, null, 2)}`);
          // The comparison tells every shown value apart: change any one and it no longer matches.
          for (const m of mutants(shown)) expect(mismatch(m, actual), `${where}: a changed answer still matched: ${JSON.stringify(m)}`).toBeDefined();
        });
      } else if (b.kind === 'not-run') {
        it(title, () => {
          const lines = b.text.replace(/\\\n/g, ' ').split('\n').map((l) => l.replace(/\s#.*$/, '').trim()).filter((l) => l !== '' && !l.startsWith('#'));
          for (const line of lines) {
            const words = line.split(/\s+/);
            expect(['docker', 'npm', 'npx', 'git', 'printf', 'trustgate'], `${where}: ${line}`).toContain(words[0]);
            // A trustgate command line, alone or as another program's arguments (npx @modelcontextprotocol/inspector trustgate ...).
            for (const words of line.split(/&&|;/).map((c) => c.trim().split(/\s+/))) {
              // The program itself, or what npx runs with it (`git clone ... trustgate` names a folder).
              const at = words.findIndex((w, i) => w === 'trustgate' && (i === 0 || words[i - 1] === 'npx' || words[i - 1]!.startsWith('@')));
              if (at < 0) continue;
              const command = words.slice(at);
              const help = helpOf(command[1]!);
              expect(help.status, `${where}: trustgate ${command[1]} --help`).toBe(0);
              for (const flag of command.filter((w) => w.startsWith('--'))) expect(help.stdout, `${where}: trustgate ${command[1]} ${flag}`).toContain(flag);
            }
          }
        });
      } else if (b.kind === 'policy' || b.kind === 'rules') {
        const files = policyFiles(b, pagePolicies.length);
        pagePolicies.push(...files);
        it(title, () => {
          expect(() => compilePolicyFiles(files, where)).not.toThrow();
          if ('shipped' in b.attrs) sameAsShipped(b);
        });
      } else if (b.kind === 'cases') {
        const mine = [...pagePolicies];
        it(title, () => {
          const dir = mkdtempSync(join(work, 'cases-'));
          if (mine.length === 0) for (const f of readdirSync(SHIPPED)) if (f.endsWith('.yaml') && !f.includes('.test.')) copyFileSync(join(SHIPPED, f), join(dir, f));
          for (const f of mine) writeFileSync(join(dir, f.name), f.bytes);
          writeFileSync(join(dir, 'doc.test.yaml'), b.text);
          const r = spawnSync(process.execPath, [CLI, 'test', dir], { encoding: 'utf8', timeout: 60_000 });
          expect(r.status, `${where}: trustgate test\n${r.stdout}${r.stderr}`).toBe(0);
          expect(r.stdout).toMatch(/\b0 failed\b/);
        });
      } else if (b.kind === 'gateway-config') {
        const file = join(work, `servers-${page.replace(/\W/g, '_')}-${b.line}.json`);
        writeFileSync(file, b.text);
        lastConfig = file;
        it(title, () => {
          expect(() => parseProxyArgs(['--config', file], {})).not.toThrow();
        });
      } else if (b.kind === 'host-config') {
        const config = lastConfig;
        it(title, () => {
          const doc = parseJson(b.text, where) as { mcpServers: Record<string, { command?: string; args?: string[]; url?: string }> };
          for (const [name, s] of Object.entries(doc.mcpServers)) {
            if (s.url !== undefined) {
              expect(new URL(s.url).pathname, `${where}: ${name}`).toBe('/mcp');
              continue;
            }
            expect(s.command, `${where}: ${name}`).toBe('trustgate');
            expect(s.args![0], `${where}: ${name}`).toBe('proxy');
            // The config file it names is the page's (written above), or any valid one.
            const args = s.args!.slice(1).map((a, i, xs) => (xs[i - 1] === '--config' ? (config ?? join(ROOT, 'test/fixtures/docs/servers.json')) : a));
            expect(() => parseProxyArgs(args, {}), `${where}: ${name}`).not.toThrow();
          }
        });
      } else if (b.kind === 'server-entry') {
        it(title, () => {
          expect(() => checkOperatorEntry(parseJson(b.text, where), where)).not.toThrow();
        });
      } else if (b.kind === 'sketch') {
        it(title, () => {
          const parses = b.lang === 'json' ? jsonParses(b.text) : !b.text.includes('...');
          expect(parses, `${where}: this sketch parses; mark it as what it is so that it is checked`).toBe(false);
        });
      }
    }
  });
}
