/**
 * The content detectors (docs/behaviour/labels-and-detectors.md) as policies and effects use
 * them: `secrets(string)` and `pii(string)` return the kinds they find, in
 * order of first appearance, each once; the `mask` effect replaces their
 * spans. Each string is scanned at most once per decision per detector: a
 * decision runs its policies and its masking inside one DetectionCache,
 * and `result.text` (every block's text and every `structuredContent`
 * string, joined with newlines) is answered from the scans of its parts.
 */
import { addKinds, isAlnum, isDigit, isLower, unpack, PackedSpans, type Found, type Span } from './chars.js';
import { PII_KINDS, scanPii, scanPiiPacked } from './pii.js';
import { SECRET_KINDS as OWN_SECRET_KINDS, TABLE_RULE, scanProviders, scanSecrets } from './secrets.js';
import { DetectionStopped, RULESET_KINDS, TOKEN_END_CHARS } from './ruleset.js';
import { mayBeReadOtherwise, mayChange, normalizeForDetection, type Normalized } from './normalize.js';
import { markupWindows, mayHoldMarkup, withoutMarkup } from './markup.js';
import { concatenatedStretches, spacedStretches, startsAssignment, unwrappedStretches } from './wrapped.js';
import { DECODE_ROUNDS, encodedRuns, MIN_RUN, type EncodedRun } from './encoded.js';
import { leafAt, rawStretch, writeStructure } from './structure.js';

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

const RAW_SCANNERS: Record<Detector, (s: string, stop?: () => boolean) => Found> = { secrets: scanSecrets, pii: scanPiiPacked };

/**
 * A detector's spans in `s` as written and as normalized (normalize.ts:
 * invisible characters, compatibility forms, confusables, percent-escapes,
 * character references and escapes; a text with tag characters normalized
 * twice, the tags read and removed; for credentials, base64 runs decoded,
 * encoded.ts),
 * the latter mapped back onto the characters they came from; sorted, and
 * where both find the same place, the span as written kept.
 */
function scanBoth(d: Detector, s: string, stop?: () => boolean, rounds = DECODE_ROUNDS, apart?: readonly number[]): Found {
  const raw = RAW_SCANNERS[d](s, stop);
  // (Its spans, once made where a reading below asks for them.)
  let rawSpans: readonly Span[] | undefined;
  const found: Span[] = [];
  // Credentials written as the base64 of their text: a run that encodes one is masked whole (its characters do not
  // map one to one onto what they encode).
  if (rounds > 0 && d === 'secrets' && s.length >= MIN_RUN) {
    const runs = encodedRuns(s, stop);
    if (runs.length > 0) for (const sp of decodedFinds(s, runs, stop, rounds, (rawSpans = unpack(raw)))) found.push(sp);
  }
  const n = normalizeForDetection(s, stop);
  // (Personal data where a tag breaks it, `alice<span>@</span>example.com`, `4111<wbr>1111...`: no word names it.)
  markupFinds(n?.text ?? s, n, found, stop, d);
  if (n !== undefined) normalizedFinds(s, n, (t) => unpack(RAW_SCANNERS[d](t, stop)), found, stop);
  // A token a line break cuts, where what the lines' own readings found does not hold it (not at the line feeds
  // `apart`, between strings joined to be read at once).
  if (d === 'secrets') wrappedFinds(s, found, raw, stop, apart);
  if (found.length === 0) return raw;
  // Where the readings overlap, the union: a value cut short by an invisible character as written is whole normalized.
  return mergeOverlaps((rawSpans ?? unpack(raw)).concat(found));
}

/**
 * What `scan` finds in `s`'s normalization `n`, pushed onto `found` mapped back onto `s`'s characters; where `s` holds
 * tag characters, also in its normalization with them removed (a model may read them either way).
 */
function normalizedFinds(s: string, n: Normalized, scan: (text: string) => readonly Span[], found: Span[], stop: (() => boolean) | undefined): void {
  for (const sp of scan(n.text)) found.push({ kind: sp.kind, start: n.from[sp.start]!, end: n.to[sp.end - 1]! });
  const dropped = n.tags ? normalizeForDetection(s, stop, 'drop') : undefined;
  if (dropped !== undefined) for (const sp of scan(dropped.text)) found.push({ kind: sp.kind, start: dropped.from[sp.start]!, end: dropped.to[sp.end - 1]! });
}

/**
 * Credentials in `text` (a string, or its normalization `n`) read with its markup removed (markup.ts), in the
 * stretches where markup stands next to a secret's word or breaks a token: pushed onto `found`, mapped back onto the
 * string's characters. Personal data (`d`) in the stretches where a tag breaks a token alone.
 */
function markupFinds(text: string, n: Normalized | undefined, found: Span[], stop: (() => boolean) | undefined, d: Detector = 'secrets'): void {
  if (!mayHoldMarkup(text)) return;
  for (const [from, to] of markupWindows(text, d === 'pii')) {
    const m = withoutMarkup(from === 0 && to === text.length ? text : text.slice(from, to), stop);
    if (m === undefined) continue;
    for (const sp of unpack(RAW_SCANNERS[d](m.text, stop))) {
      const a = from + m.from[sp.start]!;
      const b = from + m.to[sp.end - 1]!;
      found.push(n === undefined ? { kind: sp.kind, start: a, end: b } : { kind: sp.kind, start: n.from[a]!, end: n.to[b - 1]! });
    }
  }
}

/**
 * Credentials in `s` cut by a line break, read with the breaks around them removed (wrapped.ts), as written and
 * normalized (an escape, a percent-escape or a confusable the break stands next to, or cuts, reads as itself): a
 * provider's format found across a removed break is pushed onto `found` whole, the break with it. So are a program's
 * string literals a concatenation joins, read with the junctions between them removed.
 */
function wrappedFinds(s: string, found: Span[], raw: Found, stop: (() => boolean) | undefined, apart?: readonly number[]): void {
  // (And a program's string literals a concatenation joins, `"ghp_" + "R8kL..."`, and a value spelled out a character
  // at a time, `A K I A ...`: read as a token a line break cuts is.)
  const stretches = [...unwrappedStretches(s, stop, apart), ...concatenatedStretches(s, stop, apart), ...spacedStretches(s, stop)];
  if (stretches.length === 0) return;
  // What the lines' own readings found (disjoint, by start): a find across a break each of whose pieces they hold adds
  // nothing (two lines, each a token of its own, `vcp_...` then `vca_...`), and is not read.
  const own = unpack(raw).concat(found);
  const held = mergeOverlaps(own.slice());
  const covered = (from: number, to: number): boolean => inOne(held, from, to);
  // The kinds of the lines' finds by where they end (made once, where a find across a break asks).
  let ends: Map<number, string[]> | undefined;
  const endsAs = (at: number, kind: string): boolean => {
    if (ends === undefined) {
      ends = new Map();
      for (const sp of own) {
        const kinds = ends.get(sp.end);
        if (kinds === undefined) ends.set(sp.end, [sp.kind]);
        else if (kinds.length < 8 && !kinds.includes(sp.kind)) kinds.push(sp.kind);
      }
    }
    return ends.get(at)?.includes(kind) === true;
  };
  for (const w of stretches) {
    const finds = scanProviders(w.text, stop);
    const n = normalizeForDetection(w.text, stop);
    if (n !== undefined) {
      normalizedFinds(w.text, n, (t) => scanProviders(t, stop), finds, stop);
      finds.sort((x, y) => x.start - y.start);
    }
    let k = 0;
    for (const sp of finds) {
      // Only a find across a break: one inside a line is the line's own scan's.
      while (k < w.seams.length && w.seams[k]! <= sp.start) k++;
      if (k >= w.seams.length || w.seams[k]! >= sp.end) continue;
      // Its pieces between the breaks it crosses: where the lines' readings hold each, or hold one whole and a config's
      // next entry starts the line after it (`SESSION_TOKEN=ya29...` then `SECRET_VALUE=...`), it is no token cut.
      let whole = true;
      let entry = false;
      let from = sp.start;
      for (let j = k; from < sp.end; j++) {
        const to = j < w.seams.length && w.seams[j]! < sp.end ? w.seams[j]! : sp.end;
        const heldHere = covered(w.sourceOf(from), w.sourceOf(to - 1) + 1);
        whole &&= heldHere;
        if (heldHere && to < sp.end && startsAssignment(s, w.sourceOf(to))) entry = true;
        from = to;
      }
      if (whole || entry) continue;
      // A find across one break whose line before it the lines' own readings found as the same kind up to the line's
      // end, and whose rest is a word (`::add-mask::...` or `sk-proj-...` then `echo ok` on the next line): a rule of no
      // fixed length reads a value to the line's end there, and the word is the next line's, not the value's.
      if ((k + 1 >= w.seams.length || w.seams[k + 1]! >= sp.end) && WORD_AFTER_BREAK.test(w.text.slice(w.seams[k]!, sp.end)) && endsAs(w.sourceOf(w.seams[k]! - 1) + 1, sp.kind)) continue;
      found.push({ kind: sp.kind, start: w.sourceOf(sp.start), end: w.sourceOf(sp.end - 1) + 1 });
    }
  }
}

/** The rest of a find after a break that reads as the next line's word (letters of one case, or capitalized, and a mark that may end a sentence) rather than the rest of a token. */
const WORD_AFTER_BREAK = /^(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)[.,;:!?]?$/;

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

