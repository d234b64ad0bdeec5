/**
 * The content detectors (docs/behaviour/labels-and-detectors.md) as policies and effects use
 * them: `secrets(string)` and `pii(string)` return the kinds they find, in
 * order of first appearance, each once; the `mask` effect replaces their
 * spans. Each string is scanned at most once per decision per detector: a
 * decision runs its policies and its masking inside one DetectionCache,
 * and `result.text` (every block's text and every `structuredContent`
 * string, joined with newlines) is answered from the scans of its parts.
 */
import type { Span } from './chars.js';
import { PII_KINDS, scanPii } from './pii.js';
import { SECRET_KINDS as OWN_SECRET_KINDS, scanSecrets } from './secrets.js';
import { DetectionStopped, RULESET_KINDS } from './ruleset.js';
import { normalizeForDetection } from './normalize.js';

export type { Span } from './chars.js';
export { DetectionStopped, PII_KINDS, scanPii, scanSecrets };

/** Every kind `secrets()` reports: the formats of secrets.ts, then gitleaks' rule ids (ruleset.ts). */
export const SECRET_KINDS: readonly string[] = [...OWN_SECRET_KINDS, ...RULESET_KINDS.filter((k) => !(OWN_SECRET_KINDS as readonly string[]).includes(k))];

/**
 * The kind of a string whose scan ran out of time (the decision's budget):
 * masking withholds the whole string, since what it holds is not known.
 */
export const UNCHECKED_KIND = 'unchecked';

export type Detector = 'secrets' | 'pii';
export const DETECTORS: readonly Detector[] = ['secrets', 'pii'];

const KIND_DETECTOR = new Map<string, Detector>([...SECRET_KINDS.map((k) => [k, 'secrets'] as const), ...PII_KINDS.map((k) => [k, 'pii'] as const)]);

/** The detector that finds `kind`, or undefined for a kind no detector has. */
export function detectorOf(kind: string): Detector | undefined {
  return KIND_DETECTOR.get(kind);
}

/** Every kind a `mask` member may name: the two detectors and each of their kinds. */
export const MASK_NAMES: readonly string[] = ['secrets', 'pii', ...SECRET_KINDS, ...PII_KINDS];

/** The kinds a `mask` list covers (`secrets` and `pii` stand for all of theirs); undefined names are the caller's to refuse. */
export function maskKinds(names: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const n of names) {
    if (n === 'secrets') for (const k of SECRET_KINDS) out.add(k);
    else if (n === 'pii') for (const k of PII_KINDS) out.add(k);
    else out.add(n);
  }
  return out;
}

const RAW_SCANNERS: Record<Detector, (s: string, stop?: () => boolean) => Span[]> = { secrets: scanSecrets, pii: scanPii };

/**
 * A detector's spans in `s` as written and as normalized (normalize.ts:
 * invisible characters, compatibility forms, confusables, percent-escapes;
 * a text with tag characters normalized twice, the tags read and removed),
 * the latter mapped back onto the characters they came from; sorted, and
 * where both find the same place, the span as written kept.
 */
function scanBoth(d: Detector, s: string, stop?: () => boolean): Span[] {
  const raw = RAW_SCANNERS[d](s, stop);
  const n = normalizeForDetection(s, stop);
  if (n === undefined) return raw;
  const found = RAW_SCANNERS[d](n.text, stop).map((sp) => ({ kind: sp.kind, start: n.from[sp.start]!, end: n.to[sp.end - 1]! }));
  // Tag characters read as ASCII, and also removed: a model may read them either way.
  const dropped = n.tags ? normalizeForDetection(s, stop, 'drop') : undefined;
  if (dropped !== undefined) for (const sp of RAW_SCANNERS[d](dropped.text, stop)) found.push({ kind: sp.kind, start: dropped.from[sp.start]!, end: dropped.to[sp.end - 1]! });
  if (found.length === 0) return raw;
  // Where the readings overlap, the union: a value cut short by an invisible character as written is whole normalized.
  return mergeOverlaps(raw.concat(found));
}

