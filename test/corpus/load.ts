/**
 * The corpus of real tool results (test/corpus/<server>/*.json), captured
 * from the official MCP reference servers by `npm run corpus:capture`
 * (scripts/capture-corpus.ts). Shared by every test that runs real results
 * through Trustgate. A fixture that cannot be read, or lacks a member,
 * throws: nothing is skipped silently.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isRecord } from '../../src/json/record.js';

/** The folder holding one sub-folder of fixtures per server. */
export const CORPUS_DIR = fileURLToPath(new URL('.', import.meta.url));

/** One captured call. */
export interface CorpusFixture {
  /** Path under test/corpus, e.g. `filesystem/read_text_file.json`. */
  file: string;
  /** Folder name of the server: `filesystem`, `everything`, `memory`, `sequential-thinking`, `pdf`. */
  server: string;
  /** The server's own name and version, as it announced them. */
  serverVersion: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** `latest` (the SDK's latest revision) or the revision the client asked for. */
  requestedProtocolVersion: string;
  /** The revision the server negotiated. */
  protocolVersion: string;
  /** The CallToolResult exactly as the SDK client received it. */
  result: Record<string, unknown>;
}

/** Every fixture, sorted by file; throws on one it cannot read. */
export function loadCorpus(): CorpusFixture[] {
  const out: CorpusFixture[] = [];
  for (const server of readdirSync(CORPUS_DIR).sort()) {
    const dir = join(CORPUS_DIR, server);
    if (!statSync(dir).isDirectory()) continue;
    for (const name of readdirSync(dir).sort()) {
      if (!name.endsWith('.json')) continue;
      const file = `${server}/${name}`;
      const f = JSON.parse(readFileSync(join(dir, name), 'utf8')) as Record<string, unknown>;
      for (const k of ['server', 'serverVersion', 'tool', 'requestedProtocolVersion', 'protocolVersion'] as const) {
        if (typeof f[k] !== 'string') throw new Error(`${file}: ${k} must be a string`);
      }
      if (!isRecord(f.arguments)) throw new Error(`${file}: arguments must be an object`);
      if (!isRecord(f.result) || !Array.isArray(f.result.content)) throw new Error(`${file}: result must be a CallToolResult`);
      if (f.server !== server) throw new Error(`${file}: server ${String(f.server)} is not its folder`);
      out.push({ ...(f as unknown as CorpusFixture), file });
    }
  }
  if (out.length === 0) throw new Error(`no fixtures under ${CORPUS_DIR}`);
  return out;
}

/** A deep copy of a fixture's result, to change without touching the corpus. */
export function resultOf(f: CorpusFixture): Record<string, unknown> {
  return structuredClone(f.result);
}
