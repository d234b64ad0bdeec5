/**
 * CEL adapter: the only module that knows which CEL engine runs policy
 * `when` expressions (policies/README.md).
 *
 * Engine: @marcbachmann/cel-js, chosen by `bench/cel.ts` against
 * @bufbuild/cel 0.6.1 (Node 20, 6 policy expressions, 8 blocks per
 * decision, contenders timed in interleaved rounds; medians of 3 runs):
 *
 * | | cel-js 8.0.0 | @bufbuild/cel 0.6.1 | ratio |
 * |---|---:|---:|---:|
 * | compile, µs per expression (parse + check) | 1.8 | 33 | 18x |
 * | evaluate, ns per evaluation (activation incl.) | 355 | 930 | 2.6x |
 * | one decision, 8 blocks x 6 rules, µs | 17 | 45 | 2.6x |
 *
 * Both engines got the runtime semantics right (`has()` on absent members,
 * `in` on lists, int/double comparison under `dyn`, errors for missing keys,
 * division by zero and mixed int/double arithmetic, error absorption by
 * `||`/`&&`). cel-js is faster, and it has a type checker, so an unknown
 * variable or function, or a `when` whose type is not bool, fails at load;
 * @bufbuild/cel 0.6.1 exports no checker (its internal one handles only
 * constants and identifiers), so those mistakes would surface only when a
 * request arrives. @bufbuild/cel also rejects `//` comments, which CEL allows.
 *
 * Every `when` inside the common subset of CEL also gets a compiled fast
 * path (src/policy/cel-fast.ts) that reads the variables as plain data and
 * defers to the engine wherever it cannot tell; on the shipped policies it
 * takes decide() on the 4 KB bench fixture from 33.6 to 28.6 µs (in-process
 * A/B on fresh request objects, min of 40 rounds).
 *
 * Known limits of cel-js kept in mind: `has()` takes a member chain that
 * starts at a variable (`has(list[0].x)` is refused at load, not
 * mis-evaluated), and its `matches()` uses JavaScript regular expressions,
 * which backtrack; `matches()` is therefore routed to RE2 (src/policy/regex.ts).
 */
import { Environment } from '@marcbachmann/cel-js';
import type { EvidenceStatus } from '../evidence/status.js';
import type { Severity } from '../mcp/findings.js';
import { isRecord } from '../json/record.js';
import { compileFast, UNKNOWN, type PlainVars } from './cel-fast.js';
import { toolHints } from '../mcp/hints.js';
import { compileLiteralRe2, re2find, RE2_FUNCTION } from './regex.js';
import { detectKinds } from '../detect/index.js';

/** Names of the variables bound for every `when` (policies/README.md). */
export const CEL_VARIABLES = [
  'result',
  'block',
  'tool',
  'server',
  'context',
  'evidence',
  'dataClass',
  'validation',
  'session',
  'call',
] as const;
export type CelVariable = (typeof CEL_VARIABLES)[number];

/** The variables a `scope: call` rule reads (docs/behaviour/sessions.md): a call has no result, blocks, evidence or validation. */
export const CALL_SCOPE_VARIABLES: readonly CelVariable[] = ['call', 'tool', 'server', 'context', 'session'];

/** The variables a `scope: tool` rule reads (docs/bindings/proxy.md): one listed definition (`tool`, with `description` and `hints`). */
export const TOOL_SCOPE_VARIABLES: readonly CelVariable[] = ['tool', 'server', 'context', 'session'];

/**
 * The variables of scopes `block` and `result`: all of them. There `call`
 * says what the judged message is (`call.method`: "tools/call" for a tool
 * result, "resources/read", "prompts/get", "sampling/createMessage", ... in
 * the proxy, docs/bindings/proxy.md) and `call.name` the tool, resource URI or
 * prompt name; its `arguments` are `{}` but for `sampling/createMessage`
 * (`includeContext`).
 */
export const RESULT_SCOPE_VARIABLES: readonly CelVariable[] = CEL_VARIABLES;

