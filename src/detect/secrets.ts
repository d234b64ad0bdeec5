/**
 * `secrets(string)` (docs/behaviour/labels-and-detectors.md): credentials in text, found in one
 * left-to-right pass with hand-written scanners (no backtracking regular
 * expressions: the text is untrusted). The formats are secretlint's
 * recommended rules where it has one (@secretlint/secretlint-rule-aws,
 * -github, -slack, -npm, -privatekey, -database-connection-string), with
 * their boundaries; `stripe-secret-key`, `google-api-key` and `jwt` follow
 * the vendors' published formats. See docs/behaviour/labels-and-detectors.md.
 */
import { codeAt, hasDigit, isAlnum, isB64url, isDigit, isLetter, isLower, isSpace, isUpper, isUpperDigit, isWord, run, b64RunEnd, isB64, shannonEntropy, wordy, wordLike, ASK_MASK, type Span } from './chars.js';
import { DECODE_ROUNDS, MIN_RUN, encodedRuns } from './encoded.js';
import { normalizeForDetection } from './normalize.js';
import { DetectionStopped, scanRuleset } from './ruleset.js';
import { SHAPED_KINDS, scanShaped } from './shaped.js';

/** Every kind `secrets()` reports, and `mask: [secrets]` covers. */
export const SECRET_KINDS = [
  'aws-access-key-id',
  'github-token',
  'slack-token',
  'stripe-secret-key',
  'google-api-key',
  'npm-token',
  'private-key',
  'jwt',
  'connection-string',
  'pgpass-password',
  'secret-assignment',
  ...SHAPED_KINDS,
] as const;

// secretlint-rule-aws: \b(A3T[A-Z0-9]|AKIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASIA)[A-Z0-9]{16}\b
const AWS_PREFIXES = new Set(['AKIA', 'AGPA', 'AIDA', 'AROA', 'AIPA', 'ANPA', 'ANVA', 'ASIA']);
// secretlint-rule-slack: \b(?:xoxb|xoxp|xapp|xoxa|xoxo|xoxr)-(?:\d-)?(?:[a-zA-Z0-9]{1,40}-)+[a-zA-Z0-9]{1,40}\b
const SLACK_PREFIXES = new Set(['xoxb', 'xoxp', 'xapp', 'xoxa', 'xoxo', 'xoxr']);
const PEM_KINDS = ['RSA ', 'DSA ', 'EC ', 'OPENSSH ', 'PGP ', 'ENCRYPTED ', ''];
const OPENVPN_KEY = 'OpenVPN Static key V1-----';

function aws(s: string, i: number): number {
  if (isWord(codeAt(s, i - 1))) return -1;
  const p = s.slice(i, i + 4);
  const ok = AWS_PREFIXES.has(p) || (p.startsWith('A3T') && isUpperDigit(codeAt(s, i + 3)));
  if (!ok || run(s, i + 4, isUpperDigit, 16) !== 16 || isWord(codeAt(s, i + 20))) return -1;
  return i + 20;
}

function googleKey(s: string, i: number): number {
  // AIza[0-9A-Za-z_-]{35}, not inside a longer token.
  if (!s.startsWith('AIza', i) || isB64url(codeAt(s, i - 1))) return -1;
  return run(s, i + 4, isB64url, 35) === 35 ? i + 39 : -1;
}

function github(s: string, i: number): number {
  // secretlint-rule-github: (?<!\p{L})(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}(?![A-Za-z0-9_]), and github_pat_ with 82.
  if (isLetter(codeAt(s, i - 1))) return -1;
  if (s.startsWith('github_pat_', i)) return run(s, i + 11, isWord, 82) === 82 ? i + 93 : -1;
  const t = codeAt(s, i + 2);
  if (codeAt(s, i + 1) !== 104 /* h */ || codeAt(s, i + 3) !== 95 /* _ */) return -1;
  if (t !== 112 && t !== 111 && t !== 117 && t !== 115 && t !== 114) return -1; // p o u s r
  return run(s, i + 4, isWord, 36) === 36 ? i + 40 : -1;
}

function npm(s: string, i: number): number {
  // secretlint-rule-npm: (?<!\p{L})npm_[A-Za-z0-9_]{36}(?![A-Za-z0-9_])
  if (!s.startsWith('npm_', i) || isLetter(codeAt(s, i - 1))) return -1;
  return run(s, i + 4, isWord, 36) === 36 ? i + 40 : -1;
}

function slack(s: string, i: number): number {
  if (isWord(codeAt(s, i - 1)) || !SLACK_PREFIXES.has(s.slice(i, i + 4)) || codeAt(s, i + 4) !== 45) return -1;
  let pos = i + 5;
  let segments = 0;
  for (;;) {
    const n = run(s, pos, isAlnum, 40);
    if (n === 0 || n > 40) return -1;
    pos += n;
    segments++;
    if (codeAt(s, pos) === 45 && isAlnum(codeAt(s, pos + 1))) pos++;
    else break;
  }
  return segments >= 2 && !isWord(codeAt(s, pos)) ? pos : -1;
}

function stripe(s: string, i: number): number {
  // sk_live_ / sk_test_ / rk_live_ / rk_test_ and 24 or more letters and digits.
  if (isWord(codeAt(s, i - 1)) || codeAt(s, i + 1) !== 107 /* k */ || codeAt(s, i + 2) !== 95) return -1;
  if (!s.startsWith('live_', i + 3) && !s.startsWith('test_', i + 3)) return -1;
  const n = run(s, i + 8, isAlnum, 247);
  if (n < 24 || n > 247 || isWord(codeAt(s, i + 8 + n))) return -1;
  return i + 8 + n;
}

function jwt(s: string, i: number): number {
  // header.payload.signature, base64url, header and payload JSON objects (`eyJ` is `{"`); the header names `alg`.
  if (!s.startsWith('eyJ', i) || isB64url(codeAt(s, i - 1))) return -1;
  const h = run(s, i, isB64url, 4096);
  if (h > 4096 || codeAt(s, i + h) !== 46) return -1;
  const p0 = i + h + 1;
  if (!s.startsWith('eyJ', p0)) return -1;
  const p = run(s, p0, isB64url, s.length);
  if (codeAt(s, p0 + p) !== 46) return -1;
  const g0 = p0 + p + 1;
  const g = run(s, g0, isB64url, s.length);
  if (isWord(codeAt(s, g0 + g)) || codeAt(s, g0 + g) === 46) return -1;
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(s.slice(i, i + h), 'base64url').toString('utf8'));
  } catch {
    return -1;
  }
  if (typeof header !== 'object' || header === null || typeof (header as { alg?: unknown }).alg !== 'string') return -1;
  return g0 + g;
}

/** `[A-Za-z0-9+/=]`, blanks, and the `\` of JSON-escaped line breaks (`\n`), `:` and `,` of PEM headers. */
function isPemBody(c: number): boolean {
  return isAlnum(c) || c === 43 || c === 47 || c === 61 || isSpace(c) || c === 92 || c === 58 || c === 44;
}

function pemLabel(s: string, at: number): number {
  // [ ]?(RSA |DSA |EC |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY( BLOCK)?-----, or OpenVPN's shared key (`OpenVPN Static key
  // V1`, the whole secret of a `tls-auth` or `tls-crypt` link); returns the end, or -1.
  let pos = at;
  if (codeAt(s, pos) === 32) pos++;
  if (s.startsWith(OPENVPN_KEY, pos)) return pos + OPENVPN_KEY.length;
  for (const k of PEM_KINDS) {
    if (!s.startsWith(k + 'PRIVATE KEY', pos)) continue;
    let end = pos + k.length + 11;
    if (s.startsWith(' BLOCK', end)) end += 6;
    return s.startsWith('-----', end) ? end + 5 : -1;
  }
  return -1;
}

function privateKey(s: string, i: number): number {
  // secretlint-rule-privatekey: -----BEGIN ... PRIVATE KEY-----, body, -----END ... PRIVATE KEY-----
  if (!s.startsWith('-----BEGIN', i)) return -1;
  const head = pemLabel(s, i + 10);
  if (head < 0) return -1;
  let pos = head;
  let body = 0;
  for (; pos < s.length; pos++) {
    const c = s.charCodeAt(pos);
    if (c === 45 /* - */) {
      if (s.startsWith('-----', pos)) break;
      continue; // `Proc-Type:` and `DEK-Info:` header lines
    }
    if (!isPemBody(c)) break;
    if (isAlnum(c) || c === 43 || c === 47) body++;
  }
  if (body < 16) return -1;
  if (s.startsWith('-----END', pos)) {
    const end = pemLabel(s, pos + 8);
    if (end > 0) return end;
  }
  // A key cut short is still a key: everything up to where its body stops.
  return pos;
}

/** Whether the character at `k` is `c` escaped with a backslash (`\n`, `\r` written in a string). */
function escapedAt(s: string, k: number, c: number): boolean {
  return codeAt(s, k) === c && codeAt(s, k - 1) === 92;
}

/**
 * The tail of a private key whose `-----BEGIN` stands elsewhere (a key cut in two, its first lines in one block and
 * the rest in the next): where `-----END ... PRIVATE KEY-----` stands at `i` (pemLabel's labels), the lines of base64
 * before it, back to the first that is none (a line break written as such or escaped, `\n` or `\r\n`, between them) and no
 * further than `from`, and the marker; at least 16 characters of body. Its [start, end), or undefined. A key cut short
 * after its `-----BEGIN` is read by privateKey; the two halves of a key cut in two are both masked, each where it stands.
 */
function keyTail(s: string, i: number, from: number): [number, number] | undefined {
  if (!s.startsWith('-----END', i)) return undefined;
  const end = pemLabel(s, i + 8);
  if (end < 0) return undefined;
  let start = i;
  let body = 0;
  for (;;) {
    // The line break before `start`: a line feed, or an escaped one (`\n`) in a string, a carriage return before it.
    let b = start;
    if (codeAt(s, b - 1) === 10) b--;
    else if (escapedAt(s, b - 1, 110)) b -= 2;
    else if (b !== i) break;
    if (b !== i) {
      if (codeAt(s, b - 1) === 13) b--;
      else if (escapedAt(s, b - 1, 114)) b -= 2;
    }
    // The line: base64 back to the break before it (`...==-----END`, the marker after the body with no break, too).
    let a = b;
    while (a > from && isB64(s.charCodeAt(a - 1)) && !escapedAt(s, a - 1, 110)) a--;
    if (a === b) break;
    body += b - a;
    start = a;
    if (a <= from) break;
  }
  return body >= 16 ? [start, end] : undefined;
}

/** Placeholders that stand for a password rather than being one (secretlint-rule-database-connection-string's list, and common stand-ins). */
function placeholderPassword(p: string): boolean {
  if (/^(?:\$\{[^}]*\}|\{\{[^}]*\}\}|\{[^}]*\}|%[A-Za-z_]+%|\$[A-Za-z_]+|\$\([^)]*\)|<[^>]*>|\[[^\]]*\])$/.test(p)) return true;
  if (/^(.)\1*$/.test(p)) return true; // ****, xxxx
  // (A password's word among letters, what a template or a guide writes for one: `mypassword`, `YOUR_PASSWORD`,
  // `REPLACE_WITH_PASSWORD`, `your-db-password`.)
  // (Up to 24 characters: a phrase of words, `whywouldyouusehttpforpasswords`, is a password.)
  return /^(?:password|passwd|pass|pwd|secret|changeme|redacted)$/i.test(p) || (p.length <= 24 && /pass|pwd|secret/i.test(p) && p.split(/[_-]/).every((w) => WORD_PART.test(w)));
}

/** A word of one case, capitalized, or in camel case (random letters are none: `AAAolAcApwDL...`). */
const WORD_PART = /^(?:[a-z]+|[A-Z]+|[A-Z]?[a-z]+(?:[A-Z][a-z]+)*)$/;

function isSchemeChar(c: number): boolean {
  return isAlnum(c) || c === 43 || c === 45 || c === 46;
}

/** `scheme://user:password@host`: returns [start, end] or undefined. `i` is the `:` of `://`. */
function connection(s: string, i: number): [number, number] | undefined {
  if (codeAt(s, i + 1) !== 47 || codeAt(s, i + 2) !== 47) return undefined;
  let a = i;
  while (a > 0 && i - a < 32 && isSchemeChar(s.charCodeAt(a - 1))) a--;
  if (a === i || isSchemeChar(codeAt(s, a - 1)) || !isLetter(s.charCodeAt(a))) return undefined;
  const u0 = i + 3;
  let pos = u0;
  // (A user and a password hold no quote and no angle bracket, a user no bracket either: none is a URI's, and one read
  // past them runs out of its string into the program around it, `funding:"https://dotenvx.com",keywords:[...]...@`.)
  const stop = (c: number) => c === 58 || c === 47 || c === 64 || c === 63 || c === 35 || isSpace(c) || c < 0 || isQuoteOrAngle(c) || c === 91 || c === 93 || c === 123 || c === 125;
  while (pos - u0 <= 100 && !stop(codeAt(s, pos))) pos++;
  if (pos - u0 > 100) return undefined;
  // (A user with no password that is a token, `https://<token>@github.com/...`: as git takes one.)
  if (codeAt(s, pos) !== 64 || !userToken(s.slice(u0, pos))) {
    // The user may be empty (`redis://:password@host`): the password is one all the same.
    if (codeAt(s, pos) !== 58) return undefined;
    const p0 = pos + 1;
    pos = p0;
    const pstop = (c: number) => c === 64 || c === 47 || isSpace(c) || c < 0 || isQuoteOrAngle(c);
    while (pos - p0 <= 200 && !pstop(codeAt(s, pos))) pos++;
    // (Three characters or fewer are a guide's stand-in, `user:abc@`, `u:p@`, not a password.)
    if (pos - p0 < 4 || pos - p0 > 200 || codeAt(s, pos) !== 64) return undefined;
    if (placeholderPassword(s.slice(p0, pos))) return undefined;
  }
  const h0 = pos + 1;
  pos = h0;
  const hstop = (c: number) => c === 47 || c === 63 || c === 35 || c === 64 || isSpace(c) || c < 0 || c === 34 || c === 39 || c === 96 || c === 62 || c === 41;
  while (pos - h0 <= 255 && !hstop(codeAt(s, pos))) pos++;
  if (pos === h0) return undefined;
  return [a, pos];
}

/** A quote (`"`, `'`, a backtick) or an angle bracket. */
function isQuoteOrAngle(c: number): boolean {
  return c === 34 || c === 39 || c === 96 || c === 60 || c === 62;
}

/**
 * A URL's user that is a token: 20 characters or more of a token's (`[A-Za-z0-9_-]`), random to look at but for
 * parts that read as words (a user's name is words and numbers every part, `JenkinsDeployBot2024`; of random runs of 20
 * letters of both cases and digits, 0.03 % read as words but for one part, `LSW0miclaDvyehtOtnfr`, 0.001 % every part), or 40 hex
 * digits at 3.3 bits each (GitHub's tokens before their prefixes). A name, a word, an AWS SSH key's id (capitals and
 * digits) is none.
 */
function userToken(user: string): boolean {
  return user.length >= 20 && /^[\w-]+$/.test(user) && (randomToLook(user, true) || (/^[0-9a-f]{40}$/.test(user) && shannonEntropy(user) >= 3.3));
}

/** A host name's characters in a password file line (and `*`, any host). */
function isHostChar(c: number): boolean {
  return isAlnum(c) || c === 46 || c === 95 || c === 42 || c === 45;
}

/** Ends a database or user field of a password file line: a colon, a blank, the text's end. */
function isFieldStop(c: number): boolean {
  return c < 0 || c === 58 || isSpace(c);
}

/** Ends a password file line's password: a colon, a blank, a quote, a backslash (an escaped line break), the text's end. */
function isPasswordStop(c: number): boolean {
  return c < 0 || c === 58 || isSpace(c) || c === 34 || c === 39 || c === 96 || c === 92;
}

/** Longest field of a password file line read. */
const PGPASS_FIELD = 256;

/**
 * The password of a PostgreSQL password file line
 * (`host:port:database:user:password`, `.pgpass`) on PostgreSQL's port or
 * any (`*`), from the `:` before the port at `i`: the line starts at the
 * text's start, after a blank or a quote, or after an escaped line break
 * (`\n` in JSON or a log); the password has six characters or more and
 * the entropy of a chosen one (more than 2.5 bits a character).
 */
function pgpass(s: string, i: number): [number, number] | undefined {
  let p: number;
  if (s.startsWith(':5432:', i)) p = i + 6;
  else if (s.startsWith(':*:', i)) p = i + 3;
  else return undefined;
  let a = i;
  while (a > 0 && i - a < PGPASS_FIELD && isHostChar(s.charCodeAt(a - 1))) a--;
  const before = codeAt(s, a - 1);
  // An escaped line break before the line: its `n` is no part of the host.
  if (before === 92 && codeAt(s, a) === 110) a++;
  else if (!(a === 0 || isSpace(before) || before === 34 || before === 39 || before === 96)) return undefined;
  if (a >= i) return undefined;
  for (let field = 0; field < 2; field++) {
    const f0 = p;
    while (p - f0 < PGPASS_FIELD && !isFieldStop(codeAt(s, p))) p++;
    if (p === f0 || codeAt(s, p) !== 58) return undefined;
    p++;
  }
  const p0 = p;
  while (p - p0 < 4 * PGPASS_FIELD && !isPasswordStop(codeAt(s, p))) p++;
  if (p - p0 < 6 || shannonEntropy(s.slice(p0, p)) <= 2.5) return undefined;
  return [p0, p];
}

/**
 * A name that says it holds a secret: key, secret, token, password, credential (as the name's last word, or anywhere
 * for the unambiguous ones); a passcode, a salt (WordPress's `AUTH_SALT`, a password's pepper), a PIN, a one-time
 * password's seed (`totp_seed`, or `totp` as a word of its own: a password manager's export keeps the seed in its
 * `login_totp` column), recovery codes.
 */
const SECRET_NAME_END =
  /(?:key|secret|token|authorization|passw(?:or)?d|passphrase|passcode|pwd|pass|passw|pswd|pword|credentials?|creds|auth|bearer|salt|(?:^|[_.-])(?:pat|psk|pw|psw|pin|totp)|(?:totp|otp|mfa|2fa)[_.-]?seed|(?:recovery|backup)[_.-]?codes?)$/;
const SECRET_NAME_ANY = /secret|passw(?:or)?d|credential|private_?key|access_?key|api_?key/;
/**
 * A password's, an API key's or a token's name in another language, at the end of what stands before an operator
 * (`Passwort: ...`, `contraseña: ...`, `пароль: ...`, `mot de passe : ...`, `パスワード: ...`, `API-Schlüssel: ...`,
 * `clave de API: ...`, `токен: ...`, `APIキー: ...`, `API 키: ...`): German, Dutch, Portuguese, Czech, Slovak, Slovene,
 * Finnish, Norwegian, Danish, Swedish, Polish, Turkish, Hungarian, Spanish, Catalan, Italian, Romanian, Estonian,
 * Lithuanian, Croatian, Serbian, French, Indonesian, Vietnamese, Russian, Ukrainian, Greek, Chinese, Japanese, Korean,
 * Thai, Arabic, Hebrew, Hindi. Read as `password`, `api_key` or `token` (group 1, 2 or 3). (Arabic's alef is read as
 * `l` too: normalized, the confusables fold it so, and a fullwidth colon is read only normalized.)
 */
const LOCAL_NAME =
  /(?<!\p{L})(?:(passwort|kennwort|wachtwoord|senha|heslo|geslo|salasana|passord(?:et)?|adgangskoden?|l[öo]senord(?:et)?|has[łl]o|[şs]ifre|jelsz[óo]|contrase[ñn]a|clave|contrasenya|parol[aă](?: d['’]ordine)?|kodeord(?:et)?|parool|lozinka|slapta[žz]odis|mot de passe|kata sandi|m[ậa]t kh[ẩa]u|пароль|κωδικός|密码|密碼|パスワード|비밀번호|암호|รหัสผ่าน|كلمة [اl]لمرور|كلمة [اl]لسر|סיסמה|पासवर्ड)|(api[- ]?schl[üu]ssel|cl[ée] (?:d'|de l')?api|clave (?:de )?api|chiave (?:dell['’])?api|api[- ]?kulcs|api[- ]?avain|api[- ]?n[øo]gle|api[- ]?n[øo]kkel|kl[íi][čc] api|api[- ]?kl[íi][čc]|api anahtar[ıi]|kh[óo]a api|kunci api|chave (?:de )?api|klucz api|api[- ]?sleutel|api[- ]?nyckel|ключ api|api[- ]?ключ|api ?キー|api ?密钥|api ?密鑰|密钥|api ?키)|(токен|トークン|토큰|令牌))[ \t]*$/u;
/** The last words of LOCAL_NAME's names written in ASCII, as a name's last word (`DB_PASSWORT`): a name read so may end one. */
const LOCAL_NAME_END = /(?:^|[_.-])(?:passwort|kennwort|wachtwoord|senha|heslo|geslo|salasana|passord(?:et)?|adgangskoden?|losenord(?:et)?|haslo|sifre|jelszo|contrasena|clave|contrasenya|parola|kodeord(?:et)?|parool|lozinka|slaptazodis|ordine|kulcs|avain|nogle|nokkel|klic|anahtari|passe|sandi|khau|api|schlussel|sleutel|nyckel)$/;
/**
 * LOCAL_NAME's names in scripts some of whose letters the confusables fold to ASCII ones (Cyrillic, Greek, Hebrew,
 * Arabic), as the normalized text writes them in lower case, upper case or capitalized (`Пароль` as `Пapoль`, `ТОКЕН`
 * as `TOKEH`), each with what it reads as: where a fullwidth colon follows them, it is read only there, in the
 * normalized text. Folded by the normalization itself.
 */
const FOLDED_LOCAL_NAMES: ReadonlyMap<string, string> = foldedNames({
  password: ['пароль', 'κωδικός', 'סיסמה', 'पासवर्ड', 'รหัสผ่าน', 'كلمة المرور', 'كلمة السر'],
  api_key: ['ключ api', 'api ключ', 'api-ключ'],
  token: ['токен'],
});
/** The lengths of FOLDED_LOCAL_NAMES' names, longest first, and their last characters. */
const FOLDED_LENGTHS = [...new Set([...FOLDED_LOCAL_NAMES.keys()].map((n) => n.length))].sort((a, b) => b - a);
const FOLDED_LAST = new Set([...FOLDED_LOCAL_NAMES.keys()].map((n) => n.charCodeAt(n.length - 1)));

function foldedNames(groups: Record<string, readonly string[]>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, words] of Object.entries(groups))
    for (const w of words)
      for (const form of [w, w.toUpperCase(), w.charAt(0).toUpperCase() + w.slice(1)]) {
        const folded = (normalizeForDetection(form)?.text ?? form).toLowerCase();
        if (folded !== w) out.set(folded, name);
      }
  return out;
}

/** The name of FOLDED_LOCAL_NAMES that `before` (lower case) ends with, blanks after it left out and no letter before it: its length and what it reads as. */
function foldedLocalName(before: string): { length: number; name: string } | undefined {
  let e = before.length;
  while (e > 0 && (before.charCodeAt(e - 1) === 32 || before.charCodeAt(e - 1) === 9)) e--;
  if (!FOLDED_LAST.has(before.charCodeAt(e - 1))) return undefined;
  for (const n of FOLDED_LENGTHS) {
    if (n > e) continue;
    const name = FOLDED_LOCAL_NAMES.get(before.slice(e - n, e));
    if (name !== undefined && !(e - n > 0 && LETTER.test(before[e - n - 1]!))) return { length: before.length - (e - n), name };
  }
  return undefined;
}
const LETTER = /\p{L}/u;

