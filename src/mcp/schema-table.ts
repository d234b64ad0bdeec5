/**
 * Shape of the per-revision MCP table that `scripts/gen-mcp-tables.ts`
 * derives from the MCP JSON Schemas. The validator reads only this data at
 * run time, so no JSON Schema is compiled or interpreted per request.
 */

/**
 * JSON type of a member as the schema declares it. `integer` is a number
 * with no fractional part; `any` means the schema places no constraint.
 */
export type JsonType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'any';

/** The members one MCP object type defines, with their JSON types, and which are required. */
export interface ObjectShape {
  /** Schema definition name (`TextContent`, `CallToolResult`, ...). */
  readonly name: string;
  /** Every member the schema defines for this object, with its JSON type. */
  readonly members: Readonly<Record<string, JsonType>>;
  /** Members the schema lists under `required`. */
  readonly required: readonly string[];
}

/** One variant of an embedded resource's `resource` member (text or blob contents). */
export interface ResourceVariant extends ObjectShape {
  /** Required member that only this variant has; its presence selects the variant. */
  readonly discriminator: string;
}

/** Everything the validator needs to know about one protocol revision. */
export interface RevisionTable {
  /** `CallToolResult` members. */
  readonly callToolResult: ObjectShape;
  /** Content block shapes, keyed by the block's `type` constant. */
  readonly blocks: Readonly<Record<string, ObjectShape>>;
  /** Variants of `EmbeddedResource.resource`. */
  readonly resourceContents: readonly ResourceVariant[];
  /** Members of a content block's `annotations` object. */
  readonly annotations: ObjectShape;
  /** Allowed items of `annotations.audience` (the `Role` enum). */
  readonly audience: readonly string[];
  /** Inclusive bounds of `annotations.priority`. */
  readonly priority: { readonly minimum: number; readonly maximum: number };
  /** Items of `ResourceLink.icons`, or null where the revision has no icons. */
  readonly icon: ObjectShape | null;
}