/**
 * A `when` that cannot be used: syntax error, unknown variable or function,
 * or a type other than bool. `line`/`column` (1-based) locate the error in
 * the expression when the engine reports a position.
 */
export class CelCompileError extends Error {
  override readonly name = 'CelCompileError';
  constructor(
    message: string,
    readonly line?: number,
    readonly column?: number,
  ) {
    super(message);
  }
}

/** The value of `result` (policies/README.md). `blockCount` is a CEL int. */
export interface ResultVar {
  sensitive: boolean;
  untrusted: boolean;
  isError: boolean;
  blockCount: number;
  /** Keys `sensitive`/`untrusted`, present only where some claim asserted that flag. */
  asserted: AssertedVar;
  /**
   * The flags that govern `structuredContent` (the result-level claims and
   * fides labels on `$['structuredContent']`); both false when the result has
   * none. A label here may be on no block at all (docs/bindings/proxy.md).
   */
  structured?: { sensitive: boolean; untrusted: boolean };
  /** Every block's text and every `structuredContent` string, joined with newlines (docs/behaviour/labels-and-detectors.md); left out when no rule reads `text`. */
  text?: string;
}

/** `asserted`: a key per flag that some claim asserted, with the effective value. */
export type AssertedVar = Readonly<{ sensitive?: boolean; untrusted?: boolean }>;

/**
 * The value of `block` for scope `block` (policies/README.md). `index` is a
 * CEL int, `priority` a double; optional members are left out, never
 * `undefined`-valued, so `has()` tells them apart.
 */
export type BlockVar = {
  index: number;
  type: string;
  sensitive: boolean;
  untrusted: boolean;
  asserted: AssertedVar;
  /**
   * `annotations.audience`; empty when absent; `["malformed"]` when it is
   * not an array of `"user"`/`"assistant"` (it then excludes every reader).
   */
  audience: readonly string[];
  /** True when `annotations.audience` is present and not an array of `"user"`/`"assistant"`. */
  audienceMalformed: boolean;
  priority?: number;
  mimeType?: string;
  uri?: string;
  /** The text the block shows (docs/behaviour/labels-and-detectors.md); `""` for blocks without text. */
  text?: string;
};

/** One entry of `evidence`; `type`/`canonicalization` are null when the evidenceRef lacks them. */
export type EvidenceVar = {
  type: string | null;
  status: EvidenceStatus;
  canonicalization: string | null;
  /** RFC 6901 pointer of the evidenceRef in the request's `result`. */
  pointer: string;
};

/** One entry of `validation`; extra members such as `message` are not exposed to policies. */
export type ValidationVar = {
  rule: string;
  severity: Severity;
  pointer: string;
};

/**
 * The value of `session` (docs/behaviour/sessions.md): what the session had been
 * shown before this request. `calls` and `results` are CEL ints.
 */
export interface SessionVar {
  /** `""` without a session id. */
  id: string;
  /** The store lost what the session was shown (docs/bindings/proxy.md); `sensitive` and `untrusted` are then true. */
  forgotten?: boolean;
  sensitive: boolean;
  untrusted: boolean;
  /** `{ class, regulatory }`, or an empty map when no verified class was forwarded in the session. */
  dataClass: DataClassVar;
  calls: number;
  results: number;
  /** Names of the tools called in the session, first call first. */
  tools: readonly string[];
}

/** `session` without a session id: flags false, counts 0, no data class, no tools. */
export const NO_SESSION: Readonly<SessionVar> = Object.freeze({
  id: '',
  forgotten: false,
  sensitive: false,
  untrusted: false,
  dataClass: Object.freeze({}),
  calls: 0,
  results: 0,
  tools: Object.freeze([]) as readonly string[],
});

/** The value of `call`: the tool call about to run (scope `call`), or what the judged message is (scopes block and result). */
export interface CallVar {
  name: string;
  /** The MCP method: "tools/call" when absent. */
  method?: string;
  /** The call's arguments as sent; `{}` when absent. */
  arguments: Record<string, unknown>;
}

