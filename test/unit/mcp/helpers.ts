/**
 * Small builders and assertions shared by the MCP validation tests.
 */
import { expect } from 'vitest';
import type { Severity, ValidationFinding } from '../../../src/mcp/findings.js';
import { atLeast, type Revision } from '../../../src/mcp/revisions.js';
import { validateMcp } from '../../../src/mcp/shape.js';

/** A CallToolResult with these blocks that is otherwise valid at `rev` (adds `resultType` where required). */
export function resultWith(rev: Revision, content: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...(atLeast(rev, '2026-07-28') ? { resultType: 'complete' } : {}), content, ...extra };
}

/** A valid text block carrying `extra` members. */
export function text(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'text', text: 'hello', ...extra };
}

/** Findings of a one-block result. */
export function validateBlock(rev: Revision, block: unknown): ValidationFinding[] {
  return validateMcp(resultWith(rev, [block]), rev);
}

/** Findings of severity error. */
export function errors(findings: readonly ValidationFinding[]): ValidationFinding[] {
  return findings.filter((f) => f.severity === 'error');
}

/** Asserts that exactly these (rule, pointer, severity) triples were reported, in any order. */
export function expectFindings(
  findings: readonly ValidationFinding[],
  expected: ReadonlyArray<{ rule: string; pointer: string; severity?: Severity }>,
): void {
  const got = findings.map((f) => `${f.severity} ${f.rule} ${f.pointer}`).sort();
  const want = expected.map((e) => `${e.severity ?? 'error'} ${e.rule} ${e.pointer}`).sort();
  expect(got).toEqual(want);
}

/** Asserts one finding with this rule, pointer and severity (others may exist). */
export function expectFinding(
  findings: readonly ValidationFinding[],
  rule: string,
  pointer: string,
  severity: Severity = 'error',
): ValidationFinding {
  const hit = findings.find((f) => f.rule === rule && f.pointer === pointer && f.severity === severity);
  expect(hit, `expected ${severity} ${rule} at ${JSON.stringify(pointer)}; got ${JSON.stringify(findings)}`).toBeDefined();
  return hit!;
}