/** The name a password's, a key's or a token's name in another language ends `s` before `end` with (LOCAL_NAME, FOLDED_LOCAL_NAMES): where it starts, and what it reads as. */
function localName(s: string, end: number): { start: number; name: string } | undefined {
  const from = Math.max(0, end - 24);
  const before = s.slice(from, end).toLowerCase();
  const m = LOCAL_NAME.exec(before);
  if (m === null) {
    const folded = foldedLocalName(before);
    return folded === undefined ? undefined : { start: end - folded.length, name: folded.name };
  }
  return { start: from + m.index, name: m[1] !== undefined ? 'password' : m[2] !== undefined ? 'api_key' : 'token' };
}
/** A numeric password: 6 to 64 digits, not one digit repeated. */
const NUMERIC_PASSWORD = /^(?!(\d)\1*$)\d{6,64}$/;
/** The names a numeric password is read under: a password's own words and a passcode (a meeting's, `Passcode: 839201`; not `pass`, `psk` or `pw`, which name counts and codes too, nor a PIN, which names India's postal codes). */
const NUMERIC_NAME = /(?:passw(?:or)?d|passphrase|passcode|pwd)$/;
/** A name that says it holds a password, a passphrase or a passcode (as its last word; `pass` as a word of its own, not `compass`; a Wi-Fi network's pre-shared key, `psk`; `pw`; shorthand, `pswd`, `pword`, `passw`, `psw`). */
const PASSWORD_NAME = /(?:passw(?:or)?d|passphrase|passcode|pwd|passw|pswd|pword|(?:^|[_.-])(?:pass|psk|pw|psw))$/;
/** Names of keys that are public by design (a public key, a public token, a publishable key, a WebSocket handshake's nonce): their values are no secret. */
const PUBLIC_NAME = /pub(?:lic)?[_.-]?(?:key|token)$|publishable|websocket-(?:key|accept)$/;
/**
 * Names of keys and tokens that look a record up or mark a place, not grant access: a database's sort, partition,
 * primary or foreign key, a cache's, a lock's or an object store's key, an idempotency key, a translation key, a hot
 * key, a page's or a sync's token, a CSRF token (`"sort_key": "2024-01-15T10:00:00Z#order#A1B2"`, `"redis_key":
 * "session:7f3c9b2e:data"`, `"next_page_token": "CiAK..."`).
 */
const LOOKUP_NAME =
  /(?:sort|partition|primary|foreign|composite|unique|natural|surrogate|row|range|hash|cache|lock|redis|storage|object|bucket|s3|dedupe?|idempotency|lookup|index|idx|map|dict|group|shard|schema|sequence|translation|i18n|locale|hot|shortcut)[_.-]?keys?$|(?:cursor|page|continuation|pagination|sync|resume|progress|csrf|xsrf)[_.-]?tokens?$/;
/**
 * A name that holds a secret word but ends in a word that says its value tells where or what the secret is, not the
 * secret (`secret_name`, `private_key_path`, `api_key_header`, `password_hash_algorithm`, `secretsFile`): read only
 * where the name's last word is none of the secret words (SECRET_NAME_END).
 */
const REFERENCE_NAME =
  /(?:file|filename|path|dir|directory|folder|location|name|ref|id|arn|env|var|param|header|url|uri|endpoint|algorithm|algo|type|length|size|ttl|format|field|version|hint|policy|provider|mode|method|audience|issuer|config|configuration|settings|options|schema|manager|service|handler|factory|callback|validator|hasher|encoder)s?$/;
/**
 * One segment of a path (`service-account.json`, `.ssh`, `id_ed25519`, `Users`, `git-gui--askpass`): words of
 * lower-case letters and digits, each with at most a capital before it, between runs of `_ . @ -`. A random value's segments mix cases (the base64
 * of a key holds a `/` every 64 characters or so, between runs of mixed case).
 */
const PATH_SEGMENT = /^\.?[A-Z]?[a-z0-9]+(?:[_.@-]+[A-Z]?[a-z0-9]+)*$/;

/**
 * Whether `v` is a path (`/run/secrets/db_password`, `~/.ssh/id_ed25519`, `prod/db/credentials-v2`): a `/`, and every
 * segment a path's. A relative one's segments hold no run of letters and digits that switches between them three
 * times or more (`q3d5`): a random value's `Ayjjaqq3d5/Abvxxwxzv` is none, `k8s/prod` and `certs/ed25519` are paths.
 * A `.` after its last segment ends the sentence it stands in (`Credentials: aws/iam-role-prod1.`). A relative one
 * names two segments at least (`Gu42.0m/` is a password).
 */
function isPath(v: string): boolean {
  if (!v.includes('/')) return false;
  const c0 = v.charCodeAt(0);
  const relative = c0 !== 47 && c0 !== 126 && c0 !== 46;
  const path = v.endsWith('.') && !v.endsWith('..') ? v.slice(0, -1) : v;
  // (One that starts with `./` or `../`, a module's, may name its files in camel case: `./helpers/esm/toPropertyKey.js`.)
  const dotted = v.startsWith('./') || v.startsWith('../');
  let named = 0;
  for (const seg of (c0 === 126 /* ~ */ ? path.slice(1) : path).split('/')) {
    if (!(seg === '' || seg === '.' || seg === '..' || PATH_SEGMENT.test(seg) || (dotted && camelSegment(seg)))) return false;
    if (relative && LETTERS_AND_DIGITS_SWITCHING.test(seg)) return false;
    // (A relative path's segment of one letter is a password's mark and what follows it: `Av@h94os/d`; one of a digit
    // is a version's, `secrets/db-password/versions/3`.)
    if (relative && seg.length === 1 && isLetter(seg.charCodeAt(0))) return false;
    // (Nor one of one-character pieces, a letter's and a digit's among three or more between marks: `1.u@wv/0`.)
    if (relative && ONE_CHARACTER_PIECES.test(seg) && ONE_DIGIT_PIECE.test(seg)) return false;
    if (seg !== '') named++;
  }
  // (A relative path names two segments at least: one and a `/` after it, `Gu42.0m/`, is a password's marks.)
  return !relative || named >= 2;
}
/** A path segment's piece of one letter, a mark or the segment's start or end on each side of it, two marks in the segment at least. */
const ONE_CHARACTER_PIECES = /^(?=(?:[^_.@-]*[_.@-]){2})(?:.*[_.@-])?[A-Za-z](?:[_.@-]|$)/;
/** ... and a piece of one digit so. */
const ONE_DIGIT_PIECE = /(?:^|[_.@-])[0-9](?:[_.@-]|$)/;
/** A segment of words in camel case, `_ . @ -` between them at most (`toPropertyKey.js`, `classPrivateFieldLooseKey.js`). */
const CAMEL_SEGMENT = /^\.?[A-Za-z][a-z0-9]*(?:[_.@-]*[A-Z]?[a-z0-9]+)*$/;
/** Whether `seg` is CAMEL_SEGMENT's, each of its words read as one (wordLike), a number or a short abbreviation (`esm`, `cjs`). */
function camelSegment(seg: string): boolean {
  return CAMEL_SEGMENT.test(seg) && (seg.match(/[A-Z]?[a-z0-9]+/g) ?? []).every((w) => /^(?:[0-9]+|[a-z]{2,4})$/.test(w) || wordLike(w));
}
/**
 * Letters and digits switching three times in a row (`q3d5`, `3d5q`), or a capital first and a digit between its
 * letters (`Tf7t`: a folder's name capitalized is a word, `Documents`, `MyApp2`; `k8s` and `i18n` are lower-case).
 */
const LETTERS_AND_DIGITS_SWITCHING = /[a-z][0-9]+[a-z]+[0-9]|[0-9][a-z]+[0-9]+[a-z]|^[A-Z][a-z]*[0-9]+[a-z]/;

/** An identifier of a program (`Uint8Array`, `ProgressTokenSchema$1`, `openid4vciIssueCredential`): a type's or a variable's name. */
const IDENT = /^[A-Za-z_$][\w$]*$/;

/** Whether what follows a value at `end` ends a type annotation's type (`;`, `|`, `,`, `)`, `=`, `>`, `<`, `[`): `password: Uint8Array;`. */
function endsType(s: string, end: number): boolean {
  let k = end;
  while (codeAt(s, k) === 32) k++;
  const c = codeAt(s, k);
  return c === 59 || c === 124 || c === 44 || c === 41 || c === 61 || c === 62 || c === 60 || c === 91;
}

/** A GPG key's fingerprint (40 hex digits) or long id (16), one case, `0x` before it at most. */
const KEY_FINGERPRINT = /^(?:0x)?(?:[0-9A-F]{40}|[0-9a-f]{40}|[0-9A-F]{16}|[0-9a-f]{16})$/;
/**
 * Whether `value` is a GPG key's fingerprint or long id under `name` (a key's, a fingerprint's or an id's) that `s`
 * from `from` to `to` (the name and what stands before it) says is GPG's or PGP's; read only for a value of that shape.
 */
function gpgFingerprint(name: string, value: string, s: string, from: number, to: number): boolean {
  return KEY_FINGERPRINT.test(value) && /(?:key|fingerprint|id)$/.test(name) && /gpg|pgp/i.test(s.slice(from, to));
}
/** A Codecov badge's or graph's link up to its query, where what follows is a parameter of it (CODECOV_BADGE_AT: up to 256 characters back). */
const CODECOV_BADGE = /codecov\.io\/[^\s"'<>()]*\/(?:badge\.svg|graphs?\/[^\s"'<>()?]*)\?(?:[^\s"'<>()]*&)?$/i;
const CODECOV_BADGE_AT = 256;
/** Whether the name at `nameStart` is a parameter of a Codecov badge's link (`https://codecov.io/gh/o/r/graph/badge.svg?token=...`): a token shown in every README that carries the badge. */
function codecovBadge(s: string, nameStart: number): boolean {
  return queryParameter(s, nameStart) && CODECOV_BADGE.test(s.slice(Math.max(0, nameStart - CODECOV_BADGE_AT), nameStart));
}
/** Whether the name at `nameStart` is a URL query's parameter: `?` or `&` before it. */
function queryParameter(s: string, nameStart: number): boolean {
  const c = codeAt(s, nameStart - 1);
  return c === 63 || c === 38;
}

/** Whether the name at `nameStart` is a part of an ARN or a URN (`arn:partition:service:region:account:secret:...`, `urn:ietf:params:oauth:token-type:...`): the run of non-blank characters it ends starts with `arn:` or `urn:`. */
function inArnOrUrn(s: string, nameStart: number): boolean {
  if (codeAt(s, nameStart - 1) !== 58) return false;
  let k = nameStart - 1;
  while (k > 0 && nameStart - k < 256 && !isSpace(s.charCodeAt(k - 1)) && s.charCodeAt(k - 1) !== 34 && s.charCodeAt(k - 1) !== 39) k--;
  return s.startsWith('arn:', k) || s.startsWith('urn:', k);
}

/**
 * Words a declaration starts with, or the type of a typed one (C, C++, C#, Java, Go's basic types): the name after one
 * is a variable of a program, its value an expression or a literal (`long key = 0x9E3779B97F4A7C15L;`).
 */
const DECLARES =
  /(?:^|[^\w$])(?:const|let|var|val|readonly|private|protected|public|static|final|long|int|short|byte|char|double|float|bool|boolean|auto|unsigned|signed|u?int(?:8|16|32|64)(?:_t)?|size_t|uint|ulong|ushort|sbyte|decimal|string|String)$/;

/** How far back on its line a name after `,` looks for the bracket that opens its list (LIST_OPENERS). */
const LIST_REACH = 256;
/** A word before a blank and `(` that opens a program's list: a function's parameters, `async (user: User, ...) =>`. */
const LIST_OPENERS = /(?:^|[^\w$])(?:async|function|func|fn|def|return|await|yield|new|if|while|for|switch|catch)$/;
/**
 * Whether the `,` at `k` stands in a program's list: an object's or a parameter list's, a `{` or a `(` left open before
 * it on its line, the `(` a call's or a function's (glued to what it follows, or after `=`, `=>` or LIST_OPENERS' word).
 * A `(` after a word of prose and a blank opens a remark (`Log in (user: admin, password: ...)`), and with no bracket open
 * the pairs are prose's or a config's (`user: admin, password: ...`). A line longer than LIST_REACH is read as a program's.
 */
function listOpen(s: string, k: number): boolean {
  let depth = 0;
  for (let j = k - 1; j >= 0; j--) {
    if (k - j > LIST_REACH) return true;
    const c = s.charCodeAt(j);
    if (c === 10 || c === 13) return false;
    if (c === 41 || c === 93 || c === 125) depth++;
    else if (c === 40 || c === 91 || c === 123) {
      if (depth > 0) {
        depth--;
        continue;
      }
      if (c !== 40) return true;
      const b = codeAt(s, j - 1);
      if (b < 0 || !isSpace(b)) return b >= 0;
      let w = j - 1;
      while (w >= 0 && isSpace(s.charCodeAt(w)) && s.charCodeAt(w) !== 10) w--;
      const word = s.slice(Math.max(0, w - 15), w + 1);
      return word.endsWith('=') || word.endsWith('=>') || word.endsWith(',') || LIST_OPENERS.test(word);
    }
  }
  return false;
}

/**
 * Whether the name [nameStart, …) stands in a program rather than a config: a variable declared (`const key = …`,
 * `private readonly token = …`), or a name written bare after `{`, `(` or `,` and before `:` (`op`; a member of an
 * object literal, a parameter with its type: `{key: "_getString"}`, `(password: Uint8Array, …)`), or a variable that
 * `$` starts before `=` (PowerShell's, PHP's, Perl's), a declarator after a string literal and `,` (a declaration's
 * list), or a member written with `->` or after `this.`, `this.#` or `self.`. A
 * JSON member's name is quoted and a config's line starts with its name, so neither is read as a program.
 */
function inProgram(s: string, nameStart: number, op: number): boolean {
  // (A member written with `->`, C's, C++'s and PHP's, or after `this.` or `self.`: `mngr->getKey = xmlSecKeysMngrGetKey;`,
  // `this.#functionsByKey = parent.#functionsByKey`.)
  if ((codeAt(s, nameStart - 1) === 62 && codeAt(s, nameStart - 2) === 45) || s.startsWith('this.', nameStart) || s.startsWith('self.', nameStart) || (nameStart >= 6 && s.startsWith('this.#', nameStart - 6))) return true;
  let k = nameStart - 1;
  for (let b = 0; b < 8 && (codeAt(s, k) === 32 || codeAt(s, k) === 9); b++) k--;
  const c = codeAt(s, k);
  if (op === 58 && (c === 123 || c === 40 || (c === 44 && listOpen(s, k)))) return true;
  // (A declarator after a string literal and `,`, a declaration's list: `const a = "...", ssrExportAllKey = "...";`.)
  if (op === 61 && c === 44 && (codeAt(s, k - 1) === 34 || codeAt(s, k - 1) === 39 || codeAt(s, k - 1) === 96)) return true;
  // (A variable that `$` starts, `$pw = ConvertTo-SecureString ...` in PowerShell, `$password = getenv(...)` in PHP or Perl,
  // is a program's: a value written out there is quoted.)
  if (op === 61 && codeAt(s, nameStart - 1) === 36) return true;
  const before = s.slice(Math.max(0, k - 12), k + 1);
  // (A shell's `readonly DB_PASSWORD=...` declares a variable of a script, whose value is written out.)
  return DECLARES.test(before) && !(op === 61 && before.endsWith('readonly'));
}

/**
 * A token random to look at: 16 characters or more of letters of both cases and digits (`_`, `-` among them), 3.5 bits
 * each, not words (`strict`: not words in every part, chars.ts, wordy).
 */
const RANDOM_TOKEN = /^(?=[\w-]*[0-9])(?=[\w-]*[a-z])(?=[\w-]*[A-Z])[\w-]{16,}$/;
function randomToLook(v: string, strict = false): boolean {
  return RANDOM_TOKEN.test(v) && shannonEntropy(v) >= BARE_RANDOM && !wordy(v, strict);
}

/** A name whose only secret word is `key` or `auth` (`cache_key`, `objectKey`, `key`, `auth`): what programs name a map's keys and options by. */
const WEAK_NAME = /(?:key|auth)$/;

/**
 * A value that is an expression of a program, not one written out: a member chain with operators or not
 * (`r.C0.ESC`, `this._keyPriorReset`, `s?r.C0.ESC+`, `j.isWritable=j.isReadable`), an index (`allKeys[i]`), `?.`,
 * `??`, `||`, `&&`.
 */
