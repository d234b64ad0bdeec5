/**
 * MCP tool annotations as hints with MCP's defaults (docs/behaviour/sessions.md):
 * a hint the definition leaves out (or gives as anything but a boolean)
 * takes the value MCP specifies for its absence, which is also the cautious
 * one: not read-only, destructive, not idempotent, reaching the open world.
 */
import { perFrozen } from '../json/frozen.js';
import { isRecord, own } from '../json/record.js';

export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** MCP's value for each hint when a tool does not give it. */
export const HINT_DEFAULTS: Readonly<ToolHints> = Object.freeze({
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
});

/**
 * The hints of a tool definition (`tools/list` item); every hint defaults
 * without a tool. Frozen: a deep-frozen definition's are computed once.
 */
export const toolHints: (tool: unknown) => Readonly<ToolHints> = perFrozen(hintsOf);

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
