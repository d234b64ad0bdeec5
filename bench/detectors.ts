/**
 * `npm run bench:detectors`: each detector's time per MB on crafted inputs
 * against its time on prose, in the same run (contract v4, section 19: a
 * crafted input stays within 4 times prose). Detectors: `secrets()` and
 * `pii()` as a policy calls them (the text read as written and normalized,
 * credentials also through base64 and hex; the kinds answered), and
 * the scanners alone (gitleaks' rule set, the personal-data scan on the
 * text as written); each input is 1 MiB, each figure the median of 7 rounds that
 * interleave every input and detector, after a round that warms them all.
 *
 * Prose is English text of the kind tools return (docs prose: this
 * repository's documentation, which is technical and holds keywords such
 * as "token", "key" and "access"). Crafted inputs are the ones that drive
 * each scanner hardest: dense keywords, dense assignments, dense
 * candidates, dense percent-escapes and confusables, tag characters and
 * other invisible characters (normalization), base64 runs that decode to
 * text (each decoded and read), and
 * every gitleaks keyword in turn followed by an assignment.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scanRuleset } from '../src/detect/ruleset.js';
import { SECRET_RULES } from '../src/detect/secret-rules.generated.js';
import { detectKinds } from '../src/detect/index.js';
import { scanPiiPacked } from '../src/detect/pii.js';
import { fmt, machine, median, QUICK, ROOT, table } from './lib.js';

const MB = 1 << 20;
/**
 * A text of 1 MiB of `unit`, as the service holds it: parsed from JSON text
 * (a flat string). Built by repeat and slice, it is a slice of a rope that
 * every character read goes through, a cost no message read from a socket
 * has (and which falls on the scanners that read in JavaScript).
 */
const fill = (unit: string): string => JSON.parse(JSON.stringify(unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB))) as string;

function docsProse(): string {
  const parts: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.md')) parts.push(readFileSync(join(dir, e.name), 'utf8'));
    }
  };
  walk(join(ROOT, 'docs'));
  return fill(parts.join('\n\n'));
}

/**
 * The slowest keyword of the rule set: each rule's first keyword followed by
 * an assignment, its value the keyword twice or 40 hex digits (a value of
 * the class and length many rules ask for, so their regex matches and only
 * entropy or an allowlist drops it), 64 KiB each, the worst kept.
 */
function worstKeyword(): { name: string; text: string } {
  let worst = { name: '', text: '', ms: -1 };
  for (const r of SECRET_RULES) {
    const k = r.keywords[0]!;
    for (const value of [`${k}${k}`, '0123456789abcdef0123456789abcdef01234567']) {
      const unit = `${k}_token = "${value}" `;
      const text = unit.repeat(Math.ceil(65536 / unit.length)).slice(0, 65536);
      const t = performance.now();
      scanRuleset(text);
      const ms = performance.now() - t;
      if (ms > worst.ms) worst = { name: `${r.id}${value.length === 40 ? ', 40 hex digits' : ''}`, text, ms };
    }
  }
  return { name: worst.name, text: fill(worst.text) };
}

/** Three rounds of base64, each text many short runs of the next: every round's runs read with their context. */
function nestedBase64(): string {
  const b64 = (t: string) => Buffer.from(t).toString('base64');
  const level1 = `${b64('secret word x')} `.repeat(8);
  const level2 = `${b64(level1)} `.repeat(4);
  return b64(level2);
}

/**
 * Encodings glued to what stands before them, each read from many places: a
 * word then the base64 of a kilobyte of text (its slashes and aligned places
 * each a decode), a URL path then base64 of text, `bot` then hex of text.
 */
function gluedEncodings(): string {
  const text = 'api_key = "Zx9Lm2Pq8Rt5Vw3Yb7Nc" and more text here, with ~~~ and ??? for slashes; '.repeat(12).slice(0, 760);
  const b64 = Buffer.from(text).toString('base64');
  return `x${b64} GET /api/hooks/${Buffer.from(text.slice(0, 200)).toString('base64')}/status bot${Buffer.from(text.slice(0, 200)).toString('hex')}/getMe `;
}

