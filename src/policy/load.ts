/**
 * Loading a policy folder (docs/policies/reference.md): every `*.yaml`, `*.yml` and
 * `*.json` file directly in the folder is one policy. Everything is checked
 * before anything is served: schema, closed vocabularies, unique ids and
 * every `when` compiled. The first problem fails the whole load
 * (docs/operations/deploying.md: never serve with a partial or empty set).
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { OperatorEntries, OperatorEntryError, parseServersText } from '../trust/operator.js';
import YAML from 'yaml';
import { isRecord, own } from '../json/record.js';
import { CALL_EFFECTS, EFFECTS, MODES, SCOPES, TOOL_EFFECTS, type Effect, type Mode, type Scope } from './vocabulary.js';
import { CelCompileError, compileCel, type CompiledCel } from './cel/engine.js';
import { scopeVariables } from './cel/variables.js';
import { MASK_NAMES, maskKinds } from '../detect/index.js';

/** One rule of a policy, with its `when` compiled. */
export interface Rule {
  id: string;
  /** Default `block`. */
  scope: Scope;
  /** The CEL source, as written. */
  when: string;
  compiled: CompiledCel;
  effect: Effect;
  message?: string;
  /**
   * The rule's own mode, when written: it runs under the milder of this and
   * its policy's mode (audit < warn < enforce), so a policy in audit stays a
   * dry run whatever its rules say.
   */
  mode?: Mode;
  /** Effect `label`: the flags it raises (docs/behaviour/labels-and-detectors.md). */
  labels?: Readonly<{ sensitive?: true; untrusted?: true }>;
  /** Effect `mask`: the names as written, and the kinds they cover. */
  mask?: readonly string[];
  maskKinds?: ReadonlySet<string>;
}

/** One policy file. */
export interface Policy {
  id: string;
  description?: string;
  /** The mode written in the file (default `audit`), before any TRUSTGATE_MODE override. */
  mode: Mode;
  rules: Rule[];
  /** Base name of the file the policy came from. */
  file: string;
}

/** The policies of one folder, in file-name order. */
export interface PolicySet {
  policies: Policy[];
  /** `sha256:<hex>` over the loaded files' names and bytes (see {@link policyRevision}). */
  revision: string;
  /** Base names of the loaded files, sorted. */
  files: string[];
  /** The files as read, in load order: what worker processes compile, so that every process serves the same bytes. */
  sources?: readonly PolicyFile[];
  /** What the decision path looks up in the set, built once with it (indexPolicies). */
  index: PolicyIndex;
  /** The operator's entries per server (TRUSTGATE_SERVERS; docs/behaviour/operator.md); empty without a servers file. */
  servers?: OperatorEntries;
}

/** A rule with its place in the set (policy order, then rule order). */
export type IndexedRule = Rule & { ordinal: number };

/** The lookups the decision path makes in a policy set, built once when the set is compiled. */
export interface PolicyIndex {
  /** Every rule by ruleKey(policy, rule), with its place in the set. */
  rules: ReadonlyMap<string, IndexedRule>;
  /**
   * A `block` or `result` rule reads the `session` variable. Only then does a
   * /v1/evaluate that names a session read the session before it decides;
   * otherwise its one store operation is the merge after, whose answer is the
   * state the response shows.
   */
  resultRulesReadSession: boolean;
  /**
   * A rule other than a `call` rule may read a `text` member (`block.text`, `result.text`), or masks: the texts are
   * built, and read across their seams and as the JSON they are sent as, only then. (A mask whose condition reads no
   * text, `when: "true"`, masks what is found there too: a credential split over two blocks, a value a member's name
   * names.)
   */
  readsText: boolean;
  /** A rule other than a `call` rule has effect `label`: a result decision then takes a second policy pass. */
  labelRules: boolean;
}

/** The key of a rule in PolicyIndex.rules. */
export function ruleKey(policy: string, rule: string): string {
  return `${policy}\u0000${rule}`;
}