/** Members shared by every scope of one decision. Absent tool/server/context/session get the contract defaults. */
export interface SharedVarsInput {
  result: ResultVar;
  tool?: Record<string, unknown> | undefined;
  server?: Record<string, unknown> | undefined;
  context?: Record<string, unknown> | undefined;
  validation: readonly ValidationVar[];
  /** Before this request; NO_SESSION when absent. */
  session?: SessionVar | undefined;
  /** `{ name: "", method: "tools/call", arguments: {} }` when absent. */
  call?: CallVar | undefined;
  /** Members computed for `tool` (scope `call`: `hints`, `digest`, `pin`), replacing the request's members of those names. */
  toolMembers?: Readonly<Record<string, unknown>> | undefined;
}

/**
 * `dataClass` of a scope: `{ class, regulatory }` from verified
 * `data-class.v1` evidence, or an empty object when none governs it.
 */
export type DataClassVar = Readonly<{ class?: string; regulatory?: readonly string[] }> | Readonly<Record<string, unknown>>;

/** Members that differ per scope (one block, or the whole result). */
export interface ScopeVarsInput {
  /** A BlockVar for scope `block`, an empty object for scope `result`. */
  block: Readonly<Record<string, unknown>>;
  evidence: readonly EvidenceVar[];
  dataClass: DataClassVar;
}

declare const sharedBrand: unique symbol;
declare const activationBrand: unique symbol;

/** Shared members already in CEL form: build once per decision with {@link prepareShared}. */
export interface SharedActivation {
  readonly [sharedBrand]: true;
}

/** All the variables in CEL form: build once per scope with {@link buildActivation}. */
export interface CelActivation {
  readonly [activationBrand]: true;
}

/** Outcome of one evaluation: a bool, or the reason there is none. */
export type CelResult = { ok: true; value: boolean } | { ok: false; error: string };

/** A `when` compiled once at load, evaluated many times. */
export interface CompiledCel {
  readonly source: string;
  /** The variables the expression reads (comprehension variables excluded). */
  readonly variables: ReadonlySet<string>;
  /** True when the expression runs on the compiled fast path (falling back to the engine where that cannot tell). */
  readonly fast: boolean;
  /** Never throws: runtime errors and non-bool values come back as `{ ok: false }`. */
  evaluate(activation: CelActivation): CelResult;
}

// Declared as maps with dyn values rather than typed messages: optional
// members must be absent (for `has()`), `block` is an empty map for scope
// `result`, and `tool`/`context` are free-form request objects.
const env = new Environment()
  .registerVariable('result', 'map<string, dyn>')
  .registerVariable('block', 'map<string, dyn>')
  .registerVariable('tool', 'map<string, dyn>')
  .registerVariable('server', 'map<string, dyn>')
  .registerVariable('context', 'map<string, dyn>')
  .registerVariable('evidence', 'list<map<string, dyn>>')
  .registerVariable('dataClass', 'map<string, dyn>')
  .registerVariable('validation', 'list<map<string, dyn>>')
  .registerVariable('session', 'map<string, dyn>')
  .registerVariable('call', 'map<string, dyn>')
  .registerFunction(`string.${RE2_FUNCTION}(string): bool`, re2find)
  // Content detectors (docs/behaviour/labels-and-detectors.md): the kinds found, in order of first appearance.
  .registerFunction('secrets(string): list<string>', (s: string) => detectKinds('secrets', s))
  .registerFunction('pii(string): list<string>', (s: string) => detectKinds('pii', s));

/** Shape of the engine's errors, read defensively: only code, summary and range are used. */
interface EngineError {
  name?: unknown;
  code?: unknown;
  summary?: unknown;
  range?: { start?: unknown; end?: unknown };
}