/** Encodings glued to what stands before them near the longest run read so (GLUED_MAX, 4,096 characters). */
function longGluedEncodings(): string {
  const text = 'api_key = "Zx9Lm2Pq8Rt5Vw3Yb7Nc" and more text here, with ~~~ and ??? for slashes; '.repeat(40).slice(0, 3000);
  return `x${Buffer.from(text).toString('base64')} bot${Buffer.from(text.slice(0, 2000)).toString('hex')}/getMe https://discord.com/api/webhooks/${Buffer.from(text.slice(0, 2900)).toString('base64')}/status `;
}

/** Base64 wrapped at 76 (as `base64` writes it) of text with a NUL every 60 bytes: each wrapped run is read as one, in stretches of text. */
function wrappedBase64(): string {
  const text = Buffer.from(`${'api_key = "Zx9Lm2Pq8Rt5Vw3Yb7Nc" and more text here, '.repeat(2)}\0`.repeat(20));
  return text.toString('base64').match(/.{1,76}/g)!.join('\n');
}

// As a policy's `secrets(s)` and `pii(s)` run: normalization (and, for credentials, encoded runs) included, kinds answered.
const secrets = (s: string) => detectKinds('secrets', s);
const pii = (s: string) => detectKinds('pii', s);
const ruleset = (s: string) => scanRuleset(s);
// The personal-data scanner alone, on the text as written (what earlier rounds reported as `pii()`).
const piiScan = (s: string) => scanPiiPacked(s);

