/**
 * The Dockerfile as data (stages, their instructions, the final image's
 * settings), the `.dockerignore` rules, and a replay of the build on the
 * local file system: each stage gets its own root folder, COPY copies from
 * the build context (filtered by `.dockerignore`) or from an earlier stage's
 * folder, RUN runs with `sh -c` in the stage's WORKDIR.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { basename, join, posix, relative, sep } from 'node:path';
import {
  DockerfileParser,
  type Copy,
  type Dockerfile,
  type Env,
  type From,
  type Healthcheck,
  type Instruction,
  type JSONInstruction,
  type Label,
} from 'dockerfile-ast';
import { ROOT } from '../helpers/process.js';

export const DOCKERFILE = join(ROOT, 'Dockerfile');
export const DOCKERIGNORE = join(ROOT, '.dockerignore');

export interface Stage {
  index: number;
  /** The `AS` name, if any. */
  name: string | null;
  from: From;
  /** The instructions after FROM, up to the next FROM. */
  instructions: Instruction[];
}

export function parseDockerfile(text = readFileSync(DOCKERFILE, 'utf8')): Dockerfile {
  return DockerfileParser.parse(text);
}

export function stages(df: Dockerfile): Stage[] {
  const out: Stage[] = [];
  for (const i of df.getInstructions()) {
    if (i.getKeyword() === 'FROM') {
      const from = i as From;
      out.push({ index: out.length, name: from.getBuildStage(), from, instructions: [] });
    } else if (out.length > 0) {
      out[out.length - 1]!.instructions.push(i);
    }
  }
  return out;
}

export function ofKind<T extends Instruction = Instruction>(stage: Stage, keyword: string): T[] {
  return stage.instructions.filter((i) => i.getKeyword() === keyword) as T[];
}

/** The stage a `--from=` value names: an `AS` name or an index. */
export function stageNamed(all: Stage[], ref: string): Stage | undefined {
  return all.find((s) => s.name !== null && s.name.toLowerCase() === ref.toLowerCase()) ?? (/^[0-9]+$/.test(ref) ? all[Number(ref)] : undefined);
}

/** The WORKDIR in force at the end of a stage (absolute). */
export function workdir(stage: Stage): string {
  let dir = '/';
  for (const w of ofKind(stage, 'WORKDIR')) dir = posix.resolve(dir, w.getArgumentsContent() ?? '');
  return dir;
}

/** ENV (or LABEL) name/value pairs of a stage, last one wins, values unquoted. */
export function properties(stage: Stage, keyword: 'ENV' | 'LABEL'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const i of ofKind<Env | Label>(stage, keyword)) {
    for (const p of i.getProperties()) out[p.getName()] = p.getValue() ?? '';
  }
  return out;
}

/** A JSON (exec-form) argument list, or null when the instruction is in shell form. */
export function execForm(i: JSONInstruction): string[] | null {
  const strings = i.getJSONStrings();
  return strings.length > 0 ? strings.map((s) => s.getJSONValue()) : null;
}

/** HEALTHCHECK: its flags and its command (exec form only; null otherwise). */
export function healthcheck(i: Healthcheck): { subcommand: string | null; flags: Record<string, string | null>; exec: string[] | null } {
  const flags: Record<string, string | null> = {};
  for (const f of i.getFlags()) flags[f.getName()] = f.getValue();
  const subcommand = i.getSubcommand()?.getValue().toUpperCase() ?? null;
  const content = i.getArgumentsContent() ?? '';
  const m = /^\s*CMD\s+(\[[\s\S]*\])\s*$/i.exec(content);
  let exec: string[] | null = null;
  if (m) {
    const parsed: unknown = JSON.parse(m[1]!);
    if (Array.isArray(parsed) && parsed.every((s) => typeof s === 'string')) exec = parsed;
  }
  return { subcommand, flags, exec };
}

/** COPY: flags, sources and destination. */
export function copyArgs(i: Copy): { from: string | null; flags: Record<string, string | null>; sources: string[]; dest: string } {
  const flags: Record<string, string | null> = {};
  for (const f of i.getFlags()) flags[f.getName()] = f.getValue();
  const args = execForm(i) ?? i.getArguments().map((a) => a.getValue());
  if (args.length < 2) throw new Error(`COPY needs a source and a destination: ${i.toString()}`);
  return { from: flags.from ?? null, flags, sources: args.slice(0, -1), dest: args[args.length - 1]! };
}

