/**
 * Generic assignments as gitleaks writes its own tests of them (test/fixtures/secrets/gitleaks-generic.json, with its
 * source): every placement of its sample generator, with values of every class its rules draw from; the true and the
 * false positives of its generic rule; and names with a qualifier after the secret's word (`API_TOKEN_2`,
 * `GITHUB_TOKEN_PROD`), which it reads anywhere in a name.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { detectKinds, DetectionCache, SECRET_KINDS, spansOf } from '../../../src/detect/index.js';
import { shannonEntropy, wordy } from '../../../src/detect/chars.js';
import { isExpression } from '../../../src/detect/secrets.js';

interface Fixture {
  placements: Record<string, string>;
  tps: { text: string; secret?: string; class?: string }[];
  fps: string[];
  fpsWithDrawnValue: string[];
  fpsFound: { text: string; why: string }[];
}
const fixture = JSON.parse(readFileSync(new URL('../../fixtures/secrets/gitleaks-generic.json', import.meta.url), 'utf8')) as Fixture;
const SECRETS = new Set(SECRET_KINDS);

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
/** The classes gitleaks' rules draw a secret from: letters and digits, hex, base64, a token's `-_.=`, a database password's punctuation. */
const CLASSES: Record<string, { chars: string; min: number; max: number }> = {
  alnum: { chars: ALNUM, min: 20, max: 64 },
  hex: { chars: '0123456789abcdef', min: 32, max: 64 },
  base64: { chars: `${ALNUM}+/`, min: 24, max: 60 },
  token: { chars: `${ALNUM}-_.=`, min: 20, max: 100 },
  punctuation: { chars: `${ALNUM}:;<@=},!$?^`, min: 12, max: 50 },
};
const drawn = (chars: string, min: number, max: number) => fc.string({ unit: fc.constantFrom(...chars.split('')), minLength: min, maxLength: max });

/**
 * Values of `length` drawn uniformly from `chars` by a seed, as a generator or a service draws them (fast-check leans
 * on a set's first characters: `AAAAbA...`). `label` keeps the draws of one property apart from another's.
 */
const uniform = (chars: string, length: fc.Arbitrary<number> | number, label: string) =>
  fc.tuple(fc.integer(), typeof length === 'number' ? fc.constant(length) : length).map(([seed, n]) => {
    const bytes = createHash('sha512').update(`${label}:${seed}`).digest();
    return Array.from({ length: n }, (_, i) => chars[bytes[i]! % chars.length]).join('');
  });

/** Whether [at, end) lies inside spans that meet, each masked in its place: nothing of it left between them. */
function covered(spans: { start: number; end: number }[], at: number, end: number): boolean {
  let reach = at;
  for (const s of [...spans].sort((a, b) => a.start - b.start)) if (s.start <= reach && s.end > reach) reach = s.end;
  return reach >= end;
}

/** Whether [at, at + length) lies inside one span of what the detectors find in `text`. */
function masked(text: string, value: string): boolean {
  const at = text.indexOf(value);
  return at >= 0 && spansOf(new DetectionCache(), text, SECRETS).some((s) => s.start <= at && at + value.length <= s.end);
}