const prose = docsProse();
const worst = worstKeyword();
const crafted: Record<string, string> = {
  'keywords without assignments': fill('api key token secret password access auth '),
  'dense assignments': fill('api_key=api_key=api_key='),
  'assignments with values': fill('api_key = "a1b2c3d4e5f6g7h8i9j0k" '),
  'password lines': fill('password: Xy9'),
  // The other shapes of an assignment: elements, quoted pairs in a call, a pair's `value` after its name, subscripts;
  // and markup's `>` and `,`, each a candidate that names nothing.
  'elements, pairs and subscripts': fill("<password>Xy9Lm2Pq8</password> define('DB_PASSWORD', 'Xy9Lm2Pq8'); - name: API_KEY\n  value: Xy9Lm2Pq8Rt5Vw3Yb7 env['API_KEY'] = 'Xy9Lm2Pq8Rt5' "),
  // Literals a generator made of every printable character (WordPress's keys and salts), each read whole to its
  // quote; and long quoted literals under a secret's name, each read to its quote (256 characters at most) and found
  // no generated one there.
  'generated literals (WordPress keys)': fill("define( 'AUTH_KEY', '- @C#Q lc&2UvrvlO&f.k2!7$f]EBKz-}ghESQS+$espjqRamL!6{3t^BZS+Y<g}' );\n"),
  'long quoted literals that fail at their end': fill(`api_key = "${'aB3 (x) [y] {z} '.repeat(15)}Error failed"\n`),
  'prose that tells of passwords and keys': fill('the password is incorrect and the key is Zx9Lm2Pq8 so the token was a1 is is was '),
  'flags, SQL and logins': fill("tool --password Xy9Lm2Pq8Rt --api-key $K --x -- --- CREATE USER a WITH PASSWORD 'Xy9Lm2Pq8' docker login -u a -p Xy9Lm2Pq8 echo x | y --password-stdin "),
  // A password's word and a blank, prose's longer verbs and the words that say whose a secret is.
  'password words, and prose that says whose a secret is': fill('and password Xy9Lm2Pq8R password reset the root password for the staging box is now Zx9Lm2Pq8 the token of it was changed to x1 '),
  // Tables: small ones whose header names a secret (each header and row split into cells, each cell read), and one
  // header over a megabyte of rows; lines of commas and pipes that are no table.
  'Markdown and CSV tables that name a secret': fill('| service | token |\n|---|---|\n| deploy | Xy9Lm2Pq8Rt5Vw3Yb7Nc |\n| web | not set |\n\nname,api_key,created\nprod,Zx9Lm2Pq8Rt5Vw3Yb7Nc,2024-01-02\n\n'),
  'one table, a megabyte of rows': `| service | token | owner |\n|---|---|---|\n${fill('| deploy | Xy9Lm2Pq8Rt5Vw3Yb7Nc | ops |\n')}`,
  'commas and pipes, no table': fill('a, b | c, token | key, d |\n|-|\n'),
  // Every cell under the header one encoded run, decoded up to three rounds (hex of base64 of a value of hex digits).
  'one table, a megabyte of encoded cells': `| service | token |\n|---|---|\n${fill(`| deploy | ${Buffer.from(Buffer.from('e097cd81637af95476fc66272de1').toString('base64')).toString('hex')} |\n`)}`,
  'names with their values on the next line': fill('password:\nXy9Lm2Pq8Rt5\napi_key:\nsecret_key:\n  key: value\ntoken:\n'),
  // A secret's name alone on a line and its value on the next (after an empty line or a heading's rule), a Markdown
  // table's row alone (each line read as a label and as a row), elements named by an attribute (each read back to its
  // tag), arrows, names in Cyrillic and Greek before a fullwidth colon (read folded).
  'labels over their values, rows alone': fill('API key\nZx9Lm2Pq8Rt5Vw3Yb7Nc\nYour API key:\n\n  Xy9Lm2Pq8Rt5\n## Password\n-----\nx y\n| password | Xy9Lm2Pq8Rt5 |\n|token|a b|\nsecretary\nword\n'),
  'elements an attribute names, arrows, names folded': fill('<string name="api_key">Xy9Lm2Pq8Rt5</string><entry key="password">x</entry><a b="c" name="token">d</a> password --> Xy9Lm2Pq8 key \u21d2 x \u041f\u0410\u0420\u041e\u041b\u042c\uff1aXy9Lm2Pq8Rt5 \u03ba\u03c9\u03b4\u03b9\u03ba\u03cc\u03c2\uff1ay '),
  // A program's fallbacks (each read over the expression before it), Terraform variables' defaults (each read back to
  // its block), aligned names (each read back over its blanks), borrowed and verbatim strings.
  'fallbacks, variables, aligned names': fill('key = os.environ.get("API_KEY") or "Xy9Lm2Pq8Rt5" variable "api_key" {\n  default                        = "x"\n}\napiKey: process.env.A.b.c || \'d\' s = @"Xy9Lm2Pq8Rt5" K: &\'static str = "e"\n'),
  // SQL INSERTs whose column lists name a secret (each row's values walked, each string under a secret column read),
  // `insert` that starts none, prose that sets a secret (each ` to ` read back over up to eight words), R's `<-`, and
  // names in other languages.
  'SQL INSERTs, setters, R and names in other languages': fill(`INSERT INTO public.users (id, name, password) VALUES (1, 'a', 'Xy9Lm2Pq8Rt5'), (2, now(), 'it''s'); insert a insert into t (x) Set the admin password for prod to Zx9Lm2Pq8 a to b to c api_key <- "Xy9Lm2Pq8Rt5" clave: Xy9Lm2 chiave API: q\n`),
  // gitleaks' sample placements with values of punctuation (each read on past its marks to its quote, its tag or its
  // token's end), names with qualifiers, rows of names, compound operators, Go's declarations, prose that tells what a
  // value is after it (each read back over its token): each line a find.
  'placements, punctuation and qualified names': fill(`API_TOKEN_PROD_2 = "aB3:k;9<@x}Qz7" DB_PASSWORD=a;b<c}Xy9Lm2Pq8\napi_token,Xy9Lm2Pq8Rt5Vw3Yb7Nc,\nvar apiToken string = "Xy9Lm2Pq8Rt5" $secretToken .= 'w;Xy9Lm2Pq8' make_TOKEN :::= "Zx9Lm2Pq8" <apiToken>\n  q;r9Xy9Lm2\n</apiToken> token_v2: }Xy9Lm2Pq8 password="${'a;'.repeat(40)}\n# Xy9Lm2Pq8Rt5 is the password, ${'b'.repeat(120)} was my old api key\n`),
  'setters and to before every word': fill('set a b c d e f g to x to y to z to '),
  // Aligned output under a rule of dashes (each row split at its runs of blanks), and the words of a token, a key or a
  // secret before a blank and a value, each an operator of an assignment; YAML block scalars.
  // Every word a prose verb or a secret's word: each an operator whose name is looked for up to six words back.
  'a verb or a secret word after every word': fill('x is y of z is now a key token secret b - c for d was '),
  'aligned tables, bare key and token words, block scalars': fill('Key      Value\n---      -----\npassword Xy9Lm2Pq8Rt5\ntoken    a1\n\nthe key Zx9Lm2Pq8Rt5Vw3Yb7Nc a token  b2 secret x password: |\n  Xy9Lm2Pq8Rt5\n'),
  // Names that end in a secret's word before a blank (each found by its `_`, `.` or `-`), and annotated names whose
  // type is read back from every `=` (brackets and unions).
  'names ending in a secret word, annotated names': fill('a_key b.token c-secret x: Optional[dict[str, str]] | None = y api_key: str = z '),
  'markup, lists and pairs that name nothing': fill('<td>a</td><b>bold</b> ("name", "value"), [\'one\', \'two\'] - name: x\n  value: y <p>> '),
  // Valid tokens of one of gitleaks' rules, one after another: every keyword a find, each find a search with groups.
  'GitLab tokens, one after another': fill('glpat-Zx9Lm2Pq8Rt5Vw3Yb7Nc '),
  // The own rules that read a credential by where it stands: after `Bearer`, in a .netrc line, after `sshpass -p`.
  'cookie and SAS lines': fill('Cookie: theme=dark; sessionid=Zx9Lm2Pq8Rt5Vw3Yb7NcQ4aB8cD9eF0 https://a.blob.core.windows.net/c?sv=2022&sig=Zx9Lm2Pq8Rt5Vw3Yb7NcQ4aB8cD9eF0%3D '),
  'Discord webhook URLs': fill('https://discord.com/api/webhooks/112233445566778899/Zx9Lm2Pq8Rt5Vw3Yb7NcQ4aB8cD9eF0gH1iJk2Lm3N-Zx9Lm2Pq8Rt5Vw3Yb7NcQ4aB8cD9eF0gH1iJk2Lm '),
  'bearer, netrc and sshpass lines': fill('Authorization: Bearer Zx9Lm2Pq8Rt5Vw3Yb7NcQ4 machine h login u password Zx9Lm2 sshpass -p Zx9Lm2Pq '),
  // The own rules read by where a credential stands (a .pgpass line, an Authorization scheme) or by a prefix alone.
  'pgpass lines, Authorization schemes, bare keys': fill('h:5432:d:u:Zx9Lm2Pq8R key-0123456789abcdef0123456789abcdef Authorization: SSWS 00Zx9Lm2Pq8Rt5Vw3Yb7NcQ4aB8cD9eF0gH1iJk2Lm3\n'),
  // Credentials known by where they stand on a command line or after a name: each line a find.
  'sudo pipes, redis-cli lines, recovery phrases': fill('echo Zx9Lm2Pq | sudo -S ls\nredis-cli -a Zx9Lm2Pq8R ping\nMNEMONIC="legal winner thank year wave sausage worth useful legal winner thank yellow"\nseed recovery sudo '),
  // Credentials known by their structure alone (shaped.ts), each candidate checked: Discord tokens (the first part
  // decoded), WIF keys (base58 decoded, SHA-256 twice), valid and with checksums that fail.
  'Discord tokens and WIF keys, one after another': fill('MTA4OTcwOTk4NTQyNTY4NTIyOQ.ege9rH.EdT-0GvND56rd8muGQjv1dmqlSx7wYz2Ab4 KwDiBf89QgGbjEhKnhXJuH7LrciVrZi3qYjgd9M7rFU73sVHnoWn 5K2Rak9ZG38JPGxuxLbzdfaX2tSnWythVFzAsrajEz1eQdbFkgx '),
  'shapes of both that fail their checks': fill('KwDiBf89QgGbjEhKnhXJuH7LrciVrZi3qYjgd9M7rFU73sVHnoWo LwDiBf89QgGbjEhKnhXJuH7LrciVrZi3qYjgd9M7rFU73sVHnoWn MTA4OTcwOTk4NTQyNTY4NTIyOQ.ege9rH.short MDAwMTIzNDU2Nzg5MDEyMzQ1Ng.ege9rH.EdT-0GvND56rd8muGQjv1dmqlSx7wYz2Ab4 '),
  // Commands that fetch a secret, each with its output on the next line (a window of the rule around each keyword).
  'echo into secret files, login pairs, one after another': fill('echo "Zq8Rk2Lm9Xw4" > ~/.vault-token\nlogin:u:Xk9mQ2pLzz Credentials: admin / login a b c d: u : echo "'),
  // Clients given a password by their own flag or after the user, finds and near misses (a window of a rule around each keyword).
  'client password flags and user arguments, one after another': fill("sqlcmd -U sa -P Zq8Rk2Lm9Xw4 mongosh -p $PW zip -P x 7z a -pKq2 ldapsearch -w Xk9mQ2pLzz lftp -u a,b smbclient -U u%Xk9mQ2pLzz net user x echo 'a:Xk9mQ2pLzz' | chpasswd keytool -storepass Xk9mQ2pLzz "),
  // Windows' commands that take a password, finds and near misses (their own rule, read token by token), and names in
  // a chat's emphasis (a `*` or `_` at a word's edge, read without markup).
  "Windows' commands, one after another": fill('net use Z: \\\\fs\\share /persistent:no net use \\\\a\\b * /user:x psexec \\\\h -u a -p %P% schtasks /ru x /rp * net user x NET USE \\\\s\\t Zq8Rk2Lm9Xw4 /USER:x '),
  'names in emphasis, one after another': fill('*Password:* Zq8Rk2Lm9Xw4 _API key_: x *token* _a_ b_c *d:* (*e*) '),
  // Remote-administration and Oracle clients, Wi-Fi codes and dot leaders, finds and near misses (the connect
  // string's keywords, `conn` and `target`, stand in prose too), each rule read token by token after its command.
  'remote clients, connect strings and Wi-Fi codes, one after another': fill('plink -ssh a@h -pw Zq8Rk2Lm9Xw4 ipmitool -H h -U a -E rdesktop -p - h xfreerdp /v:h /p:x sqlplus / as sysdba rman target sys/Zq8Rk2Lm9Xw4@p connection target dev/x connect api/v1 WIFI:T:WPA;S:a;H:b;P:x;; wpa-psk Zq8Rk2Lm9Xw4 Password . . . : x '),
  // Standard input to sudo and passwd, another language's `is` after a secret's name and after other words (` es `,
  // ` er ` stand everywhere in prose: each asks what stands before it), a URL query's `&` runs, and pairs after commas
  // with a bracket open before them and none.
  'standard input, other languages\' is, queries and pairs after commas': fill("sudo -S cmd <<< Zq8Rk2Lm9Xw4 echo x | passwd --stdin u la contraseña es Zq8Rk2Lm9Xw4 el perro es grande y er ist da ?token=Zq8Rk2Lm9Xw4&&&a=1&b&c=2 user: a, password: Zq8Rk2Lm9Xw4 f(a: b, password: c) "),
  // Commands that set a variable with a blank, heredocs after `=`, literals a setter or a client's auth takes, a note's
  // `u:` and `p:`, password hashes in PHC form: each a try, most of them naming nothing.
  'commands that set variables, heredocs, setters and shorthand': fill('ENV API_TOKEN q7Rv2KxW9mTz ENV PORT 80 setenv DB_PASS x set -gx A b password = <<EOF\nZr8q!vTn2pLm\nEOF\nds.setPassword("Hn6vQ2wL9xRk"); getToken("refresh") r.auth("Bx7nM2kQ9wLp") u: admin p: Wk82hsPq1x user a pass b $argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub '),
  // Keys a program or a CLI prints: a byte array under a keypair's name (one short of 32 bytes, never closed), RPC and
  // function URLs, a vault object with no value, a property list's key with and without its value, a mask, a stream's
  // ingest URL, cmd's `&&` glued to a value, a Ruby symbol's subscript, an element with attributes, an escaped line
  // break before a hex run in a JSON string.
  'keys a program or a CLI prints, byte arrays, vaults, property lists, masks': fill(`keypair [${Array.from({ length: 31 }, (_, i) => (i * 37) % 256).join(',')}, https://a.infura.io/v3/0123 x.azurewebsites.net/api/f?code= "id": "https://a.vault.azure.net/secrets/x", "tags": {"e": "p"}, <key>password</key><string>Xk9mQ2vLp4Rt</string><key>token</key> ::add-mask::Ab1Cd2Ef3Gh4 rtmp://a.b/live/abcdefghijklmnop1 set API_TOKEN=Ab1Cd2Ef3Gh4&& x h[:password] = 'Zq8Rk2Lm9Xw4' <Pass encoding="base64">WGs5bVEy</Pass> {\\"stdout\\": \\"$ bw get password \\\\"x\\\\"\\n4141774156\\"} heroku config:get API_TOKEN_PROD\n`),
  // Tags of text's glued inside tokens (each read without its markup), a Dockerfile's variables set after a blank (the
  // rule anchored at each `ENV`), a security tool's `-p`, a value on its line's end before a word on the next, and
  // string literals a concatenation joins (each chain read as one token), a value spelled out a character at a time.
  'tokens tags break, variables a command sets, security tools, a word after a value, literals joined': fill('<b>AK</b><b>IA</b><i>Z3</i><em>MJ</em>x<code>QX7T</code>y ENV SECRET_KEY_BASE 9f8e7d6c5b4a3928 ENV RAILS_ENV production setenv API_TOKEN_PROD Ab1Cd2Ef3Gh4 hydra -l admin -p Wint3r!Sn0w nxc smb h -u a -p x.txt ::add-mask::Ab1Cd2Ef3Gh4\necho ok\nk = "ghp_" + "R8kL2mQ9" + \'x\' \'y\' "a" "b"\nA K I A Z 3 M J Q X 7 T 4 W 2 P 6 Y K N a b c\n'),
  // A command's keyword alone, crowded (a try at each: one search asks first whether any can match), and a prefix
  // glued to itself, one match that reads on past its window.
  'command keywords alone, one after another': fill('curl zip sqlcmd mongo lftp http az helm oras 7z bcp '),
  'curl alone, one after another': fill('curl '),
  'a prefix glued to itself': fill('fm2_'),
  // Collections one object below a secret's name: each member read as an assignment; flow collections crowded and cut
  // short (each read from its bracket forward, the quotes found once).
  'collections under secrets\' names, one after another': fill('passwords:\n  admin: Xk9#mPq2Lr7vNz4w\n  user: bob\n  prod:\n    db: x1y2z3w4\n{"api_keys": ["h8Kd2Qm9Xr4Lp7Vz3N", {"a": 1}], "tokens": {"b": "c4d5e6f7g8"}}\n'),
  'flow collections crowded and cut short': fill('pass:["pa1s:[k3y=["'),
  'commands that fetch a secret, and their output': fill("$ kubectl get secret db -o jsonpath='{.data.password}' | base64 -d\nZq8Rk2Lm9Xw4Tn7Pb3Vc\n$ pass show a/b\nWarning: old\n$ vault kv get -field=x s/y\nNo value\n"),
  // A key's tail whose BEGIN stands elsewhere: each END marker read back over the base64 lines before it.
  'ends of private keys, one after another': fill('QUJDREVGR0hJSktMTU5PUFFSU1RVVldY\nWVpBQkNERUZHSElKS0xNTk9QUVJT\n-----END PRIVATE KEY-----\nab\n-----END RSA PRIVATE KEY-----\n'),
  'bare prefixes, one after another': fill('key-1//0sl.ya29.oy2squ_:*:AAAAAAAAAAAAAAAAAAAAA '),
  'percent-escapes and confusables': fill('%41KIA\u0430\u200b%EF%BC%AB '),
  // A file's text in a JSON string (a tool printing an object that holds it), escaped once and twice: each escape read.
  'a file in a JSON string, escaped once and twice': fill('{\\"name\\": \\"DB_PASSWORD\\", \\"value\\": \\"Xy9Lm2Pq8\\"}\\n\\t{\\\\\\"a\\\\\\": 1}\\\\n '),
  'runs of backslashes, no escape after them': fill('\\'.repeat(17) + 'q'),
  // A terminal's output with its colours (grep --color marks a match), and sequences cut short (each try reads its
  // bound and fails), written and escaped as a JSON string writes them.
  'coloured terminal output': fill('\x1b[01;31m\x1b[Kpassword\x1b[m\x1b[K=Xy9Lm2Pq \x1b[1;32mok\x1b[0m \x1b]8;;file:///a\x07a\x1b]8;;\x07\n'),
  // HTML and Markdown that name a secret (read again with the markup removed), tags glued inside tokens, and `<` that
  // start no tag (each try reads its bound).
  'HTML and Markdown that name a secret': fill('<tr><td>password</td><td><code>Xy9Lm2Pq8Rt5</code></td></tr><dt>API key</dt><dd>a<wbr>b</dd> **token**: `Zx9Lm2` <span class="k">key</span>=<b>x</b>\n'),
  'tags cut short and comparisons': fill(`<b ${'x'.repeat(600)} a<b and c > d key ** \``),
  'terminal sequences cut short': fill(`\x1b[${'1;'.repeat(20)} \x1b]${'a'.repeat(600)} \\u001b]${'b'.repeat(600)} \x1b(`),
  'percent-escapes that are no UTF-8': fill('%FF '),
  // A mark drawn on every character, combining and composed: each removed or read as its letter.
  'marks drawn on every letter': fill('g\u0301h\u0307p\u0336_\u1e31\u00e9\u01f5 '),
  // Prose in a language written with accents: every accented letter read as its base, the text scanned twice.
  'accented prose (French)': fill('Le pr\u00e9sident a d\u00e9clar\u00e9 que la r\u00e9forme \u00e9tait n\u00e9cessaire ; \u00e0 l\u2019\u00e9t\u00e9, les \u00e9l\u00e8ves ont re\u00e7u leurs r\u00e9sultats, d\u00e9j\u00e0 publi\u00e9s. '),
  'tags and invisible characters': fill('A\u{e0041}\u2062K\ufe0f\u{e004b}\u3164 '),
  'base64 of text': fill(`${Buffer.from('api_key = "Zx9Lm2Pq8Rt5Vw3Yb7Nc" and more text here').toString('base64')} `),
  'base64 of base64 of base64, short runs': fill(`${nestedBase64()} `),
  'base64 wrapped at 76, lines of text and of binary': fill(`${wrappedBase64()}\n`),
  // Lines a token may run across (wrapped.ts): every line one run of letters and digits, each break read alone and
  // in chains, with and without their first and last breaks; short chains of two breaks between empty lines; tokens
  // wrapped at 20, a word line after each.
  'lines of one run each': fill('a1b2c3d4\n'),
  'chains of two breaks': fill('a1b2c3d4\ne5f6g7h8\ni9j0k1l2\n\n'),
  'chains of four short lines': fill('a1b2\nc3d4\ne5f6\ng7h8\n\n'),
  'tokens wrapped at 20': fill('export TOKEN=ghp_aB3\ndE5fG7hJ9kL1mN3pQ5rS\n7tU9vW1xY3zA5\nnext line\n'),
  'base64 and hex glued to a word or a path': fill(gluedEncodings()),
  'long encodings glued to a word or a path': fill(longGluedEncodings()),
  'digits and separators (pii)': fill('4111 1111-1111 1111 +44 20 7946 0958 '),
  'one-digit groups (pii)': fill('4 5 '),
  'emails and at-signs (pii)': fill('a.b@c.d.e@f.g@h.i '),
  'at-signs alone (pii)': fill('a@'),
  [`keyword of ${worst.name}`]: worst.text,
};

