/**
 * What is forwarded (docs/behaviour/forwarding.md): the `result` of an answer, built
 * from what was judged. Pure: the spotlight boundary is passed in; the input
 * is never mutated.
 *
 * - Nothing applied and no member a case-insensitive host could misread:
 *   the input itself is forwarded, unknown members included (validation
 *   reports them; v1 behaviour).
 * - Only case-fold collisions (law 3): the input with those members left
 *   out, and nothing else changed.
 * - Any transforming effect applied (redact, drop, spotlight, at block or
 *   result scope): the result is rebuilt from allow-lists, per protocol
 *   revision, from the schema-derived MCP tables. The envelope keeps
 *   `content`, a boolean `isError`, a string `resultType` (from
 *   2026-07-28) and `_meta` holding the trust claim alone; everything else
 *   (`structuredContent`, which mirrors the blocks; `toolResult`; unknown
 *   members; other `_meta` entries) is withheld, since any of it may repeat
 *   what a block held. A block no effect touched is forwarded as it came
 *   (less its case-fold collisions); a redacted block becomes a placeholder
 *   built from nothing of its content; a spotlit block keeps only the
 *   members its type defines in that revision, with every reader-visible
 *   string fenced (law 2): `text`, an embedded resource's `text` (a textual
 *   `blob` is decoded and forwarded as fenced `text`, and `blob` is listed
 *   as withheld), a `resource_link`'s `description` (its `name` becomes
 *   the last segment of its `uri`'s path, `resource` when a mask changes
 *   the `uri`, and its `title` is withheld:
 *   hosts show both in pickers, where a fence does not belong). Exempt, as the contract says, are
 *   `type`, `mimeType`, `uri`, `annotations`, the trust claim and the
 *   base64 `data` of images and audio. `icons` of a spotlit
 *   `resource_link` are withheld, and a block spotlight cannot fence at all
 *   (a non-textual `blob`, a content item that is not an object, an
 *   embedded resource with neither `text` nor `blob`) is replaced by a
 *   placeholder.
 *
 * `withheld` lists, as RFC 6901 pointers into the request's result, every
 * member withheld beyond whole blocks that an effect redacted or dropped
 * (law 4), in document order of the pointers' tokens.
 */
import { copyWithout, setOwn } from '../json/copy.js';
import { hasOwn, own } from '../json/record.js';
import { atLeast } from '../mcp/revisions.js';
import { masksNothing, planIsEmpty } from '../policy/effects.js';
import { raisesNothing } from './labels.js';
import { Fencing } from './forward/fence.js';
import { child, type ForwardInput, type Forwarded } from './forward/withhold.js';

export type { ForwardInput, Forwarded, MaskedEntry } from './forward/withhold.js';