/** The lookups of a set of policies (PolicySet.index). */
export function indexPolicies(policies: readonly Policy[]): PolicyIndex {
  const rules = new Map<string, IndexedRule>();
  let resultRulesReadSession = false;
  let readsText = false;
  let labelRules = false;
  let n = 0;
  for (const p of policies) {
    for (const r of p.rules) {
      rules.set(ruleKey(p.id, r.id), Object.assign(Object.create(null) as object, r, { ordinal: n++ }));
      if ((r.scope === 'block' || r.scope === 'result') && r.compiled.variables.has('session')) resultRulesReadSession = true;
      if (r.scope === 'call') continue;
      if (r.compiled.members.has('text') || r.compiled.members.has('*') || r.effect === 'mask') readsText = true;
      if (r.effect === 'label') labelRules = true;
    }
  }
  return { rules, resultRulesReadSession, readsText, labelRules };
}

/** A policy file as read: its base name and bytes. */
export interface PolicyFile {
  name: string;
  bytes: Uint8Array;
  /** `servers`: the operator's servers file (TRUSTGATE_SERVERS), read and reloaded with the policies; `name` is its path. */
  role?: 'servers';
}

/** A place in a policy file, 1-based (the `file:line:column` editors open). */
export interface FilePosition {
  line: number;
  column: number;
}

/**
 * A policy folder that cannot be served. The message names the file, the
 * rule and the problem; `detail` is the problem alone.
 */
export class PolicyLoadError extends Error {
  override readonly name = 'PolicyLoadError';
  readonly file?: string;
  readonly rule?: string;
  readonly detail: string;

  constructor(detail: string, where: { file?: string; rule?: string; dir?: string; at?: FilePosition } = {}) {
    const at = where.at !== undefined ? `:${where.at.line}:${where.at.column}` : '';
    const place = [
      where.file !== undefined ? `policy file ${where.dir !== undefined ? join(where.dir, where.file) : where.file}${at}` : undefined,
      where.rule !== undefined ? `rule ${where.rule}` : undefined,
    ].filter((s): s is string => s !== undefined);
    super(place.length > 0 ? `${place.join(', ')}: ${detail}` : detail);
    this.detail = detail;
    if (where.file !== undefined) this.file = where.file;
    if (where.rule !== undefined) this.rule = where.rule;
  }
}

/** File names that hold policies; matched case-insensitively. */
const POLICY_FILE = /\.(ya?ml|json)$/i;

/** Policy test files (`trustgate test`, docs/policy-testing.md) live beside the policies and are not policies. */
export const TEST_FILE = /\.test\.ya?ml$/i;

/** Largest policy file read; policies are small, and a huge file is a mistake or an attack. */
export const MAX_POLICY_FILE_BYTES = 1024 * 1024;

/** Largest number of alias expansions in one YAML document (stops "billion laughs"). */
const MAX_YAML_ALIASES = 100;

/** Policy and rule ids: short, printable, usable in URLs, logs and file names. */
export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';

const RULE_KEYS = ['id', 'scope', 'mode', 'when', 'effect', 'message', 'labels', 'mask'] as const;
const POLICY_KEYS = ['id', 'description', 'mode', 'rules'] as const;

/** JSON Schema of one policy document (docs/policies/reference.md). */
export const policyFileSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'rules'],
  properties: {
    id: { type: 'string', pattern: ID_PATTERN },
    description: { type: 'string' },
    mode: { type: 'string', enum: [...MODES] },
    rules: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'when', 'effect'],
        properties: {
          id: { type: 'string', pattern: ID_PATTERN },
          scope: { type: 'string', enum: [...SCOPES] },
          mode: { type: 'string', enum: [...MODES] },
          when: { type: 'string', minLength: 1 },
          effect: { type: 'string', enum: [...EFFECTS] },
          message: { type: 'string' },
          labels: { type: 'object' },
          mask: { type: 'array', minItems: 1, items: { type: 'string' } },
        },
      },
    },
  },
} as const;

