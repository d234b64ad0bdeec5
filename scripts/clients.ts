/**
 * clients/trustgate-api.d.ts from openapi.yaml (`npm run clients`): the
 * openapi-typescript output, with one change: the `CallToolResult` schema
 * (a result Trustgate judges and forwards) is MCP's own type from the SDK,
 * so a host developer indexes `content` without a cast. The drift test
 * (test/clients/types-drift.test.ts) generates with the same options.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPITSOptions } from 'openapi-typescript';
import ts from 'typescript';

export const SPEC = new URL('../openapi.yaml', import.meta.url);
export const OUT = new URL('../clients/trustgate-api.d.ts', import.meta.url);

/** The schemas typed as MCP's own: schema path -> the SDK's type name. */
const MCP_TYPES: Record<string, string> = {
  '#/components/schemas/CallToolResult': 'CallToolResult',
};

export const CLIENT_OPTIONS: OpenAPITSOptions = {
  silent: true,
  transform(_schema, options) {
    const name = options.path === undefined ? undefined : MCP_TYPES[options.path];
    if (name === undefined) return undefined;
    // import("@modelcontextprotocol/sdk/types.js").CallToolResult
    return ts.factory.createImportTypeNode(ts.factory.createLiteralTypeNode(ts.factory.createStringLiteral('@modelcontextprotocol/sdk/types.js')), undefined, ts.factory.createIdentifier(name));
  },
};

/** The text of the client types. */
export async function clientTypes(): Promise<string> {
  return COMMENT_HEADER + astToString(await openapiTS(SPEC, CLIENT_OPTIONS));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(OUT, await clientTypes());
  process.stdout.write(`wrote ${fileURLToPath(OUT)}\n`);
}
