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

/** A block between two groups of strings: blank, so no value is read across them (detect/index.ts, seams). */
const APART = { type: 'text', text: ' ' };

/**
 * `groups` of strings as the host may see them: each string masked, or
 * Trustgate's placeholder where judging withholds it (a decision that
 * forwards nothing withholds all of its strings). The strings of a group
 * are read as a result's consecutive blocks are (a value split over two is
 * read whole, detect/index.ts); no value is read across two groups.
 */
export async function maskedGroups(deps: MaskDeps, groups: ReadonlyArray<readonly string[]>): Promise<string[][]> {
  const out = groups.map((g) => g.slice());
  let content: Array<Record<string, unknown>> = [];
  // For each block of `content`, the string it is (group, index), or undefined for a block between groups.
  let where: Array<readonly [number, number] | undefined> = [];
  const flush = async () => {
    if (content.length === 0) return;
    const d = await deps.core.evaluateResult({
      request: {
        result: { content },
        tool: { name: '', annotations: { openWorldHint: false, readOnlyHint: true } },
        server: deps.server,
        ...(deps.context ? { context: deps.context } : {}),
      },
      operator: { hints: 'declared' },
      call: { method: deps.method, name: '', arguments: {} },
    });
    const blocks = isRecord(d.result) && Array.isArray(d.result.content) && d.result.content.length === content.length ? d.result.content : undefined;
    const actions = new Map(d.blocks.map((b) => [b.index, b.actions]));
    where.forEach((w, i) => {
      if (w !== undefined) out[w[0]]![w[1]] = judgedString(groups[w[0]]![w[1]]!, blocks?.[i], actions.get(i) ?? []);
    });
    content = [];
    where = [];
  };
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g]!;
    for (let k = 0; k < group.length; k++) {
      if (content.length >= PER_DECISION) {
        await flush();
        // Each decision holds the process for at most its budget; between two, whatever else waits (another server's
        // message in the gateway, a timer) runs, so a list of many strings never holds the process for all of them.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      if (k === 0 && content.length > 0) {
        content.push(APART);
        where.push(undefined);
      }
      content.push({ type: 'text', text: group[k]! });
      where.push([g, k]);
    }
  }
  await flush();
  return out;
}

/**
 * `all` as the host may see them (maskedGroups), each distinct string read
 * once: as one group (consecutive strings read across their seam), or with
 * `alone` each by itself (names, and strings whose neighbours in the list
 * are not their text).
 */
export async function maskedStrings(deps: MaskDeps, all: readonly string[], how: { alone?: boolean } = {}): Promise<string[]> {
  // Each distinct string read once (a list repeats its member names and media types).
  const texts = [...new Set(all)];
  const read = await maskedGroups(deps, how.alone === true ? texts.map((t) => [t]) : [texts]);
  const masked = new Map(texts.map((t, i) => [t, how.alone === true ? read[i]![0]! : read[0]![i]!]));
  return all.map((t) => masked.get(t)!);
}
