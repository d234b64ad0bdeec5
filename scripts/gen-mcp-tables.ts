/**
 * Derives `src/mcp/tables.generated.ts` from the MCP JSON Schemas in
 * `test/vectors/mcp-schemas/<revision>/schema.json`.
 *
 *   npm run mcp-tables         # write the table (npx tsx scripts/gen-mcp-tables.ts)
 *   npm run mcp-tables:check   # exit 1 when the committed table is stale (--check)
 *
 * The schemas are the source of truth for which block types, members, JSON
 * types and required fields exist in each revision; the validator applies the
 * contract's stricter rules (closed blocks, closed annotations, key grammar,
 * date-time form) in code on top of this table. Any schema construct this
 * script does not understand makes it throw rather than guess.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { REVISIONS, type Revision } from '../src/mcp/revisions.js';
import type { JsonType, ObjectShape, ResourceVariant, RevisionTable } from '../src/mcp/schema-table.js';
import { writeOrCheck } from './generated-file.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Folder holding `<revision>/schema.json`. */
export const SCHEMA_DIR = join(ROOT, 'test', 'vectors', 'mcp-schemas');

/** Path of the generated table. */
export const OUTPUT_FILE = join(ROOT, 'src', 'mcp', 'tables.generated.ts');

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = { [k: string]: Json };