/** `spans` sorted, overlapping ones merged into their union (the earlier span's kind names it); copies, the input is not changed. */
function mergeOverlaps(spans: Span[]): Span[] {
  if (spans.length < 2) return spans;
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: Span[] = [{ ...spans[0]! }];
  for (let k = 1; k < spans.length; k++) {
    const last = merged[merged.length - 1]!;
    const sp = spans[k]!;
    if (sp.start < last.end) last.end = Math.max(last.end, sp.end);
    else merged.push({ ...sp });
  }
  return merged;
}

const SCANNERS: Record<Detector, (s: string, stop?: () => boolean) => Span[]> = { secrets: (s, stop) => scanBoth('secrets', s, stop), pii: (s, stop) => scanBoth('pii', s, stop) };

/** What a credential may hold at a seam: letters, digits and `_ - + / = . ~ % : @` (and any non-ASCII character, which may fold to one). */
function isTokenChar(c: number): boolean {
  return (
    (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45 || c === 43 || c === 47 || c === 61 || c === 126 || c === 37 || c === 46 || c === 58 || c === 64 || c >= 0x80
  );
}

/** Characters of each side of a boundary between two consecutive strings read joined (a value split over two blocks). */
const SEAM = 256;
/** Characters read before the token that crosses a seam: a name and its `=` for the generic assignments. */
const SEAM_CONTEXT = 64;
/** Between scans, the deadline is asked once this many characters were scanned (DetectionCache#askBetweenScans)... */
const ASK_EVERY = 4096;
/** ...counting each scan's fixed cost as this many more. */
const SCAN_COST = 64;
/** The shortest token across a seam worth reading: no credential is shorter. */
const MIN_SEAM_TOKEN = 12;

function isBlank(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 11;
}
const NONE: readonly Span[] = Object.freeze([]);

/** The one span of a string whose scan the deadline stopped or never let start: all of it, kind `unchecked`. */
function uncheckedSpan(s: string): Span[] {
  return [{ kind: UNCHECKED_KIND, start: 0, end: s.length }];
}

/** Strings a cache looks up by `===` before it uses a Map. */
const FEW = 8;

/** Scans of one detector: the first FEW strings in arrays, the rest in a Map. */
interface Scans {
  keys: string[];
  spans: Array<readonly Span[]>;
  more: Map<string, readonly Span[]> | undefined;
}

/** Scans of one decision, by detector and string. */
export class DetectionCache {
  /**
   * A Map hashes every character of a string the first time it sees it, and
   * a block's text is seen fresh from JSON.parse: for the few texts of a
   * typical result, comparing with `===` (a pointer when the same string
   * comes back, a length or a first differing character otherwise) is
   * cheaper than hashing them.
   */
  readonly #spans: Record<Detector, Scans> = {
    secrets: { keys: [], spans: [], more: undefined },
    pii: { keys: [], spans: [], more: undefined },
  };
  /** The one joined text of a decision (`result.text`), compared by identity before any hashing; further joins go to #joins. */
  #joined: string | undefined;
  #joinedParts: readonly string[] | undefined;
  readonly #joins = new Map<string, readonly string[]>();
  /** Spans found only where consecutive strings meet (a value split over two), by detector and string: each string's part of them. */
  readonly #seams: Record<Detector, Map<string, Span[]>> = { secrets: new Map(), pii: new Map() };
  /** Strings scanned, per detector (tests read it). */
  readonly scans: Record<Detector, number> = { secrets: 0, pii: 0 };
  /** Whether the decision's time ran out during a scan: strings not scanned since are withheld whole (fail closed). */
  stopped = false;
  readonly #stop: (() => boolean) | undefined;
  /** Set while policies run (withDetection): a scan stopped by the deadline then throws DetectionStopped (the rule ends as an error); after them it answers the string unchecked. */
  inRules = false;
  /** Characters (and scans, SCAN_COST each) scanned since the deadline was last asked between scans. */
  #unasked = 0;

  /**
   * `stop`: whether the decision's time is spent (its CEL budget); asked inside and between the scans, in the rules and
   * in the masking after them (a set whose mask rules read no text scans every string there), and while the seams are read.
   */
  constructor(stop?: () => boolean) {
    this.#stop = stop;
  }

  spans(d: Detector, s: string): readonly Span[] {
    if (s.length === 0) return NONE;
    const seam = this.#seams[d].size === 0 ? undefined : this.#seams[d].get(s);
    if (seam !== undefined) return this.#withSeams(d, s, seam);
    const scans = this.#spans[d];
    const keys = scans.keys;
    for (let i = 0; i < keys.length; i++) if (keys[i] === s) return scans.spans[i]!;
    let spans = scans.more?.get(s);
    if (spans === undefined) {
      // After a scan ran out of time, no scan starts again: what is not known is withheld whole.
      if (this.stopped) return uncheckedSpan(s);
      this.scans[d]++;
      try {
        this.#askBetweenScans(s.length);
        spans = SCANNERS[d](s, this.#stop);
      } catch (err) {
        if (!(err instanceof DetectionStopped)) throw err;
        this.stopped = true;
        // In the rules, the rule ends as an error (matched: fail closed); after them (masking), the string is masked whole.
        if (this.inRules) throw err;
        return uncheckedSpan(s);
      }
      if (keys.length < FEW) {
        keys.push(s);
        scans.spans.push(spans);
      } else (scans.more ??= new Map()).set(s, spans);
    }
    return spans;
  }

  /**
   * A scan asks the deadline every few thousand places of its string, which a
   * short string never reaches: a rule over many short strings (a table's
   * cells, 200,000 of them) would scan them all past the deadline. Between
   * scans the deadline is asked once every ASK_EVERY characters, a scan
   * counting its fixed cost as SCAN_COST more.
   * @throws DetectionStopped
   */
  #askBetweenScans(length: number): void {
    if (this.#stop === undefined) return;
    this.#unasked += length + SCAN_COST;
    if (this.#unasked < ASK_EVERY) return;
    this.#unasked = 0;
    if (!this.#stop()) return;
    this.stopped = true;
    throw new DetectionStopped('the time for this decision ran out between the scans of its strings');
  }

  #withSeams(d: Detector, s: string, seam: Span[]): readonly Span[] {
    this.#seams[d].delete(s);
    const own = this.spans(d, s);
    this.#seams[d].set(s, seam);
    const out = own.slice();
    for (const sp of seam) if (!own.some((o) => o.start <= sp.start && sp.end <= o.end)) out.push(sp);
    return out.sort((a, b) => a.start - b.start);
  }

  /**
   * Where consecutive `parts` meet, read the end of one and the start of the
   * next as one text: a value found across the seam gives each string its
   * part, so `spans` of either holds it and masking replaces both parts.
   */
  #readSeams(parts: readonly string[]): void {
    for (let k = 0; k + 1 < parts.length; k++) {
      // The seams are read before the rules, under the same deadline: past it, no scan starts again and what is not
      // known is withheld whole (spans), so a result of many blocks cannot hold the process by its seams.
      if ((k & 63) === 63 && this.#stop?.() === true) {
        this.stopped = true;
        return;
      }
      const left = parts[k]!;
      const right = parts[k + 1]!;
      if (left.length === 0 || right.length === 0) continue;
      // A value split in two has a piece on each side of the seam: only then is there anything to join.
      if (!isTokenChar(left.charCodeAt(left.length - 1)) || !isTokenChar(right.charCodeAt(0))) continue;
      // The token that crosses the seam (non-blank on both sides), with some of what stands before it (a name and `=`).
      let t0 = left.length;
      while (t0 > 0 && left.length - t0 < SEAM && !isBlank(left.charCodeAt(t0 - 1))) t0--;
      let t1 = 0;
      while (t1 < right.length && t1 < SEAM && !isBlank(right.charCodeAt(t1))) t1++;
      if (left.length - t0 + t1 < MIN_SEAM_TOKEN) continue;
      const a = left.slice(Math.max(0, t0 - SEAM_CONTEXT));
      const b = right.slice(0, t1);
      const offset = left.length - a.length;
      for (const d of DETECTORS) {
        let found: Span[];
        try {
          found = SCANNERS[d](a + b, this.#stop);
        } catch (err) {
          if (!(err instanceof DetectionStopped)) throw err;
          this.stopped = true;
          return;
        }
        for (const sp of found) {
          if (!(sp.start < a.length && sp.end > a.length)) continue;
          this.#addSeam(d, left, { kind: sp.kind, start: offset + sp.start, end: left.length });
          this.#addSeam(d, right, { kind: sp.kind, start: 0, end: sp.end - a.length });
        }
      }
    }
  }

  #addSeam(d: Detector, s: string, sp: Span): void {
    const list = this.#seams[d].get(s);
    if (list === undefined) this.#seams[d].set(s, [sp]);
    else list.push(sp);
  }

  /**
   * `parts` joined with newlines; the kinds of the joined text are those of
   * its parts, each part scanned once, and of what their seams hold.
   */
  join(parts: readonly string[]): string {
    const joined = parts.join('\n');
    if (parts.length > 1) this.#readSeams(parts);
    if (parts.length > 1) {
      if (this.#joined === undefined && this.#joins.size === 0) {
        this.#joined = joined;
        this.#joinedParts = parts;
      } else {
        if (this.#joined !== undefined) this.#joins.set(this.#joined, this.#joinedParts!);
        this.#joined = undefined;
        this.#joins.set(joined, parts);
      }
    }
    return joined;
  }

  kinds(d: Detector, s: string): string[] {
    const parts = s === this.#joined ? this.#joinedParts : this.#joins.size === 0 ? undefined : this.#joins.get(s);
    const seen = new Set<string>();
    for (const part of parts ?? [s]) for (const sp of this.spans(d, part)) seen.add(sp.kind);
    return [...seen];
  }
}

let current: DetectionCache | undefined;

/** Run `fn` with `cache` answering the CEL functions (decisions are synchronous, so one at a time). */
export function withDetection<T>(cache: DetectionCache, fn: () => T): T {
  const prev = current;
  const was = cache.inRules;
  current = cache;
  cache.inRules = true;
  try {
    return fn();
  } finally {
    current = prev;
    cache.inRules = was;
  }
}

/**
 * `secrets(s)` / `pii(s)`: the kinds found, in order of first appearance, each once. In a decision, its cache answers
 * (under the decision's deadline); elsewhere (a `scope: call` or `tool` rule) the scan asks `stop`, the running rules' deadline.
 * @throws DetectionStopped
 */
export function detectKinds(d: Detector, s: string, stop?: () => boolean): string[] {
  if (current !== undefined) return current.kinds(d, s);
  const seen = new Set<string>();
  for (const sp of SCANNERS[d](s, stop)) seen.add(sp.kind);
  return [...seen];
}

/**
 * The spans of `kinds` in `s` (both detectors' when the kinds are mixed),
 * sorted and merged where they overlap (the earlier span's kind names the
 * merged one).
 */
export function spansOf(cache: DetectionCache, s: string, kinds: ReadonlySet<string>): Span[] {
  const out: Span[] = [];
  for (const d of DETECTORS) {
    for (const sp of cache.spans(d, s)) if (kinds.has(sp.kind) || sp.kind === UNCHECKED_KIND) out.push(sp);
  }
  return mergeOverlaps(out);
}
