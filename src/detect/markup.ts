/**
 * Text as a reader of rendered markup sees it (docs/behaviour/labels-and-detectors.md#markup): a credential named in
 * an HTML page or in Markdown reads as a name and its value once the markup is gone. `<td>password</td><td>X</td>`,
 * `<dt>API key</dt><dd>X</dd>`, `Password: <code>X</code>`, a code view's `<span>API_KEY</span><span>=</span>
 * <span>X</span>`, `**password**: X`, `` `api_key`: `X` `` and a token broken by `<wbr>` hold no `name = value` as
 * written. Read for credentials, besides the text as written (what either reading finds is masked).
 *
 * An HTML tag (`<` and one of HTML's names, its attributes up to `>`, at most 512 characters, none of them `<`) is
 * removed, and so is a comment (`<!--` to `-->`, at most 256 characters, no `<` or `>`); a table's cell reads as a
 * Markdown table's, between `|`s, a row a line (the blanks between a table's tags left out), a header row of `<th>`
 * followed by a rule, `|-|`; the end of a definition list's cell reads as a blank, a tag that starts or ends a line
 * (`<br>`, `<p>`, `<tr>`, `<li>`, `<div>`, a heading...) as a line break (one for tags that follow one another).
 * Elements of other names (XML's `<password>`) are kept: their names say what they hold. Markdown's `**` is removed
 * (not inside a word), so is a `*` or a `_` at a word's edge (emphasis, `*Password:* X`, `_API key_: X`), and its
 * backticks read as blanks (a program's template literal glues to nothing). One pass, each character looked at once or,
 * inside a tag that is none, twice: linear in the text.
 */
import { ASK_MASK, codeAt, isLetter, isSpace, isWord, nextAt, stringOf } from './chars.js';
import type { Normalized } from './normalize.js';
import { DetectionStopped } from './ruleset.js';

/** A reading of a text with its markup removed: `text`, and for its UTF-16 unit `i` the input's units [from[i], to[i]) (as a normalization's). */
export type WithoutMarkup = Omit<Normalized, 'tags'>;

