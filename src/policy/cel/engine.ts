/**
 * CEL adapter: the only module that knows which CEL engine runs policy
 * `when` expressions (docs/policies/reference.md). The variables it declares come
 * from the one variable table (variables.ts); the values it evaluates on
 * are built by values.ts.
 *
 * Engine: @marcbachmann/cel-js, chosen by `bench/cel.ts` against
 * @bufbuild/cel (the figures: docs/performance.md#the-cel-engine). Both engines got the runtime semantics right (`has()` on absent members,
 * `in` on lists, int/double comparison under `dyn`, errors for missing keys,
 * division by zero and mixed int/double arithmetic, error absorption by
 * `||`/`&&`). cel-js is faster, and it has a type checker, so an unknown
 * variable or function, or a `when` whose type is not bool, fails at load;
 * @bufbuild/cel 0.6.1 exports no checker (its internal one handles only
 * constants and identifiers), so those mistakes would surface only when a
 * request arrives. @bufbuild/cel also rejects `//` comments, which CEL allows.
 *
 * Every `when` inside the common subset of CEL also gets a compiled fast
 * path (fast.ts) that reads the variables as plain data and
 * defers to the engine wherever it cannot tell (what it saves:
 * docs/performance.md#the-cel-engine).
 *
 * Known limits of cel-js kept in mind: `has()` takes a member chain that
 * starts at a variable (`has(list[0].x)` is refused at load, not
 * mis-evaluated), and its `matches()` uses JavaScript regular expressions,
 * which backtrack; `matches()` is therefore routed to RE2 (src/policy/regex.ts).
 */
import { Environment } from '@marcbachmann/cel-js';
import { detectKinds } from '../../detect/index.js';
import { checkDeadline, runningDeadline } from './deadline.js';
import { isRecord } from '../../json/record.js';
import { compileLiteralRe2, re2find, RE2_FUNCTION } from '../regex.js';
import { compileFast, UNKNOWN } from './fast.js';
import { Activation, type CelActivation } from './values.js';
import { CEL_VARIABLE_TABLE, CEL_VARIABLES } from './variables.js';

/** Declares every variable of the table on an engine environment (the engine benchmark declares the same). */
export function declareVariables(env: Environment): Environment {
  for (const v of CEL_VARIABLE_TABLE) env.registerVariable(v.name, v.type);
  return env;
}

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

/** Outcome of one evaluation: a bool, or the reason there is none. */
export type CelResult = { ok: true; value: boolean } | { ok: false; error: string };

/** A `when` compiled once at load, evaluated many times. */
export interface CompiledCel {
  readonly source: string;
  /** The variables the expression reads (comprehension variables excluded). */
  readonly variables: ReadonlySet<string>;
  /**
   * The member names the expression may read on any value (`x.name`,
   * `has(x.name)`, `x["name"]`); `*` when an index is computed, so the
   * expression may read any member.
   */
  readonly members: ReadonlySet<string>;
  /** True when the expression runs on the compiled fast path (falling back to the engine where that cannot tell). */
  readonly fast: boolean;
  /** Never throws: runtime errors and non-bool values come back as `{ ok: false }`. */
  evaluate(activation: CelActivation): CelResult;
}

/** The engine with every variable of the table (see CelVariableType for why maps with dyn values), then the functions. */
const env = declareVariables(new Environment())
  .registerFunction(`string.${RE2_FUNCTION}(string): bool`, re2find)
  // Content detectors (docs/behaviour/labels-and-detectors.md): the kinds found, in order of first appearance.
  .registerFunction('secrets(string): list<string>', (s: string) => detectKinds('secrets', s, runningDeadline()))
  .registerFunction('pii(string): list<string>', (s: string) => detectKinds('pii', s, runningDeadline()));

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
  const e = (isRecord(err) ? err : {}) as EngineError;
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

/**
 * Runtime error text for findings and logs. The engine's own message can
 * quote data (`No such key: <value of a context member>`), so only its error
 * code and the failing part of the policy's own expression are kept.
 */