const detectors = { secrets, ruleset, pii, piiScan };
type Detector = keyof typeof detectors;
const inputs: Record<string, string> = { 'prose (docs)': prose, ...crafted };

// Rounds interleave every input and detector, so each figure is taken as warm as the others (round 0 warms up):
// a prose measured first, before the scanners are optimized, would make every crafted input look cheaper.
const rounds = QUICK ? 2 : 7;
const times = new Map<string, number[]>();
for (let round = 0; round <= rounds; round++) {
  for (const [name, text] of Object.entries(inputs)) {
    for (const [d, f] of Object.entries(detectors)) {
      const t = performance.now();
      f(text);
      const ms = performance.now() - t;
      if (round > 0) times.set(`${name}/${d}`, [...(times.get(`${name}/${d}`) ?? []), (ms * MB) / text.length]);
    }
  }
}
const msPerMb = (name: string, d: Detector) => median(times.get(`${name}/${d}`)!);

const rows: Array<Array<string | number>> = [['input', 'secrets() ms/MB', 'ratio', 'rule set ms/MB', 'ratio', 'pii() ms/MB', 'ratio', 'pii scan ms/MB', 'ratio']];
for (const name of Object.keys(inputs)) {
  const cells: Array<string | number> = [name];
  for (const d of Object.keys(detectors) as Detector[]) {
    const ms = msPerMb(name, d);
    cells.push(fmt(ms, ms < 10 ? 1 : 0), fmt(ms / msPerMb('prose (docs)', d), 2));
  }
  rows.push(cells);
}
console.log(`detector time per MB, crafted against prose in the same run, medians of ${rounds} interleaved rounds (${machine()})\n`);
table(rows);
