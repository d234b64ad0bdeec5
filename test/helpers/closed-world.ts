/**
 * The shipped policies without `labels.yaml` (contract section 16's label
 * for open-world results), for tests of bindings whose requests cannot name
 * a tool (the Docker interceptor route: the gateway sends the bare result),
 * where the test is about something else than that label: "nothing applied"
 * and "the result as judged" stay observable there. The shipped set itself,
 * labels included, is what test/corpus/detectors.test.ts and
 * test/http/interceptor.test.ts check on that route.
 */
import { copyFileSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SHIPPED_POLICIES } from './app.js';

export function shippedWithoutOpenWorldLabel(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-closed-world-'));
  for (const f of readdirSync(SHIPPED_POLICIES)) {
    if (f === 'labels.yaml' || !/\.(ya?ml|json)$/i.test(f) || /\.test\.ya?ml$/i.test(f)) continue;
    copyFileSync(join(SHIPPED_POLICIES, f), join(dir, f));
  }
  return dir;
}