/** The result to forward for one decision (see the module comment). */
export function forward(input: ForwardInput): Forwarded {
  const { result, plan } = input;
  const tree = input.collisions;
  const b = new Fencing(input);
  const done = (out: Record<string, unknown>, modified: boolean): Forwarded => ({
    result: out,
    modified,
    actions: b.actions,
    withheld: modified ? b.pointers() : [],
    omitted: modified ? b.omitted : 0,
    masked: b.masked,
    maskedOmitted: b.maskedOmitted,
    maskedBlocks: b.maskedBlocks,
  });
  const labelsNothing = input.raises === undefined || raisesNothing(input.raises);
  // A `content` that is not an array holds no block, so no rule judged any of it: it is never forwarded (an empty list is).
  const unjudged = hasOwn(result, 'content') && !Array.isArray(own(result, 'content'));
  if (planIsEmpty(plan)) {
    if (!tree && masksNothing(plan) && labelsNothing && !unjudged) return done(result, false);
    // No block is rebuilt: the result (less its case-fold collisions) with its strings masked and its claims raised (docs/behaviour/labels-and-detectors.md).
    let out = tree ? (b.prune(result, tree, []) as Record<string, unknown>) : result;
    if (unjudged) {
      out = copyWithout(out);
      b.withhold([], 'content');
      setOwn(out, 'content', []);
    }
    if (!masksNothing(plan)) {
      const content = own(out, 'content');
      let next: Record<string, unknown> | undefined;
      if (Array.isArray(content)) {
        let blocks: unknown[] | undefined;
        for (let i = 0; i < content.length; i++) {
          const specs = b.masksFor(i);
          if (specs === undefined) continue;
          const x = b.maskBlock(i, content[i], specs);
          if (x !== content[i]) (blocks ??= content.slice())[i] = x;
        }
        if (blocks !== undefined) setOwn((next = copyWithout(out)), 'content', blocks);
      }
      for (const key of Object.keys(out)) {
        if (key === 'content') continue;
        // A member whose name holds a masked kind is withheld with its value, as inside any object (maskDeep).
        if (plan.resultMasks.length > 0 && b.nameHolds(key, plan.resultMasks)) {
          delete (next ??= copyWithout(out))[key];
          b.withhold([], key);
          continue;
        }
        const v = out[key];
        // Scope result masks every string of the result; scope block reaches structuredContent where it holds a masked kind.
        const x = key === 'structuredContent' ? b.maskStructured(v) : plan.resultMasks.length > 0 ? b.maskDeep(v, plan.resultMasks, [key]) : v;
        if (x !== v) setOwn((next ??= copyWithout(out)), key, x);
      }
      if (next !== undefined) out = next;
    }
    out = b.applyLabels(out, (i) => i);
    return done(out, out !== result);
  }

  let out: Record<string, unknown> = {};
  let changed = false;
  const positions = new Map<number, number>();
  for (const key of Object.keys(result)) {
    const v = result[key];
    const n = child(tree, key);
    if (n === true) {
      b.withhold([], key);
      continue;
    }
    switch (key) {
      case 'content': {
        if (!Array.isArray(v)) {
          // Only a result-scope effect reaches a content that is not an array: nothing of it is judged.
          b.withhold([], key);
          setOwn(out, key, []);
          break;
        }
        const next: unknown[] = [];
        for (let i = 0; i < v.length; i++) {
          const block: unknown = v[i];
          const p = plan.blocks.get(i);
          const bn = child(n, i);
          if (p?.effect !== 'drop') positions.set(i, next.length);
          if (!p) {
            let kept = b.prune(block, bn, ['content', i]);
            const specs = b.masksFor(i);
            if (specs !== undefined) kept = b.maskBlock(i, kept, specs);
            if (kept !== block) changed = true;
            next.push(kept);
          } else if (p.effect === 'drop') {
            b.actions.set(i, 'drop');
            changed = true;
          } else if (p.effect === 'redact') {
            b.actions.set(i, 'redact');
            next.push(b.placeholder(i, block, p));
            changed = true;
          } else {
            const kept = b.spotlight(i, block, p, bn);
            if (kept !== block) changed = true;
            next.push(kept);
          }
        }
        setOwn(out, key, next);
        break;
      }
      case 'isError':
        if (typeof v === 'boolean') setOwn(out, key, v);
        else b.withhold([], key);
        break;
      case 'resultType':
        if (typeof v === 'string' && atLeast(input.revision, '2026-07-28')) setOwn(out, key, v);
        else b.withhold([], key);
        break;
      case '_meta': {
        const meta = b.trustMetaOnly(v, n, ['_meta']);
        if (meta !== v) changed = true;
        if (meta !== undefined) setOwn(out, key, meta);
        break;
      }
      default:
        // structuredContent (it mirrors the blocks), toolResult, unknown members.
        b.withhold([], key);
    }
  }
  if (!changed && b.withheld.length === 0 && b.omitted === 0 && labelsNothing) return done(result, false);
  // A result with no content (the compatibility `toolResult` form, say) that a
  // result-scope effect rebuilt still goes out as a CallToolResult.
  if (!hasOwn(out, 'content')) setOwn(out, 'content', []);
  out = b.applyLabels(out, (i) => positions.get(i));
  return done(out, true);
}