function runtimeError(source: string, err: unknown): string {
  const e = (isRecord(err) ? err : {}) as EngineError;
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
  return isRecord(v) && typeof (v as { op?: unknown }).op === 'string';
}

/** What the engine keeps of a macro call (`x.all(v, p)`): the comprehension it expands to, and the function that runs it. */
interface Comprehension {
  op: string;
  handle: (...args: unknown[]) => unknown;
}

/**
 * Each comprehension of a checked expression asks the deadline as it starts
 * (deadline.ts): a nested one once per element of the list around it, so
 * the work past the deadline is at most one pass over one list. The
 * engine keeps a macro's expansion in the call's `meta.alternate`; a macro
 * call whose expansion is not found there stops the load, so an engine
 * that keeps it elsewhere cannot run without the bound.
 */
function boundComprehensions(ast: unknown): void {
  for (const name of ['all', 'exists', 'exists_one', 'map', 'filter']) {
    for (const call of receiverCalls(ast, name)) {
      const alt = (call as { meta?: { alternate?: Comprehension } }).meta?.alternate;
      if (alt?.op !== 'comprehension' || typeof alt.handle !== 'function') throw new CelCompileError(`CEL error: the ${name}() macro could not be bounded by the evaluation budget`);
      const run = alt.handle;
      alt.handle = (...args: unknown[]) => {
        checkDeadline();
        return run(...args);
      };
    }
  }
}

/**
 * What a node's operands are, for the walks below: a list of them, or one
 * node (a unary operator's: `!x`, `-x`), or a name or value (none). A walk
 * that read only lists missed everything under `!`: a `!s.matches(re)`
 * kept the engine's backtracking regex, a `!session.x` did not count as
 * reading the session.
 */
function operands(ast: AstNode): unknown {
  return Array.isArray(ast.args) || isAstNode(ast.args) ? ast.args : undefined;
}

/** The receiver-style calls `x.<name>(...)` of an AST, in source order. */
function receiverCalls(ast: unknown, name: string, out: AstNode[] = []): AstNode[] {
  if (Array.isArray(ast)) {
    for (const a of ast) receiverCalls(a, name, out);
  } else if (isAstNode(ast)) {
    if (ast.op === 'rcall' && Array.isArray(ast.args) && ast.args[0] === name) out.push(ast);
    receiverCalls(operands(ast), name, out);
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
  freeVariables(operands(ast), bound, out);
  return out;
}

/** The member names an AST selects or indexes by a literal; `*` for an index it computes (see CompiledCel.members). */
function memberNames(ast: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(ast)) {
    for (const a of ast) memberNames(a, out);
    return out;
  }
  if (!isAstNode(ast)) return out;
  if ((ast.op === '.' || ast.op === '.?') && Array.isArray(ast.args) && typeof ast.args[1] === 'string') out.add(ast.args[1]);
  if ((ast.op === '[]' || ast.op === '[?]') && Array.isArray(ast.args)) {
    const index = ast.args[1];
    if (isAstNode(index) && index.op === 'value' && typeof index.args === 'string') out.add(index.args);
    else out.add('*');
  }
  memberNames(operands(ast), out);
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
  boundComprehensions(fn.ast);
  // Most expressions also get the compiled fast path (fast.ts); the engine answers whatever it cannot.
  const fast = options.fastPath === false ? undefined : compileFast(fn.ast);
  return {
    source,
    variables: freeVariables(fn.ast),
    members: memberNames(fn.ast),
    fast: fast !== undefined,
    evaluate(activation: CelActivation): CelResult {
      if (fast !== undefined && (activation as unknown) instanceof Activation) {
        let v: boolean | typeof UNKNOWN;
        try {
          v = fast((activation as unknown as Activation).plain);
        } catch (err) {
          // A function of ours that throws (a detector whose scan ran out of the decision's time) is the rule's error, as on the engine's path: fail closed.
          return { ok: false, error: runtimeError(source, err) };
        }
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
