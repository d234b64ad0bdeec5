/**
 * String-length limit on what policies and evidence matching read (tool and
 * server names, context, evidence digests and refs, block uri and mimeType):
 * CEL string functions (`matches`, `contains`) and digest parsing cost grow
 * with these, while block text never reaches CEL and is bounded by the body
 * limit alone.
 */
import { TrustgateError } from '../errors.js';
import { isDeepFrozen, perFrozen } from '../json/frozen.js';
import type { EvaluateRequest } from './types.js';
import { pointer } from '../json/pointer.js';
import { isRecord, own } from '../json/record.js';

function tooLong(at: string, max: number): never {
  throw new TrustgateError('TG_ERR_LIMIT_STRING', `a string is longer than ${max} characters (TRUSTGATE_MAX_STRING)`, [
    { pointer: at, message: `at most ${max} characters` },
  ]);
}

/** A value still to visit, with the way back to the root for the pointer of a finding. */
interface Visit {
  value: unknown;
  /** Undefined for the root. */
  parent: Visit | undefined;
  token: string | number;
}

function pointerOf(v: Visit, at: string): string {
  const tokens: Array<string | number> = [];
  for (let x: Visit = v; x.parent !== undefined; x = x.parent) tokens.push(x.token);
  return at + pointer(...tokens.reverse());
}

/** Every string inside `value`, walked without recursion; pointers are built only for a finding. */
function checkTree(value: unknown, at: string, max: number): void {
  const stack: Visit[] = [{ value, parent: undefined, token: '' }];
  while (stack.length > 0) {
    const here = stack.pop()!;
    const v = here.value;
    if (typeof v === 'string') {
      if (v.length > max) tooLong(pointerOf(here, at), max);
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push({ value: v[i], parent: here, token: i });
    } else if (isRecord(v)) {
      for (const k of Object.keys(v)) {
        if (k.length > max) tooLong(pointerOf(here, at), max);
        stack.push({ value: v[k], parent: here, token: k });
      }
    }
  }
}

/** The length of the longest string (member names included) in a value; a deep-frozen value's is measured once. */
const longestString = perFrozen((value: unknown): number => {
  let longest = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') longest = Math.max(longest, v.length);
    else if (Array.isArray(v)) for (const x of v) stack.push(x);
    else if (isRecord(v)) {
      for (const k of Object.keys(v)) {
        longest = Math.max(longest, k.length);
        stack.push(v[k]);
      }
    }
  }
  return longest;
});

/** checkTree, skipped for a deep-frozen value known to hold no string longer than `max`. */
function checkValue(value: unknown, at: string, max: number): void {
  if (isDeepFrozen(value) && longestString(value) <= max) return;
  checkTree(value, at, max);
}

export function checkStringLengths(req: EvaluateRequest, max: number): void {
  // The proxy judges every call against the same frozen definition and server.
  if (req.tool !== undefined) checkValue(req.tool, '/tool', max);
  if (req.server !== undefined) checkValue(req.server, '/server', max);
  if (req.context !== undefined) checkTree(req.context, '/context', max);
  req.evidence?.forEach((e, i) => {
    if (typeof e.digest === 'string' && e.digest.length > max) tooLong(`/evidence/${i}/digest`, max);
    if (typeof e.ref === 'string' && e.ref.length > max) tooLong(`/evidence/${i}/ref`, max);
  });
  const content = own(req.result, 'content');
  if (!Array.isArray(content)) return;
  content.forEach((block, i) => {
    if (!isRecord(block)) return;
    const res = own(block, 'resource');
    for (const [holder, base] of [
      [block, `/result/content/${i}`],
      [isRecord(res) ? res : undefined, `/result/content/${i}/resource`],
    ] as const) {
      if (!holder) continue;
      for (const key of ['uri', 'mimeType']) {
        const v = own(holder, key);
        if (typeof v === 'string' && v.length > max) tooLong(`${base}/${key}`, max);
      }
    }
  });
}