function asSchema(v: Json | undefined, where: string): Schema {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${where}: expected a schema object`);
  return v;
}

/** Resolves local `$ref`s of one schema document (`#/definitions/X` or `#/$defs/X`). */
class SchemaDoc {
  private readonly defs: Schema;

  constructor(
    readonly revision: Revision,
    doc: Schema,
  ) {
    this.defs = asSchema(doc.definitions ?? doc.$defs, `${revision}: definitions`);
  }

  def(name: string): Schema {
    if (!Object.prototype.hasOwnProperty.call(this.defs, name)) throw new Error(`${this.revision}: no definition ${name}`);
    return asSchema(this.defs[name], `${this.revision}: ${name}`);
  }

  /** Follows `$ref` chains; returns the target schema and the last definition name seen. */
  deref(s: Schema, name = ''): { schema: Schema; name: string } {
    let cur = s;
    let curName = name;
    for (let hops = 0; typeof cur.$ref === 'string'; hops++) {
      if (hops > 16) throw new Error(`${this.revision}: $ref loop at ${curName}`);
      const m = /^#\/(?:definitions|\$defs)\/([^/]+)$/.exec(cur.$ref);
      if (!m || m[1] === undefined) throw new Error(`${this.revision}: unsupported $ref ${cur.$ref}`);
      curName = m[1];
      cur = this.def(curName);
    }
    return { schema: cur, name: curName };
  }

  /** JSON type a property schema constrains its value to. */
  jsonType(s: Schema, where: string): JsonType {
    const { schema } = this.deref(s);
    const t = schema.type;
    if (typeof t === 'string') {
      if (t === 'string' || t === 'number' || t === 'integer' || t === 'boolean' || t === 'object' || t === 'array') return t;
      throw new Error(`${this.revision}: ${where}: unsupported type ${t}`);
    }
    if (t !== undefined) throw new Error(`${this.revision}: ${where}: unsupported type list`);
    if (Array.isArray(schema.anyOf)) {
      const types = new Set(schema.anyOf.map((alt, i) => this.jsonType(asSchema(alt, where), `${where}/anyOf/${i}`)));
      const [only] = types;
      return types.size === 1 && only !== undefined ? only : 'any';
    }
    for (const k of ['oneOf', 'allOf', 'not', 'if', 'enum', 'const']) {
      if (k in schema) throw new Error(`${this.revision}: ${where}: unsupported keyword ${k}`);
    }
    return 'any';
  }

  shape(s: Schema, name: string): ObjectShape {
    const { schema } = this.deref(s, name);
    if (schema.type !== 'object') throw new Error(`${this.revision}: ${name} is not an object type`);
    const props = asSchema(schema.properties ?? {}, `${this.revision}: ${name}.properties`);
    const members: Record<string, JsonType> = {};
    for (const key of Object.keys(props).sort()) {
      members[key] = this.jsonType(asSchema(props[key], `${name}.${key}`), `${name}.${key}`);
    }
    const req = schema.required ?? [];
    if (!Array.isArray(req) || !req.every((r): r is string => typeof r === 'string')) {
      throw new Error(`${this.revision}: ${name}.required is not a string list`);
    }
    for (const r of req) if (!(r in members)) throw new Error(`${this.revision}: ${name} requires undefined ${r}`);
    return { name, members, required: [...req].sort() };
  }

  /** Definitions an `anyOf` of `$ref`s (possibly behind a `$ref`) lists. */
  alternatives(s: Schema, where: string): Array<{ schema: Schema; name: string }> {
    const { schema } = this.deref(s);
    if (!Array.isArray(schema.anyOf)) throw new Error(`${this.revision}: ${where} is not an anyOf`);
    return schema.anyOf.map((alt) => {
      const a = asSchema(alt, where);
      if (typeof a.$ref !== 'string') throw new Error(`${this.revision}: ${where}: inline alternative`);
      return this.deref(a);
    });
  }
}

function prop(s: Schema, key: string, where: string): Schema {
  const props = asSchema(s.properties, `${where}.properties`);
  if (!Object.prototype.hasOwnProperty.call(props, key)) throw new Error(`${where}: no member ${key}`);
  return asSchema(props[key], `${where}.${key}`);
}

/** Derives one revision's table from its schema document. */
export function tableFor(revision: Revision, doc: unknown): RevisionTable {
  const sd = new SchemaDoc(revision, asSchema(doc as Json, revision));
  const ctr = sd.def('CallToolResult');
  const callToolResult = sd.shape(ctr, 'CallToolResult');

  const contentItems = asSchema(prop(ctr, 'content', 'CallToolResult').items, `${revision}: CallToolResult.content.items`);
  const blocks: Record<string, ObjectShape> = {};
  let annotations: ObjectShape | null = null;
  let audience: string[] | null = null;
  let priority: { minimum: number; maximum: number } | null = null;
  let resourceContents: ResourceVariant[] = [];
  let icon: ObjectShape | null = null;

  for (const { schema, name } of sd.alternatives(contentItems, 'CallToolResult.content.items')) {
    const typeConst = prop(schema, 'type', name).const;
    if (typeof typeConst !== 'string') throw new Error(`${revision}: ${name}.type has no string const`);
    const block = sd.shape(schema, name);
    blocks[typeConst] = block;

    // Every block type carries the same Annotations; the validator relies on that.
    const annSchema = sd.deref(prop(schema, 'annotations', name)).schema;
    const ann = sd.shape(annSchema, 'Annotations');
    if (annotations && JSON.stringify(annotations) !== JSON.stringify(ann)) {
      throw new Error(`${revision}: ${name} annotations differ from other blocks`);
    }
    annotations = ann;
    const audienceItems = sd.deref(asSchema(prop(annSchema, 'audience', 'Annotations').items, 'audience.items')).schema;
    if (!Array.isArray(audienceItems.enum) || !audienceItems.enum.every((v): v is string => typeof v === 'string')) {
      throw new Error(`${revision}: audience items are not a string enum`);
    }
    audience = [...audienceItems.enum].sort();
    const pri = prop(annSchema, 'priority', 'Annotations');
    if (typeof pri.minimum !== 'number' || typeof pri.maximum !== 'number') throw new Error(`${revision}: priority bounds`);
    priority = { minimum: pri.minimum, maximum: pri.maximum };

    if (typeConst === 'resource') {
      const variants = sd.alternatives(prop(schema, 'resource', name), `${name}.resource`).map((v) => sd.shape(v.schema, v.name));
      resourceContents = variants.map((v) => {
        const own = v.required.filter((r) => !variants.every((o) => o.required.includes(r)));
        if (own.length !== 1 || own[0] === undefined) throw new Error(`${revision}: ${v.name} has no single discriminating member`);
        return { ...v, discriminator: own[0] };
      });
    }
    if (typeConst === 'resource_link' && 'icons' in block.members) {
      const items = asSchema(prop(schema, 'icons', name).items, `${name}.icons.items`);
      const d = sd.deref(items);
      icon = sd.shape(d.schema, d.name);
    }
  }
  if (!annotations || !audience || !priority) throw new Error(`${revision}: no content block defines annotations`);
  if (resourceContents.length === 0) throw new Error(`${revision}: no embedded resource variants`);
  return { callToolResult, blocks, resourceContents, annotations, audience, priority, icon };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Renders the generated module from schema texts keyed by revision. */
export function render(schemaTexts: Readonly<Record<Revision, string>>): string {
  const tables = {} as Record<Revision, RevisionTable>;
  for (const rev of REVISIONS) tables[rev] = tableFor(rev, JSON.parse(schemaTexts[rev]));
  const sources = REVISIONS.map((rev) => ` *   test/vectors/mcp-schemas/${rev}/schema.json  sha256:${sha256(schemaTexts[rev])}`);
  return [
    '/**',
    ' * GENERATED FILE: do not edit. Regenerate with `npx tsx scripts/gen-mcp-tables.ts`.',
    ' *',
    ' * Per-revision MCP table (CallToolResult members, content block types with',
    ' * their members, JSON types and required fields, embedded resource variants,',
    ' * annotations, icons) derived from the MCP JSON Schemas:',
    ...sources,
    ' */',
    "import type { Revision } from './revisions.js';",
    "import type { RevisionTable } from './schema-table.js';",
    '',
    '/** Schema-derived table per protocol revision. */',
    `export const MCP_TABLES: Readonly<Record<Revision, RevisionTable>> = ${JSON.stringify(tables, null, 2)};`,
    '',
  ].join('\n');
}

/** Reads the schemas from `dir` and returns the generated module text. */
export function generate(dir: string = SCHEMA_DIR): string {
  const texts = {} as Record<Revision, string>;
  for (const rev of REVISIONS) texts[rev] = readFileSync(join(dir, rev, 'schema.json'), 'utf8');
  return render(texts);
}

/** `--output=FILE` names another file than OUTPUT_FILE (tests check a stale copy with it). */
function main(argv: readonly string[]): number {
  const text = generate();
  const output = argv.find((a) => a.startsWith('--output='))?.slice('--output='.length) || OUTPUT_FILE;
  return writeOrCheck(argv, output, text, 'mcp-tables');
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(resolve(entry)).href) {
  process.exitCode = main(process.argv.slice(2));
}