const EXPRESSION = /[[\]]|\?\.|\?\?|\|\||&&/;
const MEMBER_CHAIN = /^[\w$#.?:!+\-*/%<>=]+$/;
const MEMBER = /(?:^|[^\w$])[A-Za-z_$][\w$]*\.[A-Za-z_$#][\w$]*/;

/** What a member chain's operators are made of. */
const OPERATOR_CHAR = /[?:!+*%<>=]/;
/** A part of a member chain as programs name them: letters (and `_ $ #`), then digits at most (`r`, `C0`, `_keyPriorReset`). */
const CHAIN_PART = /^[A-Za-z_$#][A-Za-z_$]*[0-9]*$/;

/**
 * Whether a part of a member chain mixes lower and upper case as a random run does, not as words joined in camel case
 * do: not in words, and 10 characters or more with five switches between the cases or more (`ksSYIvFyGlHPwR0`; not
 * `getElementsByTagName`, `ExtensionOID`, `PRIVATE_KEY_USAGE`), or a piece no camel case makes.
 */
function randomCase(part: string): boolean {
  if (part.length < 8 || !/[a-z]/.test(part) || !/[A-Z]/.test(part) || wordy(part)) return false;
  let switches = 0;
  for (let k = 1; k < part.length; k++) if ((isLower(part.charCodeAt(k)) && isUpper(part.charCodeAt(k - 1))) || (isUpper(part.charCodeAt(k)) && isLower(part.charCodeAt(k - 1)))) switches++;
  if (switches >= 5 && part.length >= 10) return true;
  // (Or one that is no words in camel case: each piece a capital and lower-case letters, two or more lower-case
  // letters, or capitals, digits after: `IwvqW5Zo`; not `ExtensionOID`, `MyCode`.)
  for (const piece of part.match(CAMEL_PIECES) ?? []) if (!CAMEL_PIECE.test(piece)) return true;
  return false;
}
const CAMEL_PIECES = /[A-Z]+(?![a-z])[0-9]*|[A-Z]?[a-z0-9]+/g;
const CAMEL_PIECE = /^(?:[A-Z][a-z]+|[a-z]{2,}|[A-Z]{2,})[0-9]*$/;

/** What separates the parts of a member chain with operators: the operators, `.`, `-` and `/`. */
const CHAIN_SEPARATORS = /[?:!+*%<>=./-]+/;

/**
 * Whether an unquoted value is an expression: EXPRESSION, or a member chain (`a.b`) among names and operators where
 * all of its parts but one at most are named as programs name them (`j.isWritable=j.isReadable`, `s?r.C0.ESC+`), or
 * alone where each of them is (a token with a dot, `ya29.a0AfH6SM...`, mixes letters and digits in a part: it is no
 * chain; nor is a random run of letters, digits, `.` and `=`, `Jk5xQth=YjhY0D0bX4K.OD5G...`, `K5.tN9nK=WLAcAZDss89`).
 */
export function isExpression(v: string): boolean {
  if (EXPRESSION.test(v)) return true;
  if (!MEMBER_CHAIN.test(v) || !MEMBER.test(v)) return false;
  if (!OPERATOR_CHAR.test(v)) return v.split('.').every((part) => CHAIN_PART.test(part) && !randomCase(part));
  let other = 0;
  for (const part of v.split(CHAIN_SEPARATORS)) {
    if (part === '') continue;
    if (!CHAIN_PART.test(part) && ++other > 1) return false;
    // (A part of letters of both cases and digits, in no words, is a random run's: `WLAcAZDss89`, `gbLaDfYqiu`.)
    if ((part.length >= 8 && classesOf(part) >= 3 && !wordy(part)) || randomCase(part)) return false;
  }
  return true;
}

/**
 * An identifier of several words (`OPENAI_API_KEY_2`, `_ALLOWED_KEY_TYPES`, `PROJ-1234`, `my-app-secrets-v3`, `X-Api-Key-2`,
 * `__vite_ssr_import__`): what a config names a
 * key or a secret by, or the prefix of one (`deps-v1-`). Each word letters then digits, or digits (`a8f3-k2j9` is no
 * identifier).
 */
const IDENTIFIER = /^(?:_*[A-Z]+[0-9]*(?:[_-](?:[A-Z]+[0-9]*|[0-9]+))+_*|_*[a-z]+[0-9]*(?:[_.-](?:[a-z]+[0-9]*|[0-9]+))+[_.-]*|[A-Z][a-z]*[0-9]*(?:-(?:[A-Z][a-z]*[0-9]*|[0-9]+))+)$/;

/** One word between marks a name is made of, `_`, `.` and `-` (a cookie's prefix, `__Secure-`; `_private_`): a name, under a name that is not a password's. */
const ONE_WORD = /^[_.-]*([A-Z]?[a-z]+)[_.-]*$/;
function oneWord(v: string): boolean {
  const m = ONE_WORD.exec(v);
  return m !== null && wordLike(m[1]!);
}

/**
 * A word after a secret's name that says which of several it is, not that it is none: a number or a version
 * (`API_TOKEN_2`, `password2`, `db_password_v2`), an environment (`GITHUB_TOKEN_PROD`, `SLACK_TOKEN_DEV`), an age or
 * a role (`AUTH_TOKEN_OLD`, `API_TOKEN_RO`), how it is held (`token_value`, `apiTokenValue`, `SECRET_KEY_B64`). Words
 * that say what a value tells about a secret (`token_type`, `key_size`, `secret_name`) are none of these.
 */
const QUALIFIER =
  /(?:[_.-](?:v?\d{1,4}|prod|production|dev|development|stag(?:e|ing)|test|testing|qa|uat|live|sandbox|local|old|new|prev|previous|next|current|curr|primary|secondary|backup|alt|main|default|ro|rw|readonly|read|write|admin|raw|value|string|str|plain|plaintext|b64|base64|hex|enc|encoded|encrypted)|(?<=[a-z])\d{1,4}|(?<=token|secret|passw(?:or)?d|key)(?:value|string|raw))$/;
/**
 * The qualifiers taken after a name whose only secret word is `key` or `auth` (WEAK_NAME): an environment after a
 * word and a separator (`STRIPE_KEY_LIVE`). Programs number a map's keys (`key1: 'value1'`, `subkey2`,
 * `..._namespace_key_1540`) and name a pair's (`key_value`, `keyStr`).
 */
const ENVIRONMENT = /^[_.-](?:prod|production|dev|development|stag(?:e|ing)|test|testing|qa|uat|live|sandbox)$/;

/** A name (lower case) without the qualifiers after it (QUALIFIER, two at most): `api_token_prod_2` as `api_token`. */
function nameStem(name: string): string {
  let n = name;
  for (let q = 0; q < 2; q++) {
    const m = QUALIFIER.exec(n);
    if (m === null || m.index === 0) break;
    const stem = n.slice(0, m.index);
    if (WEAK_NAME.test(stem) && !SECRET_NAME_ANY.test(stem) && !(ENVIRONMENT.test(m[0]) && /[a-z0-9][_.-](?:key|auth)$/.test(stem))) break;
    // (Digits glued to a word of fewer than five letters are a random run's as often: `pSk01=...`, `pin2`.)
    if (isDigit(m[0].charCodeAt(0)) && stem.length < 5) break;
    n = stem;
  }
  return n;
}

/** Whether a name (lower case) says its value is a secret: a secret's word, not a reference to one, a public key or a lookup key; a qualifier after it left out. */
function secretNamed(full: string): boolean {
  return stemNamesSecret(nameStem(full));
}

/** secretNamed of a name its qualifiers are already left out of (nameStem). */
function stemNamesSecret(name: string): boolean {
  return (SECRET_NAME_END.test(name) || (SECRET_NAME_ANY.test(name) && !REFERENCE_NAME.test(name))) && !PUBLIC_NAME.test(name) && !LOOKUP_NAME.test(name);
}

function isNameChar(c: number): boolean {
  return isAlnum(c) || c === 95 || c === 45 || c === 46;
}

/** A URL query's parameter's name and its `=`, read where a `&` stands before it. */
const QUERY_PARAMETER = /[A-Za-z_][\w.[\]-]{0,63}=/y;

/** Stops a value: blanks, quotes, `;` `,` (the next pair of a connection string, a list), closing brackets, `<` `>`. */
function isValueStop(c: number): boolean {
  return c < 0 || isSpace(c) || c === 34 || c === 39 || c === 96 || c === 59 || c === 44 || c === 41 || c === 93 || c === 125 || c === 60 || c === 62;
}

/**
 * `is` in the languages LOCAL_NAME names a secret in, between the name and its value (`Das Passwort ist ...`, `le mot de
 * passe est ...`, `la contraseña es ...`, `a senha é ...`, `la password è ...`, `passordet er ...`, `lösenordet är ...`,
 * `hasło jest ...`, `heslo je ...`, `parola este ...`, `slaptažodis yra ...`, `kata sandi adalah ...`, `mật khẩu là ...`,
 * `ο κωδικός είναι ...`): read only after a name LOCAL_NAME knows or a secret's word (localVerbNamed).
 */
const LOCAL_VERBS = ['ist', 'est', 'es', '\u00e9s', '\u00e9', '\u00e8', 'er', '\u00e4r', 'jest', 'je', 'este', 'yra', 'adalah', 'l\u00e0', '\u03b5\u03af\u03bd\u03b1\u03b9'];
/** A secret's word in English as the last word before a verb of LOCAL_VERBS (`password ist ...`). */
const SECRET_WORD_BEFORE = /(?:passw(?:or)?d|passphrase|pwd|token|key|secret)[ \t]*$/i;
/** Whether the name before a verb of LOCAL_VERBS at `at` names a secret: a name LOCAL_NAME knows, or a secret's word. */
function localVerbNamed(s: string, at: number): boolean {
  const before = s.slice(Math.max(0, at - 24), at);
  return SECRET_WORD_BEFORE.test(before) || localName(s, at) !== undefined;
}

/** What prose says between a secret's name and its value (OTHER_OPERATORS finds each, with the blanks around it; ` to ` only after a verb that sets). */
const PROSE_VERBS = [' is ', ' was ', ...LOCAL_VERBS.map((v) => ` ${v} `), ' is: ', ' is now ', ' was now ', ' is still ', ' is set to ', ' was set to ', ' was changed to ', ' was reset to ', ' has been set to ', ' has been changed to ', ' has been reset to ', ' - ', ' \u2013 ', ' \u2014 ', ' \u2192 ', ' -> ', ' --> ', ' \u21d2 ', ' \u27f6 ', ' \u2794 ', ' \u279c ', ' \u27a1 ', ' <- ', ' to '];

/** Where the prose verb that the blank at `i` ends starts (PROSE_VERBS), or -1 (the blank ends a command's flag or a password's word). */
function proseVerbAt(s: string, i: number): number {
  for (const v of PROSE_VERBS) if (s.startsWith(v, i + 1 - v.length)) return i + 1 - v.length;
  return -1;
}

/** The words that say whose a secret is after its name in prose (`the password for ...`, `the token of ...`). */
const OWNER_WORDS = new Set(['for', 'of', 'on', 'to', 'at', 'in']);

/** A character of a word of prose between a name and its verb (`staging`, `prod-db-01`, `ops@example.com`). */
function isProseWordChar(c: number): boolean {
  return isAlnum(c) || c === 95 || c === 45 || c === 46 || c === 64;
}

/** The start of the blanks that end at `at` (at most back to `limit`). */
function blanksBefore(s: string, at: number, limit: number): number {
  while (at > limit && (s.charCodeAt(at - 1) === 32 || s.charCodeAt(at - 1) === 9)) at--;
  return at;
}

/** A closing quote, and the quotes that open what it closes: `"`, `'`, `’` (or `'` opens it), `”`. */
const QUOTE_PAIRS = new Map<number, readonly number[]>([
  [34, [34]],
  [39, [39]],
  [0x2019, [0x2018, 39]],
  [0x201d, [0x201c]],
]);

/**
 * In prose, a secret's name before words that say whose it is, then the verb at `e`: `the root password for the
 * staging box is now ...`, `the API token of the deploy bot was ...`. Within the 96 characters before the verb, word by
 * word back: one to five words, an owner's word (OWNER_WORDS), and the name before it; its [start, end), or undefined.
 */
function proseOwner(s: string, e: number): [number, number] | undefined {
  const limit = Math.max(0, e - 96);
  let end = e;
  for (let n = 0; n <= 5; n++) {
    // (A word quoted, a name's or a network's: `Password for 'admin': ...`, `for the wifi network "Office": ...`.)
    const close = QUOTE_PAIRS.get(codeAt(s, end - 1));
    const wordEnd = close === undefined ? end : end - 1;
    let start = wordEnd;
    while (start > limit && isProseWordChar(s.charCodeAt(start - 1))) start--;
    if (start === wordEnd) return undefined;
    if (close !== undefined) {
      if (!close.includes(codeAt(s, start - 1))) return undefined;
      start--;
    }
    const k = blanksBefore(s, start, limit);
    if (k === start) return undefined;
    if (n >= 1 && end - start <= 3 && OWNER_WORDS.has(s.slice(start, end))) {
      let nameStart = k;
      while (nameStart > limit && (isAlnum(s.charCodeAt(nameStart - 1)) || s.charCodeAt(nameStart - 1) === 95 || s.charCodeAt(nameStart - 1) === 45)) nameStart--;
      return nameStart < k && isLetter(s.charCodeAt(nameStart)) ? [nameStart, k] : undefined;
    }
    end = k;
  }
  return undefined;
}

/** Characters a remark in brackets after a name holds at most (`(temporary)`, `(prod, read-only)`). */
const REMARK = 40;

/**
 * A name, then a remark in brackets that ends at `k` (its `)`), before a colon: `Password (temporary): ...`, `API key
 * (production): ...`; the name's [start, end), or undefined. The remark holds no bracket and no line break.
 */
function remarkedName(s: string, k: number): [number, number] | undefined {
  let j = k - 1;
  const limit = Math.max(0, k - REMARK);
  while (j > limit && s.charCodeAt(j) !== 40 && s.charCodeAt(j) !== 41 && s.charCodeAt(j) !== 10) j--;
  if (s.charCodeAt(j) !== 40 || j === k - 1 || codeAt(s, j - 1) !== 32) return undefined;
  const nameEnd = j - 1;
  let nameStart = nameEnd;
  while (nameStart > 0 && nameEnd - nameStart < MAX_NAME && isNameChar(s.charCodeAt(nameStart - 1))) nameStart--;
  return nameStart < nameEnd ? [nameStart, nameEnd] : undefined;
}

/**
 * A label in brackets that starts its line, its name inside them, the bracket's closing one at `k` (`[password]: ...`,
 * `(API key): ...`, after a list's mark at most): the name's [start, end), or undefined.
 */
function bracketedName(s: string, k: number): [number, number] | undefined {
  const opener = s.charCodeAt(k) === 41 ? 40 : 91;
  let j = k - 1;
  while (j >= 0 && k - j <= MAX_NAME && (isNameChar(s.charCodeAt(j)) || s.charCodeAt(j) === 32)) j--;
  if (codeAt(s, j) !== opener || j + 1 === k) return undefined;
  let b = j - 1;
  while (b >= 0 && (s.charCodeAt(b) === 32 || s.charCodeAt(b) === 9)) b--;
  if (b >= 0 && (s.charCodeAt(b) === 45 || s.charCodeAt(b) === 42) && (b === 0 || isSpace(s.charCodeAt(b - 1)))) b--;
  while (b >= 0 && (s.charCodeAt(b) === 32 || s.charCodeAt(b) === 9)) b--;
  return b < 0 || s.charCodeAt(b) === 10 || s.charCodeAt(b) === 13 ? [j + 1, k] : undefined;
}

/** Characters a type's brackets hold at most (`Optional[str]`, `dict[str, str]`), and the types of a union (`str | None`). */
const TYPE_BRACKETS = 48;
const TYPE_UNION = 3;

/**
 * The name of an annotated assignment whose type ends at `k` (the last character before `=` and its blanks):
 * `name: Type = value`, the type a dotted name with brackets after it or a union of up to TYPE_UNION of them
 * (`str`, `Optional[str]`, `typing.Optional[str]`, `str | None`); its [start, end), or undefined. Read back from `k`,
 * a bounded number of characters.
 */
function typedName(s: string, k: number): [number, number] | undefined {
  let j = k;
  for (let part = 0; ; part++) {
    if (codeAt(s, j) === 93) {
      let depth = 0;
      const limit = j - TYPE_BRACKETS;
      for (; j > limit && j >= 0; j--) {
        const c = s.charCodeAt(j);
        if (c === 93) depth++;
        else if (c === 91 && --depth === 0) break;
        else if (c === 10 || c === 61 || c === 59) return undefined;
      }
      if (depth !== 0) return undefined;
      j--;
    }
    const typeEnd = j;
    while (j >= 0 && typeEnd - j <= MAX_NAME && (isWord(s.charCodeAt(j)) || s.charCodeAt(j) === 46)) j--;
    if (j === typeEnd || !isLetter(codeAt(s, j + 1))) return undefined;
    while (codeAt(s, j) === 32 || codeAt(s, j) === 9) j--;
    // (A reference's type, Rust's: `API_KEY: &str`, `&'static str`.)
    let l = j;
    while (l >= 0 && j - l < 16 && isWord(s.charCodeAt(l))) l--;
    if (l < j && codeAt(s, l) === 39 && codeAt(s, l - 1) === 38) j = l - 1;
    if (codeAt(s, j) === 38) {
      j--;
      while (codeAt(s, j) === 32 || codeAt(s, j) === 9) j--;
    }
    if (codeAt(s, j) !== 124 || part + 1 >= TYPE_UNION) break;
    j--;
    while (codeAt(s, j) === 32 || codeAt(s, j) === 9) j--;
  }
  // The `:` of the annotation (not a scope's `::`), the name before it.
  if (codeAt(s, j) !== 58 || codeAt(s, j - 1) === 58) return undefined;
  j--;
  while (codeAt(s, j) === 32 || codeAt(s, j) === 9) j--;
  const end = j + 1;
  while (j >= 0 && end - j <= MAX_NAME && isNameChar(s.charCodeAt(j))) j--;
  return end - (j + 1) >= 3 ? [j + 1, end] : undefined;
}

/**
 * A secret's word that may stand before its value with a blank alone: a password's (`... and password X`, a .netrc's
 * `password X` on a line of its own), or a token's, a key's or a secret's (`Use this token X to call the API`), whose
 * value then is random to look at (BARE_RANDOM).
 */
const BARE_WORD = /^(?:password|passwd|passphrase|token|key|secret)$/i;
/**
 * A name that ends in one of BARE_WORD's words, or in `pass` or `pwd`, after words joined by `_`, `-` or `.` (or in
 * camel case, BARE_CAMEL_NAME), before its value with a blank alone: a Dockerfile's `ENV API_KEY value`, `ENV DB_PASS
 * value`, Windows' `setx API_KEY
 * "value"`, a properties file's `spring.datasource.password value`, a config of `name value` lines (`smtp_password
 * value`, `ApiKey value`).
 */
const BARE_NAME = /^(?:[A-Za-z][A-Za-z0-9]*[_.-])+(?:password|passwd|passphrase|token|key|secret|pass|pwd)$/i;
/** The same name in camel case: the secret's word capitalized after a lower-case letter or a digit (`ApiKey`, `clientSecret`). */
const BARE_CAMEL_NAME = /^[A-Za-z][A-Za-z0-9]*[a-z0-9](?:Password|Passwd|Passphrase|Token|Key|Secret)$/;
function bareName(n: string): boolean {
  return BARE_NAME.test(n) || BARE_CAMEL_NAME.test(n);
}
/**
 * A command or instruction that sets the variable it names to the value after a blank: a
 * Dockerfile's `ENV NAME value` (its older form), csh's `setenv`, Apache's `SetEnv`, Windows' `setx`, fish's `set -x`
 * (`-gx`, `-Ux`, `--export`). A name after it that ends in a secret's word (BARE_NAME, found by OTHER_OPERATORS) is
 * read as before `=`, its value too: `ENV API_TOKEN Xk9...` of fewer than 16 characters, `setenv DB_PASS ...`. (A name
 * that ends in another word, `ENV SECRET_KEY_BASE ...`, is not looked for: the search for one at every blank cost 8 %
 * of a decision's detection, and a search for the commands first in each text 6 %.)
 */
const SETS_VARIABLE = String.raw`(?:ENV|SetEnv|setenv|setx|set[ \t]+(?:-[gUux]{1,3}|--export)(?:[ \t]+-[gUux]{1,3})?)[ \t]+`;
const DECLARED = new RegExp(`[\\s;&|(]${SETS_VARIABLE}$`);
/**
 * Whether the name at `nameStart` follows one of SETS_VARIABLE's commands, at a token's start (a line's, or after a
 * blank or a shell's `;`, `&&`, `|` or `(`: `cd app && setenv API_TOKEN ...`).
 */
function declaredByCommand(s: string, nameStart: number): boolean {
  // (The 48 characters before the name at most: the command and its flags. The text's start reads as a line's.)
  const from = Math.max(0, nameStart - 48);
  return DECLARED.test((from === 0 ? '\n' : '') + s.slice(from, nameStart));
}
/** Two words, the second one of BARE_WORD's: `API key`, `Access Token` (a label's). */
const BARE_PAIR = /^[A-Za-z]+[ \t](?:password|passwd|passphrase|token|key|secret)$/i;
/** Whether a token may start after `c`: the text's start, a blank, a line break, `(` or a quote. */
function startsToken(c: number): boolean {
  return c < 0 || isSpace(c) || c === 40 || c === 34 || c === 39 || c === 96;
}
/** What a token, a key or a secret after its word and a blank alone holds: 16 characters or more, a letter, a digit, 3.5 bits each. */
const BARE_RANDOM = 3.5;

/** The blank after the name of a command's flag whose `--` is at `at` (`--password VALUE`), or -1. */
function flagOperator(s: string, at: number): number {
  if (!isLetter(codeAt(s, at + 2)) || (at > 0 && !isSpace(s.charCodeAt(at - 1)))) return -1;
  let j = at + 3;
  while (j < s.length && j - at <= MAX_NAME && isNameChar(s.charCodeAt(j))) j++;
  return j - at - 2 >= 3 && (codeAt(s, j) === 32 || codeAt(s, j) === 9) ? j : -1;
}

/**
 * The dashes of a command's flag whose name starts at `at`: 2 for `--password`, 1 for a PowerShell parameter (a `-`
 * and a capital at a token's start: `-ClientSecret`, `-NuGetApiKey`) or a flag of one dash as Go's and Java's CLIs
 * write them (`influx -password ...`, `consul kv get -token ...`), else 0.
 */
function flagDashes(s: string, at: number): number {
  if (s.startsWith('--', at) && isLetter(codeAt(s, at + 2))) return 2;
  return codeAt(s, at) === 45 && isLetter(codeAt(s, at + 1)) && startsToken(codeAt(s, at - 1)) ? 1 : 0;
}

/** A Java tool's flag for a keystore's or a key's password (`keytool -storepass`, `-srcstorepass`, `jarsigner -keypass`). */
const STORE_PASS = /^(?:src|dest|new)?(?:store|key)pass$/;

/** A version, a decimal or an address written as numbers between dots (`1.302138`, `v2.14.0`, `10.0.0.1`). */
const DOTTED_NUMBER = /^v?[0-9]{1,12}(?:\.[0-9]{1,12}){1,3}$/;
/** A number as programs write one: hex of fewer than 32 digits (`0x9E3779B9`), decimal with a fraction, an exponent or a suffix. */
const NUMBER = /^(?:0x[0-9a-f]{1,31}[lun]{0,3}|[0-9][0-9_]*(?:\.[0-9_]*)?(?:e[+-]?[0-9]+)?[a-z]{0,2})$/i;

/** Keys pressed together: modifiers joined by `+` and a key. */
const SHORTCUT = /^(?:(?:control|ctrl|shift|alt|altgr|meta|cmd|command|option|opt|super|win|mod|fn|controlormeta)\+)+(?:[a-z0-9]{1,12}|[^\s+]|\+)$/i;

/** `.`, `,`, `!`, `?` or `:`: what ends a sentence or a clause. */
const isSentenceMark = (c: number): boolean => c === 46 || c === 44 || c === 33 || c === 63 || c === 58;

/** `=`, `!`, `<` or `>` before an `=`: a comparison's operator (`==`, `!=`, `<=`, `>=`). */
const isComparing = (c: number): boolean => c === 61 || c === 33 || c === 60 || c === 62;
/** The characters of a compound assignment before its `=`: `:`, `?`, `+`, `.`, `|`. */
const isCompounding = (c: number): boolean => c === 58 || c === 63 || c === 43 || c === 46 || c === 124;
/** Whether `c` ends a line (or the text). */
const isLineEnd = (c: number): boolean => c < 0 || c === 10 || c === 13;

/** Past blanks, one line break and the blanks after it from `k`, where a line break stands there (else `k`): an element's content on a line of its own. */
function afterLineBreak(s: string, k: number): number {
  let j = k;
  for (let b = 0; b < MAX_BLANKS && (codeAt(s, j) === 32 || codeAt(s, j) === 9); b++) j++;
  if (codeAt(s, j) === 13) j++;
  if (codeAt(s, j) !== 10) return k;
  j++;
  for (let b = 0; b < MAX_BLANKS && (codeAt(s, j) === 32 || codeAt(s, j) === 9); b++) j++;
  return j;
}

/**
 * Whether a value that starts with `$`, `<`, `@` or `*` names what holds the secret rather than writing it: a variable
 * (`$DB_PASSWORD`, `${VAR}`, `$(cat ...)`, `$HOME/...`), a placeholder or a heredoc (`<your-key>`, `<<EOF`), a
 * reference (`@secret_name`, `@file.txt`), a YAML alias (`*db_password`). A password of punctuation may start with one of them
 * (`@Yeek05fE^0bWMcC!gI1`, `<OwJ<6;yiGQv=wwqs@P7`).
 */
function referenceMark(v: string): boolean {
  const c = v.charCodeAt(0);
  // (A variable's name is written in one case, or in letters alone: `$HOME`, `$db_pass`, `$apiKey`; a hash's scheme,
  // `$2b$12$...`, `$argon2id$...`, is the password hash's reading's.)
  if (c === 36) return /^\$(?:[({\d]|[a-z0-9-]+\$|(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*|[A-Za-z_]+)(?!\w))/.test(v);
  if (c === 60) return /^<(?:<|[^<>]*>)/.test(v);
  if (c === 64) return /^@[\w./:-]*$/.test(v) && !randomToLook(v.slice(1));
  // (YAML's alias of an anchored value, `password: *db_password`.)
  if (c === 42) return /^\*[\w.-]+$/.test(v) && !randomToLook(v.slice(1));
  return false;
}

/**
 * A value in a row of comma-separated values that is a secret's: random to look at, or of both cases and digits with
 * four fifths of the entropy a value of its length can hold (as an assignment's: 3.2 bits at 16 characters,
 * `aaayg3IwygaGcmjK`); or 20 characters or more of 3.5 bits each, or 12 or more of 3 bits (four fifths of what their
 * length allows where that is less, 2.87 at 12) with punctuation among them (a password's), letters and digits among them, no blank and no words.
 */
function rowValue(v: string): boolean {
  if (randomToLook(v)) return true;
  if (!hasDigit(v) || !/[A-Za-z]/.test(v) || /\s/.test(v) || wordy(v)) return false;
  if (RANDOM_TOKEN.test(v) && shannonEntropy(v) >= 0.8 * Math.log2(v.length)) return true;
  return (v.length >= 20 && shannonEntropy(v) >= 3.5) || (v.length >= 12 && /[^\w-]/.test(v) && shannonEntropy(v) >= Math.min(3, 0.8 * Math.log2(v.length)));
}

/**
 * Whether the value [v, end) read to a mark may go on past it (`may`: the mark is not its end, as its quote or the
 * element's closing tag would be, or its name starts its line): not past the `]` of an index (`Jobs[-1].JobId`), nor,
 * unquoted, after words (CAMEL_WORDS, `InstanceIds,Values=...`) or a type's name before `<` (`Map<string,`).
 */
function extendsValue(s: string, v: number, end: number, may: boolean, quoted: boolean): boolean {
  if (!may) return false;
  const part = s.slice(v, end);
  if (part.includes('[')) return false;
  return quoted || !(CAMEL_WORDS.test(part) || wordy(part) || (codeAt(s, end) === 60 && TYPE_NAME.test(part)));
}

/** A type's name before its `<`: `Map`, `Readonly`, `Uint8Array`. */
const TYPE_NAME = /^[A-Za-z_]\w*$/;
/**
 * Words of letters as names join them (`Readonly`, `InstanceIds`): what stands before a type's `<` or a list's `,`.
 * (Each word after the first starts with its capital, so the expression reads each character once: written as words
 * each with an optional capital, a run of lower-case letters splits every way and 40 of them took seconds.)
 */
const CAMEL_WORDS = /^(?=.{5})[A-Z]?[a-z]{2,}(?:[A-Z][a-z]{2,})*$/;

/** Whether [k, …) starts its line, blanks before it at most (an indentation). */
function startsLine(s: string, k: number): boolean {
  let j = k - 1;
  for (let b = 0; b < MAX_BLANKS && (codeAt(s, j) === 32 || codeAt(s, j) === 9); b++) j--;
  return j < 0 || s.charCodeAt(j) === 10 || s.charCodeAt(j) === 13;
}

/**
 * Go's declaration with a type, `var apiToken string = "..."`, `const secretKey []byte = ...`: where the type read as
 * a name [typeStart, typeEnd) follows a name that `var` or `const` declares, that name.
 */
function declaredName(s: string, typeStart: number, typeEnd: number): [number, number] | undefined {
  if (typeEnd - typeStart > 16) return undefined;
  let j = typeStart - 1;
  // (A slice's, an array's or a pointer's mark before the type: `[]`, `[32]`, `*`.)
  for (let m = 0; m < 6 && (codeAt(s, j) === 93 || codeAt(s, j) === 91 || codeAt(s, j) === 42 || isDigit(codeAt(s, j))); m++) j--;
  if (codeAt(s, j) !== 32 && codeAt(s, j) !== 9) return undefined;
  while (codeAt(s, j) === 32 || codeAt(s, j) === 9) j--;
  const end = j + 1;
  while (j >= 0 && end - j <= MAX_NAME && isWord(s.charCodeAt(j))) j--;
  const start = j + 1;
  if (end - start < 3 || (codeAt(s, j) !== 32 && codeAt(s, j) !== 9)) return undefined;
  while (codeAt(s, j) === 32 || codeAt(s, j) === 9) j--;
  return GO_DECLARES.test(s.slice(Math.max(0, j - 5), j + 1)) ? [start, end] : undefined;
}
const GO_DECLARES = /(?:^|[^\w$])(?:var|const)$/;

/** `n`, `r`, `t` or a quote after a backslash: an escaped line break, tab or quote. */
const isEscapedStop = (c: number): boolean => c === 110 || c === 114 || c === 116 || c === 34 || c === 39;

/** Letters only, between `_ . -`. */
const LETTERS = /^[A-Za-z]+(?:[_.-][A-Za-z]+)*$/;
/** A percent-escape. */
const PERCENT_ESCAPE = /%[0-9A-Fa-f]{2}/g;
/** `v` with its percent-escapes read as marks between words where no digit stands outside them; else `v`. */
function unescapedWords(v: string): string {
  if (!v.includes('%')) return v;
  const parted = v.replace(PERCENT_ESCAPE, '-');
  return hasDigit(parted) ? v : parted;
}
/** Letters of both cases alone: under a password's name, 8 of them that read as no word (namedInLetters) are random enough (`NTgxOTMw`, a 6-digit passcode's base64). */
const MIXED_LETTERS = /^(?=[^]*[a-z])(?=[^]*[A-Z])[A-Za-z]+$/;
/** A word of letters: one case, or capitalized. */
const CASED_WORD = '(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)';
/** Letters in words of one case each, or capitalized, between `_ . -` (`created_at`, `READ_ONLY`, `Read-Only`). */
const CASED_WORDS = new RegExp(`^${CASED_WORD}(?:[_.-]${CASED_WORD})*$`);
/**
 * Words of a language written with letters past ASCII (`obrigatória`, `Größenordnung`, `Şifrenizi`, `неверный`), each
 * of one case or capitalized, between `_ . -`: a word, as CASED_WORDS's are (a password of other letters reads as
 * ASCII once normalized, and is read so).
 */
const LANGUAGE_WORDS = /^(?=[^]*[^\x00-\x7f])(?:\p{Ll}+|\p{Lu}+|\p{Lu}\p{Ll}+)(?:[_.-](?:\p{Ll}+|\p{Lu}+|\p{Lu}\p{Ll}+))*$/u;
/**
 * Letters alone, one of them of a script with no case (Chinese, Japanese, Arabic, Hebrew, Thai...; `请输入密码`): words
 * of a language, also where the confusables have folded some of its letters to ASCII ones (Arabic's alef to `l`).
 */
const UNCASED_WORDS = /^(?=[^]*\p{Lo})[\p{L}\p{M}]+$/u;
/** Letters in camel case (`userId`, `accessToken`, `ReadOnly`), each part as NAME_PARTS splits it. */
const CAMEL = /^[A-Za-z][a-z]*(?:[A-Z][a-z]+)+$/;
const CAMEL_PART = /[A-Z]?[a-z]+/g;
/** Camel case after an acronym of up to four capitals (`UIKeyInputUpArrow`, `HTMLInputElement`, `URLSearchParams`). */
const ACRONYM_CAMEL = /^[A-Z]{2,4}(?:[A-Z][a-z]+)+$/;

/**
 * Whether a value of letters only is a name (`created_at`, `userId`, `ReadOnly`, `defaultIDDPrefix`): words of one
 * case, in camel case with every part like a word (chars.ts, wordLike), or, under a name that is not a password's,
 * in camel case after an acronym (a keyboard's `UIKeyInputUpArrow` under `key`: of random letters of both cases, 16 to
 * 40 characters, 326 in a million read as camel case so, against 223 without the acronym) or written in words (wordy: a short run of random letters reads so too often for a password, a tenth of ten-letter
 * ones). Random letters of both cases are neither (`jvURdEdzKzYgTSiV`): a sixteenth of random base62 values of 16
 * characters hold no digit, and each of them under a secret's name went out when any value of letters alone read as
 * words.
 */
function namedInLetters(v: string, password: boolean): boolean {
  if (!LETTERS.test(v)) return LANGUAGE_WORDS.test(v) || UNCASED_WORDS.test(v);
  if (CASED_WORDS.test(v) || (!password && wordy(v))) return true;
  if (!CAMEL.test(v) && (password || !ACRONYM_CAMEL.test(v))) return false;
  for (const m of v.matchAll(CAMEL_PART)) if (!wordLike(m[0])) return false;
  return true;
}

/**
 * The name of a pair whose `value` follows it: the last `name` or `key` member or attribute within 160 characters
 * before, with no bracket between (a Kubernetes or compose `env` list, `- name: DB_PASSWORD` then `value: ...`; an ECS
 * task's `{"name": "DB_PASSWORD", "value": ...}`; .NET's `<add key="ApiKey" value="..."/>`; Terraform's
 * `name = ...`; an AWS parameter's `{"Name": "/prod/db/password", "Type": "SecureString", "Value": ...}`, named by
 * its path's last segment; CloudFormation's `{"ParameterKey": "DBPassword", "ParameterValue": ...}`, Elastic
 * Beanstalk's `{"OptionName": "DB_PASSWORD", "Value": ...}`).
 */
const PAIR_NAMES = /(?:^|[^\w-])(?:parameter|option)?(?:name|key)["']?[ \t]*[:=][ \t]*["']?([\w./-]{3,128})/gi;

function pairName(s: string, nameStart: number): string | undefined {
  const w = s.slice(Math.max(0, nameStart - 160), nameStart);
  let last: RegExpMatchArray | undefined;
  for (const m of w.matchAll(PAIR_NAMES)) last = m;
  if (last === undefined || /[{}[\]]/.test(w.slice(last.index! + last[0].length))) return undefined;
  const path = last[1]!;
  const name = path.slice(path.lastIndexOf('/') + 1);
  return name.length >= 3 ? name.toLowerCase() : undefined;
}

/** Whether the quoted name [nameStart, nameEnd) before a `,` opens a call or a list (`define( 'DB_PASSWORD', ...`). */
function opensPair(s: string, nameStart: number, nameEnd: number): boolean {
  const q = codeAt(s, nameStart - 1);
  if ((q !== 34 && q !== 39) || codeAt(s, nameEnd) !== q) return false;
  let k = blanksBefore(s, nameStart - 1, nameStart - 4) - 1;
  if (codeAt(s, k) === 40 || codeAt(s, k) === 91) return true;
  // (Or the pair follows a call's first argument, a string: a section, `config.set('database', 'password', '...')`,
  // `hset("user:1", "api_token", "...")`. Back over one literal of MAX_NAME characters at most.)
  if (codeAt(s, k) !== 44) return false;
  k = blanksBefore(s, k, k - 3) - 1;
  const p = codeAt(s, k);
  if (p !== 34 && p !== 39) return false;
  const stop = Math.max(-1, k - 1 - MAX_NAME);
  let o = k - 1;
  while (o > stop && codeAt(s, o) !== p && codeAt(s, o) !== 10) o--;
  if (codeAt(s, o) !== p) return false;
  k = blanksBefore(s, o, o - 3) - 1;
  return codeAt(s, k) === 40;
}

/** Python's bytes, raw and Unicode string prefixes (`b'...'`, `rb"..."`, `u'...'`): where the quote after one at `v` stands, or `v`. An f-string is a template, not passed over. */
function afterStringPrefix(s: string, v: number): number {
  const isPrefix = (c: number) => c === 98 || c === 66 || c === 114 || c === 82 || c === 117 || c === 85;
  const isQuote = (c: number) => c === 34 || c === 39;
  if (!isPrefix(codeAt(s, v)) || isAlnum(codeAt(s, v - 1))) return v;
  if (isQuote(codeAt(s, v + 1))) return v + 1;
  return isPrefix(codeAt(s, v + 1)) && isQuote(codeAt(s, v + 2)) ? v + 2 : v;
}

/**
 * A YAML node's properties at `v`, an anchor (`&name`) and a core schema's tag (`!!str`, `!!binary`), each at most
 * MAX_NAME long with a blank after it: where the value after them starts, or `v`. A local tag is an application's
 * function or reference (CloudFormation's `!Ref DBPassword`, `!Sub`, Home Assistant's `!secret db_password`,
 * `!vault`): what follows it is no value written out, and is left where it stands.
 */
function afterYamlProperties(s: string, v: number): number {
  for (let n = 0; n < 2; n++) {
    const c = codeAt(s, v);
    if (c !== 38 && !(c === 33 && codeAt(s, v + 1) === 33)) return v;
    let e = v + 1;
    while (e - v <= MAX_NAME && codeAt(s, e) > 32 && codeAt(s, e) < 127) e++;
    if (e === v + 1 || e - v > MAX_NAME || (codeAt(s, e) !== 32 && codeAt(s, e) !== 9)) return v;
    while (codeAt(s, e) === 32 || codeAt(s, e) === 9) e++;
    v = e;
  }
  return v;
}

/**
 * The element whose attribute `name`, `key` or `id` holds the quoted name [nameStart, nameEnd) just before its `>` at
 * `i` (Android's `<string name="api_key">`, Java's `<entry key="password">`, Maven's and Spring's `<property
 * name="db.password">`): its tag's name [start, end), or undefined. (Back to the tag's `<` through no `>`: a walk no
 * longer than the text since the last `>`.)
 */
function attributeElement(s: string, nameStart: number, nameEnd: number, i: number): [number, number] | undefined {
  const q = codeAt(s, nameStart - 1);
  if ((q !== 34 && q !== 39) || nameEnd + 1 !== i || codeAt(s, nameEnd) !== q || codeAt(s, nameStart - 2) !== 61) return undefined;
  let k = nameStart - 2;
  while (k > nameStart - 6 && isLetter(codeAt(s, k - 1))) k--;
  if (!ELEMENT_NAMING.test(s.slice(k, nameStart - 2)) || !isSpace(codeAt(s, k - 1))) return undefined;
  return tagOf(s, k - 1);
}
/**
 * The name [start, end) of the tag that holds attributes and stands open before `i` (its `>`, or an attribute's
 * place: `<Pass encoding="base64">`), or undefined. (Back to the tag's `<` through no `>`: a walk no longer than the
 * text since the last `>`.)
 */
function tagOf(s: string, i: number): [number, number] | undefined {
  for (let t = i - 1; t >= 0 && i - t <= MAX_TAG; t--) {
    const c = s.charCodeAt(t);
    if (c === 62) return undefined;
    if (c === 60) {
      let e = t + 1;
      while (e < i && (isNameChar(s.charCodeAt(e)) || s.charCodeAt(e) === 58)) e++;
      return isLetter(codeAt(s, t + 1)) && isSpace(codeAt(s, e)) ? [t + 1, e] : undefined;
    }
  }
  return undefined;
}
/** The attributes that name an element's value. */
const ELEMENT_NAMING = /^(?:name|key|id)$/i;
/** The most characters of a tag read back to its `<`. */
const MAX_TAG = 256;

/** Whether `</name>` of the element named [nameStart, nameEnd) stands at `end`. */
function closesElement(s: string, end: number, nameStart: number, nameEnd: number): boolean {
  const n = nameEnd - nameStart;
  end = afterLineBreak(s, end);
  return codeAt(s, end) === 60 && codeAt(s, end + 1) === 47 && s.startsWith(s.slice(nameStart, nameEnd), end + 2) && codeAt(s, end + 2 + n) === 62;
}

/** Whether the `]` at `k` closes a Ruby symbol's subscript, `[:name]` (a name of MAX_NAME characters at most). */
function symbolSubscript(s: string, k: number): boolean {
  let j = k - 1;
  while (j >= 0 && k - j <= MAX_NAME && isNameChar(s.charCodeAt(j))) j--;
  return j < k - 1 && codeAt(s, j) === 58 && codeAt(s, j - 1) === 91;
}

/**
 * 2 where a shell's list operator, `&&` or `||`, is glued to the end of the token [v, end) that a blank or the text's
 * end follows (cmd's `set PGPASSWORD=...&& psql`), else 0.
 */
function listOperatorAt(s: string, v: number, end: number): number {
  const c = codeAt(s, end - 1);
  return end - v > 2 && (end >= s.length || isSpace(codeAt(s, end))) && codeAt(s, end - 2) === c && (c === 38 || c === 124) ? 2 : 0;
}

/** How many of lower, upper, digit and other characters `v` mixes. */
function classesOf(v: string): number {
  let l = 0;
  let u = 0;
  let d = 0;
  let o = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (isLower(c)) l = 1;
    else if (isUpper(c)) u = 1;
    else if (isDigit(c)) d = 1;
    else o = 1;
  }
  return l + u + d + o;
}

/** The fewest characters of a generated literal (below, generatedLiteral), and under a password's name. */
const MIN_GENERATED = 16;
const MIN_GENERATED_PASSWORD = 8;
/** A program's call or index written whole: `f(x1,y2)`, `argv[1]`, `cfg.get(k2)`. */
const CALL_OR_INDEX = /^[A-Za-z_$][\w.$]*(?:\(.*\)|\[.*\])$/;
/**
 * A repository's address as git and scp write it without `://` (`git@github.com:owner/repo.git`): where code is, no
 * secret. Its path's letters of any script (a host's own, and what a base64 run there decodes to, read in its place:
 * `git@github.com:asaaagoga0/aaaa0.git` as `git@github.com:jƚj`).
 */
const SCP_REMOTE = /^[\w.-]+@[\w-]+(?:\.[\w-]+)+:[\p{L}\p{N}_~.-][\p{L}\p{N}_./~-]*$/u;
/** Whether a value is a link: a URL, or a repository's address as git writes it (SCP_REMOTE). */
function isLink(value: string): boolean {
  return LINK.test(value) || SCP_REMOTE.test(value);
}
/**
 * A link's scheme and `://`: the scheme at the value's start or after a mark a link stands after (`<`, a bracket, a
 * quote, `=`, `:` of `jdbc:mysql://`, `@`, a blank), something after it. A random literal's `://` after letters glued
 * to other marks (`...%L<TmEtp_n4F://`) is none.
 */
const LINK = /(?:^|[<(\['"=:@\s])[A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/\S/;
/** A resource's name or a link without `://` at a literal's start: `arn:`, `urn:`, `data:image/...`, `mailto:`. */
const SCHEME = /^(?:arn:|urn:|data:[a-z]+\/|mailto:)/;
/**
 * A pattern's marks in a literal: a class that opens with a range from `a`, `A`, `0` or `1` and closes (`[A-Za-z0-9+/]`,
 * `[^a-f]`), a group's `(?:`, `(?=`, `(?!`, `(?<` or flags, an escape class (`\d`, `\s`), a count (`{40}`, `{2,}`).
 */
const PATTERN_MARKS = /\[\^?(?:a-[a-z]|A-[A-Z]|[01]-[0-9])[^\]]{0,40}\]|\(\?(?:[:=!]|<[=!]|<\w+>)|\(\?[imsx]+\)|\\[dswbDSWB]|\{\d+(?:,\d*)?\}/;

/**
 * Where the quoted literal that starts at `v` closes with its quote `q`: on its line, printable ASCII, `\` escaping
 * the next character, MAX_QUOTED characters at most (read no further). Else -1.
 */
function literalEnd(s: string, v: number, q: number): number {
  let k = v;
  for (let c = codeAt(s, k); c !== q; c = codeAt(s, ++k)) {
    if (k - v > MAX_QUOTED || c < 32 || c > 126) return -1;
    if (c === 92) k++;
  }
  return k;
}

/**
 * Whether a quoted literal holds a secret a generator made of every kind of printable character: WordPress's keys and
 * salts (`define( 'AUTH_KEY', '- @C#Q lc&2U...' )`), a password manager's password with symbols
 * (`"k#8J]x!v@Lq2(Zr7)"`). Such a literal holds what a value's run stops at and what names an expression or a template
 * elsewhere (a blank, `(`, `[`, `{`, `$`, `;`, `,`), so it is read whole where it is one: 16 characters or more (8
 * under a password's name), a blank in eight at most; three other characters at least, and lower- and upper-case
 * letters and digits (from 32 characters, two of the three: of WordPress's 64, one in some 1,600 holds no digit;
 * Django's are lower-case; below 16, a letter, a digit and another character); nearly as varied as its length allows
 * (nine tenths of the entropy, or 4.5 bits a character); no words.
 */
function generatedLiteral(value: string, password: boolean): boolean {
  const len = value.length;
  if (len < (password ? MIN_GENERATED_PASSWORD : MIN_GENERATED)) return false;
  let l = 0;
  let u = 0;
  let d = 0;
  let blanks = 0;
  const others = new Set<number>();
  for (let i = 0; i < len; i++) {
    const c = value.charCodeAt(i);
    if (isLower(c)) l++;
    else if (isUpper(c)) u++;
    else if (isDigit(c)) d++;
    else if (c === 32) blanks++;
    else others.add(c);
  }
  if (blanks * 8 > len) return false;
  // (Under a password's name, 8 to 15 characters do with a letter, a digit and another character, `"kX9#mQ(2vL)p"`;
  // of 32 characters or more, two of lower-case letters, upper-case ones and digits, Django's keys being lower-case,
  // `'k#8j(x!v@lq2$zr7%wm^...'`.)
  if (len < MIN_GENERATED ? d === 0 || l + u === 0 || others.size === 0 : others.size < 3 || (len < 32 ? l === 0 || u === 0 || d === 0 : (l > 0 ? 1 : 0) + (u > 0 ? 1 : 0) + (d > 0 ? 1 : 0) < 2)) return false;
  if (shannonEntropy(value) < Math.min(4.5, 0.9 * Math.log2(len))) return false;
  // (Words between the marks, `"Error: (%s) failed [retry=%d]"`: no secret. A generator's runs of letters are short.)
  let inWords = 0;
  for (const w of value.matchAll(LETTER_RUNS)) if (w[0].length >= 4 && wordLike(w[0])) inWords += w[0].length;
  return inWords * 2 < l + u;
}
/** Runs of letters, a capital first at most (`Error`, `failed`, `retry`). */
const LETTER_RUNS = /[A-Z]?[a-z]+|[A-Z]+/g;

/**
 * Whether `value`, assigned to `name` at `nameStart` in `s`, is a generated literal (generatedLiteral) that is not
 * where a secret is or what stands for one, as any value is read below: a resource's name (`"arn:aws:kms:...:key/
 * a1b2c3d4-..."`), a link, a path, a value cut short, a placeholder.
 */
function generatedValue(s: string, nameStart: number, name: string, value: string): boolean {
  return generatedLiteral(value, PASSWORD_NAME.test(name)) && !(SCHEME.test(value) || isLink(value) || REDACTED.test(value) || placeholderPassword(value) || isPath(value) || inArnOrUrn(s, nameStart));
}

/** The run of value characters last walked: [start, end). */
interface ValueRun {
  start: number;
  end: number;
}

/** The fewest characters of an assignment: a name of two (`pw`), an operator and a password of six. */
const MIN_ASSIGNMENT = 9;
/**
 * A value cut short or shown in part (`eyJhbGciOiJS...`, a dashboard's `sk_live_…4242`, `ghp_****Xy12`): an ellipsis
 * or three asterisks anywhere in it. No value written out.
 */
const REDACTED = /\.\.\.|\u2026|\*{3}/;
/** The most characters of a value (an AWS session token runs to about a thousand), and of a name looked back over. */
const MAX_VALUE = 4096;
const MAX_NAME = 64;
/** The most blanks between an operator and its value (aligned output: `password:    ...`, `op item get`'s fields). */
const MAX_BLANKS = 32;
/** The most characters of a quoted password read to its closing quote past a blank (a passphrase of words). */
const MAX_QUOTED = 256;

/** A Terraform variable's block open before its `default` (VARIABLE_BLOCK's group: the variable's name), within MAX_BLOCK characters. */
const VARIABLE_BLOCK = /\bvariable[ \t]+"([\w.-]{3,64})"[ \t]*\{[^{}]*$/;
const MAX_BLOCK = 320;

/** The characters of an expression a fallback follows (a member chain, a call with quoted arguments, an index). */
function isFallbackChar(c: number): boolean {
  return isWord(c) || c === 46 || c === 36 || c === 40 || c === 41 || c === 91 || c === 93 || c === 34 || c === 39 || c === 45;
}
/** The most characters of the expression before a fallback. */
const MAX_FALLBACK = 160;

/**
 * Where the quoted literal starts that a program's fallback gives after the expression at `v` (`os.environ.get("API_KEY")
 * or "..."`, `process.env.API_KEY || "..."`, `?? '...'`): its quote; else `v`. Read a bounded number of characters.
 */
function fallbackLiteral(s: string, v: number): number {
  // (Not after a literal: `"..." or "..."` is read at its first.)
  if (codeAt(s, v) === 34 || codeAt(s, v) === 39) return v;
  let k = v;
  while (k - v < MAX_FALLBACK && isFallbackChar(codeAt(s, k))) k++;
  if (k === v || codeAt(s, k) !== 32 || !(s.startsWith('|| ', k + 1) || s.startsWith('?? ', k + 1) || s.startsWith('or ', k + 1))) return v;
  const q = codeAt(s, k + 4);
  return (q === 34 || q === 39) && codeAt(s, k + 5) !== q ? k + 4 : v;
}

/** Whether a local YAML tag stands at `v` with what it applies to after it: `!`, a letter, then letters, digits, `_`, `-` or `:`, then a bracket, or a blank and more on its line (`!Ref DBPassword`, `!GetAtt ...`, `!secret ...`, `!vault |`, `!Join [...]`). */
function localTag(s: string, v: number): boolean {
  if (codeAt(s, v) !== 33 || !isLetter(codeAt(s, v + 1))) return false;
  let k = v + 2;
  while (k - v <= 32 && (isAlnum(codeAt(s, k)) || codeAt(s, k) === 95 || codeAt(s, k) === 45 || codeAt(s, k) === 58)) k++;
  const c = codeAt(s, k);
  if (c === 91 || c === 123) return true;
  if (c !== 32 && c !== 9) return false;
  // (With what it applies to after it on its line: a value of its own, `Password: !Xk9mQ2...` alone, is a password.)
  while (codeAt(s, k) === 32 || codeAt(s, k) === 9) k++;
  return !isLineEnd(codeAt(s, k)) && codeAt(s, k) !== 35;
}

/** Where the value of a YAML block scalar whose indicator (`|`, `>`, `|-`, `>+2`) is at `v` starts: the next line's first character, where it is indented; the next line's one token where `v` ends its line; else `v`. */
function blockScalarValue(s: string, v: number): number {
  // (A core schema's YAML tag before the value, `!!binary`, `!!str`: the value after it and a blank.)
  if (codeAt(s, v) === 33) {
    let k = v + 1;
    if (codeAt(s, k) === 33) k++;
    while (k - v <= 32 && isAlnum(codeAt(s, k))) k++;
    if (k > v + 1 && (codeAt(s, k) === 32 || codeAt(s, k) === 9) && isAlnum(codeAt(s, k - 1))) {
      while (codeAt(s, k) === 32 || codeAt(s, k) === 9) k++;
      v = k;
    }
  }
  const c = codeAt(s, v);
  // (A value alone on the next line, indented or not: `Password:` then `Xk9...` as a CLI prints it, a JSON member's
  // value after a line break. One token only, to the line's end, and no name: `token:` then `  key: value` is a
  // mapping.)
  if (c === 10 || (c === 13 && codeAt(s, v + 1) === 10)) {
    let w = v + (c === 13 ? 2 : 1);
    for (let b = 0; b < MAX_BLANKS && (codeAt(s, w) === 32 || codeAt(s, w) === 9); b++) w++;
    let e = w;
    while (e - w <= MAX_VALUE && e < s.length && !isSpace(codeAt(s, e))) e++;
    // (A token that ends with `:` is the next name, `secret_key:` then `Password:`.)
    return e > w && codeAt(s, e - 1) !== 58 && (e === s.length || codeAt(s, e) === 10 || codeAt(s, e) === 13) ? w : v;
  }
  if (c !== 124 && c !== 62) return v;
  let k = v + 1;
  for (let n = 0; n < 2 && (codeAt(s, k) === 45 || codeAt(s, k) === 43 || isDigit(codeAt(s, k))); n++) k++;
  while (codeAt(s, k) === 32 || codeAt(s, k) === 9) k++;
  if (codeAt(s, k) === 13) k++;
  if (codeAt(s, k) !== 10) return v;
  let w = k + 1;
  for (let b = 0; b < MAX_BLANKS && (codeAt(s, w) === 32 || codeAt(s, w) === 9); b++) w++;
  return w > k + 1 ? w : v;
}

/**
 * Where the value of a heredoc after `=` starts (HCL's `password = <<EOF`, `<<-EOT`, Ruby's `<<~EOS`, PHP's `<<<EOT`,
 * a quoted delimiter too): its first line, indented or not, where that is not the delimiter closing it at once; else `v`.
 */
function heredocValue(s: string, v: number): number {
  if (!s.startsWith('<<', v)) return v;
  let k = v + 2;
  if (codeAt(s, k) === 60 || codeAt(s, k) === 45 || codeAt(s, k) === 126) k++;
  const quote = codeAt(s, k) === 34 || codeAt(s, k) === 39 ? codeAt(s, k++) : -1;
  const d = k;
  while (k - d < 32 && (isAlnum(codeAt(s, k)) || codeAt(s, k) === 95)) k++;
  if (k === d || !isLetter(codeAt(s, d))) return v;
  const delimiter = s.slice(d, k);
  if (quote >= 0 && codeAt(s, k++) !== quote) return v;
  while (codeAt(s, k) === 32 || codeAt(s, k) === 9) k++;
  if (codeAt(s, k) === 13) k++;
  if (codeAt(s, k) !== 10) return v;
  let w = k + 1;
  for (let b = 0; b < MAX_BLANKS && (codeAt(s, w) === 32 || codeAt(s, w) === 9); b++) w++;
  return w < s.length && !isSpace(codeAt(s, w)) && !s.startsWith(delimiter, w) ? w : v;
}

/**
 * A generic assignment (`NAME=value`, `name: value`, `"name": "value"`,
 * `Name=value;` in a connection string) whose name says it holds a secret
 * and whose value looks like one: at least 8 characters, at least two
 * classes of characters and 2.5 bits of entropy per character, not a
 * placeholder, a reference or a URL. `i` is the `=` or `:`; returns the
 * value's [start, end] or undefined.
 */
function assignment(s: string, i: number, run: ValueRun, collections?: Collection[]): [number, number] | undefined {
  // The name: back over `"`/`'` and blanks, then name characters.
  const op = s.charCodeAt(i);
  let e = i;
  // (A compound assignment's `=`: `:=`, `?=`, Make's `::=`, `:::=` and `+=`, PHP's `.=` and `??=`, Ruby's `||=`.)
  if (op === 61) while (e > i - 3 && isCompounding(codeAt(s, e - 1))) e--;
  // (An equality's `==`, `===`, `!=` or `!==` against a quoted literal holds the literal, `if password == "..."`, `apiKey
  // === '...'`: a secret written into the program that checks it. `i` is its first `=`; `<=` and `>=` compare no secret.)
  let compared = false;
  if (op === 61 && e === i && !isComparing(codeAt(s, i - 1)) && codeAt(s, i + 1) === 61) compared = true;
  else if (op === 61 && e === i && codeAt(s, i - 1) === 33 && !isComparing(codeAt(s, i - 2))) {
    compared = true;
    e = i - 1;
  }
  // (Prose: `The password is cN4WtMSw4svl`, `the admin password was ...`; `i` is the space after the verb.)
  // (A command's flag, `--password VALUE`: `i` is the blank after the flag's name.)
  const verb = op === 32 ? proseVerbAt(s, i) : -1;
  // (Else the blank ends a command's flag, or a password's word: `--password VALUE`, `and password VALUE`.)
  const blank = op === 32 && verb < 0;
  if (verb >= 0) e = verb;
  let k = e - 1;
  // (Up to MAX_BLANKS blanks: aligned names, as `terraform fmt` and INI files write them, `default     = ...`.)
  if (op === 61 || op === 58) for (let b = 0; b < MAX_BLANKS && (codeAt(s, k) === 32 || codeAt(s, k) === 9); b++) k--;
  // (A dot leader spaced out, as Windows' tools align their labels: `Password . . . . . : ...`, `Key. . . . :`.)
  if (op === 58 && codeAt(s, k) === 46 && codeAt(s, k - 1) === 32) k = beforeLeader(s, k);
  // (A subscript's quoted name: `app.config['SECRET_KEY'] = ...`, `os.environ["API_KEY"] = ...`.)
  if (op === 61 && codeAt(s, k) === 93 && (codeAt(s, k - 1) === 34 || codeAt(s, k - 1) === 39)) k--;
  // (A Ruby symbol's subscript: `config[:api_secret] = '...'`, `settings[:password] = ...`.)
  if (op === 61 && codeAt(s, k) === 93 && symbolSubscript(s, k)) k--;
  if (codeAt(s, k) === 34 || codeAt(s, k) === 39) k--;
  // (A name quoted inside a string, JSON in JSON: `"{\"password\":\"...\"}"`, an AWS secret's SecretString.)
  if (codeAt(s, k) === 92 && (codeAt(s, k + 1) === 34 || codeAt(s, k + 1) === 39)) k--;
  let nameEnd = k + 1;
  while (k >= 0 && nameEnd - k <= MAX_NAME && isNameChar(s.charCodeAt(k))) k--;
  let nameStart = k + 1;
  // (An element whose attributes do not name it, FileZilla's `<Pass encoding="base64">`, `<password type="plain">`: named
  // by its tag, as `<Pass>` is.)
  if (op === 62 && (codeAt(s, i - 1) === 34 || codeAt(s, i - 1) === 39) && codeAt(s, nameStart - 1) !== 60 && attributeElement(s, nameStart, nameEnd, i) === undefined) {
    const tag = tagOf(s, i);
    if (tag !== undefined) [nameStart, nameEnd] = tag;
  }
  // (A password's shorthand with a slash, `P/W: ...`: read as `pw`.)
  if (nameEnd - nameStart === 1 && (codeAt(s, nameStart) | 32) === 119 && codeAt(s, nameStart - 1) === 47 && (codeAt(s, nameStart - 2) | 32) === 112 && !isNameChar(codeAt(s, nameStart - 3))) nameStart -= 2;
  // (A name then its type, Python's or TypeScript's: `api_key: str = "..."`, `password: Optional[str] = "..."`.)
  if (op === 61 && !secretNamed(s.slice(nameStart, nameEnd).toLowerCase())) {
    const typed = typedName(s, nameEnd - 1) ?? declaredName(s, nameStart, nameEnd);
    if (typed !== undefined) [nameStart, nameEnd] = typed;
  }
  // (In prose, a name then whose it is: `the root password for the staging box is ...`, `The API key for prod: ...`.)
  let told = verb >= 0;
  if ((told || (op === 58 && (codeAt(s, i + 1) === 32 || codeAt(s, i + 1) === 10 || codeAt(s, i + 1) === 13))) && !secretNamed(s.slice(nameStart, nameEnd).toLowerCase())) {
    const owner = nameStart === nameEnd && (codeAt(s, e - 1) === 41 || codeAt(s, e - 1) === 93) ? (bracketedName(s, e - 1) ?? (codeAt(s, e - 1) === 41 ? remarkedName(s, e - 1) : undefined)) : proseOwner(s, e);
    if (owner !== undefined) {
      [nameStart, nameEnd] = owner;
      told = true;
    }
  }
  // (A name in another language: `Passwort: ...`, `contraseña: ...`, `mot de passe : ...`, `API-Schlüssel: ...`.)
  let local: string | undefined;
  // (A name folded to ASCII letters alone, `ТОКЕН` as `TOKEH`, is one of FOLDED_LOCAL_NAMES'.)
  const mayBeLocal = op === 58 || op === 61 || verb >= 0;
  const lower = mayBeLocal && nameEnd > nameStart ? s.slice(nameStart, nameEnd).toLowerCase() : '';
  if (mayBeLocal && (codeAt(s, nameEnd - 1) >= 0x80 || codeAt(s, nameStart - 1) >= 0x80 || LOCAL_NAME_END.test(lower) || FOLDED_LOCAL_NAMES.has(lower))) {
    const named = localName(s, e);
    if (named !== undefined) {
      nameStart = named.start;
      nameEnd = e;
      local = named.name;
    }
  }
  // (Two characters name nothing but `pw`: `user: admin / pw: ...`.)
  if (local === undefined && (nameEnd - nameStart < 3 && !(nameEnd - nameStart === 2 && /^pw$/i.test(s.slice(nameStart, nameEnd)))) || nameEnd - nameStart > MAX_NAME) return undefined;
  // The two shapes besides `=` and `:`: an element, `<password>value</password>`, and a quoted pair opening a call or a
  // list, `define('DB_PASSWORD', 'value')`, `("api_key", "value")`.
  // (Or an element named by an attribute, `<string name="api_key">value</string>`: `element` its tag's name.)
  const element = op === 62 && codeAt(s, nameStart - 1) !== 60 ? attributeElement(s, nameStart, nameEnd, i) : undefined;
  // (Or a row of comma-separated values, `api_token,Xk9...,`: a name unquoted at its line's start, then a value random
  // to look at up to the next `,` or the line's end.)
  const row = op === 44 && nameEnd === i && startsLine(s, nameStart);
  if (op === 62 ? codeAt(s, nameStart - 1) !== 60 && element === undefined : op === 44 && !row && !opensPair(s, nameStart, nameEnd)) return undefined;
  const dashes = blank ? flagDashes(s, nameStart) : 0;
  const flag = dashes > 0;
  // (A name or a word before a blank is one where it starts a token: not a path's last segment, `/run/secrets/db_password
  // postgres:16`.)
  // (Or one a command declares, `ENV API_KEY value`: read as before `=`.)
  const declared = blank && !flag && declaredByCommand(s, nameStart);
  const bare = blank && !flag && !declared && (BARE_WORD.test(s.slice(nameStart, nameEnd)) || bareName(s.slice(nameStart, nameEnd))) && startsToken(codeAt(s, nameStart - 1));
  if (blank && !flag && !bare && !declared) return undefined;
  // (A blank that neither a flag nor such a command makes an operator: prose's and a secret's word's.)
  const loose = op === 32 && !flag && !declared;
  let name = local ?? s.slice(nameStart + dashes, nameEnd).toLowerCase();
  if (name === 'p/w') name = 'pw';
  // (A Java tool's flag names a password without a word of its own: `-storepass`, `-srckeypass`.)
  if (dashes === 1 && STORE_PASS.test(name)) name = `${name.slice(0, -4)}_pass`;
  // In prose the word before the name says what it names: `the cache key is ...` looks a record up, `the public key
  // is ...` is public (LOOKUP_NAME, PUBLIC_NAME), `the admin password is ...` is a password.
  // (Only a name that says secret alone: `the secret sauce is ...` names a sauce.)
  if ((told || bare) && codeAt(s, nameStart - 1) === 32 && (SECRET_NAME_END.test(name) || SECRET_NAME_ANY.test(name))) {
    let w = nameStart - 1;
    while (w > 0 && nameStart - 1 - w < MAX_NAME && isLetter(codeAt(s, w - 1))) w--;
    if (w < nameStart - 1) name = `${s.slice(w, nameStart - 1).toLowerCase()}_${name}`;
  }
  // A pair's `value` is named by the pair's name before it (`- name: DB_PASSWORD` then `value: ...`, CloudFormation's
  // `ParameterKey` then `ParameterValue`).
  if (name === 'value' || name === 'parametervalue') {
    const named = pairName(s, nameStart);
    if (named === undefined) return undefined;
    name = named;
  }
  // A Terraform variable's `default` is named by the variable (`variable "db_password" {` ... `default = "..."`).
  if (name === 'default' && op === 61) {
    const named = VARIABLE_BLOCK.exec(s.slice(Math.max(0, nameStart - MAX_BLOCK), nameStart));
    if (named === null) return undefined;
    name = named[1]!.toLowerCase();
  }
  name = nameStem(name);
  // (A collection after the name, `passwords:` at its line's end, `"api_keys": [`: noted for scanNestedSecrets.)
  if (collections !== undefined && (op === 58 || op === 61) && !compared) noteCollection(s, i, op, nameStart, nameEnd, collections);
  if (!stemNamesSecret(name)) return undefined;
  // A comparison assigns nothing but an equality's literal (above), nor does a scope (`Form::FORMAT`).
  if (op === 58 && (codeAt(s, i + 1) === 58 || codeAt(s, i - 1) === 58)) return undefined;
  if (op === 61 && !compared && (codeAt(s, i + 1) === 61 || (e === i && isComparing(codeAt(s, i - 1))))) return undefined;
  // The value: after `=`, `:`, `=>`, an equality's `=`s, blanks and one quote.
  let v = i + 1;
  if (compared) while (v < i + 3 && codeAt(s, v) === 61) v++;
  if ((op === 61 && codeAt(s, v) === 62) || (op === 58 && codeAt(s, v) === 61)) v++; // => :=
  for (let b = 0; b < MAX_BLANKS && (codeAt(s, v) === 32 || codeAt(s, v) === 9); b++) v++;
  // (An element's value on a line of its own, `<apiToken>` then the value indented, then `</apiToken>`.)
  if (op === 62) v = afterLineBreak(s, v);
  // (A local YAML tag is an application's function or reference, `!Ref DBPassword`, `!secret db_password`, `!vault |`:
  // no value written out. A core schema's, `!!binary`, is read past below.)
  if (op === 58 && localTag(s, v)) return undefined;
  // (A YAML block scalar, `password: >-` or `api_key: |`, then the value indented on the next line.)
  if (op === 58) v = blockScalarValue(s, v);
  // (A heredoc, `password = <<EOF` then the value on the next line.)
  if (op === 61) v = heredocValue(s, v);
  if (codeAt(s, v) === 92 && (codeAt(s, v + 1) === 34 || codeAt(s, v + 1) === 39)) v++; // \" inside a string
  if (codeAt(s, v) === 64 && codeAt(s, v + 1) === 34) v++; // C#'s verbatim string, @"..."
  v = afterStringPrefix(s, v);
  // (A YAML value's anchor or tag, `password: &db_pw ...`, `token: !!str ...`: the value after it.)
  if (op === 58) v = afterYamlProperties(s, v);
  // (A program's fallback, `os.environ.get("API_KEY") or "..."`, `process.env.API_KEY || "..."`: the literal after it.)
  if (op !== 32) v = fallbackLiteral(s, v);
  const q = codeAt(s, v);
  const quoted = q === 34 || q === 39 || q === 96;
  if (compared && !quoted) return undefined;
  // (R's and Haskell's `<-` is a program's: a value written out there is quoted, `password <- "..."`; else a variable.)
  if (!quoted && verb >= 0 && s.startsWith(' <- ', verb)) return undefined;
  if (quoted) v++;
  // (A literal a generator made of every kind of printable character, read whole: see generatedLiteral. A pattern
  // written as a literal, `"^[A-Za-z0-9._~+/-]{20,}$"`, holds no value.)
  if (quoted && (op === 61 || op === 58 || (op === 44 && !row)) && codeAt(s, v - 2) !== 92) {
    const close = literalEnd(s, v, q);
    if (close >= 0) {
      // (With the literals a concatenation joins to it, below.)
      const more = concatenated(s, v, close);
      const literal = more?.value ?? s.slice(v, close);
      if (PATTERN_MARKS.test(literal)) return undefined;
      if (generatedValue(s, nameStart, name, literal)) return [v, more?.end ?? close];
    }
  }
  // (Unquoted on a config's line, an `.env` file's, a properties file's or YAML's, `DB_PASSWORD=kX9#mQ(2vL)p`: the token
  // to its blank, a `;` or `,` at its end left out, read as a generated literal is, whatever a value's run would stop
  // at in it. A call or an index written whole is none, `f(x1,y2)`, and one in words fails as words do,
  // `os.urandom(24)`.)
  if (!quoted && (op === 61 || op === 58) && startsLine(s, nameStart)) {
    let k = v;
    for (let c = codeAt(s, k); c > 32 && c < 127 && c !== 34 && c !== 39 && c !== 96 && k - v <= MAX_QUOTED; c = codeAt(s, ++k));
    while (k > v && (codeAt(s, k - 1) === 59 || codeAt(s, k - 1) === 44)) k--;
    if (k - v <= MAX_QUOTED && (isSpace(codeAt(s, k)) || k >= s.length || codeAt(s, k) === 59 || codeAt(s, k) === 44)) {
      k -= listOperatorAt(s, v, k);
      const token = s.slice(v, k);
      if (!CALL_OR_INDEX.test(token) && !PATTERN_MARKS.test(token) && generatedValue(s, nameStart, name, token)) return [v, k];
    }
  }
  // Where the run of value characters from `v` ends: remembered, so that a run crowded with `=` is walked once.
  if (!(v >= run.start && v <= run.end)) {
    let e = v;
    // (An escaped line break, tab or quote ends it too: `Credentials: true\r\nContent-Length` in a string of a
    // program, `\"password\":\"...\"` in JSON inside a string.)
    while (!isValueStop(codeAt(s, e)) && !(codeAt(s, e) === 92 && isEscapedStop(codeAt(s, e + 1)))) e++;
    run.start = v;
    run.end = e;
  }
  let end = run.end;
  // (A URL query's parameter, its name after `?` or `&`, ends where the next parameter starts, `&name=`:
  // `?apikey=...&format=json`; a `&` in a value there is written `%26`, and one no name and `=` follow stays in it. The
  // read stops at the next parameter: linear over a query of many.)
  if (!quoted && op === 61 && queryParameter(s, nameStart)) {
    for (let k = s.indexOf('&', v); k >= 0 && k < end; k = s.indexOf('&', k + 1)) {
      // (`&&` between parameters is an empty one, no operator: `?token=...&&a=1`.)
      let n = k + 1;
      while (n < end && s.charCodeAt(n) === 38) n++;
      QUERY_PARAMETER.lastIndex = n;
      if (n >= end || s.charCodeAt(n) === 35 || QUERY_PARAMETER.test(s)) {
        end = k;
        break;
      }
      k = n - 1;
    }
  }
  // (A row's cell ends at the next `,` or the line's end, whatever it holds.)
  if (row) for (end = v; end - v < MAX_VALUE && !isLineEnd(codeAt(s, end)) && codeAt(s, end) !== 44; end++);
  // (A value quoted goes on past `;`, `,`, `}`, `)`, `]`, `<` or `>` to its closing quote through printable ASCII (no
  // blank, no character a decoding made): a password of punctuation, `"aB3:k;9<@x}..."`; an element's to its closing
  // tag; an unquoted one whose name starts its line, a config's or an `.env` file's, to its token's end, a `;` or `,`
  // there left out. See extendsValue for where none does.)
  if ((op === 61 || op === 58 || op === 62) && end < s.length && !isSpace(codeAt(s, end)) && extendsValue(s, v, end, op === 62 ? !closesElement(s, end, ...(element ?? [nameStart, nameEnd])) : quoted ? codeAt(s, end) !== q : startsLine(s, nameStart), quoted)) {
    let k = end;
    for (let c = codeAt(s, k); k - v < MAX_VALUE && !(c < 33 || c > 126 || c === 34 || c === 39 || c === 96 || (c === 92 && isEscapedStop(codeAt(s, k + 1))) || (op === 62 && c === 60 && codeAt(s, k + 1) === 47)); c = codeAt(s, ++k));
    if (op === 62 ? closesElement(s, k, ...(element ?? [nameStart, nameEnd])) : quoted ? codeAt(s, k) === q : k > end) {
      end = k;
      while (!quoted && op !== 62 && end > v && (codeAt(s, end - 1) === 59 || codeAt(s, end - 1) === 44)) end--;
    }
  }
  // (A shell's list operator glued to an unquoted value's end ends it: cmd's `set PGPASSWORD=...&& psql`, where a blank
  // before `&&` would be the value's.)
  if (!quoted && (op === 61 || op === 58)) end -= listOperatorAt(s, v, end);
  // (In prose a sentence's mark after the value is no part of it: `The password is cN4WtMSw4svl.`)
  if (op === 32 && !flag && end - v > 1 && isSentenceMark(codeAt(s, end - 1))) end--;
  if (op === 44 && (row ? quoted || !(isLineEnd(codeAt(s, end)) || codeAt(s, end) === 44) || !rowValue(s.slice(v, end)) : !(quoted && codeAt(s, end) === q))) return undefined;
  if (op === 62 && !closesElement(s, end, ...(element ?? [nameStart, nameEnd]))) return undefined;
  // (Literals a concatenation joins to a quoted value are the value's: judged as one, withheld with it.)
  const joined = quoted && codeAt(s, end) === q ? concatenated(s, v, end) : undefined;
  const value = joined?.value ?? s.slice(v, end);
  const len = value.length;
  // A password may be short (`DB_PASSWORD=hunter2`): under a name that says password, six or seven characters do,
  // with a letter and a digit among them.
  const password = PASSWORD_NAME.test(name);
  const short = len < 8 && len >= 6 && password && !bare;
  if ((len < 8 && !short) || len > MAX_VALUE) return undefined;
  // (Not a number written in hex, `0x0B96`, nor an expression, `parts[1`.)
  // (Digits alone under a password's name in a config are a numeric password, `password = 12345678901234`: 6 digits
  // or more, not one digit repeated. Not in prose or after a password's word alone, where a number is a count.)
  const numeric = password && op !== 32 && NUMERIC_PASSWORD.test(value) && NUMERIC_NAME.test(name);
  if (short && !numeric && (!hasDigit(value) || !/[A-Za-z]/.test(value) || /^0x[0-9a-f]+$/i.test(value) || /[[\].]/.test(value))) return undefined;
  // (A flag's value unquoted is no next flag: `--password-stdin`, `--token -`; nor is a value after a secret's word alone
  // a parameter, `Update-Password -NewPassword ...`.)
  if (!quoted && value.charCodeAt(0) === 45 && (flag || (bare && isLetter(codeAt(s, v + 1))))) return undefined;
  // (Nor a version, a decimal or an address of dotted numbers: `'Test2::Event::Pass'    => '1.302138'`, `v2.14.0`.)
  if (!numeric && DOTTED_NUMBER.test(value)) return undefined;
  if (placeholderPassword(value) || /^(?:https?:|%|\{|\(|\[|arn:|urn:|#\/)/i.test(value) || referenceMark(value) || REDACTED.test(value) || value.includes('(') || isLink(value)) return undefined;
  // (Nor a URN, `urn:uuid:...`, a JSON pointer, `#/components/schemas/password`, a placeholder in brackets,
  // `[Redacted]`, or a value cut short or shown in part, REDACTED.) A template's expression in the value
  // (`deps-v1-{{ checksum ... }}`, `prefix-${VAR}`), and a resource path of an ARN or a URN read as an assignment
  // (`arn:aws:secretsmanager:...:secret:prod/app/db-AbCdEf`): no value written here.
  if (value.includes('{{') || value.includes('${') || inArnOrUrn(s, nameStart)) return undefined;
  // (Nor a badge's token in a Codecov badge's or graph's link, public by design (`.../graph/badge.svg?token=...`, a
  // README's), nor a GPG key's fingerprint or long id under a key's, a fingerprint's or an id's name that says GPG or
  // PGP, or after those words, `Release GPG key: F3EF...`, `GPG_KEY_ID=...`; a passphrase's name says no key.)
  if ((op === 61 && codecovBadge(s, nameStart)) || gpgFingerprint(name, value, s, Math.max(0, nameStart - 16), nameEnd)) return undefined;
  // (Nor a list of words between colons, `...:seamonkey:mozilla:epiphany:...`: a name, a `:` with no blank after it,
  // then a value that holds another `:`.)
  if (op === 58 && v === i + 1 && value.includes(':')) return undefined;
  if (/^(?:true|false|null|none|undefined|required|optional|string|number)$/i.test(value)) return undefined;
  // (Nor a keyboard's keys, `key: "Control+Shift+T"`, `hotkey=Ctrl+Alt+Del`.)
  if (SHORTCUT.test(value)) return undefined;
  // Words and identifiers (`created_at`, `userId`, `read-only`) name things; a secret is random.
  if (namedInLetters(value, password)) return undefined;
  // Where the secret is (a path to a key file, a secret manager's name), and, under a name that is not a password's
  // (a password may be words and digits, `Summer-2024`), an identifier: names, not secrets.
  if (isPath(value) || (!password && (IDENTIFIER.test(value) || oneWord(value)))) return undefined;
  // In a program, a value written out is quoted (an unquoted one is an expression or a type: `key = objKeys[j]`,
  // `password: Uint8Array`), and one written in words is a name (`const META_KEY = "io.modelcontextprotocol/…"`,
  // `{key: "_getString"}`); a password may be words. Anywhere, an expression is none, and so is a value in words
  // under a name whose only secret word is `key` or `auth` (`key: "Control+o"`).
  // (A quoted value then `;` ends a statement of a program, `lastSignificantToken = "?NoLineTerminatorHere";`.)
  const nameQuoted = codeAt(s, nameStart - 1) === 34 || codeAt(s, nameStart - 1) === 39;
  const program = (!nameQuoted && inProgram(s, nameStart, op)) || (quoted && codeAt(s, end) === q && codeAt(s, end + 1) === 59);
  // (A type or a variable after `:`, `password: Uint8Array;`, `progressToken: ProgressTokenSchema$1`, is read only
  // where every part of it is a word: an `.env` line's `=` never, so that `API_KEY=` and a random value always reads.)
  // (A value that starts with a digit and is no number of a program is no name, type or variable of one either:
  // `private key: 758290eb...` in prose, a key of 128 bits or more written in hex, `0x4c0883a6...`.)
  // (Nor is a value random to look at, written out unquoted in a YAML flow mapping that reads as an object literal:
  // `{user: app, password: Zq8Rk2Lm9Xw4Tn7P}`; no program names a variable so.)
  if ((!quoted || loose) && (isExpression(value) || (program && !(isDigit(value.charCodeAt(0)) && !NUMBER.test(value)) && !randomToLook(value)) || (op === 58 && IDENT.test(value) && wordy(value, true) && (!password || endsType(s, end))))) return undefined;
  // (A percent-escape between words of letters parts them as a mark would: a URL's query, `?key=value%23still-query`.)
  if (!password && (program ? wordy(value) : WEAK_NAME.test(name) && !SECRET_NAME_ANY.test(name) && wordy(unescapedWords(value), true))) return undefined;
  const classes = classesOf(value);
  if (numeric) return [v, end];
  // (Six characters hold at most 2.58 bits each: a short password asks 2.)
  if (classes < 2 || shannonEntropy(value) < (short ? 2 : 2.5)) return undefined;
  // Without a digit or a third class, a random run of letters: 16 characters or more, or under a password's name 10
  // (`Password=AxSRJGOhwuvRJM`), with four fifths of the entropy a value of its length can hold at most, or 3.3 bits
  // (what all but about one in a thousand random runs of 16 letters or more hold).
  // (In prose, where words follow `is`, a value holds a digit or three classes: `Password is correct.&quot;`.)
  if (!(hasDigit(value) || classes >= 3 || (!loose && len >= (password ? (MIXED_LETTERS.test(value) ? 8 : 10) : 16) && shannonEntropy(value) >= Math.min(3.3, 0.8 * Math.log2(len))))) return undefined;
  // (After a token's, a key's or a secret's word and a blank alone, a value random to look at: `this token Xy...`.)
  if (bare && !password && (len < 16 || !hasDigit(value) || !/[A-Za-z]/.test(value) || shannonEntropy(value) < BARE_RANDOM)) return undefined;
  // (A quoted password goes on to its closing quote on its line where what it starts with reads as one: a passphrase,
  // `password: "qRR0mE FfoTfp pKarhj"`.)
  if (quoted && password && (codeAt(s, end) === 32 || codeAt(s, end) === 9)) {
    for (let k = end + 1; k < s.length && k - v <= MAX_QUOTED && codeAt(s, k) !== 10; k++) if (codeAt(s, k) === q) return [v, k];
  }
  return [v, joined?.end ?? end];
}

/** Most literals after a value that a concatenation joins to it (concatenated). */
const MAX_JOINED = 8;

/**
 * The string literals a concatenation joins to the quoted value [v, close) (its closing quote at `close`): `"Xr4m" +
 * "Q9vL"`, PHP's `.`, Lua's `..`, SQL's `||`, VB's `&`, Python's literals side by side. The value they make, and where
 * the last of them ends; undefined where none follows. (`password = "Xr4mQ9vL" + "t2Kp7zBn"` went out in part.)
 * MAX_JOINED literals of MAX_QUOTED characters at most, each on the value's line, no escape in them.
 */
function concatenated(s: string, v: number, close: number): { value: string; end: number } | undefined {
  let end = close;
  let value = s.slice(v, close);
  for (let n = 0; n < MAX_JOINED; n++) {
    let k = end + 1;
    while (codeAt(s, k) === 32 || codeAt(s, k) === 9) k++;
    const op = codeAt(s, k);
    if (op === 43 || op === 38) k++;
    else if (op === 46) k += codeAt(s, k + 1) === 46 ? 2 : 1;
    else if (op === 124 && codeAt(s, k + 1) === 124) k += 2;
    while (codeAt(s, k) === 32 || codeAt(s, k) === 9) k++;
    const q = codeAt(s, k);
    if ((q !== 34 && q !== 39 && q !== 96) || k === end + 1) break;
    let e = k + 1;
    while (e - k <= MAX_QUOTED && e < s.length && codeAt(s, e) !== q && codeAt(s, e) !== 10 && codeAt(s, e) !== 92) e++;
    if (codeAt(s, e) !== q) break;
    value += s.slice(k + 1, e);
    end = e;
  }
  return end === close ? undefined : { value, end };
}

/**
 * Every format above starts its match with one of these literals (the AWS and Google prefixes, `gh?_` and
 * `github_pat_`, `npm_`, the Slack prefixes and their `-`, Stripe's `?k_live_`/`?k_test_`, a JWT's `eyJ`,
 * `-----BEGIN`, the `://` of a connection string, a password file line's `:5432:` or `:*:`). A text holding none
 * of them holds no secret, and one
 * native search (literals only: linear in the text) says so without the scan below. scanSecretsFully is the
 * scan itself, which the tests hold this to.
 */
const ANCHORS = /A(?:KIA|GPA|IDA|ROA|IPA|NPA|NVA|SIA|3T|Iza)|gh[pousr]_|github_pat_|npm_|xox[bpaor]-|xapp-|[sr]k_(?:live|test)_|eyJ|-----(?:BEGIN|END)|:\/\/|:5432:|:\*:/;

/** The anchors of ANCHORS that hold none of `_`, `-`, `://` or `eyJ`: the AWS and Google prefixes. */
const LETTER_ANCHORS = /A(?:KIA|GPA|IDA|ROA|IPA|NPA|NVA|SIA|3T|Iza)/;

/**
 * Whether `s` may hold an anchor: every anchor holds `_`, `-`, `://`,
 * `eyJ`, `:5432:` or `:*:`, or is one of LETTER_ANCHORS. Single-literal searches are several
 * times faster than the alternation, whose first letters (`e`, `n`, `r`,
 * `s`...) start a try at most places of prose; ANCHORS then decides.
 */
function mayHoldAnchor(s: string): boolean {
  return s.includes('_') || s.includes('-') || s.includes('://') || s.includes('eyJ') || s.includes(':5432:') || s.includes(':*:') || LETTER_ANCHORS.test(s);
}

/**
 * Every secret in `s`, left to right, not overlapping: the formats above
 * and those known by their structure alone (shaped.ts), then gitleaks'
 * default rules (ruleset.ts), then generic assignments, each where the
 * ones before found nothing. `stop` is asked while the rules run (a
 * deadline): see scanRuleset.
 */
export function scanSecrets(s: string, stop?: () => boolean): Span[] {
  const own = mergeSpans(scanFormats(s, stop), scanShaped(s, stop));
  // (Shorter than a name of two, an operator and a password of six, a text holds no assignment: most member names.)
  const collections: Collection[] = [];
  const assignments = s.length < MIN_ASSIGNMENT ? [] : scanAssignments(s, stop, collections);
  const nested = collections.length === 0 ? (NO_SPANS as Span[]) : scanNestedSecrets(s, collections, stop);
  const tables = mergeSpans(mergeSpans(mergeSpans(scanTables(s, stop) as Span[], scanInserts(s, stop)), scanKubernetesSecrets(s, stop)), nested);
  // (The tables' finds are a fresh array where there are any.)
  const more = tables.length === 0 ? assignments : mergeSpans(assignments, tables as Span[]);
  const rules = scanRuleset(s, stop);
  // A provider's rule names the value better than a generic assignment: rules first, assignments where none found, and
  // widened to the rest of an assignment's value they stand in (`private-key: aaaa=fw_...A.aaaa...`).
  return reachTokenEnds(s, mergeWidened(s, mergeSpans(own, rules), more));
}

/**
 * Each find reaches to the end of the token it stands at the start of: a secret of a fixed length read at the start
 * of a longer token (gitleaks' `gitlab-pat` reads 20 characters and no end) is masked to the token's end, for what is
 * glued to it (letters, digits, `_`, `-`) is the rest of the credential. Unless what is glued is a word (letters of
 * one case, or capitalized): strings joined at a seam are read as one text, and a token that ends one string is not
 * one with the word that starts the next (`token=ghp_...` then `nothing here`). `spans` are in order and apart; a
 * find reaches no further than the next one starts, so the reaches are apart too and read the text once at most.
 */
function reachTokenEnds(s: string, spans: Span[]): Span[] {
  for (let i = 0; i < spans.length; i++) {
    const limit = i + 1 < spans.length ? spans[i + 1]!.start : s.length;
    const sp = spans[i]!;
    let end = sp.end;
    while (end < limit && (isWord(s.charCodeAt(end)) || s.charCodeAt(end) === 45)) end++;
    // (A find that ends with `-` or `_` ends inside its token, whatever follows: a rule of a bounded length read up to
    // a `-` of a longer token, `pa-...aa-` then `aaaaa`.)
    const inside = s.charCodeAt(sp.end - 1) === 45 || s.charCodeAt(sp.end - 1) === 95;
    if (end !== sp.end && (inside || !GLUED_WORD.test(s.slice(sp.end, end)))) spans[i] = { kind: sp.kind, start: sp.start, end };
  }
  return spans;
}

/** A word: letters of one case, or capitalized. */
const GLUED_WORD = new RegExp(`^${CASED_WORD}$`);

/**
 * A provider's credentials only: the own formats (a `.pgpass` line's password left out: it is read by where it
 * stands), the shaped ones and the rule set's, to their token's end as scanSecrets gives them; no generic assignment.
 */
export function scanProviders(s: string, stop?: () => boolean): Span[] {
  const own = mergeSpans(scanFormats(s, stop), scanShaped(s, stop)).filter((sp) => sp.kind !== 'pgpass-password');
  return reachTokenEnds(s, mergeSpans(own, scanRuleset(s, stop)));
}

/** The formats above only: the scan, after a native search for an anchor says there may be one. */
export function scanFormats(s: string, stop?: () => boolean): Span[] {
  return mayHoldAnchor(s) && ANCHORS.test(s) ? scanSecretsFully(s, stop) : [];
}

function stopped(what: string): DetectionStopped {
  return new DetectionStopped(`the time for this decision ran out inside the ${what}`);
}

/**
 * `a` with every span of `b` that overlaps none of `a`, and each span of `a` that overlaps one of `b` widened to the
 * rest of it: a provider's find inside a generic value (`private-key: aaaa=fw_...A.aaaa...`) masks the whole value
 * under the provider's kind, but for a word glued after its end (a string joined at a seam, `token=ghp_...` then
 * `nothing here`). Both sorted, each non-overlapping: one pass.
 */
function mergeWidened(s: string, a: Span[], b: Span[]): Span[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const out: Span[] = [];
  let i = 0;
  let lastEnd = 0;
  const push = (sp: Span) => {
    out.push(sp);
    lastEnd = sp.end;
  };
  for (const sp of b) {
    while (i < a.length && a[i]!.end <= sp.start) push(a[i++]!);
    if (sp.start < lastEnd) continue;
    if (!(i < a.length && a[i]!.start < sp.end)) {
      push(sp);
      continue;
    }
    for (let first = true; i < a.length && a[i]!.start < sp.end; first = false) {
      const cur = a[i++]!;
      const start = first && sp.start < cur.start ? sp.start : cur.start;
      const next = i < a.length && a[i]!.start < sp.end ? a[i]!.start : sp.end;
      const end = cur.end < next && !(next === sp.end && GLUED_WORD.test(s.slice(cur.end, next))) ? next : cur.end;
      push(start === cur.start && end === cur.end ? cur : { kind: cur.kind, start, end });
      if (cur.end >= sp.end) break;
    }
  }
  while (i < a.length) push(a[i++]!);
  return out;
}

/** `a` with every span of `b` that overlaps none of `a`, in order; both sorted, each non-overlapping: one pass. */
function mergeSpans(a: Span[], b: Span[]): Span[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const out: Span[] = [];
  let i = 0;
  for (const sp of b) {
    while (i < a.length && a[i]!.end <= sp.start) out.push(a[i++]!);
    // a[i] (if any) ends after sp starts: they overlap when it also starts before sp ends.
    if (i < a.length && a[i]!.start < sp.end) continue;
    out.push(sp);
  }
  while (i < a.length) out.push(a[i++]!);
  return out;
}

/**
 * The operators of an assignment besides `=` and `:`, found in one search (one pass over a text that holds none: seven
 * searches for each cost 3.5 times one): an element's `>`, a quoted name's `,` (found with its quote), prose's verbs
 * (PROSE_VERBS, found with the spaces around them; R's `<-` among them, and ` to ` only after a verb that sets within
 * eight words before it, `Set the admin password for prod to ...`, never `send the token to ...`), a secret's word and
 * a blank (BARE_WORD: `and password X`; found by the blank, tab, line break or `(` before it, so that only those places
 * start a try; or the last word of a name, BARE_NAME: `ENV API_KEY X`, `ENV DB_PASS X`, found by the `_`, `.` or `-` before it, or in camel case by
 * its capital, `ApiKey X`: a search from each lower-case letter cost 6 % on prose), a
 * command's flag (`--`, see flagOperator), a PowerShell parameter whose name ends in a secret's word (`-ClientSecret`,
 * found with the blank before it: a lookbehind there would be tried at every character) or a Java tool's store or key
 * password (`keytool ... -srcstorepass`, `jarsigner -keypass`), a row's first `,` after a name that starts its line (`api_token,Xk9...,`).
 * The operator's place is its last character (the flag's and the word's: the blank after the name).
 */
const OTHER_OPERATORS = new RegExp(
  String.raw`['"],|\n[ \t]*[A-Za-z_][\w.-]{2,63},|>| (?:(?:${LOCAL_VERBS.join('|')}) |(?:is:? |was )(?:now |still |(?:set |changed |reset )to )?|has been (?:set |changed |reset )to |(?:-->|-|\u2013|\u2014|\u2192|->|\u21d2|\u27f6|\u2794|\u279c|\u27a1|<-) |to (?<=(?:^|[^\w])(?:[Ss]et|SET|[Cc]hange|CHANGE|[Rr]eset|RESET|[Uu]pdate|UPDATE)[ds]?[ \t](?:[\w.@-]{1,64}[ \t]){1,8}to ))|[ \t\n(_.-](?=(?:[Pp]ass(?:word|wd|phrase)|PASS(?:WORD|WD|PHRASE)|[Tt]oken|TOKEN|[Kk]ey|KEY|[Ss]ecret|SECRET)[ \t]{1,32}\S)|[_.-](?=(?:[Pp]ass|PASS|[Pp]wd|PWD)[ \t]{1,32}\S)|[PTKS](?<=[a-z0-9].)(?=(?:ass(?:word|wd|phrase)|oken|ey|ecret)[ \t]{1,32}\S)|[ \t(]-(?=[A-Z][A-Za-z]{0,40}(?:Password|Passphrase|Secret|Key|Token)[ \t]{1,8}\S|[a-z]{0,16}(?:store|key)pass[ \t]{1,8}\S)|--`,
  'g',
);
/** A verb of LOCAL_VERBS as OTHER_OPERATORS finds it, with its blanks. */
const LOCAL_VERB_FOUND = new RegExp(`^ (?:${LOCAL_VERBS.join('|')}) $`);
/** The first letters of BARE_AT_START's words. */
const BARE_FIRST = new Set([...'PpTtKkSs'].map((c) => c.charCodeAt(0)));
/** A row's name and its `,` at the text's start, where no line break before it is found. */
const ROW_AT_START = /^[ \t]*[A-Za-z_][\w.-]{2,63},/;
/** A secret's word (BARE_WORD) and a blank at the text's start, where no blank before it is found. */
const BARE_AT_START = /^(?:[Pp]ass(?:word|wd|phrase)|PASS(?:WORD|WD|PHRASE)|[Tt]oken|TOKEN|[Kk]ey|KEY|[Ss]ecret|SECRET)(?=[ \t]{1,32}\S)/;

/** The next of OTHER_OPERATORS whose operator stands at or after `from`, or -1. */
function nextOther(s: string, from: number, cursor: { at: number }): number {
  if (from === 0 && BARE_FIRST.has(s.charCodeAt(0))) {
    const m = BARE_AT_START.exec(s);
    if (m !== null) return m[0].length;
  }
  if (from === 0) {
    const m = ROW_AT_START.exec(s);
    if (m !== null) return m[0].length - 1;
  }
  // (Where the last search stopped: the operators are taken in order, and none found there is found again.)
  OTHER_OPERATORS.lastIndex = Math.max(cursor.at, from - 24);
  for (let m = OTHER_OPERATORS.exec(s); m !== null; m = OTHER_OPERATORS.exec(s)) {
    cursor.at = OTHER_OPERATORS.lastIndex;
    let op: number;
    if (m[0] === '--') op = flagOperator(s, m.index);
    else if (m[0].length === 2 && m[0].charCodeAt(1) === 45) {
      // (A PowerShell parameter, found by the blank before its `-`: its operator is the blank after its name.)
      op = m.index + 2;
      while (isLetter(codeAt(s, op))) op++;
    } else if (m[0].length === 1 && m[0] !== '>') {
      // (A secret's word, found by the blank, tab, line break or `(` before it: its operator is the blank after it.)
      op = m.index + 1;
      while (isLetter(codeAt(s, op))) op++;
    } else {
      op = m.index + m[0].length - 1;
      // (`is` in another language is read only after a name that says secret: ` es ` and ` er ` stand everywhere in prose.)
      if (m[0].length <= 9 && LOCAL_VERB_FOUND.test(m[0]) && !localVerbNamed(s, m.index)) continue;
    }
    if (op >= from) return op;
  }
  return -1;
}

/**
 * Prose that tells what a value is after it (`Xk9wQ2mZ7pL4 is the password`, a comment's `# ... was my old token`):
 * ` is ` or ` was ` (found as prose's verbs are, OTHER_OPERATORS), `the`, `my`, `our`, `your` or `its`, a word that
 * says which at most, and a secret's word. The value is the token before it (up to 128 characters; a comment's `//`,
 * `#` or `*` and quotes before it left out): under a password's word 8 characters or more with a letter and a digit
 * at 2.5 bits each, else random to look at; no words, path or URL.
 */
const TOLD_AFTER =
  /(?:the|my|our|your|its) (?:(?:new|current|old|temporary|admin|root|master|db|database|api|access|secret|private|login|wifi|wi-fi) )?(password|passphrase|passcode|pwd|token|api key|secret key|secret|key)(?![\w-])/iy;

/** The value prose tells a secret of after it (TOLD_AFTER), where `i` is the blank after its ` is ` or ` was `; or undefined. */
function toldAfter(s: string, i: number): Span | undefined {
  const at = s.startsWith(' is ', i - 3) ? i - 3 : s.startsWith(' was ', i - 4) ? i - 4 : -1;
  if (at < 0) return undefined;
  TOLD_AFTER.lastIndex = i + 1;
  const m = TOLD_AFTER.exec(s);
  return m === null ? undefined : toldValue(s, at, m[1]!);
}

/** The value before ` is ` at `at` that prose tells is a secret of `word`'s kind (TOLD_AFTER), or undefined. */
function toldValue(s: string, at: number, word: string): Span | undefined {
  let end = at;
  // (Quotes and a sentence's mark after the value: `"Xk9..." is the password`, `(Xk9...) is`.)
  while (end > 0 && (s.charCodeAt(end - 1) === 34 || s.charCodeAt(end - 1) === 39 || s.charCodeAt(end - 1) === 96 || s.charCodeAt(end - 1) === 41)) end--;
  let start = end;
  while (start > 0 && end - start < 128 && !isSpace(s.charCodeAt(start - 1))) start--;
  // (A comment's mark, quotes or a bracket glued before it: `//Xk9...`, `#Xk9...`, `"Xk9...`.)
  while (start < end && /["'`(#/*]/.test(s[start]!)) start++;
  const value = s.slice(start, end);
  const password = /^pass|^pwd/i.test(word);
  if (value.length < 8 || wordy(value) || isPath(value) || isLink(value) || REDACTED.test(value)) return undefined;
  if (password ? !(hasDigit(value) && /[A-Za-z]/.test(value) && shannonEntropy(value) >= 2.5) : !randomToLook(value)) return undefined;
  return { kind: 'secret-assignment', start, end };
}

/**
 * Where the name before a dot leader spaced out ends (`Password . . . . :`, `Password. . . :`, with `k` at its last `.`):
 * the leader's dots and blanks read back (MAX_LEADER characters at most, two dots at least); `k` where it is none.
 */
function beforeLeader(s: string, k: number): number {
  let d = k;
  let dots = 0;
  while (d >= 0 && k - d < MAX_LEADER && (codeAt(s, d) === 46 || codeAt(s, d) === 32)) {
    if (codeAt(s, d) === 46) dots++;
    d--;
  }
  return dots >= 2 && d >= 0 && isNameChar(codeAt(s, d)) ? d : k;
}
/** The longest dot leader read back from its operator. */
const MAX_LEADER = 64;

/** The generic assignments of `s` (see assignment). */
function scanAssignments(s: string, stop?: () => boolean, collections?: Collection[]): Span[] {
  const out: Span[] = [];
  let from = 0;
  let eq = s.indexOf('=');
  let colon = s.indexOf(':');
  const cursor = { at: 0 };
  let other = nextOther(s, 0, cursor);
  const run: ValueRun = { start: -1, end: -1 };
  let steps = 0;
  for (;;) {
    if (stop !== undefined && (++steps & ASK_MASK) === 0 && stop()) throw stopped('generic assignments');
    if (eq >= 0 && eq < from) eq = s.indexOf('=', from);
    if (colon >= 0 && colon < from) colon = s.indexOf(':', from);
    if (other >= 0 && other < from) other = nextOther(s, from, cursor);
    let i = eq < 0 ? colon : colon < 0 ? eq : Math.min(eq, colon);
    if (other >= 0 && (i < 0 || other < i)) i = other;
    if (i < 0) break;
    const m = assignment(s, i, run, collections);
    if (m !== undefined) {
      // (One that holds a format's find is the value that find is widened to: mergeWidened.)
      out.push({ kind: 'secret-assignment', start: m[0], end: m[1] });
      from = m[1];
    } else {
      // (Or prose that tells after a value what it is: its span before the verb, in place of what was found inside it,
      // `#pw=... is the password`.)
      const told = s.charCodeAt(i) === 32 ? toldAfter(s, i) : undefined;
      if (told !== undefined) {
        while (out.length > 0 && out[out.length - 1]!.start >= told.start) out.pop();
        if (told.start >= (out.length === 0 ? 0 : out[out.length - 1]!.end)) out.push(told);
      }
      from = i + 1;
    }
  }
  return out;
}

/** The scan of scanSecrets, without the search for an anchor first. */
export function scanSecretsFully(s: string, stop?: () => boolean): Span[] {
  const out: Span[] = [];
  const n = s.length;
  let lastEnd = 0;
  let steps = 0;
  for (let i = 0; i < n; i++) {
    if (stop !== undefined && (++steps & ASK_MASK) === 0 && stop()) throw stopped('credential formats');
    const c = s.charCodeAt(i);
    // 64 or more base64 characters with no break are encoded data (an image, a blob): passed over whole. Every
    // credential format above holds a character outside that alphabet (`_`, `-`, `:`) or is shorter, except a
    // JWT, whose run starts with `eyJ` and is never skipped.
    if (isB64(c) && c !== 101 && !isB64(codeAt(s, i - 1))) {
      const e = b64RunEnd(s, i, 64);
      if (e > 0) {
        i = e - 1;
        continue;
      }
    }
    let end = -1;
    let kind = '';
    switch (c) {
      case 65: // A
        if ((end = aws(s, i)) > 0) kind = 'aws-access-key-id';
        else if ((end = googleKey(s, i)) > 0) kind = 'google-api-key';
        break;
      case 103: // g
        if ((end = github(s, i)) > 0) kind = 'github-token';
        break;
      case 110: // n
        if ((end = npm(s, i)) > 0) kind = 'npm-token';
        break;
      case 120: // x
        if ((end = slack(s, i)) > 0) kind = 'slack-token';
        break;
      case 115: // s
      case 114: // r
        if ((end = stripe(s, i)) > 0) kind = 'stripe-secret-key';
        break;
      case 101: // e
        if ((end = jwt(s, i)) > 0) kind = 'jwt';
        break;
      case 45: {
        // -
        if ((end = privateKey(s, i)) > 0) {
          kind = 'private-key';
          break;
        }
        const tail = keyTail(s, i, lastEnd);
        if (tail !== undefined) {
          out.push({ kind: 'private-key', start: tail[0], end: tail[1] });
          lastEnd = tail[1];
          i = tail[1] - 1;
        }
        continue;
      }
      case 58: {
        // :
        const m = connection(s, i);
        if (m !== undefined && m[0] >= lastEnd) {
          out.push({ kind: 'connection-string', start: m[0], end: m[1] });
          lastEnd = m[1];
          i = m[1] - 1;
          continue;
        }
        const pw = pgpass(s, i);
        if (pw !== undefined && pw[0] >= lastEnd) {
          out.push({ kind: 'pgpass-password', start: pw[0], end: pw[1] });
          lastEnd = pw[1];
          i = pw[1] - 1;
        }
        continue;
      }
      default:
        continue;
    }
    if (end > 0) {
      out.push({ kind, start: i, end });
      lastEnd = end;
      i = end - 1;
    }
  }
  return out;
}

/**
 * The line under a Markdown table's header: `|---|:---:|`, `|:--|--:|`, each cell one `-` or more between optional
 * colons; or under a database client's, its cells joined by `+` (psql's `----+------`, the MySQL client's
 * `+----+------+`).
 */
export const TABLE_RULE = /^[ \t]*[|+]?(?:[ \t]*:?-+:?[ \t]*[|+])+(?:[ \t]*:?-+:?[ \t]*)?$/;
/** A header's cell that names a column: a name of at most three words (a Markdown table's: any words of a name). */
const HEADER_CELL = /^[A-Za-z][\w.-]*(?: [\w.-]+){0,2}$/;
const MARKDOWN_HEADER_CELL = /^[A-Za-z][\w .-]*$/;
/** No find: one array for every text that holds no table. */
const NO_SPANS: readonly Span[] = Object.freeze([]);
/** The fewest characters of a table: a header of two names, a rule and a row of a secret (`a,key\nb,12345678`). */
const MIN_TABLE = 16;
/** A line that may be a header naming a secret (SECRET_NAME_END and SECRET_NAME_ANY's words): asked before its cells are split. */
const SECRET_WORD = /key|secret|token|pass|pwd|cred|auth|bearer|pat|psk/i;

/** Line `at`'s end (its `\n` or the text's end). */
function lineEnd(s: string, at: number): number {
  const n = s.indexOf('\n', at);
  return n < 0 ? s.length : n;
}

/** The place of the first character of the line [a, b) that is no blank, or `b`. */
function firstNonBlank(s: string, a: number, b: number): number {
  while (a < b && isSpace(s.charCodeAt(a))) a++;
  return a;
}

/** The place after the last character of the line [a, b) that is no blank, or `a`. */
function lastNonBlank(s: string, a: number, b: number): number {
  while (b > a && isSpace(s.charCodeAt(b - 1))) b--;
  return b;
}

/**
 * A line that labels what the next line holds: a secret's name of up to four words alone, a heading's (`## API key`)
 * or a field's (`Your API key:`), as a CLI prints a new key and a page shows one. (Without a colon, two words at most:
 * `Enter a strong password` is an instruction.)
 */
const LABEL = /^(?:#{1,6}[ \t]+)?(?:([A-Za-z][\w.-]*(?:[ \t][\w.-]+){0,3})[ \t]*:|([A-Za-z][\w.-]*(?:[ \t][\w.-]+)?))$/;
/** A line between a label and its value: empty, or a heading's rule (`-------`, `=======`). */
const LABEL_GAP = /^[ \t]*(?:-{3,}|={3,})?[ \t]*$/;

/** The value alone on the line after the label that ends at `b` (one empty line or a heading's rule between at most): its [start, end), or undefined. */
function labelled(s: string, b: number): [number, number] | undefined {
  let a = b + 1;
  if (a >= s.length) return undefined;
  let e = lineEnd(s, a);
  if (LABEL_GAP.test(s.slice(a, Math.min(e, a + 256)))) {
    a = e + 1;
    if (a >= s.length) return undefined;
    e = lineEnd(s, a);
  }
  const x = firstNonBlank(s, a, e);
  const y = lastNonBlank(s, x, e);
  if (y <= x || y - x > MAX_VALUE) return undefined;
  for (let k = x; k < y; k++) if (isSpace(s.charCodeAt(k))) return undefined;
  // (A token that ends with `:` is the next label, `secret_key:` then `Password:`.)
  return s.charCodeAt(y - 1) === 58 ? undefined : [x, y];
}

/** The line under an aligned table's header: groups of dashes between blanks (`---   -----`). */
const ALIGNED_RULE = /^[ \t]*-{2,}(?:[ \t]+-{2,})+[ \t]*$/;

/** The cells of an aligned table's line [a, b): runs of characters between two blanks or more, or a tab. */
function alignedCellsOf(s: string, a: number, b: number): [number, number][] {
  const cells: [number, number][] = [];
  let p = firstNonBlank(s, a, b);
  while (p < b) {
    let q = p;
    while (q < b && !(s.charCodeAt(q) === 9 || (s.charCodeAt(q) === 32 && (codeAt(s, q + 1) === 32 || codeAt(s, q + 1) === 9 || q + 1 === b)))) q++;
    cells.push([p, q]);
    p = firstNonBlank(s, q, b);
  }
  return cells;
}

/** A line's cells, each [start, end); `open` where its last is a quoted cell its line does not close (Cells, cellsOf). */
type Cells = [number, number][] & { open?: boolean };

/** The cells of the line [a, b) between `sep`s (a blank: aligned, alignedCellsOf), each [start, end) with its blanks (and a Markdown row's outer `|`) left out. */
function cellsOf(s: string, a: number, b: number, sep: number): Cells {
  if (sep === 32) return alignedCellsOf(s, a, b);
  const cells: Cells = [];
  let p = firstNonBlank(s, a, b);
  let q = lastNonBlank(s, p, b);
  if (sep === 124) {
    if (codeAt(s, p) === 124) p++;
    if (q > p && s.charCodeAt(q - 1) === 124) q--;
  }
  for (let c0 = p; c0 <= q; ) {
    // (The separator looked for within the line only.)
    let c1 = c0;
    // (A cell of comma- or tab-separated values in double quotes may hold the separator, a quote in it doubled: a
    // password manager's export, `GitHub,https://github.com,alice,"p@ss,w0rd!"`. Read to its closing quote on the line:
    // the columns after it keep their places. With none there the cell goes on past the line, as a CSV reader reads it,
    // or was cut where a block ends: the rest of the line is the cell, its quote left out.)
    if (sep !== 124) {
      const x0 = firstNonBlank(s, c0, q);
      if (codeAt(s, x0) === 34) {
        let k = x0 + 1;
        while (k < q && (s.charCodeAt(k) !== 34 || codeAt(s, k + 1) === 34)) k += s.charCodeAt(k) === 34 ? 2 : 1;
        if (k >= q) {
          cells.push([x0 + 1, q]);
          cells.open = true;
          break;
        }
        c1 = k + 1;
      }
    }
    while (c1 < q && s.charCodeAt(c1) !== sep) c1++;
    const x = firstNonBlank(s, c0, c1);
    cells.push([x, lastNonBlank(s, x, c1)]);
    c0 = c1 + 1;
  }
  return cells;
}

/** The name a cell says (its words joined by `_`, lower case), or undefined where it is no name (HEADER_CELL). */
function nameOfCell(s: string, [x, y]: [number, number], markdown: boolean): string | undefined {
  const text = s.slice(x, y);
  if (text.length > MAX_NAME || !(markdown ? MARKDOWN_HEADER_CELL : HEADER_CELL).test(text)) return undefined;
  // (A cell random to look at is a row's value, no column's name: a row read as a header, whose value ended in `pwd`.)
  if (randomToLook(text)) return undefined;
  return text.toLowerCase().replace(/[ .-]+/g, '_');
}

/** A table's header: its secret-named columns (each column's index and its name, words joined by `_`, lower case) and how many cells it has. */
interface Header {
  columns: [number, string][];
  width: number;
}

/** The header on the line [a, b) between `sep`s (`|` for a Markdown table's). */
function headerOf(s: string, a: number, b: number, sep: number): Header {
  const cells = cellsOf(s, a, b, sep);
  return { columns: secretColumns(s, cells, sep === 124), width: cells.length };
}

function secretColumns(s: string, cells: readonly [number, number][], markdown: boolean): [number, string][] {
  const out: [number, string][] = [];
  if (cells.length < 2) return out;
  for (let c = 0; c < cells.length; c++) {
    const name = nameOfCell(s, cells[c]!, markdown);
    // (The first cell may hold what stood before the header on its line, `"blob":"name,api_key`: a header written as
    // base64 and read decoded in its place. It names no column then.)
    if (name === undefined) {
      if (c === 0) continue;
      return [];
    }
    if (secretNamed(name)) out.push([c, name]);
  }
  return out;
}

/** The place of the next `c` at or after `from` (`at`, the one found before, reused while it lies ahead), or the text's length. */
function nextOf(s: string, c: string, from: number, at: number): number {
  if (at >= from) return at;
  const n = s.indexOf(c, from);
  return n < 0 ? s.length : n;
}

/**
 * Whether a table's cell `v` under the column `name` is a secret: the value of `name=v` whole (assignment), or what
 * `v` encodes, where the cell is one base64 or hex run, up to DECODE_ROUNDS deep. (A model reads a table's encoded
 * cell under its header however far below it stands; the decoded reading of index.ts reads a run with 64 characters
 * around it only, as a value's name stands next to it elsewhere.)
 */
function tableValue(name: string, v: string): boolean {
  // (A GPG key's fingerprint is no secret, and neither is what its hex decodes to.)
  if (gpgFingerprint(name, v, name, 0, name.length)) return false;
  for (let round = 0; ; round++) {
    const line = `${name}=${v}`;
    const m = assignment(line, name.length, { start: -1, end: -1 });
    if (m !== undefined && m[0] === name.length + 1 && m[1] === line.length) return true;
    if (round === DECODE_ROUNDS || v.length < MIN_RUN) return false;
    const runs = encodedRuns(v);
    if (runs.length !== 1 || runs[0]!.start !== 0 || runs[0]!.end !== v.length) return false;
    v = runs[0]!.text;
  }
}

/**
 * An SQL `INSERT` whose column list names a secret: `INSERT INTO`, the table's name (one token, a schema's name before
 * it: bare, or quoted as `"..."`, `` `...` ``, `[...]`), its columns up to `VALUES (`, each written bare or quoted, up to
 * 2,048 characters in all. (The name is one token, so that a text dense with `insert` reads each stretch a bounded
 * number of times.)
 */
const SQL_NAME = '(?:"[^"\\n]{1,128}"|`[^`\\n]{1,128}`|\\[[^\\]\\n]{1,128}\\]|[\\w$]{1,128})';
const INSERT = new RegExp(`\\binsert[ \\t\\r\\n]+(?:into[ \\t\\r\\n]+)?${SQL_NAME}(?:\\.${SQL_NAME}){0,2}[ \\t\\r\\n]*\\(([^()]{1,2048})\\)[ \\t\\r\\n]*values[ \\t\\r\\n]*\\(`, 'gi');

/**
 * The values of an SQL `INSERT`'s rows under a column that names a secret (`INSERT INTO users (name, password) VALUES
 * ('bob', '...'), (...)`: a seed, a migration, `pg_dump --column-inserts`, a database server's answer): each a string
 * literal read as the value of `NAME=value` (tableValue), the column's name its name. A row's values are split at its
 * commas outside strings and brackets, walked once each; a value that is no string literal (a number, `NULL`, a call)
 * is passed over.
 */
function scanInserts(s: string, stop?: () => boolean): Span[] {
  // (`VALUES`, `values` or `Values` found as a literal first: most texts hold none, and a literal search is some
  // times faster than a regex's.)
  if (s.length < MIN_TABLE || !(s.includes('alues') || s.includes('ALUES')) || !SECRET_WORD.test(s)) return [];
  const out: Span[] = [];
  INSERT.lastIndex = 0;
  for (let m = INSERT.exec(s); m !== null; m = INSERT.exec(s)) {
    if (stop !== undefined && stop()) throw stopped('SQL statements');
    const names = m[1]!.split(',').map((c) => c.trim().replace(/^(?:["`[])(.*)(?:["`\]])$/s, '$1').toLowerCase());
    const secret = names.map((c) => (c.length <= MAX_NAME && /^[\w.$-]+$/.test(c) && secretNamed(c) ? c : undefined));
    if (!secret.some((c) => c !== undefined)) continue;
    // The rows: `(` values `)`, joined by commas.
    let p = INSERT.lastIndex - 1;
    while (codeAt(s, p) === 40) {
      p = insertRow(s, p + 1, secret, out);
      if (codeAt(s, p) !== 41) break;
      p = firstNonBlank(s, p + 1, s.length);
      if (codeAt(s, p) !== 44) break;
      p = firstNonBlank(s, p + 1, s.length);
      if (stop !== undefined && stop()) throw stopped('SQL statements');
    }
    INSERT.lastIndex = Math.max(INSERT.lastIndex, p);
  }
  return out;
}

/**
 * A Kubernetes Secret as `kubectl get secret -o yaml` or `-o json` prints it, or a manifest: `kind: Secret` (not
 * `ExternalSecret`, `SopsSecret`), and its `data:` (base64) or `stringData:` (plain) entries, whatever their names
 * (`.dockerconfigjson`, `extra`, `tls.key`): every value there is a secret the Secret holds. In YAML, the data blocks of
 * a document (between `---` lines) that holds the kind's line; in JSON, a `"data": {...}` object with `"kind":
 * "Secret"` right after it, as kubectl orders the members, or in a text whose every kind is a Secret or a list.
 */
const K8S_KIND = /^[ \t]*(?:- [ \t]*)?kind:[ \t]*["']?[Ss]ecret["']?[ \t]*\r?$/gm;
const K8S_DATA = /^([ \t]*)((?:- [ \t]*)?)(?:data|stringData):[ \t]*\r?$/gm;
const K8S_SEPARATOR = /^---[ \t]*\r?$/gm;
/** One entry of a data block: its indentation, its name (bare or quoted) and its `:`, a blank or the line's end after it. */
const K8S_ENTRY = /^([ \t]*)(?:"[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s:#"'][^:\n]{0,255}?):(?=[ \t]|\r?$)/;
const K8S_JSON_KIND = /"kind"[ \t]*:[ \t]*"([A-Za-z]+)"/g;
const K8S_JSON_DATA = /"(?:data|stringData)"[ \t]*:[ \t]*\{/g;
const K8S_JSON_PAIR = /[\s,]*"(?:[^"\\\n]|\\.){1,256}"[ \t]*:[ \t]*"((?:[^"\\\n]|\\.){0,65536})"/y;
const K8S_JSON_AFTER = /^[\s,]*"kind"[ \t]*:[ \t]*"[Ss]ecret"/;
/** The shortest value read as a Secret's (`YWRtaW4=` is `admin`). */
const MIN_K8S_VALUE = 4;

/** [a, b) without the quotes around it, where a `"` or a `'` opens and closes it. */
function unquoted(s: string, a: number, b: number): [number, number] {
  const q = s.charCodeAt(a);
  return b - a >= 2 && (q === 34 || q === 39) && s.charCodeAt(b - 1) === q ? [a + 1, b - 1] : [a, b];
}

function scanKubernetesSecrets(s: string, stop?: () => boolean): Span[] {
  // (A kind's line found as a literal first: most texts hold none.)
  const yaml = s.includes('kind:') && s.includes('ata:');
  const json = s.includes('"kind"') && s.includes('ata"');
  if (!(yaml || json) || !s.includes('ecret')) return [];
  const out: Span[] = [];
  const value = (a: number, b: number) => {
    const [x, y] = unquoted(s, a, b);
    if (y - x >= MIN_K8S_VALUE && !s.startsWith('{{', x)) out.push({ kind: 'secret-assignment', start: x, end: y });
  };
  // YAML: the kinds' lines and the documents' separators, each found once, walked with the data blocks in order.
  const kinds = yaml ? [...s.matchAll(K8S_KIND)].map((m) => m.index) : [];
  if (kinds.length > 0) {
    const separators = [...s.matchAll(K8S_SEPARATOR)].map((m) => m.index);
    let k = 0;
    let d = 0;
    let readTo = 0;
    for (const m of s.matchAll(K8S_DATA)) {
      if (m.index < readTo) continue;
      if (stop !== undefined && stop()) throw stopped('Kubernetes secrets');
      while (d < separators.length && separators[d]! < m.index) d++;
      const docStart = d > 0 ? separators[d - 1]! : 0;
      const docEnd = d < separators.length ? separators[d]! : s.length;
      while (k < kinds.length && kinds[k]! < docStart) k++;
      if (!(k < kinds.length && kinds[k]! < docEnd)) continue;
      // The block: the lines after it indented deeper than its name.
      const indent = m[1]!.length + m[2]!.length;
      let p = m.index + m[0].length + 1;
      let block = -1;
      while (p < docEnd) {
        let e = s.indexOf('\n', p);
        if (e < 0 || e > docEnd) e = docEnd;
        // (The line's indentation and its end before trailing blanks, walked by hand: a regex for trailing blanks
        // tries at every blank of a line.)
        let q = p;
        while (q < e && (s.charCodeAt(q) === 32 || s.charCodeAt(q) === 9)) q++;
        let last = e;
        while (last > q && isSpace(s.charCodeAt(last - 1))) last--;
        const depth = q - p;
        const blank = last === q || s.charCodeAt(q) === 35;
        if (!blank && depth <= indent) break;
        if (block >= 0 && (blank || depth > block)) {
          // (A line of a block scalar's value, `.dockercfg: |` then the base64 indented.)
          if (!blank) value(q, last);
        } else if (!blank) {
          block = -1;
          const entry = K8S_ENTRY.exec(s.slice(p, last));
          if (entry !== null) {
            let v = p + entry[0].length;
            while (v < last && (s.charCodeAt(v) === 32 || s.charCodeAt(v) === 9)) v++;
            if (v < last && /^[|>][-+0-9]*$/.test(s.slice(v, last))) block = depth;
            else if (v < last) value(v, last);
          }
        }
        p = e + 1;
      }
      readTo = p;
    }
  }
  // JSON: each data object's string values, where a Secret is its kind.
  if (json) {
    const named = [...s.matchAll(K8S_JSON_KIND)].map((m) => m[1]!);
    if (named.some((n) => /^[Ss]ecret$/.test(n))) {
      const allSecrets = named.every((n) => /^(?:[Ss]ecret|List|SecretList)$/.test(n));
      for (const m of s.matchAll(K8S_JSON_DATA)) {
        if (stop !== undefined && stop()) throw stopped('Kubernetes secrets');
        const found: [number, number][] = [];
        let end = m.index + m[0].length;
        K8S_JSON_PAIR.lastIndex = end;
        for (let pair = K8S_JSON_PAIR.exec(s); pair !== null; pair = K8S_JSON_PAIR.exec(s)) {
          end = K8S_JSON_PAIR.lastIndex;
          found.push([end - 1 - pair[1]!.length, end - 1]);
        }
        const close = firstNonBlank(s, end, s.length);
        if (codeAt(s, close) !== 125) continue;
        if (allSecrets || K8S_JSON_AFTER.test(s.slice(close + 1, close + 65))) for (const [a, b] of found) value(a, b);
      }
    }
  }
  return out.sort((a, b) => a.start - b.start);
}

/**
 * A name of a collection that holds secrets, read from `raw` (a member's name, its quotes left out): the name a value
 * one object below it is read under (tableValue), a plural read as its singular (`passwords` as `password`, `api_keys`
 * as `api_key`, `tokens` as `token`); undefined where it names none, or only a key or an auth.
 */
function collectionName(raw: string): string | undefined {
  // (Names repeat: each read once, up to a bound.)
  const known = COLLECTION_NAMES.get(raw);
  if (known !== undefined) return known === '' ? undefined : known;
  const name = readCollectionName(raw);
  if (COLLECTION_NAMES.size < 1024) COLLECTION_NAMES.set(raw, name ?? '');
  return name;
}
const COLLECTION_NAMES = new Map<string, string>();

function readCollectionName(raw: string): string | undefined {
  // (Its secret's word a word of its own, `db_passwords`, `apiKeys`, `js-tokens`: not the end of another, `minipass`.)
  const words = raw.split(NAME_WORDS).map((w) => w.toLowerCase());
  const last = words[words.length - 1]!;
  if (!(words.some((w) => COLLECTION_WORD.has(w)) || ((last === 'key' || last === 'keys') && words.length > 1 && KEY_KIND.has(words[words.length - 2]!)))) return undefined;
  const lower = raw.toLowerCase();
  const name = lower.length > 1 && lower.endsWith('s') && secretNamed(lower.slice(0, -1)) ? lower.slice(0, -1) : lower;
  // (A collection whose only secret word is `key` or `auth` holds what programs look records up by, `"keys": [...]`
  // of ids, times and paths, or public keys, `ssh_keys:`; `api_keys:`, `secret_keys:` name secrets.)
  if (!secretNamed(name) || (WEAK_NAME.test(nameStem(name)) && !SECRET_NAME_ANY.test(name))) return undefined;
  return name;
}

/** Where a name's words meet: `_`, `.`, `-`, blanks, and a capital after a lower-case letter or a digit. */
const NAME_WORDS = /[_.\-\s]+|(?<=[a-z0-9])(?=[A-Z])/;
/** The words that name a collection of secrets. */
const COLLECTION_WORD = new Set(['password', 'passwords', 'passwd', 'passphrase', 'passphrases', 'pass', 'pwd', 'secret', 'secrets', 'credential', 'credentials', 'creds', 'token', 'tokens', 'apikey', 'apikeys']);
/** The words before `key` or `keys` that make them a secret's (`api_keys`, `accessKeys`, `signing_keys`). */
const KEY_KIND = new Set(['api', 'access', 'secret', 'private', 'signing', 'encryption', 'master', 'client', 'auth']);

/**
 * A member one object below a secret's name that says what it is rather than whose secret it is: a user, an account,
 * a host, a place or a description (`credentials:` then `username: ...`, `host: ...`), or a reference (REFERENCE_NAME:
 * `file`, `path`, `name`, `type`...). A member that names a secret itself is read by the assignments.
 */
const FIELD_MEMBER =
  /(?:^|[_.-])(?:user|username|login|email|mail|account|owner|host|hostname|port|region|zone|project|domain|tenant|org|organization|scopes?|description|desc|comment|notes?|label|title|kind|enabled|expires?|expiry|expiration|created|updated|issuer|audience|subject|realm|grant|integrity|checksum|hash|digest|sha\d*|md5|etag|fingerprint|thumbprint|license|resolved|homepage|engines?|dev|optional|at|on|date|time|timestamp|used|seen|ttl|version|revision)$/;

function memberRead(member: string | undefined): boolean {
  if (member === undefined) return true;
  const name = member.toLowerCase();
  return !(FIELD_MEMBER.test(name) || REFERENCE_NAME.test(name) || secretNamed(name));
}

/** A date and time as ISO 8601 writes it, a record's (`"last_used": "2024-03-02T08:15:00Z"`), quotes left out. */
const ISO_TIME = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d)?$/;

/** Members of a collection read at most, and the longest value read in one (a longer value is no password: the rules find a key's or a token's format). */
const MAX_MEMBERS = 256;
const MAX_MEMBER_VALUE = 512;
/** What stands before a block collection's name on its line: its indentation and a list's `- ` at most. */
const BLOCK_LEAD = /^([ \t]*)((?:- [ \t]*)?)$/;
/** A block collection's member: its name (quoted or bare), `:`, then the rest of its line. */
const BLOCK_MEMBER = /^(?:"([^"\n]{1,256})"|'([^'\n]{1,256})'|([^\s:#"'\-[{][^:\n]{0,255}?)):(?=[ \t]|\r?$)/;

/**
 * Values one object or more below a name that names secrets: the members of a map, or the items of a list, under
 * `passwords:`, `secrets:`, `credentials:`, `"password": {...}`, `api_keys = [...]` (`passwords:` then `  postgres: ...`
 * indented, `{"password": {"postgres": "..."}}`, `passwords:` then `prod:` then `db: ...`): each read as the value of
 * `NAME=value` (tableValue), the collection's name its name (collectionName; a nested collection's, nestedName). A
 * member whose name says what it is (FIELD_MEMBER) is passed over, and so is a date and time; a flow collection's
 * nested collections are read MAX_FLOW_DEPTH deep at most. The collections are those the
 * assignments' scan noted at the operators it reads after a name anyway (noteCollection): a text holding none costs
 * nothing more. A block is walked line by line once, the collections nested in it on a stack; a flow collection from
 * its bracket forward, each from where the one before stopped at most: the scan reads each character a bounded
 * number of times.
 */
function scanNestedSecrets(s: string, collections: readonly Collection[], stop?: () => boolean): Span[] {
  const out: Span[] = [];
  let program = false;
  const value = (name: string, member: string | undefined, a: number, b: number) => {
    if (!memberRead(member)) return;
    const [x, y] = unquoted(s, a, b);
    if (y - x < 6 || y - x > MAX_MEMBER_VALUE) return;
    const v = s.slice(x, y);
    // (Stricter than a value under a secret's own name: a pattern or an escape is a program's, `tokens: ["\\bword\\b"]`;
    // and in a program a value in words names a thing, `LIVING_KEYS = ["XMLHttpRequestUpload", ...]`, and one written
    // unquoted is a variable or an expression unless random to look at, `{ hide: true, security: v1Security }`.)
    if (PATTERN_MARKS.test(v) || v.includes('\\') || (program && (wordy(v) || (x === a && !randomToLook(v)))) || ISO_TIME.test(v)) return;
    if (tableValue(name, v)) out.push({ kind: 'secret-assignment', start: x, end: y });
  };
  let readTo = 0;
  const quotes = { 34: -1, 39: -1 } as Record<number, number>;
  for (const c of collections) {
    if (c.at < readTo) continue;
    if (stop !== undefined && stop()) throw stopped('nested secrets');
    if (c.flow) {
      program = !c.quoted && inProgram(s, c.nameStart, c.op);
      readTo = readFlow(s, c.at, c.name, quotes, value);
      program = false;
    } else {
      // (A block's name starts its line, after its indentation and a list's `- ` at most: `passwords:`, `- secrets:`.)
      const start = s.lastIndexOf('\n', c.nameStart - 1) + 1;
      const m = BLOCK_LEAD.exec(s.slice(start, c.nameStart - (c.quoted ? 1 : 0)));
      if (m === null) continue;
      readTo = walkBlock(s, lineEnd(s, c.at) + 1, m[1]!.length + m[2]!.length, c.name, quotes, value);
    }
  }
  return out.sort((a, b) => a.start - b.start);
}

/** A collection after a name that names secrets (noteCollection): a flow one from its bracket, or a block one after its line. */
interface Collection {
  flow: boolean;
  /** The bracket of a flow collection; the `:` of a block one. */
  at: number;
  /** The name a value in it is read under (collectionName). */
  name: string;
  nameStart: number;
  quoted: boolean;
  op: number;
}

/**
 * Notes the collection that follows the operator at `i` (`:` or `=`) after the name [nameStart, nameEnd): a bracket,
 * `{` or `[`, after it and blanks (a flow collection: JSON's, YAML's, HCL's), or, after `:`, the line's end or a
 * comment (a YAML block), where the name names secrets (collectionName).
 */
function noteCollection(s: string, i: number, op: number, nameStart: number, nameEnd: number, out: Collection[]): void {
  let v = i + 1;
  if (op === 61 && codeAt(s, v) === 62) v++; // =>
  while (v - i <= MAX_BLANKS && (codeAt(s, v) === 32 || codeAt(s, v) === 9)) v++;
  const c = codeAt(s, v);
  const flow = c === 123 || c === 91;
  if (!flow && !(op === 58 && (c === 10 || c === 13 || c < 0 || (c === 35 && v > i + 1)))) return;
  // (A block's first line is indented, a list's item, or empty: `password:` then a value at the line's start is a label's.)
  if (!flow) {
    const next = lineEnd(s, v) + 1;
    const n0 = codeAt(s, next);
    if (!(n0 === 32 || n0 === 9 || n0 === 45 || n0 === 10 || n0 === 13 || n0 === 35)) return;
  }
  if (out.length > 0 && out[out.length - 1]!.at >= i) return;
  const raw = s.slice(nameStart, nameEnd);
  // (The name whole: quoted, or after what starts a member, not a path's last segment, `"node_modules/js-tokens": {`.)
  const before = codeAt(s, nameStart - 1);
  if (!(before < 0 || before === 34 || before === 39 || isSpace(before) || before === 123 || before === 44 || before === 40)) return;
  if ((before === 34 || before === 39) && !(nameStart < 2 || isSpace(codeAt(s, nameStart - 2)) || codeAt(s, nameStart - 2) === 123 || codeAt(s, nameStart - 2) === 44 || codeAt(s, nameStart - 2) === 91)) return;
  if (!SECRET_WORD.test(raw)) return;
  const name = collectionName(raw);
  if (name === undefined) return;
  out.push({ flow, at: flow ? v : i, name, nameStart, quoted: before === 34 || before === 39, op });
}

type NestedValue = (name: string, member: string | undefined, a: number, b: number) => void;

/**
 * A block collection's lines from `p` (after its name's line, indented `indent`): its members or items at the depth of
 * the first, each read under `name`; a member with nothing after its `:` opens a map nested in it, read under the name
 * nestedName gives it (its own where that names secrets, else its parent's, unless it says what it is), deeper lines
 * are its; a member whose value is a flow collection, `prod: {db: ...}`, has it read so. Returns where the collection
 * ends.
 */
function walkBlock(s: string, p: number, indent: number, name: string, quotes: Record<number, number>, value: NestedValue): number {
  const open: { indent: number; name: string | undefined; child: number }[] = [{ indent, name, child: -1 }];
  while (p < s.length) {
    const e = lineEnd(s, p);
    const q = firstNonBlank(s, p, e);
    const last = lastNonBlank(s, q, e);
    if (last === q || s.charCodeAt(q) === 35) {
      p = e + 1;
      continue;
    }
    const depth = q - p;
    const item = s.charCodeAt(q) === 45 && (codeAt(s, q + 1) === 32 || codeAt(s, q + 1) === 9 || q + 1 === last);
    // (A list may stand at its name's own depth: `secrets:` then `- ...`.)
    while (open.length > 0 && (depth < open.at(-1)!.indent || (depth === open.at(-1)!.indent && !(item && (open.at(-1)!.child === -1 || open.at(-1)!.child === depth))))) open.pop();
    if (open.length === 0) return p;
    const top = open.at(-1)!;
    if (top.child === -1) top.child = depth;
    if (depth === top.child) {
      if (item) {
        const v = firstNonBlank(s, q + 1, last);
        // (A flow collection as an item, `- {db: ...}`: read under the list's name, and the block walked on after it.)
        if (top.name !== undefined && v < last && (s.charCodeAt(v) === 123 || s.charCodeAt(v) === 91)) {
          const end = readFlow(s, v, top.name, quotes, value, 1);
          if (end > e) {
            p = lineEnd(s, end) + 1;
            continue;
          }
        } else if (top.name !== undefined && v < last && !BLOCK_MEMBER.test(s.slice(v, last))) value(top.name, undefined, v, last);
      } else {
        const member = BLOCK_MEMBER.exec(s.slice(q, last));
        if (member !== null) {
          const memberName = member[1] ?? member[2] ?? member[3]!.trimEnd();
          const v = firstNonBlank(s, q + member[0].length, last);
          if (v === last || s.charCodeAt(v) === 35) open.push({ indent: depth, name: nestedName(memberName, top.name), child: -1 });
          else if (s.charCodeAt(v) === 123 || s.charCodeAt(v) === 91) {
            // (A flow collection as a member's value, `prod: {db: ...}`: read, and the block walked on after it.)
            const name = nestedName(memberName, top.name);
            if (name !== undefined) {
              const end = readFlow(s, v, name, quotes, value, 1);
              if (end > e) {
                p = lineEnd(s, end) + 1;
                continue;
              }
            }
          } else if (top.name !== undefined && !/^[|>&*!]/.test(s.slice(v, v + 1))) value(top.name, memberName, v, last);
        }
      }
    }
    p = e + 1;
  }
  return p;
}

/** The place of the quote `q` that closes a string opened before `from` (a JSON escape, `\"`, walked over), found forward only: `next` keeps each quote's last place found. */
function closingQuote(s: string, from: number, q: number, next: Record<number, number>): number {
  let at = next[q]!;
  for (;;) {
    if (at < from) at = s.indexOf(String.fromCharCode(q), from);
    next[q] = at;
    if (at < 0) {
      next[q] = s.length;
      return -1;
    }
    if (at >= s.length) return -1;
    let b = at;
    while (b > from && s.charCodeAt(b - 1) === 92) b--;
    if ((at - b) % 2 === 0) return at;
    from = at + 1;
  }
}

/**
 * The name the values of a collection nested under `member` are read under: its own where it names secrets
 * (collectionName), else its parent's (`passwords:` then `prod:` then `db: ...`), unless it says what it is
 * (memberRead: `scopes: {...}` under `credentials`) or its parent is read under none.
 */
function nestedName(member: string | undefined, parent: string | undefined): string | undefined {
  if (member === undefined) return parent;
  return collectionName(member) ?? (parent !== undefined && memberRead(member) ? parent : undefined);
}

/** Collections nested in a flow collection read at most (a deeper one ends the reading). */
const MAX_FLOW_DEPTH = 16;

/**
 * A flow collection from its bracket at `open`: each member's or item's scalar read under `name` (MAX_MEMBERS at
 * most), a nested collection read under its member's name (memberName_) or walked over where that is none; returns
 * where the reading stopped (after the closing bracket when it was read whole).
 */
function readFlow(s: string, open: number, name: string | undefined, quotes: Record<number, number>, value: NestedValue, depth = 0): number {
  const end = flowFrom(s, open, name, quotes, value, depth);
  return end < 0 ? ~end : end;
}

/** readFlow's reading: where it stopped, as `~p` (negative) where the collection was not read to its closing bracket. */
function flowFrom(s: string, open: number, name: string | undefined, quotes: Record<number, number>, value: NestedValue, depth: number): number {
  const list = s.charCodeAt(open) === 91;
  let p = open + 1;
  for (let n = 0; n < MAX_MEMBERS; n++) {
    while (p < s.length && (isSpace(s.charCodeAt(p)) || s.charCodeAt(p) === 44)) p++;
    let c = codeAt(s, p);
    if (c === (list ? 93 : 125)) return p + 1;
    let member: string | undefined;
    if (!list) {
      let a = p;
      let b: number;
      if (c === 34 || c === 39) {
        b = closingQuote(s, p + 1, c, quotes);
        if (b < 0 || b - p > MAX_NAME + 1) return ~p;
        a = p + 1;
        p = b + 1;
      } else {
        while (p - a <= MAX_NAME && isNameChar(codeAt(s, p))) p++;
        b = p;
        if (b === a || b - a > MAX_NAME) return ~p;
      }
      member = s.slice(a, b);
      while (codeAt(s, p) === 32 || codeAt(s, p) === 9) p++;
      c = codeAt(s, p);
      if (c !== 58 && c !== 61) return ~p;
      p++;
      if (codeAt(s, p) === 62) p++; // =>
      while (codeAt(s, p) === 32 || codeAt(s, p) === 9) p++;
      c = codeAt(s, p);
    }
    if (c === 123 || c === 91) {
      if (depth >= MAX_FLOW_DEPTH) return ~p;
      const end = flowFrom(s, p, nestedName(member, name), quotes, value, depth + 1);
      if (end < 0) return end;
      p = end;
    } else if (c === 34 || c === 39) {
      const b = closingQuote(s, p + 1, c, quotes);
      if (b < 0) return ~p;
      if (name !== undefined && b - p <= MAX_MEMBER_VALUE + 1 && !s.slice(p, b).includes('\n')) value(name, member, p, b + 1);
      p = b + 1;
    } else {
      const a = p;
      for (c = codeAt(s, p); p - a <= MAX_MEMBER_VALUE && c > 32 && c !== 44 && c !== 125 && c !== 93 && c !== 123 && c !== 91 && c !== 34 && c !== 39; c = codeAt(s, ++p));
      if (p === a || p - a > MAX_MEMBER_VALUE) return ~p;
      if (name !== undefined) value(name, member, a, p);
    }
  }
  return ~p;
}

/** One row of an `INSERT`'s values from `p` (after its `(`): each string literal under a secret column (`secret`'s names) read; returns where the row ends (its `)`), or where it stopped being one. */
function insertRow(s: string, p: number, secret: readonly (string | undefined)[], out: Span[]): number {
  for (let c = 0; ; c++) {
    p = firstNonBlank(s, p, s.length);
    // (A string literal, `'...'` with `''` inside, or with a prefix, `E'...'`, `N'...'`: backslash escapes read too.)
    if (codeAt(s, p) === 39 || ((codeAt(s, p) | 32) === 101 || (codeAt(s, p) | 32) === 110) && codeAt(s, p + 1) === 39) {
      if (codeAt(s, p) !== 39) p++;
      const open = ++p;
      for (; p < s.length; p++) {
        const ch = s.charCodeAt(p);
        if (ch === 92) p++;
        else if (ch === 39) {
          if (codeAt(s, p + 1) !== 39) break;
          p++;
        }
      }
      if (p >= s.length) return p;
      const name = secret[c];
      if (name !== undefined && p - open <= MAX_VALUE && tableValue(name, s.slice(open, p))) out.push({ kind: 'secret-assignment', start: open, end: p });
      p++;
    }
    // (Else a number, `NULL`, a call: up to its comma or the row's `)`, brackets and strings inside walked over.)
    let depth = 0;
    for (; p < s.length; p++) {
      const ch = s.charCodeAt(p);
      if (ch === 39) {
        p++;
        while (p < s.length && s.charCodeAt(p) !== 39) p += s.charCodeAt(p) === 92 ? 2 : 1;
      } else if (ch === 40) depth++;
      else if (ch === 41) {
        if (depth === 0) break;
        depth--;
      } else if (ch === 44 && depth === 0) break;
      else if (ch === 59 && depth === 0) return p;
    }
    if (codeAt(s, p) !== 44) return p;
    p++;
  }
}

/**
 * A table's cells under a header that names a secret: a Markdown table (`| service | token |`, its `|---|` line, then
 * its rows), CSV or TSV under a header line (`name,api_key`, names of at most three words), a table aligned with
 * blanks under a rule of dashes (`Key  Value`, `---  -----`); in a Markdown or an aligned table, also a row whose first
 * cell names its second. Each such cell is read as the value of `NAME=value` (assignment, every check of an `.env`
 * line), the header's words its name; a cell is a value only whole (`| not set |` is two words), and a row only with
 * as many cells as its header or more (what follows a row's last `|`). Each line is split into cells a bounded number
 * of times (as a header, as a row under at most two headers), within the line, and the separators are found once
 * each (nextOf), so the scan is linear in the text.
 */
function scanTables(s: string, stop?: () => boolean): readonly Span[] {
  // (A table is two lines at least, and a header names a secret with one of its words.)
  // (Or one row of names and values, `| password | ... |`: a table's row cut from its header, a table written without one.)
  if (s.length < MIN_TABLE || !(s.includes('\n') || s.includes('|')) || !SECRET_WORD.test(s)) return NO_SPANS;
  const out: Span[] = [];
  let steps = 0;
  let comma = -1;
  let tab = -1;
  let pipe = -1;
  const cell = ([x, y]: [number, number], name: string, sep = ''): void => {
    // (Quoted or written as code: `"..."`, `` `...` ``; a quoted cell a block cut before its closing quote starts after
    // its opening one.)
    const q = codeAt(s, x);
    const quotedCsv = sep === ',' && (q === 34 || codeAt(s, x - 1) === 34);
    if (y - x >= 2 && (q === 34 || q === 39 || q === 96) && s.charCodeAt(y - 1) === q) {
      x++;
      y--;
    }
    // (A quoted cell's doubled quote is one character of its value, and so is a comma in a quoted cell of
    // comma-separated values, which no word before it ends there: each a mark like any other, judged as `#`.)
    let v = s.slice(x, y);
    if (v.includes('""')) v = v.replaceAll('""', '#');
    if (quotedCsv && v.includes(',')) v = v.replaceAll(',', '#');
    if (tableValue(name, v)) out.push({ kind: 'secret-assignment', start: x, end: y });
  };
  // The rows from line `from` on that hold the separator: their cells under each header's columns read; returns where
  // they end.
  const rows = (from: number, sep: string, headers: readonly Header[]): number => {
    let a = from;
    let at = -1;
    while (a < s.length) {
      if (stop !== undefined && (++steps & 255) === 0 && stop()) throw stopped('tables');
      const b = lineEnd(s, a);
      if (sep === ' ') {
        // (An aligned table's rows go on to a blank line.)
        if (firstNonBlank(s, a, b) === b) return a;
      } else {
        at = nextOf(s, sep, a, at);
        if (at >= b) return a;
      }
      const cells = cellsOf(s, a, b, sep.charCodeAt(0));
      // (A row ends in a quoted cell its line does not close where a block cut it: the columns it holds are read.)
      for (const { columns, width } of headers) if (cells.length >= width || cells.open === true) for (const [c, name] of columns) if (c < cells.length) cell(cells[c]!, name, sep);
      // (A table of names and values, `| DB_PASSWORD | ... |`, `password    ...`: a row's first cell names its second.)
      if ((sep === '|' || sep === ' ') && cells.length >= 2) {
        const name = nameOfCell(s, cells[0]!, sep === '|');
        if (name !== undefined && secretNamed(name)) cell(cells[1]!, name);
      }
      a = b + 1;
    }
    return a;
  };
  let head = -1;
  let prev = -1;
  for (let a = 0; a < s.length; ) {
    if (stop !== undefined && (++steps & 255) === 0 && stop()) throw stopped('tables');
    const b = lineEnd(s, a);
    // A table aligned with blanks under a rule of dashes (`Key   Value` then `---   -----`: Vault's and other CLIs'
    // output): the header's columns, and each row's first cell naming its second.
    const first = firstNonBlank(s, a, b);
    // A secret's name alone on its line, its value alone on the next (LABEL): the value read as a cell under the name.
    const f = codeAt(s, first);
    if (b - first <= MAX_NAME + 16 && (isLetter(f) || f === 35)) {
      const m = LABEL.exec(s.slice(first, lastNonBlank(s, first, b)));
      // (Without a colon the label is a secret's word or name alone, BARE_WORD's, BARE_NAME's or two words ending in
      // one, and the value random to look at, as after a word and a blank: `secretary` then a word is a dictionary's,
      // a line of base64 that ends in `KEY` a certificate's.)
      const told = m !== null && (m[1] !== undefined || BARE_WORD.test(m[2]!) || bareName(m[2]!) || BARE_PAIR.test(m[2]!));
      const name = told ? (m[1] ?? m[2]!).toLowerCase().replace(/[ \t.-]+/g, '_') : undefined;
      const value = name !== undefined && secretNamed(name) ? labelled(s, b) : undefined;
      if (value !== undefined && (m![1] !== undefined || randomToLook(s.slice(...value)))) cell(value, name!);
    }
    if (prev >= 0 && codeAt(s, first) === 45 && ALIGNED_RULE.test(s.slice(a, b))) {
      a = rows(b + 1, ' ', [headerOf(s, prev, a - 1, 32)]);
      head = -1;
      prev = -1;
      continue;
    }
    prev = first < b ? a : -1;
    pipe = nextOf(s, '|', a, pipe);
    // A Markdown table's rule under its header: the header's columns, then the rows.
    // (psql's rule holds no `|`: `----+------`.)
    if (head >= 0 && (pipe < b || f === 45 || f === 43) && TABLE_RULE.test(s.slice(a, b))) {
      const headers = [headerOf(s, head, a - 1, 124)];
      // (What stands before the header's first `|` may be no cell of it where the header ends with one and does not start
      // with one, `blob | service | token |`: a table written as base64 or hex and read decoded in its place, after what
      // stood before it. Read both ways.)
      const bar = s.indexOf('|', head);
      if (firstNonBlank(s, head, bar) < bar && codeAt(s, lastNonBlank(s, head, a - 1) - 1) === 124) headers.push(headerOf(s, bar, a - 1, 124));
      a = rows(b + 1, '|', headers);
      head = -1;
      continue;
    }
    head = pipe < b ? a : -1;
    // A row of a Markdown table alone, `| DB_PASSWORD | ... |` between its `|`s at either end: its first cell names its
    // second, as in a table under a header (a row cut from its header, a table written without one).
    // (With no header to say it is one, the value is random to look at under a name other than a password's: `| Key |
    // _xsltStylesheet |` is an index's row.)
    if (head >= 0 && codeAt(s, first) === 124 && codeAt(s, lastNonBlank(s, first, b) - 1) === 124) {
      const cells = cellsOf(s, a, b, 124);
      const name = cells.length >= 2 ? nameOfCell(s, cells[0]!, true) : undefined;
      if (name !== undefined && secretNamed(name) && (PASSWORD_NAME.test(name) || randomToLook(s.slice(...cells[1]!).replace(/^(["'`])(.*)\1$/, '$2')))) cell(cells[1]!, name);
    }
    // Cells between `|`s under a header with no rule under it (sqlite3's output with `-header`, `id|name|api_token`): the
    // header's columns, then the rows, as a CSV's (a Markdown table's rule, read above, comes next where there is one).
    if (head >= 0 && codeAt(s, first) !== 124 && b < s.length && SECRET_WORD.test(s.slice(a, b))) {
      const e = lineEnd(s, b + 1);
      const bar = s.indexOf('|', b + 1);
      if (bar >= 0 && bar < e && !TABLE_RULE.test(s.slice(b + 1, e))) {
        const header = headerOf(s, a, b, 124);
        if (header.columns.length > 0) {
          a = rows(b + 1, '|', [header]);
          head = -1;
          continue;
        }
      }
    }
    // A CSV or TSV header: its columns, then the rows.
    tab = nextOf(s, '\t', a, tab);
    comma = nextOf(s, ',', a, comma);
    if ((tab < b || comma < b) && pipe >= b) {
      const sep = tab < b ? '\t' : ',';
      // (A header is followed by a row: the next line holds the separator too.)
      const next = sep === '\t' ? (tab = nextOf(s, sep, b + 1, tab)) : (comma = nextOf(s, sep, b + 1, comma));
      const header = next < lineEnd(s, b + 1) && SECRET_WORD.test(s.slice(a, b)) ? headerOf(s, a, b, sep.charCodeAt(0)) : undefined;
      if (header !== undefined && header.columns.length > 0) {
        a = rows(b + 1, sep, [header]);
        continue;
      }
    }
    a = b + 1;
  }
  // (A row read under two headers may give the same cell twice.)
  out.sort((x, y) => x.start - y.start);
  const kept: Span[] = [];
  for (const sp of out) if (kept.length === 0 || sp.start >= kept[kept.length - 1]!.end) kept.push(sp);
  return kept;
}
