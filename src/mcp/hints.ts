/**
 * MCP tool annotations as hints (docs/behaviour/operator.md). What a server
 * declares is a claim: MCP says clients must treat tool annotations as
 * untrusted unless they come from a trusted server. Two views:
 *
 * - `declared`: what the server said, with MCP's value for each hint it
 *   leaves out (or gives as anything but a boolean);
 * - `hints`: what is believed. By default (`hints: "defaults"`) a declared
 *   hint that would lower protection is not believed and MCP's default
 *   stands (MCP's defaults are the cautious values: not read-only,
 *   destructive, not idempotent, reaching the open world); with
 *   `hints: "declared"` the operator believes the server. The operator's
 *   own annotations for a tool are always believed, hint by hint.
 */
import { perFrozen } from '../json/frozen.js';
import { isRecord, own } from '../json/record.js';

export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export const HINT_NAMES: readonly (keyof ToolHints)[] = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'];

/** MCP's value for each hint when a tool does not give it. */
export const HINT_DEFAULTS: Readonly<ToolHints> = Object.freeze({
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
});

/** Whether a server's hints are believed (`declared`) or only where they do not lower protection (`defaults`, the default). */
export type HintsTrust = 'declared' | 'defaults';

/** What the operator says of one server's hints (the `hints` and `tools` members of its operator entry). */
export interface OperatorHints {
  readonly hints?: HintsTrust | undefined;
  /** Per tool name, annotations the operator gives: always believed, hint by hint. */
  readonly tools?: Readonly<Record<string, { readonly annotations?: Readonly<Partial<ToolHints>> }>> | undefined;
}

/** The two views of a tool's hints that policies read as `tool.hints` and `tool.declared`. */
export type HintViews = {
  hints: Readonly<ToolHints>;
  declared: Readonly<ToolHints>;
};

/**
 * The hints a tool definition declares (`tools/list` item), MCP's defaults
 * for the ones it leaves out; every hint defaults without a tool. Frozen:
 * a deep-frozen definition's are computed once.
 */
export const declaredHints: (tool: unknown) => Readonly<ToolHints> = perFrozen(hintsOf);

function hintsOf(tool: unknown): Readonly<ToolHints> {
  const ann = isRecord(tool) ? own(tool, 'annotations') : undefined;
  const hint = (name: keyof ToolHints): boolean => {
    const v = isRecord(ann) ? own(ann, name) : undefined;
    return typeof v === 'boolean' ? v : HINT_DEFAULTS[name];
  };
  return Object.freeze({
    readOnlyHint: hint('readOnlyHint'),
    destructiveHint: hint('destructiveHint'),
    idempotentHint: hint('idempotentHint'),
    openWorldHint: hint('openWorldHint'),
  });
}

/** Whether `value` for hint `name` protects at least as much as MCP's default: only such a declared hint is believed by default. */
function noLowerThanDefault(name: keyof ToolHints, value: boolean): boolean {
  return value === HINT_DEFAULTS[name];
}

/** The hints believed for `tool` under the operator's word `op` (none: `hints: "defaults"` and no annotations of the operator's). */
export function believedHints(tool: unknown, op: OperatorHints | undefined, name?: string): Readonly<ToolHints> {
  const declared = declaredHints(tool);
  const own_ = op?.tools === undefined ? undefined : operatorAnnotations(op.tools, name ?? toolName(tool));
  if (op?.hints === 'declared' && own_ === undefined) return declared;
  const out = { ...declared };
  for (const h of HINT_NAMES) {
    const given = own_?.[h];
    if (typeof given === 'boolean') out[h] = given;
    else if (op?.hints !== 'declared' && !noLowerThanDefault(h, declared[h])) out[h] = HINT_DEFAULTS[h];
  }
  return Object.freeze(out);
}

/** Both views of `tool`'s hints. */
export function hintViews(tool: unknown, op: OperatorHints | undefined, name?: string): HintViews {
  return { hints: believedHints(tool, op, name), declared: declaredHints(tool) };
}

function toolName(tool: unknown): string | undefined {
  const n = isRecord(tool) ? own(tool, 'name') : undefined;
  return typeof n === 'string' ? n : undefined;
}

function operatorAnnotations(tools: NonNullable<OperatorHints['tools']>, name: string | undefined): Readonly<Partial<ToolHints>> | undefined {
  if (name === undefined || !Object.hasOwn(tools, name)) return undefined;
  return tools[name]?.annotations;
}
