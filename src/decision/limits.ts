/**
 * String-length limit on what policies and evidence matching read (tool and
 * server names, context, evidence digests and refs, block uri and mimeType):
 * CEL string functions (`matches`, `contains`) and digest parsing cost grow
 * with these, while block text never reaches CEL and is bounded by the body
 * limit alone.
 */
import { TrustgateError } from '../errors.js';
import { isObject, own, pointer } from '../model.js';
import type { EvaluateRequest } from './pipeline.js';

function tooLong(at: string, max: number): never {
  throw new TrustgateError('TG_ERR_LIMIT_STRING', `a string is longer than ${max} characters (TRUSTGATE_MAX_STRING)`, [
    { pointer: at, message: `at most ${max} characters` },
  ]);
}

/** Every string inside `value`, walked without recursion. */
function checkTree(value: unknown, at: string, max: number): void {
  const stack: Array<[unknown, string]> = [[value, at]];
  while (stack.length > 0) {
    const [v, p] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.length > max) tooLong(p, max);
    } else if (Array.isArray(v)) {
      v.forEach((c, i) => stack.push([c, `${p}/${i}`]));
    } else if (isObject(v)) {
      for (const k of Object.keys(v)) {
        if (k.length > max) tooLong(p, max);
        stack.push([v[k], p + pointer(k)]);
      }
    }
  }
}

export function checkStringLengths(req: EvaluateRequest, max: number): void {
  if (req.tool !== undefined) checkTree(req.tool, '/tool', max);
  if (req.server !== undefined) checkTree(req.server, '/server', max);
  if (req.context !== undefined) checkTree(req.context, '/context', max);
  req.evidence?.forEach((e, i) => {
    if (typeof e.digest === 'string' && e.digest.length > max) tooLong(`/evidence/${i}/digest`, max);
    if (typeof e.ref === 'string' && e.ref.length > max) tooLong(`/evidence/${i}/ref`, max);
  });
  const content = own(req.result, 'content');
  if (!Array.isArray(content)) return;
  content.forEach((block, i) => {
    if (!isObject(block)) return;
    const res = own(block, 'resource');
    for (const [holder, base] of [
      [block, `/result/content/${i}`],
      [isObject(res) ? res : undefined, `/result/content/${i}/resource`],
    ] as const) {
      if (!holder) continue;
      for (const key of ['uri', 'mimeType']) {
        const v = own(holder, key);
        if (typeof v === 'string' && v.length > max) tooLong(`${base}/${key}`, max);
      }
    }
  });
}
