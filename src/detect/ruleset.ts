/**
 * gitleaks' default rules (data/gitleaks, generated into
 * secret-rules.generated.ts) as a detector over any text, as gitleaks runs
 * them: a rule is tried only where one of its keywords occurs (gitleaks'
 * prefilter), its regex runs under re2js (RE2: linear time, the rule set's
 * own syntax), the secret is the first non-empty group that holds a run of
 * characters and is not itself repeated (or `secretGroup`; see secretGroupsOf),
 * a rule with `entropy` keeps only secrets above it (and a `generic` rule
 * only secrets holding a digit), a keyword-assignment rule only secrets not
 * written in words (an identifier of a program is no secret: chars.ts,
 * wordy; the project's own addition), and the rule's and the global allowlists
 * (regexes on the secret, the match or the line; stopwords) drop what they
 * name.
 *
 * Bounded work: a keyword-assignment rule is tried anchored where its
 * name's keyword is followed by an operator, a rule whose every match
 * starts with one of its keywords (`ghp_`, `glpat-`) anchored at each of
 * them (only its alternatives that start with the keywords there: regexAt),
 * every other keyword runs its rule on a window around it (merged
 * where windows meet), never on the whole text once per rule; each try asks re2js's DFA first and searches
 * with groups only where it matches; `stop` is asked between windows and
 * every 64 tries, so a caller with a deadline can end a scan a crafted
 * text would drag out. scanRulesetFully is gitleaks' own way, which the
 * tests hold this to.
 */
import { RE2JS, RE2Set } from 're2js';
import { wordlist as BIP39_ENGLISH } from '@scure/bip39/wordlists/english.js';
import { codeAt, hasDigit, isLower, isUpper, isWord, shannonEntropy, wordy, type Span } from './chars.js';

export { shannonEntropy } from './chars.js';
import { GITLEAKS_ALLOW, SECRET_RULES } from './secret-rules.generated.js';
import type { GitleaksAllow, GitleaksRule } from './rule-types.js';

export type { GitleaksAllow, GitleaksRule } from './rule-types.js';

/**
 * Characters of a window before a keyword: past a name of 50 characters
 * before a keyword-assignment rule's keyword, the assignment, and a secret's
 * part before a keyword inside it (an OpenAI key's `T3BlbkFJ` comes after
 * up to 85 characters of it).
 */
export const WINDOW_BEFORE = 256;
/** Characters of a window before a keyword its rule's regex starts with: the one a word boundary reads, and a few more. */
const REACH_AT_START = 8;
/** Characters of a window after a keyword: past every rule's assignment and secret but the unbounded ones' tails (a private key of 512 characters). */
const WINDOW_AFTER = 512;
/**
 * Longest piece a match that runs to its window's end is read on (findAt): a token of a rule with no end to it glued
 * to more (a Fly.io macaroon and a path after it), eight windows; a match longer still is taken as far as it was read.
 */
const MAX_READ_ON = 8 * WINDOW_AFTER;
/**
 * Longest stretch the windows of one rule merge into before it is read: a
 * text dense with a rule's keyword would otherwise be one window as long as
 * the text, read in one call that no deadline can stop (7 MiB of
 * `sourcegraph_token = "..."`: 1.3 s). The next stretch starts MERGED_OVERLAP
 * before the end of the one read, so that a match cut there is read whole.
 */
export const MAX_MERGED = 64 * 1024;
/** How far back the next stretch starts: the longest a window around one keyword reaches. */
export const MERGED_OVERLAP = WINDOW_BEFORE + WINDOW_AFTER;

/** Thrown when `stop` says the caller's time is spent: the scan did not finish, so its answer cannot be trusted. */
export class DetectionStopped extends Error {
  override readonly name = 'DetectionStopped';
  /** A rule it ends reads as the budget it ran out of (`evaluation budget exceeded`), as a comprehension stopped by it does. */
  readonly code = 'evaluation_budget_exceeded';
}

/** The kinds the rule set reports: gitleaks' rule ids. */
export const RULESET_KINDS: readonly string[] = SECRET_RULES.map((r) => r.id).filter((id) => id !== 'generic-api-key');

export interface CompiledAllow {
  and: boolean;
  target: 'secret' | 'match' | 'line';
  /** Each regex of the allowlist, as gitleaks lists them (the reference the tests compare `any` with). */
  regexes: RE2JS[];
  /** The regexes as one alternation, asked with one search and no groups: "does any match" in one pass, where a search per regex cost about half of every find on text crowded with finds. */
  any: RE2JS | undefined;
  /** The stopwords as one search of literals (V8: linear in the secret), or undefined without any. */
  stopwords: RegExp | undefined;
}

interface Compiled {
  rule: GitleaksRule;
  /** The rule's own regex, tried on windows (see regexOf). */
  re: RE2JS | undefined;
  /** A keyword-assignment rule's regex anchored at its name's keyword (see anchoredAtKeyword), tried at each of `named`. */
  anchored: RE2JS | undefined;
  allow: CompiledAllow[] | undefined;
  /**
   * The keywords that start the name of gitleaks' keyword-assignment shape
   * (`twitter` in `TWITTER_TOKEN = "..."`): followed, within a name's tail,
   * by an assignment operator. Empty for rules of other shapes, and for
   * keywords such a rule finds in the value (`nrak` in `NRAK-...`).
   */
  named: ReadonlySet<string>;
  /** Keywords the secret starts with, each with how many secret characters must follow it at least (see prefixKeywords). */
  prefixes: ReadonlyMap<string, number>;
  /** Keywords the regex itself starts with (see startKeywords): a window around one reaches only REACH_AT_START back. */
  starts: ReadonlySet<string>;
  /** Every match starts at one of `starts`, each starting with a word character: tried anchored at each (findAt), no window. */
  atStart: boolean;
  /** For an `atStart` rule of several start keywords, its regex with only the alternatives the keywords at a place start, by those keywords (see regexAt). */
  atKeywords: Map<string, RE2JS> | undefined;
  /** The regex starts with `\b`. */
  boundary: boolean;
  /**
   * A try anchored at one of `starts` reads what a search over a longer stretch reads from the same place: the regex
   * asserts nothing of what stands before a match (no `^`, `\A`, `\B`; a leading `\b` only where `boundary` has the
   * places read it: keywordHits). Where it does, a crowd of such places is asked first with one search (triedWhereMatching).
   */
  forward: boolean;
  /** The rule has gitleaks' keyword-assignment shape (`[\w.-]{0,50}?(?:keyword)... = value`): a value written in words under it is a name. */
  assignment: boolean;
  /** The groups that may hold the secret, first one matched wins (see secretGroupsOf); none: the whole match. */
  groups: readonly number[];
}