function lineColumn(source: string, offset: number): { line: number; column: number } {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

function compileError(source: string, err: unknown): CelCompileError {
  const e = (isObjectLike(err) ? err : {}) as EngineError;
  const summary = typeof e.summary === 'string' ? e.summary : err instanceof Error ? err.message : String(err);
  const kind = e.name === 'ParseError' ? 'syntax error' : 'error';
  let detail = summary;
  if (e.code === 'unknown_variable') detail += ` (variables: ${CEL_VARIABLES.join(', ')})`;
  const start = e.range?.start;
  if (typeof start === 'number') {
    const { line, column } = lineColumn(source, start);
    return new CelCompileError(`CEL ${kind} at line ${line}, column ${column}: ${detail}`, line, column);
  }
  return new CelCompileError(`CEL ${kind}: ${detail}`);
}

function isObjectLike(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}

/**
 * Runtime error text for findings and logs. The engine's own message can
 * quote data (`No such key: <value of a context member>`), so only its error
 * code and the failing part of the policy's own expression are kept.
 */
function runtimeError(source: string, err: unknown): string {
  const e = (isObjectLike(err) ? err : {}) as EngineError;
  const what =
    typeof e.code === 'string' && /^[a-z_]+$/.test(e.code)
      ? e.code.replace(/_/g, ' ')
      : `internal error (${err instanceof Error ? err.name : typeof err})`;
  const { start, end } = e.range ?? {};
  if (typeof start === 'number' && typeof end === 'number' && end > start && end <= source.length) {
    const { line, column } = lineColumn(source, start);
    return `${what} in \`${source.slice(start, end)}\` (line ${line}, column ${column})`;
  }
  return what;
}

/** CEL type name of a value, for the non-bool error (never the value itself). */
function celTypeName(v: unknown): string {
  if (v === null) return 'null_type';
  switch (typeof v) {
    case 'bigint':
      return 'int';
    case 'number':
      return 'double';
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'object':
      if (Array.isArray(v)) return 'list';
      if (v instanceof Uint8Array) return 'bytes';
      return 'map';
    default:
      return typeof v;
  }
}

const ACCEPTED_RESULT_TYPES = new Set(['bool', 'dyn']);
const TRUE: CelResult = Object.freeze({ ok: true, value: true });
const FALSE: CelResult = Object.freeze({ ok: true, value: false });

/** Parse and type-check a `when` against the declared variables. @throws CelCompileError */
function parseChecked(source: string): ReturnType<typeof env.parse> {
  if (typeof source !== 'string' || source.trim() === '') {
    throw new CelCompileError('CEL expression is empty');
  }
  let fn: ReturnType<typeof env.parse>;
  try {
    fn = env.parse(source);
  } catch (err) {
    throw compileError(source, err);
  }
  // check() also records the checked types on the AST, which spares the
  // engine a type check on every evaluation.
  const checked = fn.check();
  if (!checked.valid) throw compileError(source, checked.error);
  if (checked.type === undefined || !ACCEPTED_RESULT_TYPES.has(checked.type)) {
    throw new CelCompileError(`CEL type error: when must yield a bool, but the expression has type ${checked.type ?? 'unknown'}`);
  }
  return fn;
}

/** The parts of the engine's AST nodes read here. */
interface AstNode {
  op: string;
  args: unknown;
  start?: number;
  end?: number;
}

function isAstNode(v: unknown): v is AstNode {
  return isObjectLike(v) && typeof (v as { op?: unknown }).op === 'string';
}

/** The receiver-style calls `x.<name>(...)` of an AST, in source order. */
function receiverCalls(ast: unknown, name: string, out: AstNode[] = []): AstNode[] {
  if (Array.isArray(ast)) {
    for (const a of ast) receiverCalls(a, name, out);
  } else if (isAstNode(ast)) {
    if (ast.op === 'rcall' && Array.isArray(ast.args) && ast.args[0] === name) out.push(ast);
    if (Array.isArray(ast.args)) receiverCalls(ast.args, name, out);
  }
  return out;
}

const MATCHES = 'matches';

/**
 * The text of a `when` with each of its `.matches(` calls (`calls`, from its
 * AST) turned into `.re2find(` (see src/policy/regex.ts); literal patterns
 * are compiled on the way, so one that is not RE2 syntax is a load error.
 * Positions do not move.
 * @throws CelCompileError
 */
function withLinearRegexes(source: string, calls: readonly AstNode[]): string {
  let out = source;
  for (const call of calls) {
    const [, receiver, params] = call.args as [string, unknown, unknown];
    // Between the receiver and the name: closing parentheses, blanks and the dot.
    const from = isAstNode(receiver) && typeof receiver.end === 'number' ? receiver.end : -1;
    const gap = from >= 0 ? /^[\s)]*\.\s*/.exec(source.slice(from)) : null;
    const at = gap === null ? -1 : from + gap[0].length;
    if (at < 0 || source.slice(at, at + MATCHES.length) !== MATCHES) {
      throw new CelCompileError('CEL error: a matches() call could not be located in the expression; write it as <string>.matches(<pattern>)');
    }
    out = out.slice(0, at) + RE2_FUNCTION + out.slice(at + MATCHES.length);
    const pattern = Array.isArray(params) ? (params[0] as unknown) : undefined;
    if (isAstNode(pattern) && pattern.op === 'value' && typeof pattern.args === 'string') {
      try {
        compileLiteralRe2(pattern.args);
      } catch (err) {
        const where = typeof pattern.start === 'number' ? lineColumn(source, pattern.start) : undefined;
        const message = err instanceof Error ? err.message : String(err);
        throw where
          ? new CelCompileError(`CEL error at line ${where.line}, column ${where.column}: matches() pattern is ${message}`, where.line, where.column)
          : new CelCompileError(`CEL error: matches() pattern is ${message}`);
      }
    }
  }
  return out;
}