/** Where markup may stand: a tag's `<` before a letter or `/`, a backtick, `**`. */
const MARKUP = /<\/?[A-Za-z]|<!--|`|\*\*/;
/**
 * Or a `*` or a `_` at a word's edge, as emphasis() reads one (not `"_meta"` in a JSON text): searched only in a text
 * that holds one (the alternation alone costs five times the search above on prose).
 */
const EMPHASIS = /(?:^|[\s()[\]])[*_][A-Za-z]|[A-Za-z:][*_](?:$|[\s()[\]:,.])/;
/** The next character a markup reading may change. */
const SPECIAL = /[<`*_]/g;
/** A tag at the place it is tried: its `/`, its name, its attributes (bounded, no `<` among them). */
const TAG_AT = /<(\/?)([A-Za-z][A-Za-z0-9]{0,15})(?:[\s/][^<>]{0,512})?>/y;
/** An HTML comment at the place it is tried (bounded, no `<` or `>` in it): drawn as nothing. */
const COMMENT_AT = /<!--[^<>]{0,256}?-->/y;
/** HTML's tags that stand inside a line (text's, a form's, a picture's): removed. */
const INLINE_TAGS = new Set(['a', 'abbr', 'b', 'bdi', 'bdo', 'big', 'button', 'cite', 'code', 'data', 'del', 'dfn', 'em', 'font', 'i', 'img', 'input', 'ins', 'kbd', 'label', 'mark', 'option', 'q', 's', 'samp', 'select', 'small', 'span', 'strike', 'strong', 'sub', 'sup', 'textarea', 'time', 'tt', 'u', 'var', 'wbr']);
/** Tags that end a definition list's cell: read as a blank. */
const CELL_TAGS = new Set(['dt', 'dd']);
/** A table's cells: each between `|`s, a header row (of `<th>`) followed by a Markdown rule, `|-|`. */
const TABLE_CELLS = new Set(['td', 'th']);
/** Tags between which a table's blanks are layout (read as nothing: a row is one line). */
const TABLE_TAGS = new Set(['table', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th']);
/** Tags that start or end a line: read as a line break. */
const LINE_TAGS = new Set(['br', 'p', 'div', 'tr', 'li', 'ul', 'ol', 'dl', 'table', 'thead', 'tbody', 'tfoot', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'pre', 'hr', 'section', 'article', 'header', 'footer', 'blockquote', 'main', 'nav', 'aside', 'form', 'fieldset', 'caption', 'figure', 'figcaption', 'details', 'summary']);

/** Whether a code unit is a blank, a line's end or a bracket: what stands outside emphasis. */
const outside = (c: number): boolean => c < 0 || isSpace(c) || c === 40 || c === 41 || c === 91 || c === 93;

/**
 * Whether the mark [i, j) (one `*` or `_`) opens or closes emphasis: a letter after it and a blank, a line's start or
 * a bracket before it, or a letter or a name's colon before it (`*Password:*`) and a blank, a line's end, a bracket or
 * a sentence's mark after it. One inside a token (`hcaik_01w9`, `2*3`, a glob's `*.txt`) is none.
 */
function emphasis(s: string, i: number, j: number): boolean {
  const before = codeAt(s, i - 1);
  const after = codeAt(s, j);
  if (isLetter(after) && outside(before)) return true;
  return (isLetter(before) || before === 58) && (outside(after) || after === 58 || after === 44 || after === 46);
}

/** Whether `s` may read differently with its markup removed (one native search). */
export const mayHoldMarkup = (s: string): boolean => MARKUP.test(s) || ((s.includes('*') || s.includes('_')) && EMPHASIS.test(s));

/**
 * A secret's word (as the seams look for one) with markup after it on its line, within 96 characters (as far as prose
 * says whose the secret is, `the password for the wifi network "Office": <code>X`): a tag, a
 * backtick or `**` closing the name or opening its value (`password</td><td>X`, `**password**: X`, `` `api_key`: `X ``, `Password: <code>X`,
 * `Authorization: Bearer \`X\``, `the password is **X**`); or a command that gives a password on standard input
 * before it, `echo`, `printf` or `sudo` (`echo '<code>X</code>' | passwd --stdin`, `sudo -S ... <<< '<code>X</code>'`);
 * or a pair's `value:`, whose name stands on a line before (`"ParameterKey": "DBPassword",` then
 * `"ParameterValue": "<code>X</code>"`), or a note's `p:` after its `u:` (`u: deploy` then `p: <code>X</code>`); or a
 * heredoc opened after the name, its value on the next line (`password = <<EOF` then `<code>X</code>`); or markup that
 * opens the next line, a value a command prints there or a label's (`$ bw get password "Prod DB"` then `<span
 * class="s">X</span>`, `Password:` then `<code>X</code>`).
 */
const NAMED_IN_MARKUP = /(?:pass|pwd|pw\b|key|token|secret|private|auth|cred|bearer|psk|\bsig\b|login|identified|phrase|mnemonic|seed|-[pau]\b|--user|(?:^|\s)p:|\becho\b|\bprintf\b|\bsudo\b|value["']?[ \t]*:)[^\n]{0,96}?(?:\*\*|`|<\/?[A-Za-z]|[*_](?![\w*])|<<[-~]?\w+[ \t]*\r?\n|\r?\n[ \t]*(?:\*\*|`|<[A-Za-z]))/gi;
/**
 * A token of 16 characters or more opened by an inline tag or Markdown's `**` (`<code>Xk9...`, `**Xk9...`): a value
 * whose name may stand on a line before (a table's header, a collection's name), read with VALUE_BEFORE characters
 * before it.
 */
const VALUE_IN_MARKUP = /(?:<(?:code|b|strong|em|i|span|kbd|samp|tt|mark|td|dd)\b[^<>]{0,64}>|\*\*)[^\s<>*]{16}/gi;
const VALUE_BEFORE = 512;
/** The inline tags of a link, a form's control or a picture: not looked for as breaking a token. */
const NOT_IN_TOKENS = new Set(['a', 'button', 'img', 'input', 'label', 'option', 'select', 'textarea']);
/**
 * A tag that breaks a token, glued to its characters on both sides: an inline tag (INLINE_TAGS: `<wbr>`, a span, a
 * tag of text's that renders no break, bold, emphasis, code, a mark, `<b>AKIA</b><b>Z3MJ</b>...`, a character to a
 * tag; not NOT_IN_TOKENS's), or a comment.
 */
const BREAKS_TOKEN = new RegExp(
  `[^\\s<>](?:<\\/?(?:${[...INLINE_TAGS].filter((t) => !NOT_IN_TOKENS.has(t)).join('|')})\\b[^<>]{0,64}>|<!--[^<>]{0,256}?-->){1,4}[^\\s<>]`,
  'gi',
);
/** Characters read before a secret's word in markup (the tags around it). */
const BEFORE_NAME = 128;
/** Characters read after the markup: a value, then on to the end of the token there, at most MAX_TOKEN more. */
const AFTER_NAME = 160;
/** Most characters a token is followed to, either way, from where a window would cut it (a JWT runs to a thousand or two). */
const MAX_TOKEN = 4096;

/** The searches for stretches: each pattern, whether a find reads its token back from its start, and how far back it reads. */
const SEARCHES = [
  [NAMED_IN_MARKUP, false, BEFORE_NAME],
  [VALUE_IN_MARKUP, false, VALUE_BEFORE],
  [BREAKS_TOKEN, true, BEFORE_NAME],
] as const;

/** Personal data's search: a token a tag breaks only (an address, a card's number; no secret's word names one). */
const BROKEN_ONLY = [[BREAKS_TOKEN, true, BEFORE_NAME]] as const;

/**
 * The stretches of `s` to read without markup: around each secret's word that markup stands next to (NAMED_IN_MARKUP),
 * each long token an inline tag opens (VALUE_IN_MARKUP), and each token a tag breaks (BREAKS_TOKEN), whole; sorted,
 * merged where they meet. A text of Markdown that names keys now and then (documentation) is read again only there.
 * Each token walk starts where the last one stopped, and each search goes on a name's reach before the stretch's end:
 * linear in the text. `brokenOnly`: the tokens a tag breaks alone (personal data's reading).
 */
export function markupWindows(s: string, brokenOnly = false): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const [re, back, before] of brokenOnly ? BROKEN_ONLY : SEARCHES) {
    re.lastIndex = 0;
    let reach = 0;
    for (let m = re.exec(s); m !== null; m = re.exec(s)) {
      let a = m.index;
      // A broken token is read from its start (back over its characters), a name with the tags before it.
      if (back) while (a > reach && m.index - a < MAX_TOKEN && !isSpace(s.charCodeAt(a - 1))) a--;
      a = Math.max(0, a - before);
      // (Never inside a token: from where it starts, as far back as the last stretch, which it then joins. A stretch
      // that started inside `task-3f2a...` read `sk-3f2a...` as a provider's key.)
      for (let k = 0; a > reach && k < MAX_TOKEN && !isSpace(s.charCodeAt(a - 1)); k++) a--;
      let b = Math.max(reach, Math.min(s.length, m.index + m[0].length + AFTER_NAME));
      const limit = Math.min(s.length, b + MAX_TOKEN);
      while (b < limit && !isSpace(s.charCodeAt(b))) b++;
      reach = b;
      out.push([a, b]);
      // (The next search starts a name's reach before the stretch's end: a name there may have its value after it.)
      if (re.lastIndex < b - BEFORE_NAME) re.lastIndex = b - BEFORE_NAME;
    }
  }
  out.sort((x, y) => x[0] - y[0]);
  const merged: Array<[number, number]> = [];
  for (const w of out) {
    const last = merged[merged.length - 1];
    if (last !== undefined && w[0] <= last[1]) last[1] = Math.max(last[1], w[1]);
    else merged.push([w[0], w[1]]);
  }
  return merged;
}

/**
 * `s` with its markup removed, or undefined where it holds none. `stop` is asked every 4,096 places markup may stand.
 * @throws DetectionStopped
 */
export function withoutMarkup(s: string, stop?: () => boolean): WithoutMarkup | undefined {
  if (!mayHoldMarkup(s)) return undefined;
  // Never longer than the input: every tag or marker is removed or read as one character.
  const units = new Uint16Array(s.length);
  const from = new Uint32Array(s.length);
  const to = new Uint32Array(s.length);
  let n = 0;
  let changed = false;
  const copy = (a: number, b: number) => {
    for (let m = a; m < b; m++) {
      units[n] = s.charCodeAt(m);
      from[n] = m;
      to[n++] = m + 1;
    }
  };
  const put = (unit: number, a: number, b: number) => {
    units[n] = unit;
    from[n] = a;
    to[n++] = b;
  };
  let i = 0;
  let steps = 0;
  // After a table's tag, the blanks before the next text or tag are layout; in a row, whether a `<th>` stood in it.
  let layout = false;
  let header = false;
  while (i < s.length) {
    if (stop !== undefined && (++steps & ASK_MASK) === 0 && stop()) throw new DetectionStopped('the time for this decision ran out while reading a text without its markup');
    const at = nextAt(SPECIAL, s, i);
    if (layout) {
      while (i < at && isSpace(s.charCodeAt(i))) i++;
      if (i < at) layout = false;
    }
    copy(i, at);
    i = at;
    if (i >= s.length) break;
    const c = s.charCodeAt(i);
    if (c === 96 /* ` */) {
      // A blank: code in backticks is a word of its own, and a program's template literal glues to nothing.
      changed = true;
      units[n] = 32;
      from[n] = i;
      to[n++] = i + 1;
      i++;
      continue;
    }
    if (c === 95 /* _ */) {
      // A `_` at a word's edge as a `*` is (emphasis, `_API key_: ...`); inside a name, `DB_PASSWORD`, or a token,
      // `hcaik_<wbr>01w9...`, kept.
      if (emphasis(s, i, i + 1)) changed = true;
      else copy(i, i + 1);
      i++;
      continue;
    }
    if (c === 42 /* * */) {
      // `**` and longer runs (bold, bold italic), and a single `*` at a word's edge, a letter on one side and no word's
      // character on the other (emphasis: Markdown's italics, Slack's bold, `*Password:* X`); a single `*` elsewhere is
      // kept (a product, a glob, a password's character), and so is a run inside a word (a value shown in part,
      // `hun***r22`, `ghp_****Xy12`).
      let j = i;
      while (j < s.length && s.charCodeAt(j) === 42) j++;
      if (j - i >= 2 ? !(isWord(codeAt(s, i - 1)) && isWord(codeAt(s, j))) : emphasis(s, i, j)) changed = true;
      else copy(i, j);
      i = j;
      continue;
    }
    TAG_AT.lastIndex = i;
    const m = TAG_AT.exec(s);
    if (m === null) {
      // A comment, which a page does not show: removed (`AKIAZ3MJ<!-- -->QX7T...` reads as one token).
      COMMENT_AT.lastIndex = i;
      if (COMMENT_AT.test(s)) {
        changed = true;
        i = COMMENT_AT.lastIndex;
        continue;
      }
      copy(i, i + 1);
      i++;
      continue;
    }
    const name = m[2]!.toLowerCase();
    const end = i + m[0].length;
    const cell = CELL_TAGS.has(name);
    const line = LINE_TAGS.has(name);
    const tableCell = TABLE_CELLS.has(name);
    if (!cell && !line && !tableCell && !INLINE_TAGS.has(name)) {
      // Another language's element (`<password>...</password>`, `<add key="..." value="..."/>`): its name may name
      // what it holds, kept as written.
      copy(i, end);
      i = end;
      continue;
    }
    changed = true;
    if (tableCell) {
      // A cell between `|`s, its blanks at either end left out: a table's row reads as a Markdown table's.
      // (A cell's end always stands, so an empty cell keeps its column; its start only where no `|` ends the cell before.)
      if (m[1] === '/') {
        while (n > 0 && isSpace(units[n - 1]!)) n--;
        put(124, i, end);
      } else if (n === 0 || units[n - 1] !== 124) put(124, i, end);
      if (name === 'th') header = true;
    } else if (name === 'tr' && m[1] === '/' && header && end - i >= 5) {
      // A header row's end: a rule under it (`|-|`), as Markdown writes one, so that its columns name the rows' cells.
      for (const unit of [10, 124, 45, 124, 10]) put(unit, i, end);
      header = false;
    } else if (cell) {
      if (m[1] === '/') put(32, i, end);
    } else if (line) {
      // (One line break for tags that follow one another: a table's rows, one a line.)
      if (n === 0 || units[n - 1] !== 10) put(10, i, end);
      if (name === 'tr') header = false;
    }
    layout = TABLE_TAGS.has(name);
    i = end;
  }
  if (!changed) return undefined;
  return { text: stringOf(units.subarray(0, n)), from: from.subarray(0, n), to: to.subarray(0, n) };
}