// ---------------------------------------------------------------------------
// .dockerignore, with the build context's rules: patterns are relative to the
// context root, `*` and `?` stay within one path segment, `**` spans any
// number of segments, a pattern that matches a folder matches everything in
// it, `!` re-includes, and the last matching pattern decides.

interface IgnoreRule {
  negate: boolean;
  re: RegExp;
}

function patternToRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') {
      if (pattern[i + 1] === '*') {
        i++;
        if (pattern[i + 1] === '/') {
          i++;
          re += '(?:.*/)?';
        } else {
          re += '.*';
        }
      } else {
        re += '[^/]*';
      }
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '\\' && i + 1 < pattern.length) {
      re += pattern[++i]!.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    } else {
      re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  return new RegExp(`^${re}$`);
}

export function parseDockerignore(text = existsSync(DOCKERIGNORE) ? readFileSync(DOCKERIGNORE, 'utf8') : ''): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    if (negate) line = line.slice(1).trim();
    line = posix.normalize(line).replace(/^\/+/, '').replace(/\/+$/, '');
    if (line === '.' || line === '') continue;
    rules.push({ negate, re: patternToRegExp(line) });
  }
  return rules;
}

/** Is `rel` (a path relative to the context root, `/`-separated) left out of the build context? */
export function isIgnored(rules: IgnoreRule[], rel: string): boolean {
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  const prefixes = parts.map((_, n) => parts.slice(0, n + 1).join('/'));
  let ignored = false;
  for (const rule of rules) {
    if (prefixes.some((p) => rule.re.test(p))) ignored = !rule.negate;
  }
  return ignored;
}

// ---------------------------------------------------------------------------
// Replay.

export interface ReplayOptions {
  /** Folder under which every stage gets its own root. */
  work: string;
  /** Stand-in for a RUN step; return true when it was handled. */
  standIn?: (stage: Stage, command: string, cwd: string) => boolean;
  /** Environment for RUN steps (the stage's ENV is laid over it). */
  runEnv: Record<string, string>;
  /** Most time for one RUN step, ms. */
  runTimeoutMs?: number;
}

export interface StageFs {
  stage: Stage;
  /** The folder standing for the stage's `/`. */
  root: string;
  /** An image path as a local path. */
  local(imagePath: string): string;
}

export interface StepLog {
  stage: string;
  step: string;
  ms: number;
}

function stageLabel(stage: Stage): string {
  return stage.name ?? `#${stage.index}`;
}