/**
 * The capturing groups of `rule` that may hold its secret, in order:
 * `secretGroup` where it is set; else each group that holds a run of
 * characters (a class, `\w`, `\d` or `.` with a quantifier) and is not
 * repeated itself. gitleaks takes the first non-empty group of any kind,
 * which is a name's word in `sonar[_.-]?(login|token)` (the token after it went
 * out: `sonar.login=<token>`) and one block of four characters of a
 * Teams webhook's id (`([a-z0-9]{4}-){3}`: the rest of the URL went out); a
 * rule with no such group masks its whole match.
 */
export function secretGroupsOf(rule: GitleaksRule): number[] {
  if (rule.secretGroup !== undefined && rule.secretGroup > 0) return [rule.secretGroup];
  const re = rule.regex;
  // Every group, capturing (n > 0) or not, with where its body starts and ends and whether it is repeated.
  const groups: Array<{ n: number; at: number; end: number; repeated: boolean }> = [];
  const open: number[] = [];
  let n = 0;
  let inClass = false;
  for (let i = 0; i < re.length; i++) {
    const c = re[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') {
      inClass = true;
      if (re[i + 1] === '^') i++;
      if (re[i + 1] === ']') i++;
    } else if (c === '(') {
      open.push(groups.length);
      groups.push({ n: re[i + 1] === '?' ? 0 : ++n, at: i + 1, end: -1, repeated: false });
    } else if (c === ')' && open.length > 0) {
      const g = groups[open.pop()!]!;
      g.end = i;
      g.repeated = QUANTIFIER.test(re[i + 1] ?? '');
    }
  }
  // A group inside a repeated one is repeated too (`(?:([a-z0-9]{4})-){3}`).
  const inRepeated = (g: { at: number; end: number }) => groups.some((o) => o.repeated && o.at <= g.at && g.end <= o.end);
  return groups.filter((g) => g.n > 0 && g.end >= 0 && !inRepeated(g) && RUN.test(re.slice(g.at, g.end))).map((g) => g.n);
}

