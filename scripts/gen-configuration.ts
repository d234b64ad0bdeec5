/**
 * Writes docs/configuration.md from the one DEFAULTS table in src/config.ts.
 *
 *   npm run configuration-doc           # write the page
 *   npm run configuration-doc:check     # exit 1 when the committed page is stale (--check)
 *
 * Whole-number settings show the default and bounds loadConfig() enforces,
 * read from the same table; nothing on the page is kept by hand.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULTS, type IntSetting, type SettingRow } from '../src/config.js';
import { SHARED_DB_ENV } from '../src/main/stores.js';
import { writeOrCheck } from './generated-file.js';
import { WORKER_ENV } from '../src/main/cluster/protocol.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Path of the generated page. */
export const OUTPUT_FILE = join(ROOT, 'docs', 'configuration.md');

const HEAD = `# Configuration

<!-- Generated from DEFAULTS in src/config.ts by scripts/gen-configuration.ts (npm run configuration-doc); do not edit. -->

Every setting comes from the environment, is read once at start-up
(\`src/config.ts\`), validated and frozen. A bad value stops the process with
a message naming the setting and its bounds; an empty value counts as
unset. Whole numbers are written in decimal.

| setting | default | range | meaning |
|---|---|---|---|
`;

const TAIL = `
\`${WORKER_ENV}\` and \`${SHARED_DB_ENV}\` are set by
the primary process for its workers; do not set them.

Limits these settings control, and what each protects:
[limits](behaviour/limits.md).
`;

function cells(s: SettingRow | IntSetting): [string, string, string] {
  if (typeof s.default === 'number') {
    const n = s as IntSetting;
    return [`\`${n.default}\``, n.bound ?? `${n.min} to ${n.max}`, n.description];
  }
  const r = s as SettingRow;
  return [r.default, r.bound, r.description];
}

/** The page, as the table says it. */
export function renderConfiguration(): string {
  const rows = Object.entries(DEFAULTS).map(([name, s]) => `| \`${name}\` | ${cells(s).join(' | ')} |\n`);
  return HEAD + rows.join('') + TAIL;
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(resolve(entry)).href) {
  process.exitCode = writeOrCheck(process.argv.slice(2), OUTPUT_FILE, renderConfiguration(), 'configuration-doc');
}
