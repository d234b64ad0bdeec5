/**
 * Operator entries (docs/behaviour/operator.md): what the operator, not
 * the server, says of each server. Its `hints` say whether the server's
 * tool annotations are believed (`defaults`, the default, believes them
 * only where they do not lower protection); its `tools.<tool>.annotations`
 * are the operator's own hints, always believed; its `labels` are claims on
 * every result of the server, unioned like any claim (provenance
 * `operator:<server>`).
 *
 * The same shape is read from a gateway config's `trustgate` member, from
 * the proxy's flags and from the servers file (TRUSTGATE_SERVERS), keyed by
 * `server.name`, where `"*"` covers every server without an entry of its
 * own and requests that name no server.
 */
import { Ajv } from 'ajv';
import { parse as parseYaml } from 'yaml';
import type { OperatorHints } from '../mcp/hints.js';

export interface OperatorEntry extends OperatorHints {
  readonly labels?: { readonly untrusted?: boolean; readonly sensitive?: boolean } | undefined;
}

const HINT = { type: 'boolean' } as const;

/** The JSON Schema of one entry: every key known, nothing else allowed. */
export const OPERATOR_ENTRY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    hints: { enum: ['declared', 'defaults'] },
    labels: { type: 'object', additionalProperties: false, properties: { untrusted: { type: 'boolean' }, sensitive: { type: 'boolean' } } },
    tools: {
      type: 'object',
      maxProperties: 10000,
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        properties: {
          annotations: {
            type: 'object',
            additionalProperties: false,
            properties: { readOnlyHint: HINT, destructiveHint: HINT, idempotentHint: HINT, openWorldHint: HINT },
          },
        },
      },
    },
  },
} as const;

const ajv = new Ajv({ allErrors: false, strict: true });
const validateEntry = ajv.compile(OPERATOR_ENTRY_SCHEMA);

/** An entry that does not have the shape: the message names the key. */
export class OperatorEntryError extends Error {
  override readonly name = 'OperatorEntryError';
}

/** `v` as an entry; throws OperatorEntryError naming the first key at fault (`where` prefixes it). */
export function checkOperatorEntry(v: unknown, where: string): OperatorEntry {
  if (validateEntry(v)) return v as OperatorEntry;
  const e = validateEntry.errors?.[0];
  const at = `${where}${e?.instancePath ?? ''}`;
  if (e?.keyword === 'additionalProperties') {
    const key = (e.params as { additionalProperty: string }).additionalProperty;
    throw new OperatorEntryError(`unknown key ${JSON.stringify(key)} at ${at || '/'} (known: hints, labels, tools; tools.<tool>.annotations; the four MCP hints)`);
  }
  throw new OperatorEntryError(`${at || '/'} ${e?.message ?? 'is not an operator entry'}`);
}

/** The entries of a servers file, by server name. */
export class OperatorEntries {
  readonly #byName: ReadonlyMap<string, OperatorEntry>;

  constructor(byName: ReadonlyMap<string, OperatorEntry> = new Map()) {
    this.#byName = byName;
  }

  get size(): number {
    return this.#byName.size;
  }

  /** The entry for `server` (its own, else `"*"`); `""` or no name reads `"*"`. */
  entryFor(server: string | undefined): OperatorEntry | undefined {
    if (server !== undefined && server !== '' && server !== '*') {
      const e = this.#byName.get(server);
      if (e !== undefined) return e;
    }
    return this.#byName.get('*');
  }
}

/** A servers file's text (JSON or YAML, one document: an object keyed by server name). Throws OperatorEntryError naming the key at fault. */
export function parseServersText(text: string): OperatorEntries {
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: 0, uniqueKeys: true });
  } catch (err) {
    throw new OperatorEntryError(`does not parse: ${(err as Error).message.split('\n')[0]}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new OperatorEntryError('must hold an object keyed by server name');
  const byName = new Map<string, OperatorEntry>();
  for (const [name, entry] of Object.entries(doc as Record<string, unknown>)) {
    byName.set(name, checkOperatorEntry(entry, `/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`));
  }
  return new OperatorEntries(byName);
}

/** The provenance of an operator's label claims on a server's results. */
export function operatorSource(server: string | undefined): string {
  return `operator:${server === undefined || server === '' ? '*' : server}`;
}