/** Macros that bind a variable: `x.all(v, p)`, `x.exists(v, p)`, `x.exists_one(v, p)`, `x.map(v, [p,] e)`, `x.filter(v, p)`, `cel.bind(v, init, e)`. */
const BINDING_MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter', 'bind']);

/** The free identifiers of an AST: the variables it reads. */
function freeVariables(ast: unknown, bound: readonly string[] = [], out = new Set<string>()): Set<string> {
  if (Array.isArray(ast)) {
    for (const a of ast) freeVariables(a, bound, out);
    return out;
  }
  if (!isAstNode(ast)) return out;
  if (ast.op === 'id') {
    // Other identifiers are type names (`int`, `string`, ...), which the checker already allowed.
    if (typeof ast.args === 'string' && !bound.includes(ast.args) && (CEL_VARIABLES as readonly string[]).includes(ast.args)) out.add(ast.args);
    return out;
  }
  if (ast.op === 'rcall' && Array.isArray(ast.args) && BINDING_MACROS.has(ast.args[0] as string) && Array.isArray(ast.args[2])) {
    const [, receiver, params] = ast.args as [string, unknown, unknown[]];
    const v = params[0];
    if (isAstNode(v) && v.op === 'id' && typeof v.args === 'string') {
      // cel.bind's receiver is the macro namespace, and its initializer is read outside the binding.
      if (ast.args[0] === 'bind') freeVariables(params[1], bound, out);
      else freeVariables(receiver, bound, out);
      const inner = [...bound, v.args];
      freeVariables(ast.args[0] === 'bind' ? params.slice(2) : params.slice(1), inner, out);
      return out;
    }
  }
  if (Array.isArray(ast.args)) freeVariables(ast.args, bound, out);
  return out;
}

/** The engine's checked AST of a `when`, as the fast path compiles it (for tests and tools). @throws CelCompileError */
export function checkedAst(source: string): unknown {
  return parseChecked(source).ast;
}

/**
 * Compiles a `when` expression: parse, then type-check against the
 * declared variables, so that syntax errors, unknown variables or functions
 * and non-bool types fail at load.
 *
 * @throws CelCompileError with the position when the engine gives one.
 */