describe("gitleaks' sample placements", () => {
  const placement = fc.constantFrom(...Object.entries(fixture.placements));
  const identifier = fc.constantFrom('generic', 'DB_PASSWORD', 'my', 'stripe', 'aws_secret', 'Slack');
  const klass = fc.constantFrom(...Object.keys(CLASSES));
  const value = klass.chain((k) => drawn(CLASSES[k]!.chars, CLASSES[k]!.min, CLASSES[k]!.max).map((v) => [k, v] as const));

  it('masks a value of every class in every placement, whole, past the punctuation a password may hold', () => {
    fc.assert(
      fc.property(placement, identifier, value, ([where, template], i, [k, s]) => {
        // A secret, not a word: letters and digits among it, and as random as a drawn value of its length is.
        fc.pre(/[0-9]/.test(s) && /[A-Za-z]/.test(s) && shannonEntropy(s) >= Math.min(3.5, 0.8 * Math.log2(s.length)));
        // What a value of punctuation starts or ends with a reader cannot tell from what stands around it: a variable
        // (`$DB_PASSWORD`), a placeholder (`<key>`), a reference (`@name`), a sentence's or a row's mark.
        fc.pre(/^[A-Za-z0-9]/.test(s) && /[A-Za-z0-9]$/.test(s));
        // An ellipsis says a value is shown cut short.
        fc.pre(!s.includes('...'));
        // Unquoted, words before a mark are a list's or a type's (`InstanceIds,Values=...`, `Map<string, ...>`), and
        // `??` is an operator.
        const first = s.split(/[;,}<>)\]]/)[0]!;
        fc.pre(/["'`]\{s\}/.test(template) || !(/^(?=.{5})[A-Z]?[a-z]{2,}(?:[A-Z][a-z]{2,})*$/.test(first) || wordy(first) || /^[A-Za-z_]\w*</.test(s) || s.includes('??')));
        // A row of comma-separated values ends its cell at a `,`; letters and digits alone there are read from 16 on.
        fc.pre(!(where.startsWith('csv') && (s.includes(',') || (/^\w+$/.test(s) && s.length < 16))));
        // A program's string in words is a name (`"aaaacalaStaing;62propert"` reads so).
        fc.pre(!wordy(s));
        // Unquoted, a run of names between `.`, `=` and `-` is a program's expression (`j.isWritable=j.isReadable`).
        fc.pre(/["'`]\{s\}/.test(template) || !isExpression(s));
        const text = template.replaceAll('{i}', () => i).replaceAll('{s}', () => s);
        expect(masked(text, s), JSON.stringify(text)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("gitleaks' generic rule's own cases", () => {
  it('finds every true positive, the drawn ones at any draw', () => {
    for (const tp of fixture.tps.filter((t) => t.secret !== undefined)) expect(masked(tp.text, tp.secret!), tp.text).toBe(true);
    const drawnTps = fixture.tps.filter((t) => t.class !== undefined);
    expect(drawnTps.length).toBeGreaterThan(0);
    for (const tp of drawnTps) {
      const [, chars, n] = /^\[(.+)\]\{(\d+)\}$/.exec(tp.class!)!;
      const unit = chars!.replace('a-zA-Z0-9', ALNUM).replace('\\-', '-');
      fc.assert(
        fc.property(drawn(unit, Number(n), Number(n)), (s) => {
          // gitleaks' own draw: a digit among it, as its newPlausibleSecret retries until one is.
          // (An ellipsis says a value is shown cut short: none is written out.)
          fc.pre(/[1-9]/.test(s) && /[A-Za-z]/.test(s) && shannonEntropy(s) >= 3.5 && !s.includes('...'));
          // (Unquoted, a run of names between `.`, `=` and `-` is a program's expression.)
          fc.pre(/["'`]\{s\}/.test(tp.text) || !isExpression(s));
          const text = tp.text.replace('{s}', () => s);
          expect(masked(text, s), text).toBe(true);
        }),
        { numRuns: 200 },
      );
    }
  });

  it('finds nothing in its false positives, but for the one value it allows by name and that reads as a key here', () => {
    for (const text of fixture.fps) expect(detectKinds('secrets', text), text).toEqual([]);
    fc.assert(
      fc.property(drawn(`${ALNUM}-_.=`, 30, 30), fc.constantFrom(...fixture.fpsWithDrawnValue), (s, template) => {
        // (Not a value that holds a secret's name and `=` of its own, `pw=aaaaaaaaaaaaaawaTNOEme6Tj2=`: an assignment.)
        fc.pre(!/(?:^|[-_.=])(?:pw|pin|pat|psk)=|(?:key|pass|pwd|auth|token|secret|bearer|salt)=/i.test(s));
        const text = template.replace('{s}', () => s);
        expect(detectKinds('secrets', text), text).toEqual([]);
      }),
      { numRuns: 300 },
    );
    for (const { text } of fixture.fpsFound) expect(detectKinds('secrets', text), text).not.toEqual([]);
  });
});

describe("a qualifier after a secret's name", () => {
  const stem = fc.constantFrom('API_TOKEN', 'GITHUB_TOKEN', 'db_password', 'authToken', 'STRIPE_SECRET', 'client_secret', 'api_key', 'SLACK_BOT_TOKEN', 'STRIPE_KEY');
  const qualifier = fc.constantFrom('_2', '_v2', '1', '_PROD', '_dev', '_STAGING', '_live', '_OLD', '_new', '_RO', '_readonly', '_backup', '_B64', '_hex', '_value', 'Value', '_PROD_2');
  const random = drawn(ALNUM, 24, 48).filter((v) => /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) >= 3.8);
  const form = fc.constantFrom('env', 'json', 'yaml', 'python');
  const write = (how: string, n: string, v: string) =>
    how === 'env' ? `${n}=${v}` : how === 'json' ? `{"${n}": "${v}"}` : how === 'yaml' ? `  ${n}: ${v}` : `${n} = "${v}"`;

  it('finds and masks the value: a number, a version, an environment, an age, a role or how it is held says which secret, not that it is none', () => {
    fc.assert(
      fc.property(stem, qualifier, random, form, (s, q, v, how) => {
        // (`key` alone takes an environment only: `STRIPE_KEY_LIVE`.)
        fc.pre(!(s === 'STRIPE_KEY' && !/^_(?:PROD|dev|STAGING|live)$/.test(q)));
        // (Written glued, a qualifier follows a name in camel case: `authTokenValue`.)
        fc.pre(!(q === 'Value' && /_/.test(s)));
        const text = write(how, s + q, v);
        expect(masked(text, v), text).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it("finds nothing where the word after the name says what the value tells (a type, a size, a name), where a map's keys are numbered, or where a key's pair is named", () => {
    const texts = [
      'token_type = "Bearer"',
      'key_size=2048',
      'secret_name_2 = "prod-db-credentials"',
      "const source = { key1: 'value1', key3: 'value3' }",
      "  key1: {\n    subkey1: 'subvalue1',\n    subkey2: 'subvalue2'\n  }",
      '--tags "tagkey1=tagvalue1, tagkey2=tagvalue2"',
      '"examplekey1": "examplevalue1",',
      'var _keyStr = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";',
      '  "A_namespace_declaration_should_not_be_declared_using_the_module_keyword_Please_use_the_namespace_key_1540": "Объявление пространства имен",',
      '"key_value": "Hk29aLq0Zx81mWp4"',
      '"output_token": "Jobs[-1].JobId",',
      '        privateKeyEncoding: BasePrivateKeyEncodingOptions<PrivF> & {',
      'Key=InstanceIds,Values=i-028ea792daEXAMPLE',
      '"result_key": "CustomVerificationEmailTemplates",',
    ];
    for (const text of texts) expect(detectKinds('secrets', text), text).toEqual([]);
  });
});

describe('a Kubernetes Secret', () => {
  const k8s = JSON.parse(readFileSync(new URL('../../fixtures/secrets/gitleaks-kubernetes.json', import.meta.url), 'utf8')) as {
    tps: { name: string; text: string; values: string[] }[];
    fps: { name: string; text: string }[];
  };

  it("masks every value of its data in gitleaks' own cases, and nothing in theirs that hold none", () => {
    for (const tp of k8s.tps) for (const v of tp.values) expect(masked(tp.text, v), tp.name).toBe(true);
    for (const fp of k8s.fps) expect(detectKinds('secrets', fp.text), fp.name).toEqual([]);
  });

  it('masks every value of its data or stringData, whatever its name, as kubectl prints it in YAML or JSON or a manifest writes it, and nothing of a ConfigMap or another kind', () => {
    const name = fc.constantFrom('password', 'extra', '.dockerconfigjson', 'tls.key', 'app-config', 'ca.crt', 'DATABASE_URL');
    const b64 = drawn(`${ALNUM}+/`, 8, 60).map((v) => `${v}${'='.repeat((4 - (v.length % 4)) % 4)}`);
    const layout = fc.constantFrom('yaml-kind-first', 'yaml-data-first', 'yaml-list', 'yaml-quoted', 'yaml-block', 'json', 'yaml-documents');
    const kind = fc.constantFrom('Secret', 'secret', 'ConfigMap', 'ExternalSecret', 'SopsSecret');
    const write = (how: string, k: string, entries: [string, string][]): string => {
      const yaml = (indent: string, quote = '') => entries.map(([n, v]) => `${indent}${n}: ${quote}${v}${quote}`).join('\n');
      if (how === 'yaml-kind-first') return `apiVersion: v1\nkind: ${k}\nmetadata:\n  name: app\ntype: Opaque\ndata:\n${yaml('  ')}\n`;
      if (how === 'yaml-data-first') return `apiVersion: v1\ndata:\n${yaml('  ')}\nkind: ${k}\nmetadata:\n  creationTimestamp: "2024-05-01T10:00:00Z"\n  name: app\ntype: Opaque\n`;
      if (how === 'yaml-list') return `apiVersion: v1\nitems:\n- apiVersion: v1\n  data:\n${yaml('    ')}\n  kind: ${k}\n  metadata:\n    name: app\nkind: List\nmetadata:\n  resourceVersion: ""\n`;
      if (how === 'yaml-quoted') return `apiVersion: "v1"\nkind: "${k}"\nstringData:\n${yaml('\t', '"')}\n`;
      if (how === 'yaml-block') return `apiVersion: v1\nkind: ${k}\ndata:\n${entries.map(([n, v]) => `  ${n}: |\n    ${v}`).join('\n')}\n`;
      if (how === 'yaml-documents') return `apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n---\napiVersion: v1\nkind: ${k}\ndata:\n${yaml('  ')}\n---\napiVersion: apps/v1\nkind: Deployment\n`;
      return `{\n    "apiVersion": "v1",\n    "data": {\n${entries.map(([n, v]) => `        "${n}": "${v}"`).join(',\n')}\n    },\n    "kind": "${k}",\n    "metadata": {\n        "name": "app"\n    },\n    "type": "Opaque"\n}\n`;
    };
    fc.assert(
      fc.property(layout, kind, fc.uniqueArray(fc.tuple(name, b64), { minLength: 1, maxLength: 4, selector: ([n]) => n }), (how, k, entries) => {
        const text = write(how, k, entries);
        if (/^[Ss]ecret$/.test(k)) for (const [, v] of entries) expect(masked(text, v), text).toBe(true);
        else {
          // (Under a name that says secret, a value is read as any assignment's: `password: ...`.)
          const neutral = entries.filter(([n]) => ['extra', '.dockerconfigjson', 'app-config', 'ca.crt'].includes(n)).map(([, v]) => v);
          // (A neutral value found inside another entry's value, `toString` in `toStringaaaOwaPr`, is that value's.)
          fc.pre(neutral.every((v) => entries.every(([, w]) => w === v || !w.includes(v))));
          expect(spansOf(new DetectionCache(), text, SECRETS).filter((s) => neutral.some((v) => text.slice(s.start, s.end).includes(v))), text).toEqual([]);
        }
      }),
      { numRuns: 600 },
    );
  });
});

describe("a provider's credential inside a generic value", () => {
  const { credentials } = JSON.parse(readFileSync(new URL('../../fixtures/secrets/credentials.json', import.meta.url), 'utf8')) as { credentials: { provider: string; value: string }[] };
  // The corpus's one-token credentials that a provider's rule or format finds alone.
  const bare = credentials.filter((c) => /^[\w-]{20,}$/.test(c.value) && detectKinds('secrets', `x ${c.value} y`).some((k) => k !== 'secret-assignment'));

  it('masks the whole value, what stands before and after the credential in it too, under the provider\'s kind', () => {
    expect(bare.length).toBeGreaterThan(40);
    const around = drawn(`${ALNUM}=._-`, 12, 40).filter((v) => /[0-9]/.test(v) && /[a-z]/.test(v) && /[A-Z]/.test(v) && shannonEntropy(v) >= 3.5);
    fc.assert(
      fc.property(fc.constantFrom(...bare), around, around, fc.constantFrom('"', "'"), (c, before, after, q) => {
        const value = `${before}=${c.value}.${after}`;
        // (An ellipsis says a value is shown cut short.)
        fc.pre(!value.includes('...'));
        const text = `private_key: ${q}${value}${q}\n`;
        const spans = spansOf(new DetectionCache(), text, SECRETS);
        const at = text.indexOf(value);
        // (What stands after the credential may be a provider's too, `...GOR.s.aaaaaaahcas5kwr0BIsF5eWD` a Vault token's
        // `s.`: masked beside it, under its own kind.)
        expect(covered(spans, at, at + value.length), text).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe("curl's --user and headers", () => {
  const curl = JSON.parse(readFileSync(new URL('../../fixtures/secrets/gitleaks-curl.json', import.meta.url), 'utf8')) as {
    tps: { name: string; text: string; secret: string }[];
    fps: string[];
  };

  it("masks the secret of every one of gitleaks' own cases, and finds nothing in its placeholders and variables", () => {
    for (const tp of curl.tps) expect(masked(tp.text, tp.secret), tp.name).toBe(true);
    for (const text of curl.fps) expect(detectKinds('secrets', text), text).toEqual([]);
  });
});

describe('a literal a generator made of every printable character', () => {
  // WordPress's generator (wp-includes/pluggable.php, wp_generate_password with special characters, as
  // api.wordpress.org/secret-key/1.1/salt/ serves its keys): 64 characters of these, a blank among them.
  const WORDPRESS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!@#$%^&*()-_ []{}<>~`+=,.;:/?|';
  // (A password manager's with symbols: letters, digits and the symbols most of them offer.)
  const MANAGER = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!@#$%^&*()-_=+[]{};:,.<>/?~';
  // Django's (django.core.management.utils.get_random_secret_key): 50 of these, lower-case.
  const DJANGO = 'abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)';
  // (Under a password's name from 8 characters, a letter, a digit and another among them: `"kX9#mQ(2vL)p"`.)
  const named = fc.oneof(
    fc.tuple(fc.constantFrom('AUTH_KEY', 'SECURE_AUTH_KEY', 'LOGGED_IN_SALT', 'NONCE_SALT', 'api_secret', 'clientSecret'), fc.oneof(uniform(WORDPRESS, 64, 'wordpress'), uniform(MANAGER, fc.integer({ min: 16, max: 40 }), 'manager'))),
    fc.tuple(fc.constantFrom('DB_PASSWORD', 'password', 'MYSQL_ROOT_PASSWORD', 'passwd'), uniform(MANAGER, fc.integer({ min: 8, max: 40 }), 'password')),
    fc.tuple(fc.constantFrom('SECRET_KEY', 'DJANGO_SECRET_KEY'), fc.tuple(fc.constantFrom('', 'django-insecure-'), uniform(DJANGO, 50, 'django')).map(([p, v]) => p + v)),
  );
  const placement = fc.constantFrom('define', 'php', 'env', 'yaml', 'json', 'python', 'env-bare', 'yaml-bare', 'properties');
  const write = (how: string, n: string, v: string): [string, string] => {
    if (how === 'define') return [`define( '${n}', '${v.replace(/[\\']/g, '\\$&')}' );`, v.replace(/[\\']/g, '\\$&')];
    if (how === 'php') return [`$${n} = '${v.replace(/[\\']/g, '\\$&')}';`, v.replace(/[\\']/g, '\\$&')];
    if (how === 'env') return [`WORDPRESS_${n}='${v}'`, v];
    // (Unquoted on a config's line: an `.env` file's, YAML's, a properties file's.)
    if (how === 'env-bare') return [`${n}=${v}`, v];
    if (how === 'yaml-bare') return [`db:\n  ${n}: ${v}\n  port: 5432`, v];
    if (how === 'properties') return [`spring.datasource.${n}=${v}`, v];
    if (how === 'python') return [`${n} = "${v.replace(/[\\"]/g, '\\$&')}"`, v.replace(/[\\"]/g, '\\$&')];
    const json = JSON.stringify(v).slice(1, -1);
    if (how === 'yaml') return [`  WORDPRESS_${n}: "${json}"`, json];
    return [`{"${n}": "${json}"}`, json];
  };

  it('masks it whole, blanks, brackets, `$` and `(` in it, in a call, an assignment, an environment line, YAML and JSON, from 8 characters under a password\'s name', () => {
    fc.assert(
      fc.property(placement, named, (how, [n, v]) => {
        // (What the reading asks of one: every class, as varied as its length allows, no pattern's marks, no words,
        // nothing that says a value is cut short. Of WordPress's keys, about one in 4,000 holds what reads as a
        // pattern's count or group, `{5}`, `(?:`, and one in some 2,000 an ellipsis, `...`.)
        fc.pre(!/\.\.\.|\*\*\*/.test(v));
        // (Nor a link's scheme and `://` after a mark a link stands after, `I1@nPn://l...`.)
        fc.pre(!/(?:^|[@=:<(['"\s])[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(v));
        // (Nor one a pair of brackets holds whole, as a placeholder's are, `<your-api-key-1>`: one in some 10,000.)
        fc.pre(!/^(?:<[^>]*>|\[[^\]]*\]|\{[^}]*\}|\$\{[^}]*\}|\$\([^)]*\))$/.test(v));
        const kinds = [/[a-z]/, /[A-Z]/, /[0-9]/].filter((k) => k.test(v)).length;
        if (v.length >= 16) fc.pre((v.length >= 32 ? kinds >= 2 : kinds === 3) && new Set(v.replace(/[A-Za-z0-9 ]/g, '')).size >= 3);
        else fc.pre(/[A-Za-z]/.test(v) && /[0-9]/.test(v) && /[^A-Za-z0-9]/.test(v));
        fc.pre(shannonEntropy(v) >= Math.min(4.5, 0.9 * Math.log2(v.length)));
        fc.pre(!/\{\d+(?:,\d*)?\}|\(\?(?:[:=!]|<[=!]|<\w+>)|\(\?[imsx]+\)|\[\^?(?:a-[a-z]|A-[A-Z]|[01]-[0-9])[^\]]{0,40}\]/.test(v));
        fc.pre(!(v.match(/[A-Z]?[a-z]+|[A-Z]+/g) ?? []).some((w) => w.length >= 4 && /[aeiouy]/i.test(w)));
        // (In YAML, not a character that starts something else first: an anchor's `&`, an alias's `*`, a tag's `!`, a
        // flow's bracket.)
        if (how === 'yaml-bare') fc.pre(!/^[-?:,[\]{}#&*!|>%@]/.test(v));
        // (Unquoted, a token: no blank, no quote, no `;` or `,` at its end, no `=` or `>` first (after a name's `=`,
        // `==` compares and `=>` is an arrow), and not a call or an index written whole.)
        if (how.endsWith('bare') || how === 'properties') fc.pre(!/[\s'"`]/.test(v) && !/[;,]$/.test(v) && !/^[=>]/.test(v) && !/^[A-Za-z_$][\w.$]*(?:\(.*\)|\[.*\])$/.test(v));
        const [text, written] = write(how, n, v);
        expect(masked(text, written), text).toBe(true);
      }),
      // (A `://` among random marks is no link's: `...%L<TmEtp_n4F://`, read as one before; nor is a `/` before one
      // character a relative path's, `Av@h94os/d`, nor a capitalized segment with a digit between its letters, `v42/Tf7t`,
      // nor a segment of one-character pieces, a letter's and a digit's, between marks, `1.u@wv/0`.)
      { numRuns: 600, examples: [['define', ['DB_PASSWORD', '<xMO8cWbM)T4%L<TmEtp_n4F://']], ['define', ['DB_PASSWORD', 'Gu42.0m/']], ['define', ['DB_PASSWORD', 'Av@h94os/d']], ['define', ['DB_PASSWORD', 'v42/Tf7t']], ['define', ['DB_PASSWORD', '1.u@wv/0']]] },
    );
  });

  it('finds nothing in a literal of words, a pattern, a format or a template under a secret name, nor in a call, an index or a reference written bare', () => {
    for (const text of [
      `define( 'AUTH_KEY', 'put your unique phrase here' );`,
      `api_key = "Invalid API key (expected 'sk-...'), see {docs_url} [401]"`,
      `password: "Password must be 12+ chars: [a-z], [A-Z], [0-9] & one of !@#$"`,
      `SECRET_PATTERN = '(?:secret|token)[=:]\\s*([A-Za-z0-9_]{32,})'`,
      `"client_secret": "^[A-Za-z0-9._~+/-]{20,}={0,2}$"`,
      `token_format = "%(asctime)s [%(levelname)s] %(name)s: %(message)s"`,
      `password: "(optional)"`,
      `db_password: "%(db_pass)s"`,
      `password: "$(pwd)/data1"`,
      `password: "x1 (see below)"`,
      `password = "<Your Password 1>"`,
      `SECRET_KEY = os.urandom(24)`,
      `password=getpass()`,
      `password=argv[1]`,
      `password=f(x1,y2);`,
      `PASSWORD=\${DB_PASS}`,
      `password={{vault_db_password}}`,
      `auth_token: "Bearer \${{ secrets.API_TOKEN }} (CI only)"`,
    ]) expect(detectKinds('secrets', text), text).toEqual([]);
  });
});

describe('a short bearer token in an Authorization header', () => {
  const token = uniform(ALNUM, fc.integer({ min: 8, max: 19 }), 'bearer');
  const header = fc.constantFrom(
    (t: string) => `GET /v1/orders HTTP/1.1\nHost: orders.internal\nAuthorization: Bearer ${t}\nAccept: application/json`,
    (t: string) => `{"headers": {"Authorization": "Bearer ${t}", "Accept": "application/json"}}`,
    (t: string) => `headers = {'authorization': 'bearer ${t}'}`,
    (t: string) => `  authorization: Bearer ${t}\n  timeout: 30`,
  );

  it('masks one of 8 to 19 characters with a letter and a digit, in a request, a JSON or Python map and YAML', () => {
    fc.assert(
      fc.property(header, token, (write, t) => {
        // (As random as a drawn token is, and not one that says it stands for one: `1234`, `xxxx`.)
        fc.pre(/[A-Za-z]/.test(t) && /[0-9]/.test(t) && shannonEntropy(t) > 2.5 && !/token|your|example|placeholder|changeme|redacted|xxxx|1234/i.test(t));
        expect(masked(write(t), t), write(t)).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it('finds nothing in a placeholder, a variable, a template or a token cut short', () => {
    for (const t of ['YOUR_TOKEN', '$TOKEN', '<token>', '${API_TOKEN}', 'abc12345', '12345678', 'token123', 'eyJhbGciOi', 'xxxxxxxx', 'EXAMPLE_TOKEN'])
      expect(detectKinds('secrets', `Authorization: Bearer ${t}`), t).toEqual([]);
  });
});

describe('session cookies in a Cookie header', () => {
  const value = uniform(ALNUM, fc.integer({ min: 20, max: 40 }), 'cookie');
  const session = fc.constantFrom('session', 'sessionid', 'sid', 'auth_token', 'connect.sid', 'PHPSESSID', 'jwt');
  const other = fc.tuple(fc.constantFrom('theme', 'lang', 'cart', '_ga', 'consent'), fc.constantFrom('dark', 'en', '3', 'GA1.2.1', 'yes'));

  it('masks a session id as servers make it, hex digits or a narrow alphabet of 16 to 40 characters, in a Cookie or Set-Cookie header, and a bearer token of hex digits', () => {
    // PHP's id is 32 hex digits (or 26 of [0-9a-v]), Django's 32 of [a-z0-9], an opaque bearer token often 32 or 40 hex
    // digits: four or five bits a character at most, so a random one often falls under an entropy of 3.5.
    const alphabets = ['0123456789abcdef', '0123456789abcdefghijklmnopqrstuv', 'abcdefghijklmnopqrstuvwxyz0123456789', ALNUM];
    const drawn = fc.constantFrom(...alphabets).chain((chars) => uniform(chars, fc.integer({ min: 16, max: 40 }), `id:${chars.length}`));
    const place = fc.constantFrom(
      (v: string) => `GET / HTTP/1.1\nCookie: PHPSESSID=${v}; lang=en\nAccept: */*`,
      (v: string) => `HTTP/1.1 200 OK\nSet-Cookie: sessionid=${v}; Path=/; HttpOnly`,
      (v: string) => `cookie: csrftoken=x; connect.sid=${v}`,
      (v: string) => `curl -H 'Authorization: Bearer ${v}' https://api.example.com/v1/me`,
    );
    fc.assert(
      fc.property(place, drawn, (write, v) => {
        // (As random as a drawn id is, above the header rules' entropy of 2.5 bits a character: of random hex ids of 16
        // digits, some 0.2 % fall under it.)
        fc.pre(shannonEntropy(v) > 2.5);
        expect(masked(write(v), v), write(v)).toBe(true);
      }),
      { numRuns: 600 },
    );
  });

  it("masks each of one or two session cookies, first, last or between others, the header's first pair too", () => {
    fc.assert(
      fc.property(fc.array(other, { maxLength: 3 }), fc.uniqueArray(fc.tuple(session, value), { minLength: 1, maxLength: 2, selector: ([n]) => n }), fc.array(fc.nat(), { minLength: 2, maxLength: 2 }), fc.constantFrom('Cookie', 'cookie', 'Set-Cookie'), (others, sessions, at, header) => {
        const pairs = others.map(([n, v]) => `${n}=${v}`);
        sessions.forEach(([n, v], i) => pairs.splice(Math.min(at[i]! % (pairs.length + 1), pairs.length), 0, `${n}=${v}`));
        const text = `GET / HTTP/1.1\n${header}: ${pairs.join('; ')}\nAccept: */*`;
        for (const [, v] of sessions) expect(masked(text, v), text).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});
