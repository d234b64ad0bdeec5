/**
 * Strings a host shows that are not prose to fence: the texts of listed
 * tool definitions (tool-list.ts), and the identifiers of a message (its
 * URIs, names, media types, annotations: judged.ts). Each is read by the
 * detectors and masked as a result's text would be (contract section 19:
 * every string the host will see), as one text block of a decision that
 * keeps no session and believes the message closed-world: what changes a
 * string is what the rules mask or withhold, never the fence an untrusted
 * result gets (a fenced URI is no URI). The session takes the message in
 * elsewhere, as the server's content.
 */
import type { DecisionCore } from '../../decision/core.js';
import { isRecord } from '../../json/record.js';
import { unfence } from '../../policy/effects.js';

export interface MaskDeps {
  core: DecisionCore;
  /** `server` of the decision: the operator's name, and what the server reports of itself. */
  server: Readonly<{ name: string; reported?: string }>;
  context?: Record<string, unknown> | undefined;
  /** The message the strings come from (`call.method` of the decision). */
  method: string;
}

/** What stands in a string judging withholds. */
export const WITHHELD_TEXT = '[withheld by Trustgate]';

/**
 * What a string becomes from its judged block: withheld when the decision
 * forwarded nothing of it (no result, dropped, redacted); masked when a
 * mask applied (the masked text, from inside the fence when the rules also
 * fenced it); else the string as it was: a fence alone never changes an
 * identifier.
 */
function judgedString(text: string, block: unknown, actions: readonly string[]): string {
  if (!isRecord(block) || block.type !== 'text' || typeof block.text !== 'string' || actions.includes('drop') || actions.includes('redact')) return WITHHELD_TEXT;
  if (!actions.includes('mask')) return text;
  if (!actions.includes('spotlight')) return block.text;
  return unfence(block.text) ?? WITHHELD_TEXT;
}

/** Most strings read in one decision (a result holds at most TRUSTGATE_MAX_BLOCKS, 10,000 by default). */
const PER_DECISION = 500;

/** `texts` as the host may see them: each masked, or Trustgate's placeholder where judging withholds it (a decision that forwards nothing withholds all of its strings). */
export async function maskedStrings(deps: MaskDeps, all: readonly string[]): Promise<string[]> {
  // Each distinct string read once (a list repeats its member names and media types).
  const texts = [...new Set(all)];
  const out = texts.slice();
  for (let from = 0; from < texts.length; from += PER_DECISION) {
    const batch = texts.slice(from, from + PER_DECISION);
    const d = await deps.core.evaluateResult({
      request: {
        result: { content: batch.map((text) => ({ type: 'text', text })) },
        tool: { name: '', annotations: { openWorldHint: false, readOnlyHint: true } },
        server: deps.server,
        ...(deps.context ? { context: deps.context } : {}),
      },
      operator: { hints: 'declared' },
      call: { method: deps.method, name: '', arguments: {} },
    });
    const blocks = isRecord(d.result) && Array.isArray(d.result.content) && d.result.content.length === batch.length ? d.result.content : undefined;
    const actions = new Map(d.blocks.map((b) => [b.index, b.actions]));
    batch.forEach((text, k) => {
      out[from + k] = judgedString(text, blocks?.[k], actions.get(k) ?? []);
    });
  }
  const masked = new Map(texts.map((t, i) => [t, out[i]!]));
  return all.map((t) => masked.get(t)!);
}