export function compileCel(source: string, options: { fastPath?: boolean } = {}): CompiledCel {
  let fn = parseChecked(source);
  // The rewrite target is not part of the policy language: only matches() reaches it.
  if (receiverCalls(fn.ast, RE2_FUNCTION).length > 0) throw new CelCompileError(`CEL error: unknown function ${RE2_FUNCTION}`);
  const calls = receiverCalls(fn.ast, MATCHES);
  if (calls.length > 0) {
    // Evaluate the same expression with matches() in RE2; engine error ranges still index `source`.
    fn = parseChecked(withLinearRegexes(source, calls));
    if (receiverCalls(fn.ast, MATCHES).length !== 0 || receiverCalls(fn.ast, RE2_FUNCTION).length !== calls.length) {
      throw new CelCompileError('CEL error: the matches() calls of the expression could not be prepared for linear-time evaluation');
    }
  }
  // Most expressions also get the compiled fast path (src/policy/cel-fast.ts); the engine answers whatever it cannot.
  const fast = options.fastPath === false ? undefined : compileFast(fn.ast);
  return {
    source,
    variables: freeVariables(fn.ast),
    fast: fast !== undefined,
    evaluate(activation: CelActivation): CelResult {
      if (fast !== undefined && (activation as unknown) instanceof Activation) {
        const v = fast((activation as unknown as Activation).plain);
        if (v !== UNKNOWN) return v ? TRUE : FALSE;
      }
      let value: unknown;
      try {
        value = fn(activation as unknown as Record<string, unknown>);
      } catch (err) {
        return { ok: false, error: runtimeError(source, err) };
      }
      if (typeof value === 'boolean') return { ok: true, value };
      return { ok: false, error: `when must yield a bool, got ${celTypeName(value)}` };
    },
  };
}

// ------------------------------------------------------------ JS -> CEL

/** Members that are CEL ints where they appear (`result.blockCount`, `block.index`). */
const INT_MEMBERS = new Set(['blockCount', 'index']);

/**
 * Converts JSON data to the engine's CEL values: string -> string,
 * boolean -> bool, null -> null_type, number -> double, array -> list,
 * object -> map. Like JSON.stringify, `undefined` members are left out
 * (so `has()` is false) and `undefined` list items become null; functions
 * and symbols are left out. With `intMembers`, the top-level members named
 * in INT_MEMBERS become ints.
 *
 * Maps are `Map`s, not objects: the engine tells maps from other values by
 * their `constructor` property, so an object holding a data member named
 * `constructor` would stop being a map, and a `__proto__` key would need
 * care; in a `Map` every key is plain data.
 */
function toCel(v: unknown, intMembers = false): unknown {
  if (v === null) return null;
  switch (typeof v) {
    case 'string':
    case 'boolean':
    case 'number':
    case 'bigint':
      return v;
    case 'object':
      break;
    default:
      return undefined;
  }
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = toCel(v[i]) ?? null;
    return out;
  }
  const out = new Map<string, unknown>();
  for (const key of Object.keys(v)) {
    const x = (v as Record<string, unknown>)[key];
    const value = intMembers && INT_MEMBERS.has(key) && typeof x === 'number' && Number.isSafeInteger(x) ? BigInt(x) : toCel(x);
    if (value !== undefined) out.set(key, value);
  }
  return out;
}

function mapWithDefaults(v: Record<string, unknown> | undefined, defaults: Record<string, () => unknown>): Map<string, unknown> {
  const out = isRecord(v) ? (toCel(v) as Map<string, unknown>) : new Map<string, unknown>();
  for (const [key, make] of Object.entries(defaults)) if (!out.has(key)) out.set(key, make());
  return out;
}

const emptyMap = () => new Map<string, unknown>();
const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});

/** `v` with the default members it lacks (as mapWithDefaults gives the engine), or the defaults alone. */
function plainWithDefaults(v: Record<string, unknown> | undefined, defaults: Record<string, unknown>): Record<string, unknown> {
  if (!isRecord(v)) return { ...defaults };
  for (const key of Object.keys(defaults)) {
    if (!Object.prototype.hasOwnProperty.call(v, key) || v[key] === undefined) return { ...defaults, ...definedMembers(v) };
  }
  return v;
}

function definedMembers(v: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(v)) {
    const value = v[key];
    if (value === undefined) continue;
    // Assigning `__proto__` would set the prototype; define it as the plain member it is in the JSON.
    if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else out[key] = value;
  }
  return out;
}

