/**
 * gitleaks' default rules as a detector (src/detect/ruleset.ts, data/gitleaks): the generated module matches the
 * carried file, every rule compiles under re2js, a credential is found wherever it sits in a text, nothing is found
 * in look-alikes, and a scan asked to stop stops (fail closed).
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { generate, OUTPUT_FILE } from '../../../scripts/gen-secret-rules.js';
import { DetectionCache, SECRET_KINDS, detectKinds, withDetection } from '../../../src/detect/index.js';
import { DetectionStopped, MAX_MERGED, MERGED_OVERLAP, RULES_LEFT_OUT, WINDOW_BEFORE, compileAllow, scanRuleset, scanRulesetFully, scanRulesetOneWindow, secretGroupsOf, shannonEntropy } from '../../../src/detect/ruleset.js';
import { GITLEAKS_ALLOW, GITLEAKS_RULES, OWN_RULES, SECRET_RULES } from '../../../src/detect/secret-rules.generated.js';
import { scanSecrets } from '../../../src/detect/secrets.js';
import { scanPii } from '../../../src/detect/pii.js';
import credentials from '../../fixtures/secrets/credentials.json' with { type: 'json' };

const creds = credentials.credentials;

describe('the carried rule set', () => {
  it('matches what the generator derives from data/gitleaks/gitleaks.toml (npm run secret-rules)', () => {
    expect(readFileSync(OUTPUT_FILE, 'utf8')).toBe(generate());
  });

  it('has every rule compile under re2js, and every rule but the ones left out reports its id as a secrets kind', () => {
    expect(GITLEAKS_RULES.length).toBeGreaterThan(150);
    expect(OWN_RULES.length).toBeGreaterThan(0);
    for (const r of SECRET_RULES) {
      expect(() => RE2JS.compile(r.regex), r.id).not.toThrow();
      expect(SECRET_KINDS.includes(r.id), r.id).toBe(!RULES_LEFT_OUT.has(r.id));
    }
  });

  it('computes entropy as gitleaks does', () => {
    expect(shannonEntropy('aaaa')).toBe(0);
    expect(shannonEntropy('abcd')).toBe(2);
  });
});

describe('a credential is found wherever it sits', () => {
  const filler = fc.string({ maxLength: 200, unit: fc.constantFrom(...' \nabcdefghijklmnopqrstuvwxyz.,;()'.split('')) });
  it('before and after any prose, at any depth of a line', () => {
    fc.assert(
      fc.property(fc.constantFrom(...creds), filler, filler, (c, before, after) => {
        const text = `${before}\n${c.text}\n${after}`;
        const spans = scanSecrets(text);
        let masked = text;
        for (const s of [...spans].reverse()) masked = masked.slice(0, s.start) + '[x]' + masked.slice(s.end);
        expect(masked.includes(c.value), `${c.provider}: ${text}`).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('standing alone in prose, markup, a query or a URL path, ended by their punctuation', () => {
    // Values that say what they are alone; gitleaks' rules end a token only at a blank, a quote or `;`.
    const bare = creds.filter((c) => !c.value.includes('\n') && scanSecrets(c.value).length > 0);
    const around = fc.constantFrom(['Your key is ', '. Keep it.'], ['(', '), then'], ['<b>', '</b>'], ['?token=', '&next=1'], ['GET https://cb.test/hooks/', '/status'], ['[', ']!'], ['#', '|']);
    fc.assert(
      fc.property(fc.constantFrom(...bare), around, (c, [before, after]) => {
        // What is found in the value alone (a connection string's password, a token whole) is found around it too.
        const text = `${before}${c.value}${after}`;
        const spans = scanSecrets(text);
        for (const alone of scanSecrets(c.value)) {
          const [a, b] = [before.length + alone.start, before.length + alone.end];
          expect(spans.some((sp) => sp.start <= a && sp.end >= b), `${c.provider}: ${text}`).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('masked to the end of its token where more characters than a word are glued to it (the rest of a longer credential)', () => {
    // (Credentials that are one token: letters, digits, `_` and `-`.)
    const bare = creds.filter((c) => /^[\w-]+$/.test(c.value) && scanSecrets(c.value).length > 0);
    const tail = fc.array(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-'.split('')), { minLength: 1, maxLength: 40 }).map((cs) => cs.join(''));
    let found = 0;
    fc.assert(
      fc.property(fc.constantFrom(...bare), tail, (c, t) => {
        // (A word glued to it is no rest of a token: a string that ends with a token, joined with one that starts
        // with a word.)
        fc.pre(!/^(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)$/.test(t));
        const text = `key ${c.value}${t} end`;
        const at = 4;
        const spans = scanSecrets(text);
        // (A value whose format says where it ends is no find with more glued to it: then nothing of it is masked.)
        if (!spans.some((sp) => sp.start <= at + 4 && sp.end > at + 4)) return;
        found++;
        const end = at + c.value.length + t.length;
        expect(spans.some((sp) => sp.start <= at && sp.end >= end), `${c.provider}: ${text}`).toBe(true);
      }),
      { numRuns: 1000 },
    );
    expect(found).toBeGreaterThan(100);
    // (A tail of letters, a `-` or `_`, then a word: a rule of a bounded length may stop at that `-`, inside the token,
    // and what follows it is then a word. Every credential with every such tail.)
    for (const c of bare) {
      for (const t of ['aa-aaaaa', '-abcdef', 'x_word', 'Q9-end', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-aaaaa']) {
        const text = `key ${c.value}${t} end`;
        const spans = scanSecrets(text);
        if (!spans.some((sp) => sp.start <= 8 && sp.end > 8)) continue;
        expect(spans.some((sp) => sp.start <= 4 && sp.end >= 4 + c.value.length + t.length), `${c.provider}: ${text}`).toBe(true);
      }
    }
  });

  it('on every line of a file of them, one after another', () => {
    // A rule that reads the character before a credential and the one after it consumes both: where one line's end is
    // the next line's start, every other line went unread (a .pgpass file's second password).
    // The line of each one-line credential's text that holds it (a file's other lines left out).
    // (A pair's value is named on a line before it, `- name: POSTGRES_PASSWORD` then `value: "..."`, CloudFormation's `ParameterValue`, a table's cell by
    // its header, a YAML block scalar's value by the line with its indicator, a command's output by the command on the
    // prompt's line before it (not a line that is a prompt of its own, `host:6379> AUTH ...`), a collection's member by
    // the collection's name on the line before it, what a script sends by what it expects on the line before it, an
    // OpenVPN profile's password by its block's tag two lines before it, a heredoc's first line by the assignment that
    // opens it, a note's `p:` by its `u:`, a property list's value by its `<key>`: its line alone names nothing, and is left out.)
    const all = creds.filter((c) => !c.value.includes('\n')).map((c) => ({ provider: c.provider, text: c.text, line: c.text.split('\n').find((l) => l.includes(c.value))!.trim() }));
    const row = (text: string, line: string) => /^\|.*\|$/.test(line) || (/^[\w ,]+$/.test(text.split('\n')[0]!) && text.split('\n')[0]!.includes(',') && !text.startsWith(line));
    const lineBefore = (text: string, line: string) => {
      const ls = text.split('\n');
      return ls[ls.findIndex((l) => l.includes(line)) - 1] ?? '';
    };
    const lines = all.filter(({ text, line }) => !/^"?(?:parameter)?value"?:/i.test(line) && !row(text, line) && !/:\s*[|>][-+]?\s*$/.test(lineBefore(text, line)) && !(/^(?:[$%]|\/\S* #) \S/.test(lineBefore(text, line)) && !/^\S+> /.test(line)) && !/^\s*[\w.-]+:\s*$/.test(lineBefore(text, line)) && !/^\s*(?:expect\b|[\w.]+\.expect\(|"[^"]*assword)/.test(lineBefore(text, line)) && !text.includes('<auth-user-pass>') && !/<<[-~]?\w+\s*$/.test(lineBefore(text, line)) && !/^u:\s/i.test(lineBefore(text, line)) && !/<key>[^<]*<\/key>\s*$/.test(lineBefore(text, line)));
    expect(lines.length).toBeGreaterThanOrEqual(all.length - 29);
    fc.assert(
      fc.property(fc.constantFrom(...lines), fc.constantFrom('\n', '\r\n', ' ', '\n\n', '\t'), fc.integer({ min: 2, max: 5 }), ({ provider, line }, sep, n) => {
        const text = Array.from({ length: n }, () => line).join(sep);
        const spans = scanSecrets(text);
        const alone = scanSecrets(line);
        const c = { provider };
        expect(alone.length, c.provider).toBeGreaterThan(0);
        for (let k = 0; k < n; k++) {
          const at = k * (line.length + sep.length);
          for (const sp of alone) expect(spans.some((s) => s.start <= at + sp.start && s.end >= at + sp.end), `${c.provider} copy ${k}: ${JSON.stringify(text)}`).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('the work the scan saves changes no answer', () => {
  // Near every rule: its keywords in any case, as a name or inside one, an operator, a value of secret characters of
  // any length, a provider's example credential, cut or whole; the keyword prefilter, the windows, the tries anchored
  // at a keyword and the DFA test before each search must find what gitleaks finds, each rule whose keyword occurs
  // running its own regex over the whole text (texts within a window's reach: a keyword of a rule may be anywhere).
  const rules = SECRET_RULES.filter((r) => !RULES_LEFT_OUT.has(r.id));
  // Values of the classes and lengths the rules ask for (hex, lower-case letters and digits, any secret character).
  const ofLength = (chars: string) => fc.constantFrom(14, 16, 17, 20, 24, 25, 26, 30, 32, 35, 36, 40, 43, 44, 45, 50, 64).chain((n) => fc.string({ minLength: n, maxLength: n, unit: fc.constantFrom(...chars.split('')) }));
  const secretChars = fc.oneof(
    ofLength('0123456789abcdef'),
    ofLength('0123456789abcdefghijklmnopqrstuvwxyz'),
    fc.string({ minLength: 1, maxLength: 70, unit: fc.constantFrom(...'abcdefABCDEF0123456789xyzXYZ_-./+='.split('')) }),
  );
  const keyword = fc.constantFrom(...rules.flatMap((r) => r.keywords)).chain((k) => fc.constantFrom(k, k.toUpperCase(), `${k}_token`, `MY_${k.toUpperCase()}_KEY`, `x${k}`));
  // A whole assignment as the keyword-assignment rules read one: a name around a keyword, blanks or quotes, an
  // operator, quotes, a value; each part at and past the bounds the rules allow.
  const assignment = fc
    .tuple(
      keyword,
      fc.string({ maxLength: 22, unit: fc.constantFrom(...'_abcXY.- \t'.split('')) }),
      fc.string({ maxLength: 4, unit: fc.constantFrom(' ', '"', "'", '\t', '\n') }),
      fc.constantFrom('=', ':', ':=', '=>', '||', '?=', ',', '>', '::='),
      fc.string({ maxLength: 6, unit: fc.constantFrom(' ', '"', "'", '=', '`') }),
      secretChars,
    )
    .map((parts) => parts.join(''));
  const piece = fc.oneof(
    keyword,
    assignment,
    fc.constantFrom(' = ', '=', ': ', ':', ' := ', ' => ', '"', "'", ' ', '\n', ', ', '\\n', ';'),
    secretChars,
    fc.constantFrom(...creds.map((c) => c.text)),
    fc.constantFrom(...creds.map((c) => c.value)).chain((v) => fc.nat(v.length).map((n) => v.slice(0, n))),
  );
  it('agrees on the texts the property below once found apart', () => {
    // A keyword inside the rule's last match (a matcher goes on from its end); a name whose keyword's own tail
    // (`_token` after `sonar`) and 18 characters more stand before the operator.
    for (const text of [
      'Authorization: Basic YWRtaW46RFFJdlF5elFoaUl5QTNUYzdO/Authorization: Basic YWRtaW46RFFJdlF5elFoaUl5QTNUYzdO = ',
      'sonar_tokenkucoin________    =0000000000000000000000000000000000000000',
      // (A rule whose first alternative opens with a group of keywords, `\b(?:smbclient|...)...|\blftp...`: its later
      // alternatives start with keywords of their own, not the group's.)
      'lftp -u backup,c9TzW4qLm2Xv ftp.partner.example',
    ]) {
      expect(scanRuleset(text), text).toEqual(scanRulesetFully(text));
      expect(scanRuleset(text).length, text).toBe(1);
    }
  });
  it('scanRuleset finds what the rules\' own regexes find over the whole text', () => {
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 14 }), (parts) => {
        const text = parts.join('').slice(0, WINDOW_BEFORE);
        expect(scanRuleset(text)).toEqual(scanRulesetFully(text));
      }),
      { numRuns: 2500 },
    );
  });
  it('reads each match\'s groups as re2js\'s matcher does, whatever stands after it', () => {
    // The groups are read on the match and a few characters around it: a secret's class that also ends a token (`.`,
    // `=`, `-`, `/`) read up to the end of that short text would take one more character than the matcher does.
    const glue = fc.string({ minLength: 0, maxLength: 3, unit: fc.constantFrom('.', '=', '-', '/', ':', ',', '_', ' ', '\n') });
    const tail = fc.oneof(fc.constantFrom(...creds.map((c) => c.text)), secretChars, fc.constantFrom('', 'x', 'SENDGRID', '0000'));
    fc.assert(
      fc.property(fc.array(fc.tuple(piece, glue, tail), { minLength: 1, maxLength: 4 }), fc.nat(80), (triples, pad) => {
        const text = `${'y '.repeat(pad)}${triples.map((t) => t.join('')).join('')}`;
        expect(scanRulesetOneWindow(text)).toEqual(scanRulesetFully(text));
      }),
      { numRuns: 1500 },
    );
  });
  it("a try at one of a rule's commands (a rule whose alternatives each start with their own keywords) finds what the rule's whole regex finds", () => {
    // (A try at a keyword runs only the alternatives that start with the keywords standing there, `7z` and `7za` both;
    // the others are left as a class no character is in, their groups kept empty so each secret's group keeps its
    // number.) Commands of such rules, in any case, one glued to another or apart, before the corpus's texts and flags.
    const commandRules = rules.filter((r) => r.keywords.length > 1 && r.keywords.every((k) => /^[a-z0-9<]/.test(k)));
    const commands = commandRules.flatMap((r) => r.keywords);
    // (Their finds: another rule's, read in windows, may lie further than WINDOW_BEFORE before its keyword in a text of
    // this length, a git SHA's 40 hex digits 257 characters before `sgp_`, and is the stretches' property's to judge.)
    const kinds = new Set(commandRules.map((r) => r.id));
    const theirs = (found: ReturnType<typeof scanRuleset>) => found.filter((sp) => kinds.has(sp.kind));
    const command = fc.constantFrom(...commands).chain((k) => fc.constantFrom(k, k.toUpperCase(), k[0]!.toUpperCase() + k.slice(1)));
    const arg = fc.oneof(
      command,
      fc.constantFrom(' ', ' -p ', ' -P ', ' -pw ', ' /p:', ' -p:', ' /user:x ', ' login -p ', ' auth a ', ' -u a ', 'a/', '@', ' as sysdba', 'a', '64.exe'),
      secretChars,
      fc.constantFrom(...creds.map((c) => c.text)),
    );
    fc.assert(
      fc.property(fc.array(arg, { minLength: 1, maxLength: 12 }), (parts) => {
        const text = parts.join('');
        // (Within a try's reach: a try reads WINDOW_AFTER characters from its keyword, and reads on only where a match
        // runs to that end; a match the whole regex makes from one `curl` to a header more than that far on, past a
        // second `curl` glued to a word, is not a try's. Longer texts: the stretches' property below.)
        fc.pre(text.length <= MERGED_OVERLAP - WINDOW_BEFORE);
        expect(theirs(scanRuleset(text)), JSON.stringify(text)).toEqual(theirs(scanRulesetFully(text)));
      }),
      { numRuns: 1500 },
    );
  });
  it('a text dense with keywords is read in stretches that find what one window over all of it finds', () => {
    // Stretches of 2,048 characters (MAX_MERGED is 64 KiB: the same code, reached by shorter texts).
    const stretch = 2 * MERGED_OVERLAP + 512;
    fc.assert(
      fc.property(fc.array(piece, { minLength: 40, maxLength: 200 }), (parts) => {
        const text = parts.join('');
        expect(scanRuleset(text, undefined, stretch)).toEqual(scanRuleset(text, undefined, Infinity));
      }),
      { numRuns: 400 },
    );
    // Every keyword of the rule set, one after another: their windows merge into one as long as the text.
    const dense = rules.map((r) => `${r.keywords[0]}_token = "0123456789abcdef0123456789abcdef01234567" `).join('').repeat(3);
    expect(dense.length).toBeGreaterThan(4 * stretch);
    expect(scanRuleset(dense, undefined, stretch)).toEqual(scanRuleset(dense, undefined, Infinity));
    // And the deadline is asked at each stretch: a text of one rule's keyword, 7 MiB in one call before.
    const unit = 'sourcegraph_token = "0123456789abcdef0123456789abcdef01234567" ';
    let asks = 0;
    scanRuleset(unit.repeat(Math.ceil((4 * MAX_MERGED) / unit.length)), () => (asks++, false));
    expect(asks).toBeGreaterThanOrEqual(4);
  });
  it('a text crowded with a keyword, a credential among its crowd or none, finds what the rules\' own regexes find', () => {
    // (Eight or more places of a rule's keyword, each within a window of the next, are asked first with one search
    // over all of them: a crowd holding no match is passed over whole, one holding a match is halved down to it.)
    const keyword = fc.constantFrom(...rules.flatMap((r) => r.keywords));
    const sep = fc.constantFrom(' ', '', '\n', ' -u ', ' -H ', '/', ' x ');
    fc.assert(
      fc.property(keyword, sep, fc.integer({ min: 8, max: 80 }), fc.option(fc.constantFrom(...creds.map((c) => c.text))), fc.nat(), (k, glue, n, cred, where) => {
        const crowd = Array.from({ length: n }, () => k);
        if (cred !== null) crowd.splice(where % (n + 1), 0, cred);
        const text = crowd.join(glue);
        expect(scanRuleset(text), JSON.stringify(text.slice(0, 120))).toEqual(scanRulesetFully(text));
      }),
      { numRuns: 600 },
    );
  });
  it('a match that runs past its window (a token its rule gives no end, glued to more) is read on, as the rules\' own regexes read it', () => {
    // (`Authorization: FlyV1 fm2_...` and sixty `/test_` after it: a match of 514 characters, dropped at the window's
    // end before.)
    const token = fc.constantFrom(...creds.filter((c) => /^(?:fm2_|fm1[ar]_|sl\.|eyJ)/.test(c.value) && !c.value.includes('\n')).map((c) => c.text));
    const piece = fc.constantFrom('test_', 'a1b2', 'x-y', 'Zq8R', '_');
    let found = 0;
    fc.assert(
      fc.property(token, piece, fc.integer({ min: 20, max: 160 }), fc.constantFrom('/', '', '-'), (t, p, n, glue) => {
        const text = [t, ...Array.from({ length: n }, () => p)].join(glue);
        const full = scanRulesetFully(text);
        expect(scanRuleset(text), JSON.stringify(text.slice(0, 80))).toEqual(full);
        if (full.some((f) => f.end - f.start > 512)) found++;
      }),
      { numRuns: 300, examples: [[creds.find((c) => c.value.startsWith('fm2_'))!.text, 'test_', 60, '/']] },
    );
    expect(found).toBeGreaterThan(0);
  });
  it('and on every credential of the corpus', () => {
    for (const c of creds) expect(scanRuleset(c.text), c.provider).toEqual(scanRulesetFully(c.text));
  });
});

describe('a scan told to stop', () => {
  it('throws DetectionStopped between windows, and the decision\'s cache then withholds what it cannot know', () => {
    const text = creds.map((c) => c.text).join('\n');
    expect(() => scanRuleset(text, () => true)).toThrow(DetectionStopped);
    expect(() => scanPii('4 5 x '.repeat(50_000), () => true)).toThrow(DetectionStopped);
    const cache = new DetectionCache(() => true);
    expect(() => withDetection(cache, () => detectKinds('secrets', text))).toThrow(DetectionStopped);
    expect(cache.stopped).toBe(true);
    expect(cache.spans('secrets', 'anything else')).toEqual([{ kind: 'unchecked', start: 0, end: 13 }]);
  });
});

describe('allowlists', () => {
  // Every allowlist of the rule set (the global one and each rule's), as one alternation and as gitleaks lists its regexes.
  const lists = [GITLEAKS_ALLOW, ...GITLEAKS_RULES.flatMap((r) => r.allow ?? [])].filter((a) => a !== undefined && (a.regexes ?? []).length > 0).map((a) => compileAllow(a!));
  // Strings each regex was written for, and their neighbours: what tells the alternation and the list apart if they differ.
  const examples = [
    'true', 'FALSE', 'xnull', 'null', 'aaaa', '***', '...', '$12', '${12}', '$HOME', '$home', '${HOME}', '{{ a.b }}', '${{ secrets.TOKEN_X }}', '%PATH%',
    '%s', '%+d', '{1}', '{}', '@FOO@', '/Users/Me/x y', '/users/me/x', '/etc/a-b', '/root/x', 'user:changeme', 'user:password', '<a>:<b>', '<a:b>', 'x:[y]',
    'u:$PASS', 'u:${1}', '$(a):$(b)', '{{a}}:{{b}}', 'AKIAEXAMPLE', 'AIzaSyabcdefghijklmnopqrstuvwxyz1234567', 'abc_def', 'accessor', 'key_id', 'monkey',
    'Monkey', 'MONKEY', 'csrf_token', '--mount=type=secret,', 'import { a } from "b"', 's.abcdefghijklmnopqrstuvwx', 'A_B=\nC_D=\n', 'a.b=\nc.d=',
  ];
  const text = fc
    .array(fc.oneof(fc.constantFrom(...examples), fc.string({ maxLength: 6, unit: fc.constantFrom(...'aZ09$%@/{}<>:[]()._-*= \n"\''.split('')) })), { minLength: 1, maxLength: 4 })
    .map((p) => p.join(''));
  it('an allowlist of several regexes allows what one of them matches, asked as one alternation', () => {
    expect(lists.length).toBeGreaterThan(3);
    fc.assert(
      fc.property(text, (t) => {
        for (const a of lists) expect(a.any!.test(t), t).toBe(a.regexes.some((r) => r.matcher(t).find()));
      }),
      { numRuns: 3000 },
    );
    // The examples match what they were written for: the property compares finds, not only misses.
    expect(examples.filter((t) => lists.some((a) => a.any!.test(t))).length).toBeGreaterThan(30);
  });
});

describe('entropy', () => {
  /** Shannon entropy as gitleaks computes it: counts per UTF-16 unit, summed in the order each unit is first seen. */
  const reference = (s: string) => {
    const counts = new Map<number, number>();
    for (let i = 0; i < s.length; i++) counts.set(s.charCodeAt(i), (counts.get(s.charCodeAt(i)) ?? 0) + 1);
    let h = 0;
    for (const n of counts.values()) h -= (n / s.length) * Math.log2(n / s.length);
    return h;
  };
  it('is the same number, to the last bit, for any text (ASCII, other units, one call after another)', () => {
    const unit = fc.oneof(fc.constantFrom(...'aAzZ09_-+/=.~ '.split('')), fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)));
    fc.assert(
      fc.property(fc.array(fc.string({ unit, maxLength: 80 }), { minLength: 1, maxLength: 4 }), (texts) => {
        for (const t of texts) expect(Object.is(shannonEntropy(t), reference(t)), t).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("a keyword rule's value written in words", () => {
  /** The keywords of gitleaks' keyword-assignment rules (`[\w.-]{0,50}?(?:keyword)...`), as their names start. */
  const keywords = [...new Set(SECRET_RULES.filter((r) => !RULES_LEFT_OUT.has(r.id) && /^(?:\(\?i\))?\[\\w\.-\]\{0,50\}\?/.test(r.regex)).flatMap((r) => r.keywords.filter((k) => /^[a-z]{4,}$/.test(k))))];
  const word = fc.constantFrom('linked', 'entities', 'sorted', 'object', 'progress', 'schema', 'value', 'model', 'context', 'protocol', 'client', 'info', 'entry', 'stance', 'handler', 'method');
  const camel = fc.array(word, { minLength: 2, maxLength: 4 }).map((ws) => ws.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join(''));

  it('is a name of a program, under any of those rules, whatever follows it', () => {
    expect(keywords.length).toBeGreaterThan(20);
    fc.assert(
      fc.property(fc.constantFrom(...keywords), fc.constantFrom('', 'Instance', 'Id', 'Token', 'Key'), camel, fc.constantFrom('[name];', ';', '\n', ' ', '.x;'), (k, tail, value, after) => {
        const text = `\t\tconst ${k}${tail} = ${value}${after}`;
        expect(scanRuleset(text), text).toEqual([]);
        expect(scanRulesetFully(text), text).toEqual([]);
      }),
      { numRuns: 1500 },
    );
  });
});

describe("a rule's secret", () => {
  const rule = (id: string) => SECRET_RULES.find((r) => r.id === id)!;

  it('is the first group that holds a run of characters and is not repeated, or the whole match where no group is', () => {
    // gitleaks' first non-empty group is a name's word here (`sonar[_.-]?(login|token)`) and one block of an id there.
    expect(secretGroupsOf(rule('sonar-api-token'))).toEqual([2]);
    expect(secretGroupsOf(rule('microsoft-teams-webhook'))).toEqual([]);
    expect(secretGroupsOf(rule('lob-api-key'))).toEqual([1]);
    expect(secretGroupsOf({ id: 'x', regex: '(a)(b[0-9]{4})', keywords: ['a'], secretGroup: 1 })).toEqual([1]);
    expect(secretGroupsOf({ id: 'x', regex: '(?:key)=([\\w]{8,})|token=(\\d+)', keywords: ['key'] })).toEqual([1, 2]);
    expect(secretGroupsOf({ id: 'x', regex: 'id=(?:([a-z0-9]{4})-){3}([a-z0-9]{12})', keywords: ['id'] })).toEqual([2]);
  });

  it('is masked whole after any name of a Sonar token, and a Teams webhook is masked past its host', () => {
    const token = fc.array(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'.split('')), { minLength: 40, maxLength: 40 }).map((cs) => cs.join(''));
    const name = fc.tuple(fc.constantFrom('sonar', 'SONAR', 'Sonar'), fc.constantFrom('', '_', '.', '-'), fc.constantFrom('login', 'token', 'LOGIN', 'TOKEN'));
    fc.assert(
      fc.property(name, fc.constantFrom('=', ': ', ' = "', "='"), token, ([a, sep, b], op, t) => {
        const text = `${a}${sep}${b}${op}${t}${op.includes('"') ? '"' : op.includes("'") ? "'" : ''}\n`;
        for (const spans of [scanRuleset(text), scanSecrets(text)]) {
          const at = text.indexOf(t);
          expect(spans.some((s) => s.start <= at && at + t.length <= s.end), text).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
    const guid = fc.uuid();
    fc.assert(
      fc.property(guid, guid, fc.array(fc.constantFrom(...'0123456789abcdef'.split('')), { minLength: 32, maxLength: 32 }), guid, (g1, g2, hex, g3) => {
        const path = `${g1}@${g2}/IncomingWebhook/${hex.join('')}/${g3}`;
        const text = `hook: https://acme.webhook.office.com/webhookb2/${path}\n`;
        const at = text.indexOf(path);
        expect(scanSecrets(text).some((s) => s.start <= at && at + path.length <= s.end), text).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