/** A character after a decoded run that ends a token where it stands, as gitleaks' rules end one (TOKEN_END_CHARS). */
const ENDS_TOKEN = new RegExp(TOKEN_END_CHARS);
/** After a backslash, what makes an escape that ends a token in a string: a quote, a line break, a tab. */
const ESCAPED_END = /["'nrt]/;
/** Whether an escape that ends a token stands at `i`: a run of up to 16 backslashes (a string escaped as often), then ESCAPED_END's. */
function endsEscaped(s: string, i: number): boolean {
  let k = i;
  while (k - i < 16 && s.charCodeAt(k) === 92) k++;
  return k > i && ESCAPED_END.test(s[k] ?? '');
}
/**
 * A character before a decoded run after which its text is read as it stands: a blank, a quote, `>`, `=` or `:` (a
 * name and its `=` before it). gitleaks' rules also start a token after `(`, `,` and `)`; there a line break is put
 * all the same, so that a name the run encodes (`data:text/plain;base64,` then `DB_PASSWORD=...`) starts a line, as
 * a config's does, rather than stand after a comma as a member of a program's object would.
 */
const STARTS_TOKEN = /[\s\\'"`>=:]/;

/** `text` with a string's escapes of a quote, a line break or a tab read (after any run of backslashes: escaped once or more). */
function unescaped(text: string): string {
  return text.includes('\\') ? text.replace(STRING_ESCAPE, (_, c: string) => ESCAPED_CHAR[c]!) : text;
}
const STRING_ESCAPE = /\\+(["'nrt])/g;
const ESCAPED_CHAR: Record<string, string> = { '"': '"', "'": "'", n: '\n', r: '\r', t: '\t' };

/** The length of the escaped line break (`\n` after a run of backslashes) that ends at `i`, not before `from`; 0 where none does. */
function escapedBreakBefore(s: string, i: number, from: number): number {
  if (i - 2 < from || s.charCodeAt(i - 1) !== 110 || s.charCodeAt(i - 2) !== 92) return 0;
  let k = i - 2;
  while (k > from && i - k < 16 && s.charCodeAt(k - 1) === 92) k--;
  return i - k;
}

/** Characters read on each side of a decoded run, in its place: a name and its `=` before it, a closing quote after. */
const ENCODED_CONTEXT = 64;
/** Most characters of a string one decoded text covers (more runs whose surroundings meet are read in the next). */
const DECODED_TEXT = 64 * 1024;

/**
 * The runs of `s` that hold a credential, each read in its place as a model
 * reads the text with the run decoded: with what stands around it (a name
 * and its `=` before it, a closing quote after: ENCODED_CONTEXT on each
 * side), as written and normalized, and its own runs decoded in turn, up to
 * DECODE_ROUNDS in all; each run a span found there overlaps is masked
 * whole. Runs whose surroundings meet are read in one text: a text crowded
 * with short runs costs one more reading of about its length, not one of
 * each run's surroundings, and a text with a few runs only theirs.
 */
function decodedFinds(s: string, runs: readonly EncodedRun[], stop: (() => boolean) | undefined, rounds: number, written: readonly Span[]): Span[] {
  const out: Span[] = [];
  for (let first = 0; first < runs.length; ) {
    // Between texts the deadline is asked (each text's scans ask it too).
    if (first > 0 && stop?.() === true) throw new DetectionStopped('the time for this decision ran out while reading decoded base64 or hex');
    // The runs whose surroundings meet: [first, last), at most DECODED_TEXT characters of the string.
    const from = Math.max(0, runs[first]!.start - ENCODED_CONTEXT);
    let last = first + 1;
    while (last < runs.length && runs[last]!.start - ENCODED_CONTEXT <= runs[last - 1]!.end + ENCODED_CONTEXT && runs[last]!.end - from <= DECODED_TEXT) last++;
    const to = Math.min(s.length, runs[last - 1]!.end + ENCODED_CONTEXT);
    const pieces: string[] = [];
    // Where each run's text starts in the text read.
    const at: number[] = [];
    let length = 0;
    let plain = from;
    for (let j = first; j < last; j++) {
      const run = runs[j]!;
      // (What stands around it is read with a string's escapes read, as the normalized text reads them: a value printed
      // on the line after its command, `bw get password \"Prod DB\"\n<hex>`, in a tool's output as an object's member.
      // An escaped line break just before it is that line break, and no other is put there.)
      const escaped = escapedBreakBefore(s, run.start, plain);
      const before = unescaped(s.slice(plain, run.start));
      pieces.push(before);
      length += before.length;
      // The run's text is read as a token of its own: a line break between it and a character before it that would
      // run into it (a run glued to a path or a word is read whole; gitleaks' rules start a token after a blank, a
      // quote, `=`, `:`, `(`, `,` or `>`) ...
      if (escaped === 0 && run.start > 0 && !STARTS_TOKEN.test(s[run.start - 1]!)) {
        pieces.push('\n');
        length++;
      }
      pieces.push(run.text);
      at.push(length);
      length += run.text.length;
      plain = run.end;
      // ... and after it, where a URL's path or query goes on (`/status`, `&next=1`; the rules end a token at a blank, a
      // quote or `;`, as gitleaks does).
      // (An escape that ends a token in a string, `\"` or `\n` after a run of backslashes, ends it too: a JSON string of
      // a file, `\"<hex>\");`, escaped once or more.)
      if (plain < s.length && !ENDS_TOKEN.test(s[plain]!) && !endsEscaped(s, plain)) {
        pieces.push('\n');
        length++;
      }
    }
    pieces.push(unescaped(s.slice(plain, to)));
    let k = 0;
    // Spans come sorted by start: the runs before one are passed over once.
    for (const sp of unpack(scanBoth('secrets', pieces.join(''), stop, rounds - 1))) {
      while (k < at.length && at[k]! + runs[first + k]!.text.length <= sp.start) k++;
      for (let j = k; j < at.length && at[j]! < sp.end; j++) {
        const run = runs[first + j]!;
        if (!withinWritten(run, Math.min(run.text.length, sp.end - at[j]!), written)) out.push({ kind: sp.kind, start: run.start, end: run.end });
      }
    }
    first = last;
  }
  return out;
}

/**
 * Whether what was found in `run`'s text up to `to` lies in the characters of one find as written (`written`: sorted,
 * apart) that starts at or before the run: a provider's token is a run of base64's characters too, and a stretch of
 * its bytes that reads as text (`ghp_N204NX...` decodes to `7m85p<!064`) is its own, masked as written; the run's
 * mask, reaching a word glued after the token (the next string's, `nothing`), would take more. A character of a run's
 * text stands for two of the run's at most (hex; base64's 4/3, a line break between stretches for none), and a group
 * of four is read whole: where it may reach past that find, the run is masked.
 */
function withinWritten(run: EncodedRun, to: number, written: readonly Span[]): boolean {
  return inOne(written, run.start, run.start + 2 * to + 3);
}

/** Whether [from, to) lies inside one of `spans` (sorted by start, apart): the last that starts at or before `from`, by one search. */
function inOne(spans: readonly Span[], from: number, to: number): boolean {
  let lo = 0;
  let hi = spans.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (spans[mid]!.start <= from) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && to <= spans[lo - 1]!.end;
}

const SCANNERS: Record<Detector, (s: string, stop?: () => boolean) => Found> = { secrets: (s, stop) => scanBoth('secrets', s, stop), pii: (s, stop) => scanBoth('pii', s, stop) };

/**
 * What a credential may hold at a seam: letters, digits and `_ - + / = . ~ % : @ $ ! ^ * ( ) ?` (a password, a
 * Django key), what escapes are made of
 * (`& # ;` and a backslash: normalization reads `&#75;` and `\u004b` as letters), what a terminal's escape sequences
 * are made of (ESC, BEL, `[` and `]`: normalization removes them, so a value after its colour reads as itself wherever
 * the sequence is cut), markup's (`<`, `>` and a backtick: a value in `<code>` or broken by `<wbr>`, markup.ts), and any
 * non-ASCII character, which may fold to one.
 */
function isTokenChar(c: number): boolean {
  return (
    (c >= 48 && c <= 57) ||
    (c >= 65 && c <= 90) ||
    (c >= 97 && c <= 122) ||
    c === 95 ||
    c === 45 ||
    c === 43 ||
    c === 47 ||
    c === 61 ||
    c === 126 ||
    c === 37 ||
    c === 46 ||
    c === 58 ||
    c === 64 ||
    c === 38 ||
    c === 35 ||
    c === 59 ||
    c === 92 ||
    c === 36 ||
    c === 33 ||
    c === 94 ||
    c === 42 ||
    c === 40 ||
    c === 41 ||
    c === 63 ||
    c === 91 ||
    c === 93 ||
    c === 27 ||
    c === 7 ||
    c === 60 ||
    c === 62 ||
    c === 96 ||
    c >= 0x80
  );
}

/**
 * Characters of each side of a boundary between two consecutive strings read joined (a value split over two blocks):
 * a JWT runs to a thousand or two, an AWS session token to about one. Only the token that crosses the seam is read,
 * so the work stays within twice the parts' length however many seams there are.
 */
const SEAM = 2048;
/** Characters read before the token that crosses a seam: a name and its `=` for the generic assignments. */
const SEAM_CONTEXT = 64;
/**
 * Characters before a token at a seam when it is a pair's `value` (`"Value": "`): the pair's name stands up to 160
 * characters before it (`"Name": "/prod/payments/api_key", "Type": "SecureString", "Value": "...`; secrets.ts,
 * pairName).
 */
const PAIR_CONTEXT = 176;
/** A line that is a YAML member's name and its `:` alone, indented or not (`    postgres:`, `  "db.main":`). */
const YAML_MEMBER_LINE = /^[ \t]*(?:- )?(?:"[^"]{1,128}"|'[^']{1,128}'|[\w.$/-]{1,128}):$/;
/** A pair's `value` and its operator ending what stands before a value, its opening quote too (`"Value": "`). */
const PAIR_VALUE = /value\\?["']?[ \t]*[:=][ \t]*\\?["']?$/i;
/** Characters read after it: what a credential is known by when it follows (`' | sudo -u root -S`, `" | npx wrangler secret put`). */
const SEAM_AFTER = 48;
/** Between scans, the deadline is asked once this many characters were scanned (DetectionCache#askBetweenScans)... */
const ASK_EVERY = 4096;
/** ...counting each scan's fixed cost as this many more. */
const SCAN_COST = 64;
/** Most characters of token one run across seams reads (it is read again from SEAM before where it was cut). */
const SEAM_RUN = 2 * SEAM;
/**
 * The detectors a run of three or more parts is read by: credentials. Personal data is read across two parts only: a
 * row of numbers in as many cells would otherwise read as a card number wherever its digits pass the Luhn check.
 */
const RUN_DETECTORS: readonly Detector[] = ['secrets'];

/** One part's piece of a run across seams: its characters [from, to). */
interface Piece {
  part: number;
  from: number;
  to: number;
}

/** Whether a value may run from the end of `left` into the start of `right`: both non-empty, and token characters where they meet. */
function joins(left: string, right: string): boolean {
  if (left.length === 0 || right.length === 0) return false;
  const l = left.charCodeAt(left.length - 1);
  const r = right.charCodeAt(0);
  // (A `,` between digits joins them too: a key written as an array of bytes, `[60,163` | `,52,...]`.)
  return (isTokenChar(l) || (l === 44 && isDigit(r))) && (isTokenChar(r) || (r === 44 && isDigit(l)));
}

/** Characters next to a seam in which what names a value is looked for (`- name: POSTGRES_PASSWORD`, `--password`, `Bearer`, `The root password for the staging box is now`). */
const NAME_REACH = 64;
/** Characters of the first line after a seam read for a value (its first token, or a pair's `value: "..."`). */
const VALUE_REACH = 96;
/** A pair's `value` at the start of a line, its name on a line before (`"Value": "..."` after `"Name": "/prod/api/key"`); at the end of one, PAIR_VALUE. */
const PAIR_VALUE_START = /^["']?value["']?[ \t]*[:=]/i;
/** A word of prose, lower-case or capitalized, in any script, with the marks around it: no value (`The`, `service,`, `(see`, `Résumé`, `データ`). */
const PLAIN_WORD = /^["'(\[]?\p{L}[\p{Ll}\p{Lo}\p{Lm}\p{M}]*[.,;:!?"')\]]*$/u;
/** Blanks, line breaks among them, read over at a seam between a value and what names it. */
const MAX_SEAM_BLANKS = 32;
/** The shortest value read across a seam after what names it (a short password's six characters). */
const MIN_SEAM_VALUE = 6;
/**
 * What a name, a flag or a command that gives a secret holds, looked for before a seam: a secret's words (`key`,
 * `token`, `password`, `secret`, `auth`, ...), a session cookie's (`sess`, `sid`: `connect.sid`, `PHPSESSID`), a flag a password follows (`-p`, `-a`, `-u`, `--user`), a login, SQL's
 * `IDENTIFIED BY`, a recovery phrase's or recovery words' words, a note's `p:` after its `u:`, an AWS key id (its secret follows it on its line), a
 * wallet's or a Solana keypair's file (`id.json`: its bytes follow on the next line). Where none
 * stands before a seam, no value after it is known by its name, and the seam is not read (a seam of prose).
 */
const NAMES_A_SECRET = /pass|assword|pwd|pw\b|key|token|secret|private|auth|cred|bearer|psk|\bsig\b|sess|\bsid\b|login|identified|phrase|mnemonic|seed|recovery|wallet|\bid\.json|-[pau]\b|--user|(?:^|\s)p:|A[KS]IA/i;
/** A member's name or a pair's that may name a secret (readStructure reads a structure only where one does): as a seam's, or written in another script (`пароль`). */
function namesInStructure(name: string): boolean {
  // (A long name is asked each time: only short ones are kept, so what NAMED holds stays small whatever comes.)
  if (name.length > NAMED_LENGTH) return NAMES_A_SECRET.test(name) || NOT_ASCII.test(name);
  let named = NAMED.get(name);
  if (named === undefined) {
    named = NAMES_A_SECRET.test(name) || NOT_ASCII.test(name);
    // (Names come back request after request, `type`, `text`, `uri`: each is asked once while NAMED holds it.)
    if (NAMED.size >= NAMED_MAX) NAMED.clear();
    NAMED.set(name, named);
  }
  return named;
}
/** namesInStructure's answers, for NAMED_MAX names of NAMED_LENGTH characters at most (cleared when full): 256 KiB of names. */
const NAMED_LENGTH = 64;
const NAMED = new Map<string, boolean>();
const NAMED_MAX = 4096;
const NOT_ASCII = /[^\x00-\x7f]/;
/** What a command a secret is piped to holds, looked for after the value (`' | sudo -S`, `| docker login --password-stdin`, `| vercel env add`). */
const TAKES_A_SECRET = /sudo|-S\b|stdin|secret|env add|login|pass/i;

/** Marks that may stand between a seam and a value after it: quotes, a field's separator, an opening bracket. */
const OPENS_VALUE = new Set([...`'"\`,;([{`].map((c) => c.charCodeAt(0)));

/** A value's place across a seam (valueAcross). */
interface ValueAcross {
  /** Where `left` ends past its trailing blanks. */
  nameEnd: number;
  /** Where `right` starts past its leading blanks. */
  valueStart: number;
  /** Where the value's first line is read to in `right`: its first token, and the line on to VALUE_REACH characters. */
  end: number;
  /** Whether a line break stands at the seam. */
  broken: boolean;
}

/**
 * Where a value may stand in the first line of a part after what names it ends the one before, with blanks, a line
 * break or a mark between them (`password: ` | `Xk9...`, `API_KEY=` | ` Xk9...`, `password:` | `\nXk9...`,
 * `NetworkCredential("svc", "` | `Xk9...")`, `- name: DB_PASSWORD` | `  value: Xk9...`, `password: >-` | `  Xk9...`,
 * an aligned table's header | its rows). `right`'s first line, past its leading blanks, holds MIN_SEAM_VALUE
 * characters or more and starts with what may be a value: no plain word (PLAIN_WORD), unless `left` ends with `=`,
 * `:` or an opening quote (a passphrase of words) or that word names a secret. And what names it stands next to the
 * seam: `left`, past its trailing blanks, ends with `=` or `:` (`AZURE_DEVOPS_PAT=`, `sessionid=`), or a secret's
 * name, a flag (NAMES_A_SECRET) or a pair's `value` stands in the last NAME_REACH characters of its last line (of the
 * parts before it, `before`, where `left` is shorter and holds no line break); or
 * `right`'s first word names a secret or a pair's `value`; or a command that takes a secret (TAKES_A_SECRET) follows
 * that word within SEAM_AFTER. Else undefined: a seam of prose is not read.
 */
function valueAcross(left: string, right: string, before: () => string = () => ''): ValueAcross | undefined {
  let b = 0;
  while (b < right.length && b < MAX_SEAM_BLANKS && isBlank(right.charCodeAt(b))) b++;
  // (A mark that opens the value or ends the field before it may start `right`: `... PASSWORD ` | `'Xk9...'`, a CSV's
  // `...,AKIA...` | `,Xk9...,`.)
  for (let m = 0; m < 2 && b < right.length && OPENS_VALUE.has(right.charCodeAt(b)); m++) b++;
  if (b >= right.length || !isTokenChar(right.charCodeAt(b))) return undefined;
  let a = left.length;
  while (a > 0 && left.length - a < MAX_SEAM_BLANKS && isBlank(left.charCodeAt(a - 1))) a--;
  if (a === 0) return undefined;
  let t = b;
  while (t < right.length && t - b < SEAM && !isBlank(right.charCodeAt(t))) t++;
  const first = right.slice(b, t);
  const nl = right.indexOf('\n', b);
  const head = right.slice(b, Math.min(nl < 0 ? right.length : nl, b + NAME_REACH));
  const op = left.charCodeAt(a - 1);
  const opens = op === 61 || op === 58 || op === 34 || op === 39 || op === 96;
  if (!opens && t - b < 32 && PLAIN_WORD.test(first) && !NAMES_A_SECRET.test(first) && !PAIR_VALUE_START.test(head)) return undefined;
  let e = t;
  while (e < right.length && e - b < VALUE_REACH && right.charCodeAt(e) !== 10) e++;
  if (e - b < MIN_SEAM_VALUE) return undefined;
  const line = left.lastIndexOf('\n', a - 1);
  const tail = left.slice(Math.max(line + 1, a - NAME_REACH), a);
  if (!(op === 61 || op === 58 || NAMES_A_SECRET.test(tail) || PAIR_VALUE.test(tail) || NAMES_A_SECRET.test(first) || PAIR_VALUE_START.test(head) || TAKES_A_SECRET.test(right.slice(t, t + SEAM_AFTER)))) {
    // (`before`: what the parts before `left` end with, asked only where `left` is short of NAME_REACH and of a line
    // break: a name cut into parts of its own, `... PAS` | `SWORD '` | `Xk9...`.)
    if (line >= 0 || a >= NAME_REACH) return undefined;
    const more = before();
    const named = more.slice(Math.max(0, more.lastIndexOf('\n') + 1, more.length - (NAME_REACH - a))) + tail;
    if (!(NAMES_A_SECRET.test(named) || PAIR_VALUE.test(named))) return undefined;
  }
  const broken = left.slice(a).includes('\n') || right.slice(0, b).includes('\n');
  return { nameEnd: a, valueStart: b, end: e, broken };
}

/**
 * Where a table in `left` starts whose rows go on in `right` (a Markdown table's header and rule in one block, its rows
 * in the next; CSV under its header line): `right`'s first line holds a table's separator (`|`, a tab or `,`), and the
 * lines that end `left` hold it too, each of TABLE_LINE characters at most, from the first of them (the header) on.
 * The place in `left`, and what joins the two: a line break where neither ends or starts with one and `left`'s last row
 * is whole; the separator and where the header (and a Markdown table's rule) ends; whether a secret's name
 * (NAMES_A_SECRET) stands in that header or in `right`'s first line, where the rows are read. Else undefined. Reads the
 * table's lines in `left` once and `right`'s first line.
 */
function tableAcross(left: string, right: string): TableAcross | undefined {
  const [b, e] = firstLine(right);
  const sep = separatorIn(right, b, e);
  if (sep === undefined) return undefined;
  const a = left.charCodeAt(left.length - 1) === 10 ? left.length - 1 : left.length;
  // Back over the lines that end `left` while each holds the separator and is no longer than TABLE_LINE (a paragraph
  // of prose with commas in it is no row).
  let start = a;
  for (let end = a; ; ) {
    const ls = end === 0 ? 0 : left.lastIndexOf('\n', end - 1) + 1;
    if (end - ls > TABLE_LINE) break;
    const p = left.indexOf(sep, ls);
    if (p < 0 || p >= end) break;
    start = ls;
    if (ls === 0) break;
    end = ls - 1;
  }
  if (start === a) return undefined;
  // A secret's name in the table's first line (its header) or in `right`'s first line (a row of a name and a value).
  let h = left.indexOf('\n', start);
  if (h < 0 || h > a) h = a;
  const named = NAMES_A_SECRET.test(left.slice(start, h));
  // A line break joins them where `left`'s last line is a whole row (as many separators as the table's first line);
  // else the row goes on in `right` (`prod,` | `Xk9...,2024-01-02`).
  const last = left.lastIndexOf('\n', a - 1) + 1;
  const whole = last === start || count(left, sep, last, a) >= count(left, sep, start, h);
  // The header's end: its first line, and a Markdown table's rule under it.
  let headerEnd = h;
  if (h < a) {
    const r = left.indexOf('\n', h + 1);
    const ruleEnd = r < 0 || r > a ? a : r;
    if (TABLE_RULE.test(left.slice(h + 1, ruleEnd))) headerEnd = ruleEnd;
  }
  return { from: start, joiner: a < left.length || b > 0 || !whole ? '' : '\n', sep, headerEnd, named, read: named || NAMES_A_SECRET.test(right.slice(b, e)) };
}

/** A table found across a seam (tableAcross): where it starts in the part before, what joins the two, its separator, where its header (and rule) ends, and whether the header names a secret. */
interface TableAcross {
  from: number;
  joiner: string;
  sep: string;
  headerEnd: number;
  named: boolean;
  /** A secret's name stands in the header or in the next part's first line: the rows are read. */
  read: boolean;
}

/** Where `right`'s first line starts (past a line break it starts with) and ends, up to TABLE_LINE characters. */
function firstLine(right: string): [number, number] {
  const b = right.charCodeAt(0) === 10 ? 1 : 0;
  const nl = right.indexOf('\n', b);
  return [b, Math.min(nl < 0 ? right.length : nl, b + TABLE_LINE)];
}

/** The separator of a table's row that [b, e) of `right` holds: a pipe first, then a tab, then a comma; or undefined. */
function separatorIn(right: string, b: number, e: number): string | undefined {
  const within = (c: string): boolean => {
    const i = right.indexOf(c, b);
    return i >= 0 && i < e;
  };
  return within('|') ? '|' : within('\t') ? '\t' : within(',') ? ',' : undefined;
}

/** Whether every line of `part` (a line break at either end aside) holds `sep` and is no longer than TABLE_LINE: a block of a table's rows alone. */
function rowsOnly(part: string, sep: string): boolean {
  const n = part.charCodeAt(part.length - 1) === 10 ? part.length - 1 : part.length;
  let ls = part.charCodeAt(0) === 10 ? 1 : 0;
  if (ls >= n) return false;
  while (ls < n) {
    let le = part.indexOf('\n', ls);
    if (le < 0 || le > n) le = n;
    if (le - ls > TABLE_LINE) return false;
    const p = part.indexOf(sep, ls);
    if (p < 0 || p >= le) return false;
    ls = le + 1;
  }
  return true;
}

/** The longest line read as a table's row across a seam. */
const TABLE_LINE = 512;

/** Characters past a token that crosses a seam its line is read to, where the line names or takes a secret (readTo). */
const LINE_REACH = 512;

/** Lines after a value's first line read with it where a seam is read as one block under the other, and at most how many characters. */
const VALUE_LINES = 16;
const VALUE_LINES_CHARS = 1024;

/** Where the VALUE_LINES lines after `end` (a line's end in `s`) end, at most VALUE_LINES_CHARS characters on. */
function linesAfter(s: string, end: number): number {
  // (Where the value's line goes on past what was read of it, no line after it is read.)
  if (end < s.length && s.charCodeAt(end) !== 10) return end;
  let e = end;
  for (let n = 0; n < VALUE_LINES && e < s.length && e - end < VALUE_LINES_CHARS; n++) {
    const next = s.indexOf('\n', e + 1);
    e = next < 0 || next - end > VALUE_LINES_CHARS ? Math.min(s.length, end + VALUE_LINES_CHARS) : next;
  }
  return e;
}

/** How many times `c` stands in `s` between `from` and `to`. */
function count(s: string, c: string, from: number, to: number): number {
  let n = 0;
  for (let i = s.indexOf(c, from); i >= 0 && i < to; i = s.indexOf(c, i + 1)) n++;
  return n;
}

/** The part whose piece holds the run's token character `i` (the first piece's token is its last `firstToken` characters). */
function pieceOf(pieces: readonly Piece[], i: number, firstToken: number): number {
  let seen = firstToken;
  let q = 0;
  while (q + 1 < pieces.length && seen <= i) {
    q++;
    seen += pieces[q]!.to - pieces[q]!.from;
  }
  return pieces[q]!.part;
}

/**
 * The words of the rules that know a credential by what stands around it: a cookie's, a command's that is given one
 * (FreeRDP's `/p:`, an Oracle client's `user/password@service`), a Wi-Fi QR code's, a Twilio client's (its account's
 * SID, then the token).
 */
const SETS_A_SECRET = /cookie|session|redis-cli|mysql|mariadb|psql|curl|machine|echo|sig=|_connect|getconnection|new\s+pdo|\.login\s*\(|ldap_bind|ftp_login|imap_open|ssh2_auth|@(?:tcp|udp|unix)|-item\b|-signature=|\/user:|psexec|paexec|\/rp\b|\/p:|sqlplus|sqlldr|expdp|impdp|\brman\b|dgmgrl|wifi:|twilio|\bAC[0-9a-f]{32}\b/i;

/** Whether `text` names a secret (NAMES_A_SECRET, a pair's `value`), holds a command that takes one (TAKES_A_SECRET) or a rule's word that knows one by where it stands (SETS_A_SECRET). */
function namesOrTakes(text: string): boolean {
  return NAMES_A_SECRET.test(text) || PAIR_VALUE.test(text) || TAKES_A_SECRET.test(text) || SETS_A_SECRET.test(text);
}

/**
 * Where the read of `left` starts before `at` (a seam, or the token that crosses it): `context` characters before it,
 * or, where the seam cuts a line (`far`), its line's start where that is nearer than PAIR_CONTEXT, a value the seam
 * cuts (in a word, at a blank or a mark) having its name at the line's start: `WALLET_MNEMONIC="legal scene ...
 * useful y` | `ear spoil sausage"`, `define( 'AUTH_KEY',         '...OhK` | `' );`.
 */
function readFrom(left: string, at: number, context: number, far: boolean): number {
  const back = Math.max(0, at - context);
  if (!far) return back;
  const near = Math.max(0, at - PAIR_CONTEXT);
  let line = at;
  while (line > near && left.charCodeAt(line - 1) !== 10) line--;
  if (!(line === near && near > 0 && left.charCodeAt(near - 1) !== 10)) return Math.min(back, line);
  // (Further back, a line that is within PAIR_CONTEXT characters as read: a value written in percent-escapes or with
  // invisible characters between its own, `WALLET_MNEMONIC="%6c%65%67...` | `...%6f%6` | `9%6c ...`.)
  const wide = Math.max(0, at - PAIR_CONTEXT * AS_READ);
  let nl = near - 1;
  while (nl >= wide && left.charCodeAt(nl) !== 10) nl--;
  if (nl < wide && wide > 0) return back;
  const start = nl + 1;
  const stretch = left.slice(start, at);
  // (Most lines hold nothing normalizing changes: they are not normalized, nor kept in its table, for this.)
  if (!mayChange(stretch)) return back;
  const read = normalizeForDetection(stretch);
  return read !== undefined && read.text.length <= PAIR_CONTEXT ? Math.min(back, start) : back;
}

/** How many characters as written one character as read may take at most where readFrom looks for a line's start: a percent-escape's three. */
const AS_READ = 3;

/**
 * Where the read of `right` ends after what stands at a seam's start up to `t1` (the token that crosses it, or none):
 * SEAM_AFTER past it (a credential known by what follows it, `echo PASSWORD | sudo -S`), PAIR_CONTEXT more where a
 * pair's `value` follows (`"N` | `ame": "/prod/api_key", ... "Value": "...`). Or, where the seam cuts a line (`far`),
 * further: the line on to its end, LINE_REACH past `t1` at most, and where it ends in the part, the lines after it
 * (linesAfter), where what stands before the seam (`before`) and what is read after it name a secret or stand around
 * one (namesOrTakes). A name the seam cut, its value further on its line or below it: `define( 'A` | `UTH_KEY',
 * '<64 characters>' );`, `e` | `cho "..." | npx wrangler secret put API_KEY`, `WALLET_M` | `NEMONIC="<twelve
 * words>"`, `P` | `rivate-Lines: 3` and the key's lines, `$ gcloud secrets v` | `ersions access ...` and the value it
 * printed; or a value cut that what follows it makes one, a PuTTY key's last lines cut and the `Private-MAC:` under
 * them.
 */
function readTo(before: string, right: string, t1: number, far: boolean): number {
  return readToNaming(before, right, t1, far).to;
}

/** readTo, and whether the read was taken further for what it names (namesOrTakes holds of `before` and it then). */
function readToNaming(before: string, right: string, t1: number, far: boolean): { to: number; named: boolean } {
  const near = Math.min(right.length, t1 + (PAIR_VALUE_AHEAD.test(right.slice(t1, t1 + PAIR_CONTEXT)) ? PAIR_CONTEXT + SEAM_AFTER : SEAM_AFTER));
  if (!far || near >= right.length) return { to: near, named: false };
  const nl = right.indexOf('\n', t1);
  const lineEnd = nl >= 0 && nl - t1 <= LINE_REACH ? nl : Math.min(right.length, t1 + LINE_REACH);
  if (lineEnd <= near && lineEnd !== nl) return { to: near, named: false };
  const end = lineEnd === nl ? linesAfter(right, nl) : lineEnd;
  return namesOrTakes(before + right.slice(0, end)) ? { to: Math.max(near, end), named: true } : { to: near, named: false };
}

/** What ends a sentence: `.`, `!`, `?`. */
const SENTENCE_END = new Set([46, 33, 63]);

/** The text of `pieces`, joined as shown. */
function textOf(parts: readonly string[], pieces: readonly Piece[]): string {
  return pieces.map((pc) => parts[pc.part]!.slice(pc.from, pc.to)).join('');
}

/** `lead` where it and what it leads to (`after`) name a secret or stand around one (namesOrTakes), or none: a lead read with what names nothing makes no find. */
function namingLead(parts: readonly string[], lead: readonly Piece[], after: string): readonly Piece[] {
  return lead.length === 0 || namesOrTakes(textOf(parts, lead) + after) ? lead : NO_PIECES;
}

/** A pair's `value` ahead (`"Value": "`, `value: `). */
const PAIR_VALUE_AHEAD = /value["']?[ \t]*[:=]/i;

/** Most parts read back for what names a token that starts its part (leadBefore). */
const LEAD_PARTS = 16;
const NO_PIECES: readonly Piece[] = [];

/**
 * The ends of the parts before part `k`, `need` characters of them at most, as one piece each, in order: what stands
 * before a token that starts its part (a name, its `=`), read with it. Up to LEAD_PARTS parts back, so that a seam
 * reads a bounded number of characters before it however many parts there are.
 */
function leadBefore(parts: readonly string[], k: number, need: number): readonly Piece[] {
  if (need <= 0) return NO_PIECES;
  const out: Piece[] = [];
  for (let j = k - 1; j >= 0 && need > 0 && k - j <= LEAD_PARTS; j--) {
    const n = parts[j]!.length;
    if (n === 0) continue;
    const from = Math.max(0, n - need);
    out.push({ part: j, from, to: n });
    need -= n - from;
  }
  return out.reverse();
}

/**
 * The starts of the parts from part `j` on, below `end`, `need` characters of them at most, as one piece each, in
 * order: what follows a short part, read with it. Up to LEAD_PARTS parts on, as leadBefore.
 */
function trailFrom(parts: readonly string[], j: number, end: number, need: number): readonly Piece[] {
  const out: Piece[] = [];
  for (let i = j; i < end && need > 0 && i - j < LEAD_PARTS; i++) {
    const n = parts[i]!.length;
    if (n === 0) continue;
    const to = Math.min(n, need);
    out.push({ part: i, from: 0, to });
    need -= to;
  }
  return out;
}

function isBlank(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 11;
}
const NONE: readonly Span[] = Object.freeze([]);

/** Characters of a key in armour read across seams at most, its `-----BEGIN` line to its `-----END` line (a PGP private key block runs to a few kilobytes). */
const ARMOUR = 16_384;
/**
 * Parts a key in armour is read across at most (a file read in chunks of a few characters). Each part is walked by
 * the one key opened nearest before it: a walk stops at the next `-----BEGIN`.
 */
const ARMOUR_PARTS = 1024;

/** The characters of `-----BEGIN`: a part that starts with none of them (as read) holds no rest of a marker the seam cut. */
const MARKER_CHARS = new Set([...'-BEGIN'].map((c) => c.charCodeAt(0)));
/** Characters read on each side of a seam for an armour's marker it cuts: `-----BEGIN` with a character hidden between each two of its own, and more. */
const MARKER_REACH = 48;

/** What a search for an armour's markers reads of `s` from `from` to `to`: its text as the detectors read it, and for a character of that text where it starts (`at`) and ends (`after`) in `s`. */
interface MarkerRead {
  text: string;
  at(i: number): number;
  after(i: number): number;
}

/**
 * `s` from `from` to `to` as the detectors read it (normalizeForDetection: invisible characters gone, full-width forms
 * and look-alike letters folded, escapes decoded), so that a marker written so (`-‌-‌-‌-‌-‌B‌E‌G‌I‌N`, `－－－－－ＢＥＧＩＮ`,
 * `-----ВЕGIN` in Cyrillic letters) is found as the key's own read finds it.
 */
function markerRead(s: string, from = 0, to = s.length): MarkerRead {
  const piece = from === 0 && to === s.length ? s : s.slice(from, to);
  const n = normalizeForDetection(piece);
  if (n === undefined) return { text: piece, at: (i) => from + i, after: (i) => from + i + 1 };
  return { text: n.text, at: (i) => from + (i < n.text.length ? n.from[i]! : piece.length), after: (i) => from + n.to[i]! };
}

/**
 * Where a key in armour opened in part `k` (its `-----BEGIN` within the last ARMOUR characters, the marker's first
 * characters in the parts before too, no `-----END` after it there) closes in a part after it, below `runEnd`
 * (ARMOUR characters and ARMOUR_PARTS parts at most, no other `-----BEGIN` between): the pieces from the `-----BEGIN`
 * to the end of the `-----END` line (a line break, or 128 characters past the marker), every part between whole, the
 * markers found where a seam cuts them too, and as the detectors read them (markerRead). Else undefined.
 */
function armourThrough(parts: readonly string[], k: number, runEnd: number): Piece[] | undefined {
  const raw = parts[k]!;
  const pieces: Piece[] = [];
  let read: number;
  // (The last ARMOUR characters, and some: a key opened further back is too long to walk.)
  const left = markerRead(raw, Math.max(0, raw.length - ARMOUR - MARKER_REACH));
  const opened = left.text.lastIndexOf('-----BEGIN');
  if (opened >= 0) {
    const begin = left.at(opened);
    if (raw.length - begin > ARMOUR || left.text.includes('-----END', opened)) return undefined;
    pieces.push({ part: k, from: begin, to: raw.length });
    read = raw.length - begin;
  } else {
    // (The marker's first characters in the parts before, `-----BEG` | `IN RSA PRIVATE KEY-----`.)
    // (A part that starts with a plain character no marker starts with, as most do, is not normalized for it.)
    const c0 = raw.charCodeAt(0);
    if (k === 0 || raw.length > ARMOUR || (!MARKER_CHARS.has(c0) && !mayBeReadOtherwise(c0))) return undefined;
    if (!MARKER_CHARS.has(markerRead(raw, 0, Math.min(raw.length, MARKER_REACH)).text.charCodeAt(0))) return undefined;
    const lead = leadBefore(parts, k, MARKER_REACH);
    const carry = textOf(parts, lead);
    const joint = markerRead(carry + raw.slice(0, MARKER_REACH));
    const found = joint.text.indexOf('-----BEGIN');
    const b = found < 0 ? -1 : joint.at(found);
    if (b < 0 || b >= carry.length) return undefined;
    // (The key may close in this part: `-` | `‌-‌-‌-‌-‌B‌E‌G‌I‌N ... -‌-‌-‌-‌-‌E‌N‌D` | `‌ ‌R‌S‌A ...`. It is read to the end of
    // its `-----END` line here, with the marker's first characters before; another key opened before it is none.)
    const own = markerRead(raw);
    const closed = own.text.indexOf('-----END');
    if (closed >= 0 && own.text.lastIndexOf('-----BEGIN', closed) >= 0) return undefined;
    let at = 0;
    for (const pc of lead) {
      const n = pc.to - pc.from;
      if (b < at + n) pieces.push({ part: pc.part, from: pc.from + Math.max(0, b - at), to: pc.to });
      at += n;
    }
    if (closed >= 0) {
      const from = own.at(closed);
      const nl = raw.indexOf('\n', from);
      pieces.push({ part: k, from: 0, to: nl >= 0 ? nl : Math.min(raw.length, from + 128) });
      return pieces;
    }
    pieces.push({ part: k, from: 0, to: raw.length });
    read = carry.length - b + raw.length;
  }
  // The last characters read, for a marker a seam cuts (`-----EN` | `D RSA PRIVATE KEY-----`).
  let tail = textOf(parts, pieces).slice(-MARKER_REACH);
  // Past the `-----END` marker: characters of its line read so far, or -1 before it.
  let past = -1;
  for (let j = k + 1; j < runEnd && j - k <= ARMOUR_PARTS && read <= ARMOUR; j++) {
    const p = parts[j]!;
    if (p.length === 0) continue;
    let from = 0;
    if (past < 0) {
      // (Searched within what is left of ARMOUR: a part of megabytes is not read for a marker far in it.)
      const whole = p.length + read <= ARMOUR;
      const within = markerRead(p, 0, whole ? p.length : ARMOUR - read + MARKER_REACH);
      const joint = markerRead(tail + p.slice(0, MARKER_REACH));
      const cut = joint.text.indexOf('-----END');
      const across = cut >= 0 && joint.at(cut) < tail.length;
      const closed = across ? -1 : within.text.indexOf('-----END');
      if (!across && closed < 0) {
        // (Another key opened: in this part, or where the seam cuts its marker; the tail may hold this key's own.)
        const other = joint.text.lastIndexOf('-----BEGIN');
        if ((other >= 0 && joint.after(other + 9) > tail.length) || within.text.includes('-----BEGIN') || !whole) return undefined;
        pieces.push({ part: j, from: 0, to: p.length });
        read += p.length;
        tail = (tail + p.slice(-MARKER_REACH)).slice(-MARKER_REACH);
        continue;
      }
      from = across ? 0 : within.at(closed);
      past = 0;
    }
    // On to the end of the `-----END` line.
    const nl = p.indexOf('\n', from);
    const to = nl >= 0 ? nl : Math.min(p.length, from + 128 - past);
    pieces.push({ part: j, from: 0, to });
    past += to - from;
    if (nl >= 0 || past >= 128 || to < p.length) break;
  }
  return past < 0 ? undefined : pieces;
}

/** Characters after a seam a read around an earlier seam holds for it to be read there alone (readAround). */
const AROUND_AFTER = PAIR_CONTEXT / 2;

/**
 * Where the reads of a seam with the parts around it stand (readAround): among the first `runEnd` parts (a result's
 * blocks), each part's start in them joined (`starts`), and where a seam is next read so (`until`).
 */
interface Around {
  runEnd: number;
  starts: number[];
  until: number;
}

/** The one span of a string whose scan the deadline stopped or never let start: all of it, kind `unchecked`. */
function uncheckedSpan(s: string): Span[] {
  return [{ kind: UNCHECKED_KIND, start: 0, end: s.length }];
}

/** Strings a cache looks up by `===` before it uses a Map. */
const FEW = 8;

/** Scans of one detector: the first FEW strings in arrays, the rest in a Map. */
interface Scans {
  keys: string[];
  spans: Found[];
  more: Map<string, Found> | undefined;
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
  /**
   * Texts joinShown made, the line feeds it put between their strings (no place a token runs across: each is read
   * as no line break), and what the rules' reading of them found.
   */
  readonly #shown: { text: string; apart: readonly number[] }[] = [];
  readonly #shownSpans: Scans = { keys: [], spans: [], more: undefined };
  /** Spans found only where consecutive strings meet (a value split over two), by detector and string: each string's part of them. */
  readonly #seams: Record<Detector, Map<string, Span[]>> = { secrets: new Map(), pii: new Map() };
  /** Kinds readStructure found for a joined text, by its parts: each is the text's, wherever its strings stand among the parts. */
  readonly #structureKinds = new WeakMap<readonly string[], Set<string>>();
  /** Strings scanned, per detector (tests read it). */
  readonly scans: Record<Detector, number> = { secrets: 0, pii: 0 };
  /** Characters the detectors read across the seams of joined parts (each detector counted): linear in the parts. */
  scannedInSeams = 0;
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

  /** The spans of `d` in `s`, each string scanned once a decision; spans kept packed are made here, once. */
  spans(d: Detector, s: string): readonly Span[] {
    const found = this.#found(d, s);
    if (!(found instanceof PackedSpans)) return found;
    const spans = found.toSpans();
    const scans = this.#spans[d];
    const i = scans.keys.indexOf(s);
    if (i >= 0) scans.spans[i] = spans;
    else scans.more?.set(s, spans);
    return spans;
  }

  /** What a scan of `s` found, packed where the detector packs it (a policy asking for kinds makes no span). */
  #found(d: Detector, s: string, asShown = false): Found {
    if (s.length === 0) return NONE;
    const seam = this.#seams[d].size === 0 ? undefined : this.#seams[d].get(s);
    if (seam !== undefined) return this.#withSeams(d, s, seam);
    // A text joinShown made, read for the rules' kinds: its own scans (a string of the same characters elsewhere, a
    // block's text, is read with its line breaks as a string's are).
    const shown = asShown && d === 'secrets';
    const scans = shown ? this.#shownSpans : this.#spans[d];
    const keys = scans.keys;
    for (let i = 0; i < keys.length; i++) if (keys[i] === s) return scans.spans[i]!;
    let spans = scans.more?.get(s);
    if (spans === undefined) {
      // After a scan ran out of time, no scan starts again: what is not known is withheld whole.
      if (this.stopped) return uncheckedSpan(s);
      this.scans[d]++;
      try {
        this.#askBetweenScans(s.length);
        spans = shown ? scanBoth('secrets', s, this.#stop, DECODE_ROUNDS, this.#shown.find((j) => j.text === s)?.apart) : SCANNERS[d](s, this.#stop);
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
   * Among the first `runParts`, where the part after a seam is all one token
   * (no blank) and joins the next, the run goes on through it (read for
   * credentials): a value split over three or more parts
   * (`AKIA` | `IOSFODNN` | `7EXAMPLE`) is read whole, with and without the
   * run's first and last pieces (a part that only touches the value would
   * otherwise run into it). A run reads at most SEAM_RUN characters of token;
   * a longer one is read again from SEAM characters before where it was cut,
   * and a seam inside a run starts none of its own: linear in the parts.
   */
  #readSeams(parts: readonly string[], runParts: number, detectors: readonly Detector[] = DETECTORS): void {
    let runUntil = 0;
    // The last part a key in armour read across seams reached (armourThrough).
    let armourUntil = 0;
    // The last table read across a seam, while every part since holds its rows alone: its header's place.
    let header: { part: number; from: number; to: number; sep: string; named: boolean } | undefined;
    const runEnd = Math.min(parts.length, runParts);
    const around: Around = { runEnd, starts: [0], until: 0 };
    for (let i = 0; i < runEnd; i++) around.starts.push(around.starts[i]! + parts[i]!.length);
    for (let k = 0; k + 1 < parts.length; k++) {
      // The seams are read before the rules, under the same deadline: past it, no scan starts again and what is not
      // known is withheld whole (spans), so a result of many blocks cannot hold the process by its seams.
      if ((k & 15) === 15 && this.#stop?.() === true) {
        this.stopped = true;
        return;
      }
      const left = parts[k]!;
      const right = parts[k + 1]!;
      // A table whose rows go on in the next part (its header in one block, its rows in the next): the rows read under
      // the header.
      if (header !== undefined && rowsOnly(left, header.sep) && separatorIn(right, ...firstLine(right)) === header.sep) {
        // A table whose header is further back, every part since a block of its rows alone (a row to a block): the
        // next part's rows read under that header.
        const first = right.slice(0, Math.min(right.length, TABLE_LINE));
        if ((header.named || NAMES_A_SECRET.test(first)) && !this.#readRun(parts, [{ part: header.part, from: header.from, to: header.to }, { part: k + 1, from: 0, to: right.length }], RUN_DETECTORS, right.length, '\n')) return;
      } else {
        const table = tableAcross(left, right);
        header = undefined;
        if (table !== undefined) {
          if (table.read && !this.#readRun(parts, [{ part: k, from: table.from, to: left.length }, { part: k + 1, from: 0, to: right.length }], RUN_DETECTORS, right.length, table.joiner)) return;
          header = { part: k, from: table.from, to: table.headerEnd, sep: table.sep, named: table.named };
        }
      }
      // A key in armour whose lines run on past the next block (a file read in chunks): the blocks from its `-----BEGIN`
      // to its `-----END` read as one.
      if (k >= armourUntil && k + 1 < runEnd) {
        const through = armourThrough(parts, k, runEnd);
        if (through !== undefined) {
          if (!this.#readRun(parts, through, RUN_DETECTORS)) return;
          armourUntil = through[through.length - 1]!.part;
        }
      }
      // What names a value may end one part and the value start the next (`password: ` | `Xk9...`): read across the
      // blanks, and as the two blocks are shown, one under the other.
      const joined = joins(left, right);
      // (A short part: what names a value may stand in the parts before it.)
      let short: readonly Piece[] = NO_PIECES;
      const value = valueAcross(left, right, () => {
        short = k > 0 ? leadBefore(parts, k, PAIR_CONTEXT - left.length) : NO_PIECES;
        return textOf(parts, short);
      });
      if (value !== undefined && !this.#readValueAcross(parts, k, value, joined, short, around)) return;
      // A seam no read above took, where what stands around it names or takes a secret: a value whole on one side, made
      // one by what stands on the other (`mysql` | ` -h db -u root -pXk9...`, `echo 'Xk9...` | `' | sudo -S`).
      if (!joined && value === undefined) {
        // (A pair's `value` at the seam, `"Value` | `": "...`: its name stands up to PAIR_CONTEXT before it. A seam inside
        // a line, `ngrok` | ` config add-authtoken ...`, is read to the line's ends, readFrom and readTo; one at a line
        // break, as between paragraphs, is not.)
        const inLine = left.length > 0 && right.length > 0 && left.charCodeAt(left.length - 1) !== 10 && right.charCodeAt(0) !== 10;
        const f = readFrom(left, left.length, PAIR_VALUE_AHEAD.test(left.slice(-12) + right.slice(0, 12)) ? PAIR_CONTEXT : SEAM_CONTEXT, inLine);
        const { to: t, named } = readToNaming(left.slice(f), right, 0, inLine);
        const pieces: readonly Piece[] = [{ part: k, from: f, to: left.length }, { part: k + 1, from: 0, to: t }];
        // (Where the read starts its part, what stands before it in the parts before is read with it where the read
        // ends before the next part (else readAround reads them, below): a value cut into blocks before what takes it,
        // `echo "4krZ` | `L1cn...` | `...RpF" | npx` | ` wrangler secret put API_KEY`, a CSV cell cut and the `,` after
        // it. Where the read was taken on for what it names, that is known: its text is not searched again.)
        const lead = f === 0 && k > 0 ? leadBefore(parts, k, PAIR_CONTEXT - left.length) : NO_PIECES;
        const after = left.slice(f) + right.slice(0, t);
        const read = t === right.length && k + 2 < runEnd ? NO_PIECES : named ? lead : namingLead(parts, lead, after);
        if ((named || read.length > 0 || namesOrTakes(after)) && !this.#readRun(parts, [...read, ...pieces], detectors)) return;
        // (A short part after the seam, read with the parts around it: `aws_secret_access_key` | ` ` | `= ...`,
        // `docker login` | ` -u ` | `deploy -p ...`, `... password -a ` | `$USER -s ` | `openai -w` and the value below.)
        if (!this.#readAround(parts, lead, pieces, around, -1)) return;
      }
      // A value split in two has a piece on each side of the seam: only then is there anything to join.
      if (!joined) continue;
      // The token that crosses the seam (non-blank on both sides), with some of what stands before it (a name and `=`).
      let t0 = left.length;
      while (t0 > 0 && left.length - t0 < SEAM && !isBlank(left.charCodeAt(t0 - 1))) t0--;
      let t1 = 0;
      while (t1 < right.length && t1 < SEAM && !isBlank(right.charCodeAt(t1))) t1++;
      // And some of what stands after it: a credential known by what follows it (`echo PASSWORD | sudo -S`).
      // (A token that starts its line is read with the line before it, up to PAIR_CONTEXT characters: a command that
      // prints the value, `gcloud secrets versions access ... --project=acme-prod` then `Vb8n` | `Qx3...`. So is a pair's
      // value, or a pair's `value` the seam cut, `"V` | `alue": "...`: its name stands up to PAIR_CONTEXT before it.)
      const startsLine = t0 > 0 && left.charCodeAt(t0 - 1) === 10;
      // (The pair's `value` may stand in the parts before, `"Val` | `ue"` | `: "K` | `p4w...`, or run on through the
      // parts after, `"V` | `a` | `lue": "...`.)
      const pair = PAIR_VALUE.test((t0 < 12 && k > 0 ? textOf(parts, leadBefore(parts, k, 12 - t0)) : '') + left.slice(Math.max(0, t0 - 12), t0)) || (left.length - t0 < 8 && PAIR_VALUE_START.test(left.slice(t0) + (t1 === right.length ? textOf(parts, trailFrom(parts, k + 1, runEnd, 12)) : right.slice(0, Math.min(t1, 12)))));
      const context = startsLine || pair ? PAIR_CONTEXT : SEAM_CONTEXT;
      // (A name or a word the seam cuts, `define( 'A` | `UTH_KEY', ...`, `WALLET_MNEMONIC` | `="legal scene ...`, is read
      // to its line's ends, readFrom and readTo; a seam after a sentence's end, `... the account keys.` | `Naïve ...`,
      // is not.)
      // (Nor is a `.` a lower-case letter follows across the seam: a member, `DriverManager.` | `getConnection(...`; a
      // sentence starts with a capital.)
      const midSentence = !SENTENCE_END.has(left.charCodeAt(left.length - 1)) || isLower(right.charCodeAt(0));
      const from = readFrom(left, t0, context, midSentence);
      // (A pair's `value` after the token, its name cut by the seam, `"N` | `ame": "/prod/api_key", ... "Value": "...`:
      // read on to the value.)
      const to = readTo(left.slice(from), right, t1, midSentence);
      // (Where the token starts at or near its part's start, what names it stands in the parts before: `password: ` |
      // `Xk9` | `mQ2...`, a value cut into blocks of a few characters. Those parts' ends are read before it, as shown.
      // Not where the token began in the part before, `x` | `A` | `KIA...`: the seam before reads that token.)
      // (Only where they name one: else the read is as before, no longer.)
      const lead = from === 0 && k > 0 && !(t0 === 0 && joins(parts[k - 1]!, left)) ? namingLead(parts, leadBefore(parts, k, t0 === 0 ? PAIR_CONTEXT : context - t0), left.slice(from) + right.slice(0, to)) : NO_PIECES;
      // (However short the token: a word cut anywhere, `"e` | `cho '...' | sudo -S`, a short password's `k` | `7Rw2qa`.)
      if (!this.#readRun(parts, [...lead, { part: k, from, to: left.length }, { part: k + 1, from: 0, to }], detectors, t1)) return;
      // (A short part after the seam, read with the parts after it where it is no token that runs on into them (read
      // below): `ech` | `o "..." |` | ` npx wrangler secret put`, `gh sec` | `re` | `t set ... --body "..."`.)
      if (!(t1 === right.length && k + 2 < runEnd && joins(right, parts[k + 2]!)) && !this.#readAround(parts, lead, [{ part: k, from, to: left.length }, { part: k + 1, from: 0, to }], around, t1)) return;
      if (k < runUntil || t1 < right.length || k + 2 >= runEnd || !joins(right, parts[k + 2]!)) continue;
      // The run through parts that are all token, from this seam on.
      const pieces: Piece[] = [{ part: k, from, to: left.length }];
      let token = left.length - t0;
      let j = k + 1;
      let cut = false;
      for (;;) {
        const p = parts[j]!;
        let e = 0;
        while (e < p.length && token + e < SEAM_RUN && !isBlank(p.charCodeAt(e))) e++;
        pieces.push({ part: j, from: 0, to: e });
        token += e;
        if (token >= SEAM_RUN) cut = true;
        if (cut || e < p.length || j + 1 >= runEnd || !joins(p, parts[j + 1]!)) break;
        j++;
      }
      // Where the token ends inside the run's last part, what follows it there is read too, as at a seam
      // (`echo 'PA` | `SS` | `WORD' | sudo -S`: the password is known by what follows it).
      const last = pieces[pieces.length - 1]!;
      // (On to its line's end where that names or takes a secret, as at a seam: `gh sec` | `re` | `t set DEPLOY_TOKEN ...
      // --body "..."`.)
      if (!cut && last.to < parts[last.part]!.length) last.to = readTo(textOf(parts, pieces.slice(0, -1)), parts[last.part]!, last.to, true);
      for (const [a, b] of [[0, pieces.length], [1, pieces.length], [0, pieces.length - 1], [1, pieces.length - 1]] as const) {
        if (b - a >= 3 && !this.#readRun(parts, pieces.slice(a, b), RUN_DETECTORS)) return;
      }
      // (And with what names it in the parts before, where the run starts its part: `API_KEY=` | `Xk9` | `mQ2` | `...`.)
      if (lead.length > 0) for (const b of [pieces.length, pieces.length - 1]) if (!this.#readRun(parts, [...lead, ...pieces.slice(0, b)], RUN_DETECTORS)) return;
      // (Where the read ends at its last part's end, with the parts after it, as at a seam: a value cut into blocks
      // before what takes it, `echo "4kr` | `Z` | `1cnp` | `...RpF" | npx` | ` wrangler secret put API_KEY`.)
      if (!cut && !this.#readAround(parts, lead, pieces, around, -1)) return;
      // Cut short: the next run starts SEAM characters of token before the cut (a value up to SEAM long across a later
      // seam is whole in one of the two). Else the next run starts after this one's last part.
      runUntil = cut ? Math.max(k + 1, pieceOf(pieces, token - SEAM, left.length - t0)) : j;
    }
  }

  /**
   * The reads of a value across the seam after part `k` (valueAcross), as a host may show two blocks: side by side
   * and one under the other. As written (where the parts are no token joined, which the token's own read reads);
   * where a line break stands at the seam, with the blanks there gone (`API_KEY=` then a line break | the value); and,
   * where none does, with one put there (a YAML block scalar's indicator | its value, an aligned table's header | its
   * rows, a PuTTY key's `Private-Lines: 3` | its lines). A span found in the next part's first line is that part's.
   * False when the deadline stopped a read.
   */
  #readValueAcross(parts: readonly string[], k: number, value: ValueAcross, joined: boolean, short: readonly Piece[], around: Around): boolean {
    const left = parts[k]!;
    const right = parts[k + 1]!;
    const { nameEnd: a, valueStart: b, end } = value;
    let t0 = a;
    while (t0 > 0 && a - t0 < SEAM && !isBlank(left.charCodeAt(t0 - 1))) t0--;
    // (A pair's name may stand on a line before: `- name: DB_PASSWORD` | `  value: ...`; or in the parts before a short
    // part, `short`.)
    const from = Math.max(0, t0 - PAIR_CONTEXT);
    // (What the parts before end with, a command's word cut, `e` | `cho '` | `Xk9...' | sudo -S`, as valueAcross read it.)
    const lead = from === 0 && k > 0 ? (short.length > 0 ? short : leadBefore(parts, k, PAIR_CONTEXT - t0)) : NO_PIECES;
    // (And on, where the line names a secret, as after a token across a seam: `"Name": ` | `"/prod/api_key",` and the
    // pair's `"Value"` lines below.)
    const to = Math.max(Math.min(right.length, end + SEAM_AFTER), readTo(left.slice(from), right, b, true));
    // The lines after the value's are read with it where the two are read one under the other: a value of some lines,
    // a PuTTY key's private lines.
    const under = Math.max(to, linesAfter(right, end));
    const reads: [Piece[], string, number][] = [];
    // As written (side by side, or, with a line break at the seam, one under the other).
    if (!joined) reads.push([[...lead, { part: k, from, to: left.length }, { part: k + 1, from: 0, to: value.broken ? under : to }], '', end]);
    if (value.broken) {
      // Side by side: the blanks at the seam gone. No space after a mark, `API_KEY=`, `sig=`, `admin:`, or a quote that
      // opens the value, `"client_secret": "`; after a word both, `-p` as `mysql -p...` and as `sshpass -p ...`; and after
      // a YAML member's name alone on its line both, `admin:` as a pair's and as `  postgres: ...` in a map (a map's
      // member one object or more below a name that names secrets is read only so).
      const glues = isAlnum(left.charCodeAt(a - 1)) || (left.charCodeAt(a - 1) === 58 && YAML_MEMBER_LINE.test(left.slice(left.lastIndexOf('\n', a - 1) + 1, a))) ? ['', ' '] : [''];
      for (const glue of glues) reads.push([[{ part: k, from, to: a }, { part: k + 1, from: b, to }], glue, end - b]);
    } else {
      // One under the other: a line break put at the seam.
      reads.push([[{ part: k, from, to: a }, { part: k + 1, from: 0, to: under }], '\n', end]);
    }
    for (const [pieces, joiner, valueEnd] of reads) if (!this.#readRun(parts, pieces, RUN_DETECTORS, valueEnd, joiner)) return false;
    // (As written, with a short part after it: `WALLET_MNEMONIC="` | `legal scene` | ` wave ... sausage"`.)
    return joined || this.#readAround(parts, lead, [{ part: k, from, to: left.length }, { part: k + 1, from: 0, to: value.broken ? under : to }], around, end);
  }

  /**
   * A seam's read (`pieces`: what stands before it in part `k`, what after it in part `k + 1`, or a token's run through
   * parts) again with the parts around it, among a result's blocks: `lead` before it, and, where its last part is read
   * to its end, the starts of the blocks after it, PAIR_CONTEXT characters of them, LEAD_PARTS parts at most
   * (trailFrom); for credentials, where what it reads names or stands around a secret. A short part between what
   * names a value and the value, or between a value and what takes it. A seam AROUND_AFTER characters or more inside
   * the last such read (half its trail where that is shorter, LEAD_PARTS parts of a few characters) is not read so
   * again (what crosses it within that many characters was read there), so that many short parts cost each character
   * a few reads. False when the deadline stopped the read.
   */
  #readAround(parts: readonly string[], lead: readonly Piece[], pieces: readonly Piece[], at: Around, valueEnd: number): boolean {
    const last = pieces[pieces.length - 1]!;
    if (last.part >= at.runEnd || at.starts[last.part]! < at.until) return true;
    const trail = last.to === parts[last.part]!.length ? trailFrom(parts, last.part + 1, at.runEnd, PAIR_CONTEXT) : NO_PIECES;
    if (trail.length === 0) return true;
    const around = [...lead, ...pieces, ...trail];
    const end = trail[trail.length - 1]!;
    const after = at.starts[end.part]! + end.to - at.starts[trail[0]!.part]!;
    at.until = at.starts[end.part]! + end.to - Math.min(AROUND_AFTER, after >> 1);
    return !namesOrTakes(textOf(parts, around)) || this.#readRun(parts, around, RUN_DETECTORS, valueEnd);
  }

  /** The detectors over one run of `pieces`: a span that crosses a seam gives each part it covers its piece; false when the deadline stopped the read. */
  #readRun(parts: readonly string[], pieces: readonly Piece[], detectors: readonly Detector[] = DETECTORS, valueEnd = -1, joiner = ''): boolean {
    const at: number[] = [];
    // Joined into one flat string: a concatenation would hand the scanners a rope, and every scan after it would read
    // strings of two shapes (the decision's flat ones slowed by a tenth, measured on the fixture with two link seams).
    const texts: string[] = [];
    let length = 0;
    for (const pc of pieces) {
      if (texts.length > 0) length += joiner.length;
      at.push(length);
      const p = parts[pc.part]!;
      const piece = pc.from === 0 && pc.to === p.length ? p : p.slice(pc.from, pc.to);
      texts.push(piece);
      length += piece.length;
    }
    const text = texts.join(joiner);
    for (const d of detectors) {
      let found: Found;
      this.scannedInSeams += text.length;
      try {
        found = SCANNERS[d](text, this.#stop);
      } catch (err) {
        if (!(err instanceof DetectionStopped)) throw err;
        this.stopped = true;
        return false;
      }
      // Spans inside a piece before the last that end within SEAM_AFTER of its end, and inside the last past `valueEnd`:
      // found by what stands on the seam's other side, or by the piece's cut (read below).
      let before: [Span, number][] | undefined;
      for (const sp of unpack(found)) {
        for (let q = 0; q < pieces.length; q++) {
          const pc = pieces[q]!;
          const a = Math.max(sp.start, at[q]!);
          const b = Math.min(sp.end, at[q]! + (pc.to - pc.from));
          const whole = a === sp.start && b === sp.end;
          // Only what crosses a seam: a span inside one piece is its part's own scan's to find. But for a value in the
          // last piece, up to `valueEnd`, named by what stands before the seam (`password: ` | `Xk9...`); for one
          // that ends just before a seam, which what follows it may make one (`<password>Xk9...</passw` | `ord>`); and
          // for a credential in the last piece named by a name the seam cut (`aws_session_t` | `oken = ...`).
          const named = valueEnd >= 0 && q === pieces.length - 1 && q > 0 && a - at[q]! < valueEnd;
          // (For credentials, any piece's: a rule that knows a value by a line far before it, `e` | `xpect "*assword:"` |
          // `"` then `send "..."` on the next line, finds it in a piece between others.)
          if (whole && !named && ((q < pieces.length - 1 && at[q]! + (pc.to - pc.from) - b <= SEAM_AFTER) || (d === 'secrets' && pieces.length > 1))) {
            (before ??= []).push([sp, q]);
            break;
          }
          if (whole && !named) break;
          if (a >= b) continue;
          const p = parts[pc.part]!;
          let start = pc.from + (a - at[q]!);
          let end = pc.from + (b - at[q]!);
          // A span that reaches where a piece was cut short of its token (a value longer than SEAM on one side) goes
          // on to the token's end: the rest of the value is the value's.
          if (q === pieces.length - 1 && end === pc.to) while (end < p.length && !isBlank(p.charCodeAt(end))) end++;
          if (q === 0 && start === pc.from) while (start > 0 && !isBlank(p.charCodeAt(start - 1))) start--;
          this.#addSeam(d, p, { kind: sp.kind, start, end });
        }
      }
      // Of those, the ones its piece read alone does not hold (what stands across the seam made them, not the piece's
      // cut): its part's.
      for (const q of new Set(before?.map(([, q]) => q))) {
        let alone: readonly Span[];
        this.scannedInSeams += texts[q]!.length;
        try {
          alone = unpack(SCANNERS[d](texts[q]!, this.#stop));
        } catch (err) {
          if (!(err instanceof DetectionStopped)) throw err;
          this.stopped = true;
          return false;
        }
        const pc = pieces[q]!;
        const p = parts[pc.part]!;
        for (const [sp, r] of before!) {
          if (r !== q) continue;
          const a = sp.start - at[q]!;
          const b = sp.end - at[q]!;
          if (alone.some((x) => x.start === a && x.end === b && x.kind === sp.kind)) continue;
          // (In the last piece, cut short of its token, it goes on to the token's end, as below.)
          let end = pc.from + b;
          if (q === pieces.length - 1 && end === pc.to) while (end < p.length && !isBlank(p.charCodeAt(end))) end++;
          this.#addSeam(d, p, { kind: sp.kind, start: pc.from + a, end });
        }
      }
    }
    return true;
  }

  #addSeam(d: Detector, s: string, sp: Span): void {
    const list = this.#seams[d].get(s);
    if (list === undefined) this.#seams[d].set(s, [sp]);
    else {
      // (One seam is read more than one way, side by side and one under the other: the same find comes once.)
      for (let k = list.length - 1; k >= 0 && k >= list.length - 4; k--) {
        const o = list[k]!;
        if (o.start === sp.start && o.end === sp.end && o.kind === sp.kind) return;
      }
      list.push(sp);
    }
  }

  /**
   * `parts` joined with newlines; the kinds of the joined text are those of
   * its parts, each part scanned once, and of what their seams hold. Runs
   * over three or more parts (#readSeams) form only among the first
   * `runParts` (a result's blocks): the many short strings of structured
   * data, read two by two, would otherwise cost a run each few cells.
   */
  join(parts: readonly string[], runParts = parts.length): string {
    return this.joinLazily(parts, runParts).text;
  }

  /**
   * join(), with the joined string made only when it is asked for: a policy
   * that reads `result.text` only through `secrets()` and `pii()` is
   * answered from the parts (kindsOf), and a large result's text (7 MiB of
   * blocks: some 40 ms to copy) is never made. The seams are read now.
   */
  joinLazily(parts: readonly string[], runParts = parts.length): JoinedText {
    if (parts.length > 1) {
      // An empty part shows nothing between its neighbours (an empty block, a picture's): they meet across it.
      let shown = parts;
      let shownRuns = runParts;
      if (parts.includes('')) {
        shown = parts.filter((p) => p.length > 0);
        shownRuns = 0;
        for (let k = 0; k < Math.min(runParts, parts.length); k++) if (parts[k]!.length > 0) shownRuns++;
      }
      if (shown.length > 1) this.#readSeams(shown, shownRuns);
    }
    return new JoinedText(parts, (joined) => this.#register(joined, parts));
  }

  /**
   * `strings` joined with newlines, to be one part of a joined text (a
   * result's many short strings, scanned at once). The strings of each of
   * `sideBySide` (places in `strings` of values shown one beside the other:
   * a resource link's name, title and description) are also read across
   * their seams for credentials, as consecutive parts are: what crosses one
   * is each string's (masking reads it there) and the joined string's, at
   * the strings' places in it (the rules read it there).
   */
  joinShown(strings: readonly string[], sideBySide: ReadonlyArray<readonly number[]>): string {
    const joined = strings.join('\n');
    const at: number[] = [];
    let o = 0;
    for (const s of strings) {
      at.push(o);
      o += s.length + 1;
    }
    // (Up to FEW; a text past them is read as one string, its every line break.)
    if (strings.length > 1 && this.#shown.length < FEW) this.#shown.push({ text: joined, apart: at.slice(1).map((a) => a - 1) });
    if (sideBySide.length === 0) return joined;
    let n = 0;
    for (const places of sideBySide) {
      for (let k = 0; k + 1 < places.length; k++) {
        // Under the decision's deadline: past it, the seams left are not read, and the rules' next scan asks the deadline
        // at once and stops the decision (a rule that cannot finish fails closed).
        if (this.stopped) return joined;
        if ((++n & 15) === 0 && this.#stop?.() === true) {
          this.#unasked = ASK_EVERY;
          return joined;
        }
        const i = places[k]!;
        const j = places[k + 1]!;
        this.seamBetween(strings[i]!, strings[j]!, { joined, left: at[i]!, right: at[j]! }, RUN_DETECTORS);
      }
    }
    return joined;
  }

  /**
   * Reads the seam between `left` and `right`, two strings shown one after
   * the other that are not consecutive parts of one joined text (a
   * result's last block and the first string of its `structuredContent`;
   * two values of a link): what crosses it is each one's, and, with
   * `into`, a joined string's that holds them at `into.left` and
   * `into.right`.
   */
  seamBetween(left: string, right: string, into?: { joined: string; left: number; right: number }, detectors: readonly Detector[] = DETECTORS): void {
    // One string twice: its spans are kept by its text, so a seam with itself would be read into both of its places.
    // (A seam no token crosses is read too, where what stands around it names a secret: a quoted value cut before a
    // mark, `"password": "lj8kczJ7-I!_rH` | `}(9vv[0}^)"}`, a name in one and its value in the other.)
    if (left === right) return;
    const before = detectors.map((d) => [this.#seams[d].get(left)?.length ?? 0, this.#seams[d].get(right)?.length ?? 0] as const);
    this.#readSeams([left, right], 0, detectors);
    if (into === undefined) return;
    detectors.forEach((d, k) => {
      const [l, r] = before[k]!;
      for (const sp of this.#seams[d].get(left)?.slice(l) ?? []) this.#addSeam(d, into.joined, { kind: sp.kind, start: into.left + sp.start, end: into.left + sp.end });
      for (const sp of this.#seams[d].get(right)?.slice(r) ?? []) this.#addSeam(d, into.joined, { kind: sp.kind, start: into.right + sp.start, end: into.right + sp.end });
    });
  }

  /**
   * Reads `value` (a result's structuredContent, a `_meta`, annotations) for credentials as the JSON it is sent as,
   * member names beside their values: a value a name or a pair names (`{"password": "..."}`, `{"name": "DB_PASSWORD",
   * "value": "..."}`, `{"secrets": ["..."]}`) is known only there, each string alone naming nothing. A find is each
   * string's it falls in (spans reads it there: masking and the rules' kinds). One more scan, of the value's text (a copy
   * as long as the request's part it came from), under the decision's deadline (past it, what is not known is withheld
   * whole).
   */
  readStructure(value: unknown, of?: JoinedText): void {
    if (this.stopped) return;
    const written = writeStructure(value, namesInStructure);
    if (written === undefined) return;
    let found: Found;
    try {
      this.#askBetweenScans(written.text.length);
      this.scannedInSeams += written.text.length;
      found = SCANNERS.secrets(written.text, this.#stop);
    } catch (err) {
      if (!(err instanceof DetectionStopped)) throw err;
      this.stopped = true;
      return;
    }
    const { starts, ends } = written;
    for (const sp of unpack(found)) {
      // The string the find starts in (the strings stand in order, apart). A find is a string's only where it lies
      // whole inside it: what a name or a pair names is a value, and a find across the JSON's own marks (`"uri":
      // "http://a.aa","name":"x@` read as a URL's user and password) is the writing's, none.
      let lo = 0;
      let hi = starts.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (ends[mid]! <= sp.start) lo = mid + 1;
        else hi = mid;
      }
      if (lo === starts.length || sp.start < starts[lo]! || sp.end > ends[lo]!) continue;
      const leaf = leafAt(written, lo);
      const [start, end] = rawStretch(leaf, sp.start - starts[lo]!, sp.end - starts[lo]!);
      this.#addSeam('secrets', leaf, { kind: sp.kind, start, end });
      // (The text it is read for holds the kind: its parts may hold the string only among others, joinShown's.)
      if (of !== undefined) {
        let kinds = this.#structureKinds.get(of.parts);
        if (kinds === undefined) this.#structureKinds.set(of.parts, (kinds = new Set()));
        kinds.add(sp.kind);
      }
    }
  }

  /** Whether `part` of a joined text is one joinShown made. */
  #isShown(part: string): boolean {
    return this.#shown.length > 0 && this.#shown.some((j) => j.text === part);
  }

  /** A joined text made: its kinds are those of its parts. */
  #register(joined: string, parts: readonly string[]): void {
    if (parts.length < 2) return;
    if (this.#joined === undefined && this.#joins.size === 0) {
      this.#joined = joined;
      this.#joinedParts = parts;
    } else {
      if (this.#joined !== undefined) this.#joins.set(this.#joined, this.#joinedParts!);
      this.#joined = undefined;
      this.#joins.set(joined, parts);
    }
  }

  /** The kinds of a joined text: those of its parts (and of what their seams hold), each part scanned once. */
  kindsOf(d: Detector, joined: JoinedText): string[] {
    const seen = new Set<string>();
    for (const part of joined.parts) addKinds(this.#found(d, part, d === 'secrets' && this.#isShown(part)), seen);
    if (d === 'secrets') for (const k of this.#structureKinds.get(joined.parts) ?? []) seen.add(k);
    return [...seen];
  }

  kinds(d: Detector, s: string): string[] {
    const parts = s === this.#joined ? this.#joinedParts : this.#joins.size === 0 ? undefined : this.#joins.get(s);
    const seen = new Set<string>();
    for (const part of parts ?? [s]) addKinds(this.#found(d, part, d === 'secrets' && parts !== undefined && this.#isShown(part)), seen);
    if (d === 'secrets' && parts !== undefined) for (const k of this.#structureKinds.get(parts) ?? []) seen.add(k);
    return [...seen];
  }
}

/** Parts read as one text (DetectionCache.joinLazily), joined with newlines when `text` is first read. */
export class JoinedText {
  #text: string | undefined;
  readonly #made: (joined: string) => void;

  constructor(
    readonly parts: readonly string[],
    made: (joined: string) => void,
  ) {
    this.#made = made;
  }

  get text(): string {
    if (this.#text === undefined) {
      this.#text = this.parts.length === 1 ? this.parts[0]! : this.parts.join('\n');
      this.#made(this.#text);
    }
    return this.#text;
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
  addKinds(SCANNERS[d](s, stop), seen);
  return [...seen];
}

/** detectKinds of a joined text: in a decision, from its parts, with no joined string made. */
export function detectKindsOfJoined(d: Detector, joined: JoinedText, stop?: () => boolean): string[] {
  if (current !== undefined) return current.kindsOf(d, joined);
  return detectKinds(d, joined.text, stop);
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