/**
 * The members shared by every scope of a decision, converted on first read
 * and then kept for the decision's other scopes: a policy set that never
 * reads `tool` or `server` never pays for converting them. Absent `tool`,
 * `server`, `context` get the contract defaults (`{ name: "", annotations:
 * {} }`, `{ name: "" }`, `{}`); a given `tool` or `server` lacking
 * `name`/`annotations` gets those members too, since policies may rely on
 * them being there.
 *
 * Numbers: `result.blockCount` is an int; every number inside `tool`,
 * `server` and `context` is a double (JSON does not tell `1` from `1.0`).
 * `context.n == 1` and `context.n > 0` hold for `n: 1` (CEL compares
 * numbers across types), while `context.n + 1` is an error (CEL has no
 * mixed int/double arithmetic): write `context.n + 1.0` or `int(context.n) + 1`.
 */
class Shared {
  #vars: SharedVarsInput;
  #result: unknown;
  #tool: unknown;
  #server: unknown;
  #context: unknown;
  #validation: unknown;
  #plainTool: unknown;
  #plainServer: unknown;
  #plainValidation: unknown;
  #session: unknown;
  #call: unknown;
  #plainCall: unknown;

  constructor(vars: SharedVarsInput) {
    this.#vars = vars;
  }

  get result(): unknown {
    return (this.#result ??= toCel(this.#vars.result, true));
  }

  get tool(): unknown {
    if (this.#tool === undefined) {
      const m = mapWithDefaults(this.#vars.tool, { name: () => '', annotations: emptyMap }).set('hints', toCel(toolHints(this.#vars.tool)));
      const extra = this.#vars.toolMembers;
      if (extra !== undefined) for (const k of Object.keys(extra)) if (extra[k] !== undefined) m.set(k, toCel(extra[k]));
      this.#tool = m;
    }
    return this.#tool;
  }

  get session(): unknown {
    return (this.#session ??= sessionToCel(this.#vars.session ?? NO_SESSION));
  }

  get call(): unknown {
    return (this.#call ??= mapWithDefaults(this.#vars.call as Record<string, unknown> | undefined, { name: () => '', method: () => 'tools/call', arguments: emptyMap }));
  }

  get plainSession(): unknown {
    return this.#vars.session ?? NO_SESSION;
  }

  get plainCall(): unknown {
    return (this.#plainCall ??= plainWithDefaults(this.#vars.call as Record<string, unknown> | undefined, { name: '', method: 'tools/call', arguments: {} }));
  }

  get server(): unknown {
    return (this.#server ??= mapWithDefaults(this.#vars.server, { name: () => '' }));
  }

  get context(): unknown {
    return (this.#context ??= mapWithDefaults(this.#vars.context, {}));
  }

  /** The plain-data counterparts for the fast path: the same members and defaults, no conversion. */
  get plainTool(): unknown {
    // `hints` is always computed, never taken from the request (a definition's own `hints` member is replaced);
    // a pre-call decision passes the hints it computed among its toolMembers.
    const extra = this.#vars.toolMembers;
    return (this.#plainTool ??= {
      ...plainWithDefaults(this.#vars.tool, { name: '', annotations: {} }),
      ...(extra !== undefined && extra.hints !== undefined ? extra : { hints: toolHints(this.#vars.tool), ...extra }),
    });
  }

  get plainServer(): unknown {
    return (this.#plainServer ??= plainWithDefaults(this.#vars.server, { name: '' }));
  }

  get plainContext(): unknown {
    return isRecord(this.#vars.context) ? this.#vars.context : EMPTY;
  }

  get plainValidation(): unknown {
    return (this.#plainValidation ??= this.#vars.validation.map((f) => ({ rule: f.rule, severity: f.severity, pointer: f.pointer })));
  }

  get plainResult(): unknown {
    return this.#vars.result;
  }

  get validation(): unknown {
    return (this.#validation ??= this.#vars.validation.map(
      (f) =>
        new Map<string, unknown>([
          ['rule', f.rule],
          ['severity', f.severity],
          ['pointer', f.pointer],
        ]),
    ));
  }
}

/** `session` in CEL form: `calls` and `results` are ints. */
function sessionToCel(v: SessionVar): Map<string, unknown> {
  return new Map<string, unknown>([
    ['id', v.id],
    ['forgotten', v.forgotten === true],
    ['sensitive', v.sensitive],
    ['untrusted', v.untrusted],
    ['dataClass', isRecord(v.dataClass) ? toCel(v.dataClass) : emptyMap()],
    ['calls', BigInt(v.calls)],
    ['results', BigInt(v.results)],
    ['tools', v.tools.slice()],
  ]);
}

/** The shared members of one decision, for every activation of that decision (see Shared). */
export function prepareShared(vars: SharedVarsInput): SharedActivation {
  return new Shared(vars) as unknown as SharedActivation;
}

/**
 * Binds every variable for one scope (`block` with `index` as an int);
 * nothing is converted until a rule reads it.
 */
export function buildActivation(shared: SharedActivation, scope: ScopeVarsInput): CelActivation {
  return new Activation(shared as unknown as Shared, scope) as unknown as CelActivation;
}

/**
 * All the variables for one scope. Every member is converted on first
 * read (the shared ones once per decision): most rules read `block` and
 * `context` only, so the rest is never built for them. Variable names are
 * fixed, so one class (one hidden class) holds them; data keys live only
 * inside the Maps.
 */
class Activation {
  #shared: Shared;
  #scope: ScopeVarsInput;
  #block: unknown;
  #evidence: unknown;
  #dataClass: unknown;
  #plain: PlainVars | undefined;

  constructor(shared: Shared, scope: ScopeVarsInput) {
    this.#shared = shared;
    this.#scope = scope;
  }

  /** The variables as plain data, for the fast path. */
  get plain(): PlainVars {
    return (this.#plain ??= new PlainScope(this.#shared, this.#scope));
  }

  get result(): unknown {
    return this.#shared.result;
  }

  get tool(): unknown {
    return this.#shared.tool;
  }

  get server(): unknown {
    return this.#shared.server;
  }

  get context(): unknown {
    return this.#shared.context;
  }

  get validation(): unknown {
    return this.#shared.validation;
  }

  get session(): unknown {
    return this.#shared.session;
  }

  get call(): unknown {
    return this.#shared.call;
  }

  get block(): unknown {
    return (this.#block ??= isRecord(this.#scope.block) ? toCel(this.#scope.block, true) : emptyMap());
  }

  get evidence(): unknown {
    return (this.#evidence ??= toCel(this.#scope.evidence));
  }

  get dataClass(): unknown {
    return (this.#dataClass ??= isRecord(this.#scope.dataClass) ? toCel(this.#scope.dataClass) : emptyMap());
  }
}

/**
 * The variables of one scope as plain data, for the fast path. Shared
 * members are read through the decision's Shared (built on first read), so
 * a rule that never reads `tool` never builds it.
 */
class PlainScope implements PlainVars {
  readonly result: unknown;
  readonly context: unknown;
  readonly block: unknown;
  readonly evidence: unknown;
  readonly dataClass: unknown;
  readonly #shared: Shared;

  constructor(shared: Shared, scope: ScopeVarsInput) {
    this.#shared = shared;
    this.result = shared.plainResult;
    this.context = shared.plainContext;
    this.block = isRecord(scope.block) ? scope.block : EMPTY;
    this.evidence = scope.evidence;
    this.dataClass = isRecord(scope.dataClass) ? scope.dataClass : EMPTY;
  }

  get tool(): unknown {
    return this.#shared.plainTool;
  }

  get server(): unknown {
    return this.#shared.plainServer;
  }

  get validation(): unknown {
    return this.#shared.plainValidation;
  }

  get session(): unknown {
    return this.#shared.plainSession;
  }

  get call(): unknown {
    return this.#shared.plainCall;
  }
}
