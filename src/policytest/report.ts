/**
 * The output formats of `trustgate test` (docs/policy-testing.md): `pretty`
 * for people, `json`, `junit` (JUnit XML, one `testcase` per case) and TAP
 * version 14 for tools.
 */
import type { Failure, RunReport } from './runner.js';

export const FORMATS = ['pretty', 'json', 'junit', 'tap'] as const;
export type Format = (typeof FORMATS)[number];

const show = (v: unknown): string => (typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? 'undefined');

/** One failure on one line: `step 2: outcome: expected "warn", got "allow"`. */
export function failureText(f: Failure): string {
  return `${f.step !== undefined ? `step ${f.step} (line ${f.stepLine}): ` : ''}${f.expectation}: expected ${show(f.expected)}, got ${show(f.got)}`;
}

function coverageLines(report: RunReport, threshold: number | undefined, show: boolean): string[] {
  const cov = report.coverage;
  if (cov === undefined || !show) return [];
  const lines = ['', `rule coverage: ${cov.percent}% (${cov.rules.filter((r) => r.matched > 0).length} of ${cov.rules.length} rules matched by a case)`];
  for (const r of cov.rules) lines.push(`  ${String(r.matched).padStart(4)}  ${r.policy}/${r.rule}${r.matched === 0 ? '  <- no case matches this rule' : ''}`);
  if (threshold !== undefined && cov.percent < threshold) lines.push(`rule coverage ${cov.percent}% is below the threshold of ${threshold}%`);
  return lines;
}

function pretty(report: RunReport, threshold: number | undefined, show: boolean): string {
  const lines: string[] = [];
  for (const c of report.cases) {
    if (c.passed) {
      lines.push(`ok    ${c.name}`);
      continue;
    }
    lines.push(`FAIL  ${c.name}  (${c.file}:${c.line})`);
    for (const f of c.failures) lines.push(`      ${failureText(f)}`);
  }
  lines.push(...coverageLines(report, threshold, show));
  lines.push('', `${report.passed} passed, ${report.failed} failed`);
  return lines.join('\n') + '\n';
}

function json(report: RunReport): string {
  const out: Record<string, unknown> = {
    passed: report.passed,
    failed: report.failed,
    cases: report.cases.map((c) => ({ name: c.name, file: c.file, line: c.line, passed: c.passed, failures: c.failures.map((f) => ({ ...f, message: failureText(f) })) })),
  };
  if (report.coverage !== undefined) out.coverage = report.coverage;
  return JSON.stringify(out, null, 2) + '\n';
}

/** XML 1.0 text and attribute escaping; characters XML 1.0 cannot hold at all are written as U+FFFD. */
function xml(s: string): string {
  return s
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function junit(report: RunReport): string {
  const byFile = new Map<string, RunReport['cases']>();
  for (const c of report.cases) {
    let list = byFile.get(c.file);
    if (list === undefined) byFile.set(c.file, (list = []));
    list.push(c);
  }
  const total = report.cases.length;
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>', `<testsuites name="trustgate test" tests="${total}" failures="${report.failed}" errors="0">`];
  for (const [file, cases] of byFile) {
    const failed = cases.filter((c) => !c.passed).length;
    lines.push(`  <testsuite name="${xml(file)}" tests="${cases.length}" failures="${failed}" errors="0" skipped="0">`);
    for (const c of cases) {
      const head = `    <testcase name="${xml(c.name)}" classname="${xml(file)}" file="${xml(c.file)}" line="${c.line}"`;
      if (c.passed) {
        lines.push(`${head}/>`);
        continue;
      }
      const text = c.failures.map(failureText).join('\n');
      lines.push(`${head}>`);
      lines.push(`      <failure message="${xml(`${c.file}:${c.line}: ${c.failures.length} expectation(s) failed`)}" type="expectation">${xml(`${c.file}:${c.line}\n${text}`)}</failure>`);
      lines.push('    </testcase>');
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return lines.join('\n') + '\n';
}

/** A YAML block scalar line for TAP diagnostics. */
const yamlString = (s: string) => JSON.stringify(s);

function tap(report: RunReport, threshold: number | undefined, show: boolean): string {
  const lines = ['TAP version 14', `1..${report.cases.length}`];
  report.cases.forEach((c, i) => {
    // A description may not hold a '#' unescaped (it starts a directive) nor a line break.
    const desc = c.name.replace(/\\/g, '\\\\').replace(/#/g, '\\#').replace(/[\r\n]+/g, ' ');
    lines.push(`${c.passed ? 'ok' : 'not ok'} ${i + 1} - ${desc}`);
    if (!c.passed) {
      lines.push('  ---');
      lines.push(`  file: ${yamlString(c.file)}`);
      lines.push(`  line: ${c.line}`);
      lines.push('  failures:');
      for (const f of c.failures) lines.push(`    - ${yamlString(failureText(f))}`);
      lines.push('  ...');
    }
  });
  for (const l of coverageLines(report, threshold, show)) if (l !== '') lines.push(`# ${l}`);
  lines.push(`# ${report.passed} passed, ${report.failed} failed`);
  return lines.join('\n') + '\n';
}

/**
 * The report in `format`. json carries `coverage` whenever the run computed
 * it; pretty and tap list it when `showCoverage` (`--coverage`,
 * `--threshold`).
 */
export function formatReport(report: RunReport, format: Format, threshold?: number, showCoverage = report.coverage !== undefined): string {
  switch (format) {
    case 'json':
      return json(report);
    case 'junit':
      return junit(report);
    case 'tap':
      return tap(report, threshold, showCoverage);
    default:
      return pretty(report, threshold, showCoverage);
  }
}