/** What repeats the item before it. */
const QUANTIFIER = /^[*+?{]$/;
/** A run of characters in a regex: a class, `\w`-like escape or `.` with a quantifier. */
const RUN = /(?:\]|\\[wdsWDS]|\.)[*+{]/;

/** What every keyword-assignment rule's regex starts with: `(?i)`, then up to 50 name characters before its keyword. */
const NAME_PREFIX = String.raw`(?i)[\w.-]{0,50}?`;

/**
 * The same with the name and keyword in a case-insensitive group of their own and a case-sensitive name before it
 * (`[\w.-]{0,50}?(?i:[\w.-]{0,50}?(?:private[_-]?ai)...)`): tried at the keyword as `(?i:` and the rest.
 */
const NAME_PREFIX_GROUPED = String.raw`[\w.-]{0,50}?(?i:[\w.-]{0,50}?`;

/** What ends a name in gitleaks' keyword rules (its rest, then blanks or quotes), and their assignment operators, as their regexes spell them. */
const NAME_END = String.raw`(?:[ \t\w.-]{0,20})[\s'"]{0,3}`;
const OPERATOR = String.raw`(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`;
const ASSIGN_SHAPE = NAME_END + OPERATOR;
/** The grouped form closes its group before the operator. */
const ASSIGN_SHAPE_GROUPED = `${NAME_END})${OPERATOR}`;

/**
 * Rules left out, with why: `generic-api-key` (a name that says key,
 * token, secret... bound to a value of enough entropy) is what secrets.ts's
 * generic assignments find, in one pass over the text; under re2js the
 * rule costs about 0.4 s per MB wherever its common keywords ("key",
 * "token", "access") crowd a text.
 */
export const RULES_LEFT_OUT: ReadonlySet<string> = new Set(['generic-api-key']);

/** What may follow a name's keyword before the rest of its name pattern does: `linked` + `_in`, `sonar` + `_token`. */
const NAME_TAILS = ['', '_', '-', '.', 'in', '_in', '-in', 'key', '_key', 'api', '_api', 'token', '_token', 'login', '_login'];

/**
 * The keywords of a keyword-assignment rule that its name pattern matches
 * from their first character (alone, or followed by one of NAME_TAILS):
 * where one is found, the match's name starts there. A keyword of such a
 * rule that the name does not start (one found in the value) is tried in
 * windows like any other rule's.
 */
function namedKeywords(rule: GitleaksRule): Set<string> {
  const out = new Set<string>();
  const body = rule.regex.startsWith(NAME_PREFIX) ? rule.regex.slice(NAME_PREFIX.length) : rule.regex.startsWith(NAME_PREFIX_GROUPED) ? rule.regex.slice(NAME_PREFIX_GROUPED.length) : undefined;
  const shape = body?.indexOf(NAME_END) ?? -1;
  if (anchoredAtKeyword(rule.regex) === undefined || shape < 0) return out;
  const name = RE2JS.compile(`(?i)^(?:${body!.slice(0, shape)})$`);
  for (const k of rule.keywords) if (NAME_TAILS.some((t) => name.test(k + t))) out.add(k);
  return out;
}

/**
 * A keyword-assignment rule's regex without the name before its keyword,
 * anchored, to be tried where its keyword starts; undefined for a rule of
 * another shape. The name before the keyword is part of the match only:
 * the secret, its group and what must follow it are the same.
 */
function anchoredAtKeyword(regex: string): string | undefined {
  if (regex.startsWith(NAME_PREFIX) && regex.includes(ASSIGN_SHAPE)) return `(?i)^(?:${regex.slice(NAME_PREFIX.length)})`;
  if (regex.startsWith(NAME_PREFIX_GROUPED) && regex.includes(ASSIGN_SHAPE_GROUPED)) return `^(?:(?i:${regex.slice(NAME_PREFIX_GROUPED.length)})`;
  return undefined;
}

/**
 * The keywords of a rule that its regex writes as the start of the secret
 * itself (`ghp_[...]`, `SK[0-9a-f]{32}`, `s\.(?i:[...]{24})`), each place it
 * occurs followed by a class of secret characters only (isSecretChar),
 * with the fewest characters of that class a match holds there (its
 * quantifier's least count): where one is found, the secret goes on right
 * after it for at least that many characters, so a keyword followed by a
 * blank or punctuation ("ask.", "they "), or by fewer secret characters
 * ("class.v1" for `s.` and its 24), spares the regex. A keyword followed
 * by a class that holds a blank (`-----BEGIN[ A-Z...]`), by a class a
 * match may leave out (`[...]*`, `([...])?`) or by anything else is not one.
 */
function prefixKeywords(rule: GitleaksRule, starts: ReadonlySet<string>): Map<string, number> {
  const out = new Map<string, number>();
  // Only where every match starts with a keyword (startKeywords): a keyword followed by a blank then takes part in no match.
  if (starts.size === 0) return out;
  const begins = alternatives(rule.regex.replace(/^(?:\(\?i\)|\\b|\((?:\?:)?)*/, ''));
  for (const k of rule.keywords) {
    const after = `(?:${literal(k)})((?:\\(\\?i\\)|\\(\\?i:|\\((?:\\?:)?)*)(\\[(?:\\\\.|[^\\]\\\\])+\\]|\\\\[wd])?(\\{(\\d+)(?:,\\d*)?\\}|[+*?])?(\\)[?*{]?)?`;
    // Every match starts with a keyword: what a start keyword is followed by where a match starts with it is all that
    // counts (jwt's `ey` is followed by 17 letters or digits there, and by a class with `/` later in the match).
    const places = starts.has(k)
      ? begins.map((a) => new RegExp(`^${after}`, 'i').exec(a)).filter((m): m is RegExpExecArray => m !== null)
      : [...rule.regex.matchAll(new RegExp(after, 'gi'))];
    let least = Infinity;
    for (const m of places) {
      if (m[2] === undefined || !onlySecretChars(m[2])) {
        least = -1;
        break;
      }
      // The class's own quantifier (none: one character); a group closed right after it with a quantifier of its own
      // (`(...)?`, `(...){2}`) counts as one a match may leave out.
      const q = m[3];
      const count = m[5] !== undefined && m[5].length > 1 ? 0 : q === undefined || q === '+' ? 1 : q === '*' || q === '?' ? 0 : Number(m[4]);
      least = Math.min(least, count);
    }
    if (places.length > 0 && least >= 1) out.set(k, least);
  }
  return out;
}

/** Whether the `n` characters from `p` are all secret characters (isSecretChar). */
function secretRun(s: string, p: number, n: number): boolean {
  if (p + n > s.length) return false;
  for (let i = p; i < p + n; i++) if (!isSecretChar(s.charCodeAt(i))) return false;
  return true;
}

/** A keyword written as the regex wants it: letters and digits as they are, any other character escaped or not. */
function literal(k: string): string {
  return [...k].map((c) => (/[a-z0-9]/i.test(c) ? c : `\\\\?\\${c}`)).join('');
}

/**
 * The keywords a rule's regex starts with, after `(?i)`, `\b` and opening
 * groups (`\b(ey[...]`, `glpat-[...]`): a match that holds such a keyword
 * there starts at it, so its window needs only the character before it
 * (a word boundary) rather than WINDOW_BEFORE.
 */
function startKeywords(rule: GitleaksRule): Set<string> {
  // (Each alternative of the regex's own level, and within one that opens with a group, that group's: `\b(?:a|b)x|\bc`
  // starts with `a`, `b` or `c`.)
  const starts = ownAlternatives(rule.regex.replace(/^\(\?i\)/, '')).flatMap(firstsOf);
  // A rule with an alternative that starts with none of its keywords (sourcegraph's `...|[a-fA-F0-9]{40}`) matches
  // wherever its keyword is anywhere near, as gitleaks runs it: no keyword of it starts every match.
  if (!starts.every((a) => rule.keywords.some((k) => startsWithKeyword(a, k)))) return new Set();
  return new Set(rule.keywords.filter((k) => starts.some((a) => startsWithKeyword(a, k))));
}

/** Where a match of one of a regex's own alternatives may start: past what it opens with, and within a group it opens with, each of that group's alternatives. */
function firstsOf(a: string): string[] {
  const lead = LEAD.exec(a)![0];
  const rest = a.slice(lead.length);
  return lead.includes('(') ? alternatives(rest) : [rest];
}

/** Whether the regex text `a` starts with keyword `k` written as the regex writes it (literal), in either case. */
function startsWithKeyword(a: string, k: string): boolean {
  return new RegExp(`^${literal(k)}`, 'i').test(a);
}

/** What a regex's alternative opens with before its first character: `(?i)`, `\b`, opening groups (`(?i:` among them). */
const LEAD = /^(?:\(\?i\)|\\b|\((?:\?i?:)?)*/;
/** The same with `\B` among it. */
const LEAD_ASSERTING = /^(?:\(\?i\)|\\[bB]|\((?:\?:)?)*/;

/** The alternatives of `re`'s own level, each its own text alone (`a|b(c|d)` is `a` and `b(c|d)`). */
function ownAlternatives(re: string): string[] {
  const all = alternatives(re);
  return all.map((a, i) => (i + 1 < all.length ? a.slice(0, a.length - all[i + 1]!.length - 1) : a));
}

/** `rest` and what follows each `|` of its own level, up to the `)` that closes it: where a match of it may start. */
function alternatives(rest: string): string[] {
  const out = [rest];
  let depth = 0;
  for (let i = 0; i < rest.length; i++) {
    const c = rest[i];
    if (c === '\\') i++;
    else if (c === '[') {
      for (i++; i < rest.length && rest[i] !== ']'; i++) if (rest[i] === '\\') i++;
    } else if (c === '(') depth++;
    else if (c === ')') {
      if (depth-- === 0) break;
    } else if (c === '|' && depth === 0) out.push(rest.slice(i + 1));
  }
  return out;
}

/** Whether a class (`[a-f0-9]`, `\w`) matches no ASCII character but secret characters. */
function onlySecretChars(cls: string): boolean {
  const re = RE2JS.compile(`(?i)^${cls}`);
  for (let c = 0; c < 128; c++) if (!isSecretChar(c) && re.test(String.fromCharCode(c))) return false;
  return true;
}

const RULES: Compiled[] = SECRET_RULES.filter((rule) => !RULES_LEFT_OUT.has(rule.id)).map((rule) => {
  const named = namedKeywords(rule);
  const starts = startKeywords(rule);
  const prefixes = prefixKeywords(rule, starts);
  for (const k of named) prefixes.delete(k);
  // What each alternative opens with before its first character (`(?i)`, `\b`, `\B`, `(`, `(?:`): what a match's start
  // may assert.
  const leads = ownAlternatives(rule.regex.replace(/^\(\?i\)/, '')).map((a) => LEAD_ASSERTING.exec(a)![0]);
  // The `\b` among what startKeywords passes over before a keyword, every alternative's: one without it matches where a
  // word goes on before the keyword.
  const boundary = leads.every((l) => l.includes('\\b'));
  // A `\b` before a keyword that starts with no word character holds on a character before it, which findAt does not
  // read: such a rule keeps its windows.
  const atStart = named.size === 0 && starts.size > 0 && [...starts].every((k) => isWord(k.charCodeAt(0)));
  const assignment = anchoredAtKeyword(rule.regex) !== undefined;
  // (A line's or the text's start anywhere, `\B` or `\b` where an alternative opens.)
  const forward = !/\^|\\A/.test(rule.regex.replace(/\[(?:\\.|[^\]\\])*\]/g, '')) && !leads.some((l) => l.includes('\\B')) && (boundary || !leads.some((l) => l.includes('\\b')));
  return { rule, re: undefined, anchored: undefined, allow: undefined, named, prefixes, starts, atStart, atKeywords: undefined, boundary, forward, assignment, groups: secretGroupsOf(rule) };
});

/** What may follow a prefix keyword in a secret: letters, digits, `_ - . + / = ~`. */
function isSecretChar(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45 || c === 46 || c === 43 || c === 47 || c === 61 || c === 126;
}

/** `[ \t\w.-]`: the rest of a name after its keyword. */
function isNameTail(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 46 || c === 45 || c === 32 || c === 9;
}

/** `[\s'"]` (RE2's `\s`: tab, line feed, form feed, carriage return, space): what may stand between a name and its operator. */
function isNameEnd(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 12 || c === 13 || c === 34 || c === 39;
}

/** Most characters of a name after its keyword that the name's pattern itself reads (`_login` after `sonar`), before the 20 of its rest. */
const KEYWORD_TAIL = Math.max(...NAME_TAILS.map((t) => t.length));

/**
 * Whether an assignment operator follows the keyword ending at `at` as
 * such a rule's regex allows it: at most KEYWORD_TAIL characters of the
 * name the keyword starts and 20 of the name's rest, at most 3 blanks or
 * quotes, then `=`, `>`, `:`, `|`, `,` or `?`. A cheap
 * test that spares the regex every keyword in prose ("access", "token")
 * that assigns nothing, and every one inside a value.
 */
function operatorFollows(s: string, at: number): boolean {
  let i = at;
  const n = s.length;
  for (const stop = Math.min(n, at + KEYWORD_TAIL + 20); i < stop && isNameTail(s.charCodeAt(i)); i++);
  for (const stop = Math.min(n, i + 3); i < stop && isNameEnd(s.charCodeAt(i)); i++);
  const c = i < n ? s.charCodeAt(i) : -1;
  return c === 61 || c === 62 || c === 58 || c === 124 || c === 44 || c === 63;
}

function escapeLiteral(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/**
 * Allowlist regexes of gitleaks' default set read as they are meant, where RE2 reads them otherwise:
 * `(?i)^true|false|null$` is `^true`, `false` anywhere or `null$` as written, so a secret that holds `false` anywhere
 * (`glpat-Ab3dEfalse9kLm2nOp5q`, about one random base62 token of 20 characters in two million) or starts with
 * `true` would be let through; it is meant for a secret that is one of the three words.
 */
const ALLOW_AS_MEANT: Readonly<Record<string, string>> = { '(?i)^true|false|null$': '(?i)^(?:true|false|null)$' };

export function compileAllow(a: GitleaksAllow): CompiledAllow {
  const target = a.target === 'match' || a.target === 'line' ? a.target : 'secret';
  const words = a.stopwords ?? [];
  const stopwords = words.length === 0 ? undefined : new RegExp([...words].sort((x, y) => y.length - x.length).map(escapeLiteral).join('|'));
  const regexes = (a.regexes ?? []).map((r) => ALLOW_AS_MEANT[r] ?? r);
  // Each in a group of its own, so that a flag it sets (`(?i)` part-way, as `^/Users/(?i)...`) and its `|` stay its own.
  const any = regexes.length === 0 ? undefined : RE2JS.compile(regexes.map((r) => `(?:${r})`).join('|'));
  return { and: a.and === true, target, regexes: regexes.map((r) => RE2JS.compile(r)), any, stopwords };
}

const GLOBAL_ALLOW: CompiledAllow | undefined = GITLEAKS_ALLOW === undefined ? undefined : compileAllow(GITLEAKS_ALLOW);

/**
 * How 145 of gitleaks' rules end a token: a quote, a backtick, a blank, `;`,
 * an escaped line break, or the end of the text. In prose, markup and URLs a
 * token ends as often at `.`, `,`, `:`, `!`, `?`, a bracket, `<`, `>`, `*`,
 * `|`, `&`, `#` or `/` (`your token is hf_....`, `(hf_...)`,
 * `<b>hf_...</b>`, `?token=hf_...&x=1`, `/hooks/hf_.../status`), where those
 * rules found nothing. Each of those ends a token here too; the characters
 * a token may go on with (letters, digits, `_ - + =`, and `/` where the
 * rule's token takes it) still do not: a token whose class holds `/` goes
 * on through it, and one whose class does not ends before it anyway.
 */
/** What ends a token in gitleaks' rules (a backtick, a quote, a blank, `;`), as a character class. */
export const TOKEN_END_CHARS = "[\\x60'\"\\s;]";
const TOKEN_END = `(?:${TOKEN_END_CHARS}|\\\\[nr]|$)`;
const TOKEN_END_WIDE = "(?:[\\x60'\"\\s;,.:!?()\\[\\]{}<>*|&#/]|\\\\[nr]|$)";

/** What a token may stand after or before in prose, markup and URL paths, added to a rule's own `(?:^|[...])` and `(?:$|[...])` (Azure's client secret). */
const STARTS_AFTER = '\\[{*|<#&?/';
const ENDS_BEFORE = '.:!?\\]}>*|&#/';

/** A rule's regex with TOKEN_END widened, and its own class of what a token stands after or before widened likewise. */
export function widenedRegex(regex: string): string {
  let r = regex.endsWith(TOKEN_END) ? regex.slice(0, -TOKEN_END.length) + TOKEN_END_WIDE : regex;
  if (r.startsWith('(?:^|[') && r.indexOf('])') > 0) r = `(?:^|[${STARTS_AFTER}${r.slice(6)}`;
  if (r.endsWith('])') && r.lastIndexOf('(?:$|[') > 0) r = `${r.slice(0, -2)}${ENDS_BEFORE}])`;
  return r;
}

/** A rule's regex and allowlists, compiled on first use (most rules never meet their keywords). */
function regexOf(c: Compiled): RE2JS {
  if (c.re === undefined) {
    c.re = RE2JS.compile(widenedRegex(c.rule.regex));
    c.allow ??= (c.rule.allow ?? []).map(compileAllow);
  }
  return c.re;
}

/**
 * The regex of an `atStart` rule for a try at `p`: its alternatives that start with a keyword standing at `p` (one or
 * more: `7z` and `7za`), each other left as a class no character is in followed by its groups, empty (so every group
 * keeps its number), compiled on first use per set of keywords. A try at one command's keyword otherwise runs every
 * command's alternative, with their groups: the client-flag rule's eighteen commands and nine groups cost 47 µs a find
 * where its one command's alternative costs 4 µs. A rule of one start keyword, or none found at `p`, keeps `re`.
 */
function regexAt(c: Compiled, re: RE2JS, s: string, p: number): RE2JS {
  if (c.starts.size < 2) return re;
  let key = '';
  for (const k of c.starts) if (startsAt(s, p, k)) key += key === '' ? k : `\n${k}`;
  if (key === '') return re;
  c.atKeywords ??= new Map();
  let at = c.atKeywords.get(key);
  if (at === undefined) {
    const found = key.split('\n');
    const widened = widenedRegex(c.rule.regex);
    const flag = widened.startsWith('(?i)') ? '(?i)' : '';
    const own = ownAlternatives(widened.slice(flag.length));
    const kept = own.map((a) => firstsOf(a).some((f) => found.some((k) => startsWithKeyword(f, k))));
    // (An alternative is a whole regex of its own: re2js counts its groups as it numbers them in the rule's.)
    at = kept.every(Boolean) ? re : RE2JS.compile(flag + own.map((a, i) => (kept[i] ? a : `[^\\x00-\\x{10FFFF}]${'()'.repeat(RE2JS.compile(a).groupCount())}`)).join('|'));
    c.atKeywords.set(key, at);
  }
  return at;
}

/** Whether keyword `k` (lower case) stands at `p` in `s`, letters of either case. */
function startsAt(s: string, p: number, k: string): boolean {
  if (p + k.length > s.length) return false;
  for (let i = 0; i < k.length; i++) {
    let c = s.charCodeAt(p + i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== k.charCodeAt(i)) return false;
  }
  return true;
}

/** A keyword-assignment rule's regex without the name before its keyword, anchored (see anchoredAtKeyword), compiled on first use. */
function anchoredOf(c: Compiled): RE2JS {
  if (c.anchored === undefined) {
    c.anchored = RE2JS.compile(anchoredAtKeyword(widenedRegex(c.rule.regex))!);
    c.allow ??= (c.rule.allow ?? []).map(compileAllow);
  }
  return c.anchored;
}

/** Every keyword, and the rules each one starts. */
const BY_KEYWORD = new Map<string, number[]>();
RULES.forEach((c, i) => {
  for (const k of c.rule.keywords) {
    const list = BY_KEYWORD.get(k);
    if (list === undefined) BY_KEYWORD.set(k, [i]);
    else if (!list.includes(i)) list.push(i);
  }
});
const KEYWORDS = [...BY_KEYWORD.keys()];

/**
 * All keywords found in one pass (Aho-Corasick over ASCII, letters folded
 * to lower case, as gitleaks finds its keywords): a table of transitions
 * per state, so each character of the text costs one lookup, and every
 * keyword ending at a place (nested ones included) is known there.
 */
class KeywordAutomaton {
  readonly #delta: Int32Array;
  /** Per state, the keywords (by index) that end in it. */
  readonly #out: Array<readonly number[]>;
  /** Per state, 1 where a keyword ends in it. */
  readonly #ends: Uint8Array;

  constructor(words: readonly string[]) {
    const next: Array<Map<number, number>> = [new Map()];
    const out: number[][] = [[]];
    words.forEach((w, wi) => {
      let st = 0;
      for (let i = 0; i < w.length; i++) {
        const c = w.charCodeAt(i);
        if (c >= 128) throw new Error(`keyword ${w} is not ASCII`);
        let to = next[st]!.get(c);
        if (to === undefined) {
          to = next.length;
          next.push(new Map());
          out.push([]);
          next[st]!.set(c, to);
        }
        st = to;
      }
      out[st]!.push(wi);
    });
    const n = next.length;
    const delta = new Int32Array(n * 128);
    const fail = new Int32Array(n);
    const queue: number[] = [];
    for (let c = 0; c < 128; c++) {
      const to = next[0]!.get(c) ?? 0;
      delta[c] = to;
      if (to !== 0) queue.push(to);
    }
    for (let qi = 0; qi < queue.length; qi++) {
      const st = queue[qi]!;
      out[st] = out[st]!.concat(out[fail[st]!]!);
      for (let c = 0; c < 128; c++) {
        const to = next[st]!.get(c);
        if (to === undefined) delta[st * 128 + c] = delta[fail[st]! * 128 + c]!;
        else {
          fail[to] = delta[fail[st]! * 128 + c]!;
          delta[st * 128 + c] = to;
          queue.push(to);
        }
      }
    }
    for (let i = 0; i < delta.length; i++) delta[i] = delta[i]! * 128;
    this.#delta = delta;
    this.#out = out;
    this.#ends = Uint8Array.from(out, (words) => (words.length > 0 ? 1 : 0));
  }

  /**
   * Calls `found(keyword index, start)` for every keyword in `s`, letters of either case; `stop` is asked every
   * AUTOMATON_STRETCH characters.
   * @throws DetectionStopped
   */
  scan(s: string, found: (word: number, start: number) => void, stop?: () => boolean): void {
    const delta = this.#delta;
    const ends = this.#ends;
    // `at` is a state's row in the table (the state times 128): one lookup per character, no multiplication.
    let at = 0;
    for (let i0 = 0; i0 < s.length; i0 += AUTOMATON_STRETCH) {
      if (i0 > 0 && stop?.()) throw ranOut();
      const i1 = Math.min(s.length, i0 + AUTOMATON_STRETCH);
      for (let i = i0; i < i1; i++) {
        let c = s.charCodeAt(i);
        if (c >= 128) {
          at = 0;
          continue;
        }
        if (c >= 65 && c <= 90) c += 32;
        at = delta[at + c]!;
        if (ends[at >> 7] === 0) continue;
        const words = this.#out[at >> 7]!;
        for (let k = 0; k < words.length; k++) found(words[k]!, i + 1 - KEYWORDS[words[k]!]!.length);
      }
    }
  }
}

/** Characters the keyword automaton reads between two asks of the deadline. */
const AUTOMATON_STRETCH = 65536;
const AUTOMATON = new KeywordAutomaton(KEYWORDS);

/** The most characters of a line an allowlist reads on each side of a match (a text may be one long line). */
const LINE_REACH = 256;

function lineAround(s: string, start: number, end: number): string {
  let a = start;
  while (a > 0 && start - a < LINE_REACH && s.charCodeAt(a - 1) !== 10) a--;
  let b = end;
  while (b < s.length && b - end < LINE_REACH && s.charCodeAt(b) !== 10) b++;
  return s.slice(a, b);
}

function allowed(a: CompiledAllow, secret: string, match: string, line: () => string): boolean {
  const checks: boolean[] = [];
  if (a.any !== undefined) {
    const target = a.target === 'match' ? match : a.target === 'line' ? line() : secret;
    checks.push(a.any.test(target));
  }
  if (a.stopwords !== undefined) checks.push(a.stopwords.test(secret.toLowerCase()));
  return a.and ? checks.length > 0 && checks.every(Boolean) : checks.some(Boolean);
}

/**
 * Where a rule's keywords occur: the places it is tried anchored (a name's
 * keyword), and the keywords it is tried in windows around, each as
 * `2 * place + 1` when its window reaches WINDOW_BEFORE back and
 * `2 * place` when REACH_AT_START (a keyword the regex starts with).
 */
interface Hits {
  tries: number[];
  windows: number[];
  /** Where a keyword every match of the rule starts with occurs (a rule whose alternatives all start with one): tried anchored there. */
  starts: number[];
}

/** Where each keyword occurs in `s`, by the rules it starts. */
function keywordHits(s: string, stop?: () => boolean): Map<number, Hits> {
  const hits = new Map<number, Hits>();
  AUTOMATON.scan(s, (w, at) => {
    const k = KEYWORDS[w]!;
    for (const r of BY_KEYWORD.get(k)!) {
      const c = RULES[r]!;
      const named = c.named.has(k);
      if (named && !operatorFollows(s, at + k.length)) continue;
      const least = c.prefixes.get(k);
      if (least !== undefined && !secretRun(s, at + k.length, least)) continue;
      // A rule whose every match starts with one of its keywords is tried at each of them, and only there: another of
      // its keywords (one inside the value) starts no match.
      const atStart = !named && c.atStart;
      if (atStart && !c.starts.has(k)) continue;
      // A `\b` the regex starts with, read where the match starts (the try reads from there on).
      if (atStart && c.boundary && isWord(codeAt(s, at - 1)) === isWord(codeAt(s, at))) continue;
      let h = hits.get(r);
      if (h === undefined) hits.set(r, (h = { tries: [], windows: [], starts: [] }));
      const entry = named || atStart ? at : 2 * at + (c.starts.has(k) ? 0 : 1);
      const list = named ? h.tries : atStart ? h.starts : h.windows;
      if (list[list.length - 1] !== entry) list.push(entry);
    }
  }, stop);
  return hits;
}

/**
 * The secrets gitleaks' rules find in `s`, left to right, each with its
 * rule's id as kind (overlapping finds: the first, longest kept).
 * @throws DetectionStopped when `stop` says so (between stretches of the keyword search, between windows).
 */
export function scanRuleset(s: string, stop?: () => boolean, maxMerged = MAX_MERGED): Span[] {
  const hits = keywordHits(s, stop);
  if (hits.size === 0) return [];
  const out: Span[] = [];
  for (const [ri, { tries, windows: positions, starts }] of hits) {
    const c = RULES[ri]!;
    if (starts.length > 0) {
      // Each match starts at one of these keywords: tried anchored at each, on the DFA first, then with its groups on
      // the match alone (no search over a window, which costs some 5 µs a find in re2js).
      // A keyword inside the rule's last match starts none (a matcher goes on from a match's end, whether or not
      // entropy or an allowlist then drops it): `Basic <base64>/Authorization: ...` is one match.
      const re = regexOf(c);
      let matchEnd = 0;
      starts.sort((a, b) => a - b);
      triedWhereMatching(c.forward ? re : undefined, s, starts, stop, (p) => {
        if (p >= matchEnd) matchEnd = Math.max(matchEnd, findAt(c, regexAt(c, re, s, p), s, p, out));
      });
    }
    if (tries.length > 0) {
      // The keyword-assignment rules start their match at most 50 name characters before the keyword and their secret
      // a few characters after it: tried anchored at each keyword, each try costs what the match itself holds.
      const re = anchoredOf(c);
      triedWhereMatching(undefined, s, tries, stop, (p) => findAt(c, re, s, p, out));
    }
    if (positions.length === 0) continue;
    // Keywords inside a longer one are reported with it, ahead of later finds.
    positions.sort((a, b) => a - b);
    const re = regexOf(c);
    let w0 = -1;
    let w1 = -1;
    const flush = () => {
      if (w0 < 0) return;
      if (stop?.()) throw ranOut();
      findIn(c, re, s, w0, w1, out);
    };
    for (const e of positions) {
      const p = Math.floor(e / 2);
      const a = Math.max(0, p - (e % 2 === 1 ? WINDOW_BEFORE : REACH_AT_START));
      const b = Math.min(s.length, p + WINDOW_AFTER);
      if (w0 >= 0 && a <= w1 && Math.max(w1, b) - Math.min(w0, a) <= maxMerged) {
        // A window that reaches further back than the one before it widens the merged window that way too.
        w0 = Math.min(w0, a);
        w1 = Math.max(w1, b);
      } else if (w0 >= 0 && a <= w1) {
        // Merged as long as it may be: read, and the next starts far enough back to read whole a match cut at its end.
        flush();
        w0 = Math.max(0, Math.min(a, w1 - MERGED_OVERLAP));
        w1 = b;
      } else {
        flush();
        w0 = a;
        w1 = b;
      }
    }
    flush();
  }
  return keepFirst(out);
}

/** The error a scan throws where `stop` says the decision's time is spent. */
function ranOut(): DetectionStopped {
  return new DetectionStopped('the time for this decision ran out inside the secret rules');
}

/** Fewest places within WINDOW_AFTER of each other that one search asks first (triedWhereMatching). */
const CROWD = 8;

/**
 * `tryAt` each of `places` (ascending) in turn, a try anchored there that reads WINDOW_AFTER characters at most. Where
 * CROWD or more stand each within WINDOW_AFTER of the next, `re` (a rule's regex whose tries read what a longer
 * stretch reads from the same place, Compiled.forward) is asked first whether it matches anywhere in the stretch they
 * reach, on re2js's DFA: where it does not, no try there can (each reads a piece of that stretch from its start, and a
 * match its piece's end alone allows is dropped, take); where it does, each half is asked so in turn. A text crowded
 * with one keyword and no match (`curl curl curl ...`: some 2 µs a try) costs one search of its length; one match
 * among them, a search of each half down to the crowd that holds it. Without `re`, every place is tried.
 */
function triedWhereMatching(re: RE2JS | undefined, s: string, places: readonly number[], stop: (() => boolean) | undefined, tryAt: (p: number) => void): void {
  let n = 0;
  const each = (i: number, j: number) => {
    for (let k = i; k < j; k++) {
      if ((++n & 63) === 0 && stop?.()) throw ranOut();
      tryAt(places[k]!);
    }
  };
  const crowd = (i: number, j: number): void => {
    if (re === undefined || j - i < CROWD) return each(i, j);
    if (stop?.()) throw ranOut();
    if (!re.test(s.slice(places[i]!, Math.min(s.length, places[j - 1]! + WINDOW_AFTER)))) return;
    const mid = (i + j) >>> 1;
    crowd(i, mid);
    crowd(mid, j);
  };
  // (A crowd ends where the next place stands past the last one's window, or past MAX_MERGED from its first.)
  let i = 0;
  for (let k = 1; k <= places.length; k++) {
    if (k < places.length && places[k]! - places[k - 1]! <= WINDOW_AFTER && places[k]! - places[i]! <= MAX_MERGED) continue;
    crowd(i, k);
    i = k;
  }
}

/** Each rule's place in the rule set: of two rules finding the same span, the first names it. */
const ORDER = new Map(RULES.map((c, i) => [c.rule.id, i]));

/** Overlapping finds: the first, longest kept (of the same span, the first rule's). */
function keepFirst(out: Span[]): Span[] {
  if (out.length < 2) return out;
  out.sort((x, y) => x.start - y.start || y.end - x.end || ORDER.get(x.kind)! - ORDER.get(y.kind)!);
  // Sorted: each kept span is compared with the last one kept only.
  const kept: Span[] = [out[0]!];
  for (let i = 1; i < out.length; i++) if (out[i]!.start >= kept[kept.length - 1]!.end) kept.push(out[i]!);
  return kept;
}

/**
 * Each rule whose keyword occurs in `s` searched over the whole of it as
 * one window, its matches' groups read as scanRuleset reads them
 * (groupsAt): the tests hold it equal to scanRulesetFully, which reads
 * them with re2js's matcher.
 */
export function scanRulesetOneWindow(s: string): Span[] {
  const out: Span[] = [];
  const lower = s.toLowerCase();
  for (const c of RULES) if (c.rule.keywords.some((k) => lower.includes(k))) findIn(c, regexOf(c), s, 0, s.length, out);
  return keepFirst(out);
}

/**
 * The rules as gitleaks runs them, with none of the work saved above: each
 * rule whose keyword occurs anywhere in `s` (letters of either case) runs
 * its own regex over the whole of `s`. What scanRuleset finds, the slow
 * way, wherever every match lies within the windows around its rule's
 * keywords (a text no longer than WINDOW_BEFORE); the tests hold the two
 * equal.
 */
export function scanRulesetFully(s: string): Span[] {
  const out: Span[] = [];
  const lower = s.toLowerCase();
  for (const c of RULES) {
    if (!c.rule.keywords.some((k) => lower.includes(k))) continue;
    // re2js's own matcher, each match's groups as it reads them: none of findIn's shortcuts.
    const m = regexOf(c).matcher(s);
    const groups: number[] = [];
    for (let found = m.find(); found; ) {
      groups.length = 0;
      for (let i = 0; i <= m.groupCount(); i++) groups.push(m.start(i), m.end(i));
      const resume = take(c, s, 0, false, groups, out);
      found = resume === undefined ? m.find() : m.find(Math.max(resume, groups[0]! + 1));
    }
  }
  return keepFirst(out);
}

function findIn(c: Compiled, re: RE2JS, s: string, w0: number, w1: number, out: Span[]): void {
  const sub = s.slice(w0, w1);
  const cut = w1 < s.length;
  // Whether the rule matches at all in the window, on the DFA; the search with groups runs only where it does.
  if (!re.test(sub)) return;
  // Each match's bounds by a search that tracks no group (what a matcher does), then its groups (groupsAt).
  const r2 = re.re2();
  const n = 1 + re.groupCount();
  for (let pos = 0; pos <= sub.length; ) {
    const [found, bounds] = r2.matchWithGroup(sub, pos, sub.length, RE2Set.UNANCHORED, 1) as [boolean, number[] | null];
    if (!found || bounds === null) return;
    const b0 = bounds[0]!;
    const b1 = bounds[1]!;
    // (One that runs to the window's end may go on past it: read from its start as a try is, on longer pieces.)
    if (cut && b1 === sub.length) {
      findAt(c, re, s, w0 + b0, out);
      return;
    }
    const groups = groupsAt(r2, n, sub, b0, b1);
    const resume = groups !== undefined ? take(c, sub, w0, cut, groups, out) : undefined;
    // An empty match moves on by one character, as a matcher does (and a word list's rule from where take says).
    pos = resume !== undefined ? Math.max(resume, b0 + 1) : b1 > b0 ? b1 : b1 + 1;
  }
}

/** Characters after a match read with it for its groups: what an assertion after it (`\b`, a class of terminators) reads. */
const GROUP_CONTEXT = 32;

/**
 * The groups of the match [b0, b1) of `sub` (group 0 first), as a
 * matcher reads them: a search with groups from b0. It is read on the
 * match with one character before it and GROUP_CONTEXT after it, where
 * re2js runs its backtracker; a search with groups over the rest of a
 * window runs its NFA there, some 2 µs a find on a text of finds. The two
 * agree wherever the short text's match ends where the search's did: a
 * reading of the match alone differs only through the short text's end
 * (a `$` there), which ends it elsewhere; then the search over the rest is
 * read.
 */
function groupsAt(r2: ReturnType<RE2JS['re2']>, n: number, sub: string, b0: number, b1: number): number[] | undefined {
  const from = b0 > 0 ? b0 - 1 : 0;
  const to = Math.min(sub.length, b1 + GROUP_CONTEXT);
  if (from > 0 || to < sub.length) {
    const piece = sub.slice(from, to);
    const [ok, g] = r2.matchWithGroup(piece, b0 - from, piece.length, RE2Set.UNANCHORED, n) as [boolean, number[] | null];
    if (ok && g !== null && g[0] === b0 - from && g[1] === b1 - from) return g.map((x) => (x < 0 ? x : x + from));
  }
  const [ok, g] = r2.matchWithGroup(sub, b0, sub.length, RE2Set.UNANCHORED, n) as [boolean, number[] | null];
  return ok && g !== null ? g : undefined;
}

/**
 * The match of rule `c` that starts at `p`, if any: read from `p` to
 * WINDOW_AFTER after it, anchored there (a `\b` the regex starts with was
 * read by the caller, in the whole text). Returns where the match ends
 * (whether or not its secret is kept), or -1 without one.
 */
function findAt(c: Compiled, re: RE2JS, s: string, p: number, out: Span[]): number {
  // A try is anchored: whether it matches, on re2js's DFA (no groups, several times cheaper than the search with
  // groups, and it stops where the match can no longer go on, not at the piece's end); where it does, its one match
  // (`^` holds only at the piece's start) is read with its groups in one more call, no matcher built. A match that
  // runs to the piece's end (a token the regex gives no end, glued to more: a Fly.io macaroon and a path after it) is
  // read again on twice the piece, up to MAX_READ_ON, where what it holds is taken as far as it was read.
  const r2 = re.re2();
  for (let reach = WINDOW_AFTER; ; reach *= 2) {
    const w1 = Math.min(s.length, p + reach);
    const sub = s.slice(p, w1);
    if (r2.matchWithGroup(sub, 0, sub.length, RE2Set.ANCHOR_START, 0)[0] !== true) return -1;
    const [ok, groups] = r2.matchWithGroup(sub, 0, sub.length, RE2Set.ANCHOR_START, 1 + re.groupCount()) as [boolean, number[] | null];
    if (!ok || groups === null) return -1;
    const cut = w1 < s.length;
    if (cut && groups[1] === sub.length && reach < MAX_READ_ON) continue;
    return p + (take(c, sub, p, cut && reach < MAX_READ_ON, groups, out) ?? groups[1]!);
  }
}

/** BIP-39's English words (@scure/bip39's list), as a set on first use. */
let bip39: ReadonlySet<string> | undefined;

/** The fewest words of a recovery phrase: BIP-39's shortest. */
const MIN_LISTED = 12;

/**
 * Where the run of words on BIP-39's English list that starts at `start` in `s` ends (its last listed word's end,
 * `end` at most), or -1 where it holds fewer than MIN_LISTED: a recovery phrase's words are all on it, prose's are
 * not. A word a `:` or `=` follows is a name, the next phrase's (`seed: ... seed: ...`), and ends the run; so does a
 * word off the list, where the regex read on past the phrase (`... anchor tunnel Secret Recovery Phrase: ...`).
 */
function listedRun(s: string, start: number, end: number): number {
  bip39 ??= new Set(BIP39_ENGLISH);
  const word = /[A-Za-z]+/g;
  word.lastIndex = start;
  let n = 0;
  let to = -1;
  for (let m = word.exec(s); m !== null && m.index < end; m = word.exec(s)) {
    if (!bip39.has(m[0].toLowerCase())) break;
    let after = m.index + m[0].length;
    while (s.charCodeAt(after) === 32 || s.charCodeAt(after) === 9) after++;
    if (s.charCodeAt(after) === 58 || s.charCodeAt(after) === 61) break;
    n++;
    to = m.index + m[0].length;
  }
  return n >= MIN_LISTED ? to : -1;
}

/** Where the word that ends at `end` in `s` starts. */
function lastWordStart(s: string, end: number): number {
  let i = end;
  while (i > 0 && (isUpper(s.charCodeAt(i - 1)) || isLower(s.charCodeAt(i - 1)))) i--;
  return i;
}

/**
 * One match of rule `c` in `sub` (the text from `w0`), its groups as [start, end] pairs (group 0 first): its secret,
 * unless entropy or an allowlist drops it. For a rule that names a word list (own rules: `words`), the secret is the
 * run of listed words it starts with, and the answer is where in `sub` a matcher goes on from (that run's last word,
 * or the secret's start where there is none), so that a name the match read on into is tried; for the others,
 * undefined (the match's end).
 */
function take(c: Compiled, sub: string, w0: number, cut: boolean, groups: readonly number[], out: Span[]): number | undefined {
  const m0 = groups[0]!;
  const m1 = groups[1]!;
  // `$` (and an unbounded run) at a window's end that is not the text's proves nothing.
  if (cut && m1 === sub.length) return undefined;
  // The first of the rule's secret groups that matched, or the whole match.
  let g = 0;
  for (const i of c.groups) if ((groups[2 * i] ?? -1) >= 0 && groups[2 * i + 1]! > groups[2 * i]!) { g = i; break; }
  const start = groups[2 * g] ?? -1;
  let end = groups[2 * g + 1] ?? -1;
  if (start < 0 || end <= start) return undefined;
  if (c.rule.words !== undefined) {
    const run = listedRun(sub, start, end);
    if (run < 0) return start;
    end = run;
  }
  // (From the run's last word: it may be the next phrase's name, `... abandon Seed words = ...`.)
  const resume = c.rule.words !== undefined ? lastWordStart(sub, end) : undefined;
  const secret = sub.slice(start, end);
  if (c.rule.entropy !== undefined) {
    if (shannonEntropy(secret) <= c.rule.entropy) return resume;
    if (c.rule.id.startsWith('generic') && !hasDigit(secret)) return resume;
  }
  // A keyword rule's value written in words is a program's name (`const linkedInstance = linkedEntities[...]`: the
  // LinkedIn rule's 14 letters and digits, entropy above 2): the generic assignments' reading (chars.ts, wordy).
  if (c.assignment && wordy(secret)) return resume;
  const match = sub.slice(m0, m1);
  const line = () => lineAround(sub, m0, m1);
  if (GLOBAL_ALLOW !== undefined && allowed(GLOBAL_ALLOW, secret, match, line)) return resume;
  if (c.allow!.some((a) => allowed(a, secret, match, line))) return resume;
  out.push({ kind: c.rule.id, start: w0 + start, end: w0 + end });
  return resume;
}
