/**
 * Validation findings, and a bounded list of them. A hostile result can break the
 * rules once per member (a 1 MiB body held 116,600 unknown block members:
 * a 17.8 MB answer and close to a second of one worker), so the list keeps
 * the first `limit` findings and, past that, only the first finding of each
 * rule and severity it does not hold yet; the rest are counted.
 *
 * Every rule and severity that fired is therefore always listed: `valid`
 * and policies such as `validation.exists(v, v.severity == "error")` or
 * `validation.exists(v, v.rule == "trust.annotation.type")` come out the
 * same as over the whole list. What the cut changes is the count and the
 * pointers past the limit.
 */
export type Severity = 'error' | 'warning';

/** One validation finding (docs/behaviour/validation.md). `pointer` is RFC 6901 into the request's `result`. */
export interface ValidationFinding {
  rule: string;
  severity: Severity;
  pointer: string;
  message: string;
}

export class FindingList {
  readonly items: ValidationFinding[] = [];
  /** Findings left out past the limit. */
  omitted = 0;
  /** Rules of the findings kept, by severity; filled only once the limit is reached. */
  private kinds: Record<Severity, Set<string>> | undefined;

  constructor(readonly limit: number = Infinity) {}

  add(rule: string, pointer: string, message: string, severity: Severity = 'error'): void {
    this.push({ rule, severity, pointer, message });
  }

  push(f: ValidationFinding): void {
    if (this.items.length < this.limit) {
      this.items.push(f);
      return;
    }
    if (this.kinds === undefined) {
      this.kinds = { error: new Set(), warning: new Set() };
      for (const k of this.items) this.kinds[k.severity].add(k.rule);
    }
    const rules = this.kinds[f.severity];
    if (rules.has(f.rule)) {
      this.omitted++;
    } else {
      rules.add(f.rule);
      this.items.push(f);
    }
  }
}