/** A policy document as written, once it matched the schema. */
interface PolicyDoc {
  id: string;
  description?: string;
  mode?: Mode;
  rules: Array<{ id: string; scope?: Scope; mode?: Mode; when: string; effect: Effect; message?: string; labels?: Record<string, unknown>; mask?: string[] }>;
}

const ajv = new Ajv({ allErrors: true, strict: true });
const validatePolicyFile = ajv.compile<PolicyDoc>(policyFileSchema);

/** What a closed vocabulary is called in messages, by the key that holds it. */
const VOCABULARIES: Record<string, { name: string; values: readonly string[] }> = {
  mode: { name: 'mode', values: MODES },
  scope: { name: 'scope', values: SCOPES },
  effect: { name: 'effect', values: EFFECTS },
};

function quote(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 64 ? v.slice(0, 64) + '…' : v);
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : String(v);
}

/** Readable text for one schema error; the path is written as in the file (`rules[0].effect`). */
function describeSchemaError(e: ErrorObject, doc: unknown): string {
  const tokens = e.instancePath.split('/').slice(1);
  const path = tokens.map((t, i) => (/^\d+$/.test(t) && i > 0 ? `[${t}]` : (i > 0 ? '.' : '') + t)).join('');
  const key = tokens[tokens.length - 1] ?? '';
  const where = path === '' ? 'the policy' : path;
  let value: unknown = doc;
  for (const t of tokens) value = Array.isArray(value) ? value[Number(t)] : isRecord(value) ? own(value, t) : undefined;
  switch (e.keyword) {
    case 'enum': {
      const vocab = VOCABULARIES[key];
      const valid = vocab ? vocab.values : ((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map(String);
      return `${quote(value)} is not a valid ${vocab?.name ?? key}; valid values: ${valid.join(', ')}`;
    }
    case 'additionalProperties': {
      const extra = (e.params as { additionalProperty: string }).additionalProperty;
      const allowed = path === '' ? POLICY_KEYS : RULE_KEYS;
      return `${where} has unknown key ${JSON.stringify(extra)}; allowed keys: ${allowed.join(', ')}`;
    }
    case 'required':
      return `${where} lacks required key ${JSON.stringify((e.params as { missingProperty: string }).missingProperty)}`;
    case 'pattern':
      return `${where} ${quote(value)} is not a valid id: 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit`;
    case 'minItems':
      return `${where} must hold at least one rule`;
    case 'minLength':
      return `${where} must not be empty`;
    case 'type':
      return `${where} must be ${path === '' ? 'a mapping (one policy)' : `of type ${(e.params as { type: string }).type}`}, got ${quote(value)}`;
    default:
      return `${where} ${e.message ?? 'is invalid'}`;
  }
}

/** Among errors at the same place, the ones that say most (an enum error lists the valid values). */
const KEYWORD_RANK = ['enum', 'additionalProperties', 'required', 'pattern', 'minItems', 'minLength', 'type'];

/** The error to report: the deepest path first (the most specific), then by KEYWORD_RANK, then document order. */
function mostHelpful(errors: readonly ErrorObject[]): ErrorObject | undefined {
  const depth = (e: ErrorObject) => e.instancePath.split('/').length;
  const rank = (e: ErrorObject) => {
    const i = KEYWORD_RANK.indexOf(e.keyword);
    return i < 0 ? KEYWORD_RANK.length : i;
  };
  let best: ErrorObject | undefined;
  for (const e of errors) {
    if (best === undefined || depth(e) > depth(best) || (depth(e) === depth(best) && rank(e) < rank(best))) best = e;
  }
  return best;
}

/** The rule a schema error belongs to, for the error's `rule`: its id when readable, else `#<index>`. */
function ruleOfError(e: ErrorObject, doc: unknown): string | undefined {
  const m = /^\/rules\/(\d+)(?:\/|$)/.exec(e.instancePath);
  if (!m) return undefined;
  const rules = isRecord(doc) ? own(doc, 'rules') : undefined;
  const rule = Array.isArray(rules) ? rules[Number(m[1])] : undefined;
  const id = isRecord(rule) ? own(rule, 'id') : undefined;
  return typeof id === 'string' && id !== '' ? id : `#${m[1]}`;
}

/** Where in the file rule `rule`'s condition has its (1-based) `line` and `column`, when the file says. */
type WhenLocator = (rule: number, line: number, column: number) => FilePosition | undefined;

/** A file's policy document, and where its conditions are (YAML files). */
interface ParsedFile {
  doc: unknown;
  locate?: WhenLocator;
}

/**
 * The offset in `source` of character `k` of a scalar's value, found by
 * walking the value and its source text together: the source differs only
 * by a block header, quotes, escapes and the whitespace folding turned into
 * one space or newline. Clamped to the scalar's end.
 */
function sourceOffset(source: string, node: YAML.Scalar, k: number): number {
  const value = String(node.value);
  const [start, end] = node.range!;
  let p = node.type === 'BLOCK_FOLDED' || node.type === 'BLOCK_LITERAL' ? source.indexOf('\n', start) + 1 : node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE' ? start + 1 : start;
  const space = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';
  for (let j = 0; j <= k && j < value.length && p < end; j++) {
    const c = value[j]!;
    if (space(c) && !space(value[j + 1])) {
      while (p < end && space(source[p])) p++;
    } else {
      while (p < end && source[p] !== c) p++;
      if (j < k) p++;
    }
  }
  return Math.min(p, end);
}

/** Parse one file's text; throws PolicyLoadError naming the file. */
function parseDocument(name: string, text: string, dir: string): ParsedFile {
  if (/\.json$/i.test(name)) {
    try {
      return { doc: JSON.parse(text) };
    } catch (err) {
      throw new PolicyLoadError(`not valid JSON: ${(err as Error).message}`, { file: name, dir });
    }
  }
  // YAML 1.2 core schema: plain data only, no language-specific tags.
  const lineCounter = new YAML.LineCounter();
  const docs = YAML.parseAllDocuments(text, {
    lineCounter,
    version: '1.2',
    schema: 'core',
    uniqueKeys: true,
    strict: true,
    prettyErrors: true,
    merge: false,
  });
  if (docs.length === 0) throw new PolicyLoadError('the file is empty; it must hold one policy', { file: name, dir });
  if (docs.length > 1) {
    throw new PolicyLoadError(`the file holds ${docs.length} YAML documents; it must hold exactly one policy`, { file: name, dir });
  }
  const doc = docs[0]!;
  const problem = doc.errors[0] ?? doc.warnings[0];
  // The first line holds the reason and position; the rest is a code frame.
  if (problem) throw new PolicyLoadError(`not valid YAML: ${problem.message.split('\n')[0]!.replace(/:$/, '')}`, { file: name, dir });
  const locate: WhenLocator = (rule, line, column) => {
    const node = doc.getIn(['rules', rule, 'when'], true);
    if (!YAML.isScalar(node) || node.range == null || typeof node.value !== 'string') return undefined;
    const lines = node.value.split('\n');
    const k = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column - 1;
    const pos = lineCounter.linePos(sourceOffset(text, node, k));
    return { line: pos.line, column: pos.col };
  };
  try {
    return { doc: doc.toJS({ maxAliasCount: MAX_YAML_ALIASES }), locate };
  } catch (err) {
    throw new PolicyLoadError(`not valid YAML: ${(err as Error).message}`, { file: name, dir });
  }
}

/**
 * What a rule's scope allows (docs/behaviour/sessions.md): a `scope: call` rule
 * decides on a call that has not run, so its effect is deny, consent or flag
 * and it reads only the call's variables (the variable table, cel/variables.ts, says which).
 */
function checkScope(scope: Scope, effect: Effect, compiled: CompiledCel, where: { file: string; dir: string; rule: string }): void {
  if (scope === 'call' && !(CALL_EFFECTS as readonly string[]).includes(effect)) {
    throw new PolicyLoadError(`effect ${JSON.stringify(effect)} is not valid in scope call; valid effects there: ${CALL_EFFECTS.join(', ')}`, where);
  }
  if (scope === 'tool' && !(TOOL_EFFECTS as readonly string[]).includes(effect)) {
    throw new PolicyLoadError(`effect ${JSON.stringify(effect)} is not valid in scope tool; valid effects there: ${TOOL_EFFECTS.join(', ')}`, where);
  }
  const allowed: readonly string[] = scopeVariables(scope);
  for (const v of compiled.variables) {
    if (!allowed.includes(v)) {
      throw new PolicyLoadError(`when: variable ${v} does not exist in scope ${scope}; variables there: ${allowed.join(', ')}`, where);
    }
  }
}

/**
 * The members of effects `label` and `mask` (docs/behaviour/labels-and-detectors.md): `labels`
 * names `sensitive` and/or `untrusted`, each `true` (a label is only ever
 * raised); `mask` names `secrets`, `pii` or single kinds. Each member
 * belongs to its effect only.
 */
function checkLabelAndMask(
  r: { effect: Effect; labels?: Record<string, unknown>; mask?: string[] },
  rule: Rule,
  where: { file: string; dir: string; rule: string },
): void {
  if (r.labels !== undefined && r.effect !== 'label') throw new PolicyLoadError(`labels is a member of effect label only; this rule's effect is ${r.effect}`, where);
  if (r.mask !== undefined && r.effect !== 'mask') throw new PolicyLoadError(`mask is a member of effect mask only; this rule's effect is ${r.effect}`, where);
  if (r.effect === 'label') {
    if (r.labels === undefined) throw new PolicyLoadError('effect label needs labels: { untrusted: true } and/or { sensitive: true }', where);
    const keys = Object.keys(r.labels);
    if (keys.length === 0) throw new PolicyLoadError('labels must name sensitive and/or untrusted', where);
    const labels: { sensitive?: true; untrusted?: true } = {};
    for (const k of keys) {
      if (k !== 'sensitive' && k !== 'untrusted') throw new PolicyLoadError(`labels has unknown key ${JSON.stringify(k)}; allowed keys: sensitive, untrusted`, where);
      if (r.labels[k] !== true) {
        throw new PolicyLoadError(`labels.${k} must be true, got ${quote(r.labels[k])}: a label rule only raises a label, it never lowers one`, where);
      }
      labels[k] = true;
    }
    rule.labels = labels;
  }
  if (r.effect === 'mask') {
    if (r.mask === undefined) throw new PolicyLoadError(`effect mask needs mask: a list of ${MASK_NAMES.join(', ')}`, where);
    for (const n of r.mask) {
      if (!MASK_NAMES.includes(n)) throw new PolicyLoadError(`mask names unknown kind ${quote(n)}; valid values: ${MASK_NAMES.join(', ')}`, where);
    }
    rule.mask = r.mask.slice();
    rule.maskKinds = maskKinds(r.mask);
  }
}

/**
 * Build a Policy from a parsed document. Only validated members are copied
 * into fresh objects, so a `__proto__` key (already refused by the closed
 * schema) can never reach the objects the service uses.
 */
function toPolicy(name: string, { doc, locate }: ParsedFile, dir: string): Policy {
  if (!validatePolicyFile(doc)) {
    const first = mostHelpful(validatePolicyFile.errors ?? []);
    if (first === undefined) throw new PolicyLoadError('does not match the policy schema', { file: name, dir });
    const rule = ruleOfError(first, doc);
    throw new PolicyLoadError(describeSchemaError(first, doc), { file: name, dir, ...(rule !== undefined ? { rule } : {}) });
  }
  const seen = new Set<string>();
  const rules: Rule[] = doc.rules.map((r, i) => {
    if (seen.has(r.id)) throw new PolicyLoadError(`duplicate rule id ${JSON.stringify(r.id)} in the policy`, { file: name, dir, rule: r.id });
    seen.add(r.id);
    let compiled: CompiledCel;
    try {
      compiled = compileCel(r.when);
    } catch (err) {
      const detail = err instanceof CelCompileError ? err.message : `CEL error: ${String((err as Error)?.message ?? err)}`;
      // The file's line and column of the error, beside the expression's own (a folded `when` spans lines).
      const at = err instanceof CelCompileError && err.line !== undefined && err.column !== undefined ? locate?.(i, err.line, err.column) : undefined;
      throw new PolicyLoadError(`when: ${detail}`, { file: name, dir, rule: r.id, ...(at !== undefined ? { at } : {}) });
    }
    const scope = r.scope ?? 'block';
    checkScope(scope, r.effect, compiled, { file: name, dir, rule: r.id });
    const rule: Rule = { id: r.id, scope, when: r.when, compiled, effect: r.effect };
    checkLabelAndMask(r, rule, { file: name, dir, rule: r.id });
    if (r.message !== undefined) rule.message = r.message;
    if (r.mode !== undefined) rule.mode = r.mode;
    return rule;
  });
  const policy: Policy = { id: doc.id, mode: doc.mode ?? 'audit', rules, file: name };
  if (doc.description !== undefined) policy.description = doc.description;
  return policy;
}

/**
 * Revision of a set of files: sha256 over, in the given order, each file's
 * name and bytes, each framed by its length (name: 4-byte big-endian UTF-8
 * byte count; content: 8-byte big-endian byte count) so that no two
 * different sets hash the same input. Written `sha256:<hex>`.
 */
export function policyRevision(files: ReadonlyArray<{ name: string; bytes: Uint8Array }>): string {
  const hash = createHash('sha256');
  for (const f of files) {
    const name = Buffer.from(f.name, 'utf8');
    const head = Buffer.alloc(4);
    head.writeUInt32BE(name.length);
    hash.update(head).update(name);
    const size = Buffer.alloc(8);
    size.writeBigUInt64BE(BigInt(f.bytes.length));
    hash.update(size).update(f.bytes);
  }
  return `sha256:${hash.digest('hex')}`;
}

function fsReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  switch (code) {
    case 'ENOENT':
      return 'does not exist';
    case 'ENOTDIR':
      return 'is not a folder';
    case 'EACCES':
    case 'EPERM':
      return 'cannot be read (permission denied)';
    default:
      return `cannot be read (${code ?? (err as Error)?.message ?? String(err)})`;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Load every policy file of `dir` (not recursive), in file-name order
 * (UTF-16 code-unit order, independent of locale).
 *
 * Files: names ending in `.yaml`, `.yml` or `.json` (any letter case),
 * except policy tests (`*.test.yaml`, `*.test.yml`); other files, sub-folders and names starting with `.` (editor files,
 * Kubernetes ConfigMap internals such as `..data`) are ignored. Symbolic
 * links are followed, as mounted ConfigMaps use them. Each file is UTF-8
 * (a BOM is allowed), at most {@link MAX_POLICY_FILE_BYTES} bytes, and holds
 * one policy; YAML files hold exactly one document.
 *
 * @throws PolicyLoadError when the folder is missing, unreadable or holds
 *   no policy file, or when any file fails to read, parse, validate or
 *   compile, or ids repeat.
 */
export async function loadPolicyDir(dir: string, serversFile?: string): Promise<PolicySet> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new PolicyLoadError(`policy folder ${dir} ${fsReason(err)}`);
  }
  const candidates = names.filter((n) => !n.startsWith('.') && POLICY_FILE.test(n) && !TEST_FILE.test(n)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

  const files: Array<{ name: string; bytes: Buffer }> = [];
  for (const name of candidates) {
    const path = join(dir, name);
    let info;
    try {
      info = await stat(path);
    } catch (err) {
      throw new PolicyLoadError(`the file ${fsReason(err)}`, { file: name, dir });
    }
    if (!info.isFile()) continue;
    if (info.size > MAX_POLICY_FILE_BYTES) {
      throw new PolicyLoadError(`the file is ${info.size} bytes; the limit is ${MAX_POLICY_FILE_BYTES}`, { file: name, dir });
    }
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (err) {
      throw new PolicyLoadError(`the file ${fsReason(err)}`, { file: name, dir });
    }
    // Checked again after reading: the file may have grown in between.
    if (bytes.length > MAX_POLICY_FILE_BYTES) {
      throw new PolicyLoadError(`the file is ${bytes.length} bytes; the limit is ${MAX_POLICY_FILE_BYTES}`, { file: name, dir });
    }
    files.push({ name, bytes });
  }
  if (files.length === 0) {
    throw new PolicyLoadError(`policy folder ${dir} holds no policy files (*.yaml, *.yml, *.json)`);
  }
  const all: PolicyFile[] = files;
  if (serversFile !== undefined) all.push({ name: serversFile, bytes: await readServersFile(serversFile), role: 'servers' });
  return compilePolicyFiles(all, dir);
}

/** The servers file's bytes, size-checked before and after reading. @throws PolicyLoadError naming the file. */
async function readServersFile(path: string): Promise<Buffer> {
  const fail = (detail: string) => new PolicyLoadError(`servers file ${path} (TRUSTGATE_SERVERS): ${detail}`);
  let bytes: Buffer;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw fail('is not a file');
    if (info.size > MAX_POLICY_FILE_BYTES) throw fail(`is ${info.size} bytes; the limit is ${MAX_POLICY_FILE_BYTES}`);
    bytes = await readFile(path);
  } catch (err) {
    if (err instanceof PolicyLoadError) throw err;
    throw fail(fsReason(err));
  }
  if (bytes.length > MAX_POLICY_FILE_BYTES) throw fail(`is ${bytes.length} bytes; the limit is ${MAX_POLICY_FILE_BYTES}`);
  return bytes;
}

/**
 * Compile files already read (in the order given) into a policy set, with
 * the checks and messages of {@link loadPolicyDir}; `dir` only names the
 * folder in messages.
 *
 * @throws PolicyLoadError as loadPolicyDir does.
 */
export function compilePolicyFiles(files: readonly PolicyFile[], dir: string): PolicySet {
  const policies: Policy[] = [];
  const byId = new Map<string, string>();
  let servers = new OperatorEntries();
  for (const { name, bytes, role } of files) {
    if (role === 'servers') {
      servers = compileServersFile(name, bytes);
      continue;
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      throw new PolicyLoadError('the file is not valid UTF-8', { file: name, dir });
    }
    const policy = toPolicy(name, parseDocument(name, text, dir), dir);
    const other = byId.get(policy.id);
    if (other !== undefined) {
      throw new PolicyLoadError(`duplicate policy id ${JSON.stringify(policy.id)}, also defined in ${other}`, { file: name, dir });
    }
    byId.set(policy.id, name);
    policies.push(policy);
  }

  return {
    policies,
    revision: policyRevision(files),
    files: files.filter((f) => f.role === undefined).map((f) => f.name),
    sources: files,
    index: indexPolicies(policies),
    servers,
  };
}

function compileServersFile(path: string, bytes: Uint8Array): OperatorEntries {
  try {
    return parseServersText(utf8.decode(bytes));
  } catch (err) {
    const detail = err instanceof OperatorEntryError ? err.message : 'is not valid UTF-8';
    throw new PolicyLoadError(`servers file ${path} (TRUSTGATE_SERVERS): ${detail}`);
  }
}