function runShell(command: string, cwd: string, env: Record<string, string>, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += String(d)));
    child.stderr.on('data', (d) => (output += String(d)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Copy a context path into `dest`, leaving out what `.dockerignore` leaves out. */
function copyFromContext(rules: IgnoreRule[], rel: string, dest: string): void {
  const src = join(ROOT, rel);
  cpSync(src, dest, {
    recursive: true,
    filter: (from) => {
      const r = relative(ROOT, from).split(sep).join('/');
      return r === '' || !isIgnored(rules, r);
    },
  });
}

/**
 * Replay every stage in order. Returns the final stage's file system, and
 * the time each step took.
 */
export async function replay(df: Dockerfile, opts: ReplayOptions): Promise<{ final: StageFs; byName: Map<string, StageFs>; steps: StepLog[] }> {
  const rules = parseDockerignore();
  const all = stages(df);
  const done = new Map<Stage, StageFs>();
  const steps: StepLog[] = [];
  let last: StageFs | undefined;
  for (const stage of all) {
    const root = join(opts.work, `stage-${stage.index}${stage.name ? `-${stage.name}` : ''}`);
    mkdirSync(root, { recursive: true });
    const fs: StageFs = { stage, root, local: (p) => join(root, posix.resolve('/', p)) };
    const base = stage.from.getImageName() ?? '';
    const parent = stageNamed(all.slice(0, stage.index), base);
    if (parent) cpSync(done.get(parent)!.root, root, { recursive: true, verbatimSymlinks: true });
    let cwd = '/';
    const env: Record<string, string> = {};
    for (const i of stage.instructions) {
      const t0 = Date.now();
      const kw = i.getKeyword();
      if (kw === 'WORKDIR') {
        cwd = posix.resolve(cwd, i.getArgumentsContent() ?? '');
        mkdirSync(fs.local(cwd), { recursive: true });
      } else if (kw === 'ENV') {
        for (const p of (i as Env).getProperties()) env[p.getName()] = p.getValue() ?? '';
      } else if (kw === 'COPY') {
        const c = copyArgs(i as Copy);
        const dest = posix.resolve(cwd, c.dest);
        const intoFolder = c.dest.endsWith('/') || c.sources.length > 1;
        for (const source of c.sources) {
          if (/[*?[]/.test(source)) throw new Error(`the replay does not expand wildcards: ${i.toString()}`);
          let from: string;
          let isDir: boolean;
          if (c.from !== null) {
            const src = stageNamed(all.slice(0, stage.index), c.from);
            if (!src) throw new Error(`COPY --from=${c.from}: no earlier stage of that name`);
            from = done.get(src)!.local(source);
            if (!existsSync(from)) throw new Error(`COPY --from=${c.from} ${source}: not in that stage`);
            isDir = statSync(from).isDirectory();
            const target = isDir ? fs.local(dest) : intoFolder ? fs.local(posix.join(dest, posix.basename(source))) : fs.local(dest);
            cpSync(from, target, { recursive: true, verbatimSymlinks: true, dereference: false });
          } else {
            const rel = posix.normalize(source).replace(/^\/+/, '');
            from = join(ROOT, rel);
            if (!existsSync(from) || isIgnored(rules, rel)) throw new Error(`COPY ${source}: not in the build context (missing, or left out by .dockerignore)`);
            isDir = statSync(from).isDirectory();
            const target = isDir ? fs.local(dest) : intoFolder ? fs.local(posix.join(dest, basename(from))) : fs.local(dest);
            copyFromContext(rules, rel, target);
          }
        }
        steps.push({ stage: stageLabel(stage), step: i.toString().split('\n')[0]!, ms: Date.now() - t0 });
      } else if (kw === 'RUN') {
        const command = (execForm(i as JSONInstruction)?.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ') ?? i.getArgumentsContent()) || '';
        const where = fs.local(cwd);
        if (!(opts.standIn?.(stage, command, where) ?? false)) {
          const r = await runShell(command, where, { ...opts.runEnv, ...env }, opts.runTimeoutMs ?? 150_000);
          if (r.code !== 0) throw new Error(`RUN ${command} (stage ${stageLabel(stage)}) exited ${r.code}:\n${r.output}`);
        }
        steps.push({ stage: stageLabel(stage), step: `RUN ${command}`, ms: Date.now() - t0 });
      } else if (kw === 'ADD') {
        throw new Error(`the replay does not handle ADD: ${i.toString()}`);
      }
      // ARG, LABEL, USER, EXPOSE, HEALTHCHECK, STOPSIGNAL, CMD, ENTRYPOINT: image settings, read by the caller.
    }
    done.set(stage, fs);
    last = fs;
  }
  if (!last) throw new Error('the Dockerfile has no stage');
  const byName = new Map<string, StageFs>();
  for (const [s, fs] of done) if (s.name) byName.set(s.name, fs);
  return { final: last, byName, steps };
}

/** Every package folder under a node_modules tree, as `name` or `@scope/name`, nested ones included. */
export function installedPackages(nodeModules: string): Set<string> {
  const out = new Set<string>();
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      const p = join(dir, entry);
      if (entry.startsWith('@')) {
        for (const sub of readdirSync(p)) {
          out.add(`${entry}/${sub}`);
          walk(join(p, sub, 'node_modules'));
        }
      } else if (lstatSync(p).isDirectory()) {
        out.add(entry);
        walk(join(p, 'node_modules'));
      }
    }
  };
  walk(nodeModules);
  return out;
}

/** Link a folder (used as a stand-in for a dependency install). */
export function link(target: string, path: string): void {
  symlinkSync(target, path, 'dir');
}
