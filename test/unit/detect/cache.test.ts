import { createHash, generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { DetectionCache, detectKinds, detectKindsOfJoined, scanPii, scanSecrets, UNCHECKED_KIND, withDetection, type Detector } from '../../../src/detect/index.js';
import { DetectionStopped } from '../../../src/detect/ruleset.js';
import { shannonEntropy } from '../../../src/detect/chars.js';

describe('DetectionCache joins', () => {
  it('answers a joined text from its parts, scanning each part once, whatever the order of joins', () => {
    const c = new DetectionCache();
    const a = c.join(['mail jane.doe@example.com', 'key AKIAIOSFODNN7EXAMPLE']);
    const b = c.join(['card 4111 1111 1111 1111', 'nothing']);
    // The same text as `a`, built apart: answered as `a` (by content, not identity).
    const a2 = ['mail jane.doe@example.com', 'key AKIAIOSFODNN7EXAMPLE'].join('\n');
    expect(c.kinds('pii', a)).toEqual(['email']);
    expect(c.kinds('secrets', a2)).toEqual(['aws-access-key-id']);
    expect(c.kinds('pii', b)).toEqual(['credit-card']);
    expect(c.kinds('secrets', b)).toEqual([]);
    expect(c.scans).toEqual({ secrets: 4, pii: 4 });
  });

  it('a value split over two parts is read across their seam, and each part holds its piece of it', () => {
    const c = new DetectionCache();
    const parts = ['key AKIAIOSFOD', 'NN7EXAMPLE for the deploy'];
    const joined = c.join(parts);
    expect(c.kinds('secrets', joined)).toEqual(['aws-access-key-id']);
    expect(c.spans('secrets', parts[0]!)).toEqual([{ kind: 'aws-access-key-id', start: 4, end: 14 }]);
    expect(c.spans('secrets', parts[1]!)).toEqual([{ kind: 'aws-access-key-id', start: 0, end: 10 }]);
    // Neither part alone holds one.
    expect(new DetectionCache().kinds('secrets', parts[0]!)).toEqual([]);
  });

  it('a token that ends one part is masked to its end in the next where what follows is more than a word, and the word that starts a next part is its own', () => {
    // (Each character drawn alike, as a token's are: a run of few distinct characters, `ghp_AaaA000aARD...`, glued to a
    // word decodes as base64 to bytes that are text, `D0!&74?@ ...`, which no token of GitHub's does.)
    const ALNUM = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'];
    // (And as GitHub's are drawn, uniformly: the generator leans on the first character of its set, and a draw that
    // repeats it, `ghp_AAAAAEbyp5MmYw...`, `ghp_AAbAAkAA3AAX...`, decodes as base64 to zero bytes glued to the word after
    // it, and that word is then masked with the token: more masked, nothing less. Of uniform draws, one in some
    // four hundred holds `A` four times.)
    const token = fc
      .array(fc.constantFrom(...ALNUM), { minLength: 36, maxLength: 36 })
      .map((cs) => `ghp_${cs.join('')}`)
      .filter((t) => shannonEntropy(t.slice(4)) >= 4.3 && !/A.*A.*A.*A/.test(t));
    const word = fc.constantFrom('nothing', 'Next', 'OK', 'here', 'Done');
    const rest = fc.stringMatching(/^[A-Za-z0-9_-]{4,20}$/).filter((r) => !/^(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)$/.test(r));
    fc.assert(
      fc.property(token, word, rest, (t, w, r) => {
        const c = new DetectionCache();
        const parts = [`token=${t}`, `${w} here`, `gitlab glpat-Ab3dEf6hIj9kLm2nOp5q`, `${r} for CI`];
        c.kinds('secrets', c.join(parts));
        expect(c.spans('secrets', parts[1]!)).toEqual([]);
        expect(c.spans('secrets', parts[3]!).some((sp) => sp.start === 0 && sp.end >= r.length)).toBe(true);
      }),
      // (Drawn at more runs: tokens some of whose bytes read as text, `7m85p<!064`, after `token=` a value as decoded.)
      {
        numRuns: 200,
        examples: [
          ['ghp_N204NXA8ITA2NGAhgRMa6aT5U5R9mPImuHjx', 'nothing', '-aaA'],
          ['ghp_0z4GbHt3SzdDp8QdZX1OG1ZTdWYuVCpM5V24', 'Next', 'a1-B'],
          ['ghp_tsSWp1uaHInk5JWdJSUdXM1VAIzGa1u0PUoj', 'here', 'Xy_9'],
        ],
      },
    );
  });
});

describe('a value known by what stands after it, split at a seam', () => {
  it('is read with what follows it (echo PASSWORD | sudo -S), wherever the password is cut, whatever characters it holds', () => {
    // Distinct characters (a password above the rule's entropy), a letter and a digit among them; 10 or more, so that
    // the token across the seam, quotes included, is one the seams read (MIN_SEAM_TOKEN).
    const pw = fc.shuffledSubarray('abcXYZ0189!^*()?#&$@%_-+='.split(''), { minLength: 10, maxLength: 20 }).map((cs) => cs.join('')).filter((p) => /[A-Za-z]/.test(p) && /[0-9]/.test(p));
    fc.assert(
      fc.property(pw, fc.nat(), (p, n) => {
        const line = `ssh web1 "echo '${p}' | sudo -S systemctl restart app"`;
        const at = line.indexOf(p) + 1 + (n % (p.length - 1));
        const parts = [line.slice(0, at), line.slice(at)];
        const c = new DetectionCache();
        expect(c.kinds('secrets', c.join(parts)), JSON.stringify(parts)).toContain('sudo-stdin-password');
        // Each part holds its piece, to the seam.
        expect(c.spans('secrets', parts[0]!).some((sp) => sp.end === parts[0]!.length), JSON.stringify(parts)).toBe(true);
        expect(c.spans('secrets', parts[1]!).some((sp) => sp.start === 0), JSON.stringify(parts)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('and cut twice, into three parts the middle one all password (one character or more), every part holds its piece', () => {
    const pw = fc.shuffledSubarray('abcXYZ0189!^*()?#&$@%_-+='.split(''), { minLength: 10, maxLength: 20 }).map((cs) => cs.join('')).filter((p) => /[A-Za-z]/.test(p) && /[0-9]/.test(p));
    fc.assert(
      fc.property(pw, fc.nat(), fc.nat(), (p, n, m) => {
        const line = `ssh web1 "echo '${p}' | sudo -S systemctl restart app"`;
        const a = line.indexOf(p) + 1 + (n % (p.length - 2));
        const b = a + 1 + (m % (line.indexOf(p) + p.length - a - 1));
        const parts = [line.slice(0, a), line.slice(a, b), line.slice(b)];
        const c = new DetectionCache();
        c.join(parts);
        expect(c.spans('secrets', parts[0]!).some((sp) => sp.end === parts[0]!.length), JSON.stringify(parts)).toBe(true);
        expect(c.spans('secrets', parts[1]!).some((sp) => sp.start === 0 && sp.end === parts[1]!.length), JSON.stringify(parts)).toBe(true);
        expect(c.spans('secrets', parts[2]!).some((sp) => sp.start === 0), JSON.stringify(parts)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('a value whole in one part that what follows in the next makes one', () => {
  const random = fc.stringMatching(/^[A-Za-z0-9]{16,28}$/).filter((v) => /[a-z]/.test(v) && /[A-Z]/.test(v) && /[0-9]/.test(v) && new Set(v).size >= 12);

  it("an element's value, its closing tag cut by the seam anywhere, plain, in markup or named by an attribute, is masked in its part; under a tag that does not close it, nothing", () => {
    const element = fc.constantFrom(['<password>', '</password>'], ['<client_secret>', '</client_secret>'], ['<string name="api_key">', '</string>'], ['<entry key="db.password">', '</entry>']);
    const markup = fc.constantFrom(['', ''], ['<code>', '</code>'], ['<b>', '</b>'], ['<span class="v">', '</span>']);
    fc.assert(
      fc.property(element, markup, random, fc.nat(), fc.constantFrom('', '    ', 'config:\n  '), ([open, close], [mo, mc], v, n, before) => {
        const line = `${before}${open}${mo}${v}${mc}${close}\n  </server>`;
        const end = line.indexOf(v) + v.length;
        // Cut after the value, inside what closes it (`</passw` | `ord>`).
        const at = end + 1 + (n % (mc.length + close.length - 1));
        const parts = [line.slice(0, at), line.slice(at)];
        const c = new DetectionCache();
        c.join(parts);
        const i = parts[0]!.indexOf(v);
        expect(c.spans('secrets', parts[0]!).some((sp) => sp.start <= i && i + v.length <= sp.end), JSON.stringify(parts)).toBe(true);
        // Cut inside the element's own closing tag, what follows closes another element (`</passw` | `ordport>`): no
        // value of this one.
        const other = [parts[0]!, parts[1]!.replace(/^[a-z_]+>/, (m) => `${m.slice(0, -1)}port>`)];
        if (mo === '' && other[1] !== parts[1]) {
          const c2 = new DetectionCache();
          c2.join(other);
          expect(c2.spans('secrets', other[0]!), JSON.stringify(other)).toEqual([]);
        }
      }),
      { numRuns: 600 },
    );
  });
});

describe('a table whose rows are spread over the parts after its header', () => {
  const B64 = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'];
  // (Drawn uniformly, as a secret's characters are: fast-check's own draws lean on the first of the set, and a run of
  // `A`s, `AAAAAAANzqLl...`, decodes as base64 to zero bytes and text, which is read.)
  const random = fc
    .tuple(fc.nat(), fc.integer({ min: 20, max: 32 }))
    .map(([seed, n]) => Array.from(createHash('sha512').update(String(seed)).digest().subarray(0, n), (b) => B64[b % B64.length]).join(''))
    .filter((v) => /[0-9]/.test(v) && /[A-Za-z]/.test(v) && new Set(v).size >= 14);
  const tables = [
    { header: '| service | token |\n|---|---|', row: (name: string, v: string) => `| ${name} | ${v} |` },
    { header: 'name,api_key,created', row: (name: string, v: string) => `${name},${v},2024-01-02` },
    { header: 'service\tclient_secret', row: (name: string, v: string) => `${name}\t${v}` },
  ];
  it('masks the secret of every row under a header any number of parts back, a row or more to a part, and none where the header names no secret', () => {
    fc.assert(
      fc.property(fc.constantFrom(...tables), fc.array(fc.tuple(fc.constantFrom('deploy', 'web', 'ops-bot', 'ci'), random), { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 2 }), (t, rows, perPart) => {
        const parts = [t.header];
        for (let r = 0; r < rows.length; r += perPart) parts.push(rows.slice(r, r + perPart).map(([n, v]) => t.row(n, v)).join('\n'));
        const c = new DetectionCache();
        c.kinds('secrets', c.join(parts));
        for (const [n, v] of rows) {
          const part = parts.find((p) => p.includes(v))!;
          const at = part.indexOf(v);
          expect(c.spans('secrets', part).some((sp) => sp.start <= at && at + v.length <= sp.end), `${n}: ${JSON.stringify(parts)}`).toBe(true);
        }
        // (Under a header of no secret's name the same cells are no secret.)
        const plain = [t.header.replace(/token|api_key|client_secret/, 'owner'), ...parts.slice(1)];
        const d = new DetectionCache();
        d.kinds('secrets', d.join(plain));
        for (const p of plain) expect(d.spans('secrets', p)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

describe('a private key cut in two', () => {
  // Keys of the kinds hosts are shown: PKCS#1 RSA, PKCS#8, SEC1 EC, each as PEM (a key of 2,048 bits is 1.7 KB).
  const keys = [
    generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }),
    generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
    generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'sec1', format: 'pem' }),
  ] as string[];
  it('masks every character of its body in both parts, wherever it is cut, its line breaks written as such or escaped in a string', () => {
    fc.assert(
      fc.property(fc.constantFrom(...keys), fc.double({ min: 0.05, max: 0.95, noNaN: true }), fc.boolean(), fc.constantFrom('', 'key:\n', '{"private_key": "'), (pem, where, escaped, before) => {
        const key = escaped ? pem.trimEnd().replace(/\n/g, '\\n') : pem;
        const text = `${before}${key}`;
        const cut = before.length + Math.floor(key.length * where);
        const parts = [text.slice(0, cut), text.slice(cut)];
        const c = new DetectionCache();
        c.kinds('secrets', c.join(parts));
        const spans = parts.map((p) => c.spans('secrets', p));
        // The body's characters: the lines of base64 between the markers (split at line breaks written as such or
        // escaped), wherever they stand in `text`.
        let checked = 0;
        for (let from = before.length; from < text.length; ) {
          const m = /\n|\\n/.exec(text.slice(from));
          const to = m === null ? text.length : from + m.index;
          const line = text.slice(from, to);
          const next = m === null ? text.length : to + m[0].length;
          const lineAt = from;
          from = next;
          if (!/^[A-Za-z0-9+/=]+$/.test(line)) continue;
          checked += line.length;
          for (let k = lineAt; k < lineAt + line.length; k++) {
            const n = k < cut ? 0 : 1;
            const at = n === 0 ? k : k - cut;
            expect(spans[n]!.some((sp) => sp.start <= at && at < sp.end), `part ${n}: ${JSON.stringify(text.slice(Math.max(0, k - 10), k + 10))}`).toBe(true);
          }
        }
        expect(checked).toBeGreaterThan(100);
      }),
      { numRuns: 150 },
    );
  });
});

describe('a joined text made only when read', () => {
  const part = fc.constantFrom('key AKIAIOSFOD', 'NN7EXAMPLE ok', 'mail jane@corp.example', 'card 4111 1111 1111 1111', 'prose', '', 'ghp_16C7e42F292c69', '12E7710c838347Ae178B4a');
  it('answers secrets() and pii() from the parts, with no string joined, as the joined string is answered', () => {
    fc.assert(
      fc.property(fc.array(part, { minLength: 2, maxLength: 6 }), (parts) => {
        const eager = new DetectionCache();
        const text = eager.join(parts);
        const lazy = new DetectionCache();
        const joined = lazy.joinLazily(parts);
        const joins = vi.spyOn(Array.prototype, 'join');
        try {
          for (const d of ['secrets', 'pii'] as const) expect(withDetection(lazy, () => detectKindsOfJoined(d, joined))).toEqual(eager.kinds(d, text));
          expect(joins).not.toHaveBeenCalled();
        } finally {
          joins.mockRestore();
        }
        // Read as a string, it is the joined text, and answered from its parts as well.
        expect(joined.text).toBe(text);
        for (const d of ['secrets', 'pii'] as const) expect(withDetection(lazy, () => detectKinds(d, joined.text))).toEqual(eager.kinds(d, text));
        expect(lazy.scans).toEqual(eager.scans);
      }),
      { numRuns: 200 },
    );
  });
});

describe('a credential split over any number of consecutive parts', () => {
  const values: Array<[Detector, string]> = [
    ['secrets', 'AKIAIOSFODNN7EXAMPLE'],
    ['secrets', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a'],
    ['secrets', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'],
    // A `$` inside a token: the run goes on through it.
    ['secrets', 'access_token$production$6g6a07elnaby2kiq$aa6eeb065b55ed065791e8c364363e7e'],
  ];
  /** Parts beside the value: prose that ends (or starts) with a blank, and at most one token that runs into it (no blank between). */
  const prose = fc.array(fc.constantFrom('see the log ', 'ok. ', 'the key: '), { maxLength: 2 });
  const touching = fc.constantFrom('', 'x', 'id=', '42');

  it('is read whole and every piece masked, whatever stands in the parts around it', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...values),
        fc.array(fc.nat(), { minLength: 1, maxLength: 6 }),
        fc.tuple(prose, touching).map(([p, t]) => [...p, t]),
        fc.tuple(touching, prose).map(([t, p]) => [t, ...p.map((x) => [...x].reverse().join(''))]),
        ([d, v], cuts, before, after) => {
          // The value cut at up to 6 places into as many parts (no part empty).
          const at = [...new Set(cuts.map((c) => 1 + (c % (v.length - 1))))].sort((a, b) => a - b);
          const pieces = at.map((c, i) => v.slice(i === 0 ? 0 : at[i - 1], c)).concat(v.slice(at[at.length - 1]));
          const parts = [...before.filter((p) => p !== ''), ...pieces, ...after.filter((p) => p !== '')];
          const c = new DetectionCache();
          const joined = c.join(parts);
          expect(c.kinds(d, joined), JSON.stringify(parts)).not.toEqual([]);
          // Every character of the value is inside a span of the part that holds it.
          const first = parts.indexOf(pieces[0]!, before.filter((p) => p !== '').length);
          pieces.forEach((piece, i) => {
            const spans = c.spans(d, parts[first + i]!);
            for (let k = 0; k < piece.length; k++) expect(spans.some((sp) => sp.start <= k && k < sp.end), `${JSON.stringify(parts)} piece ${i} char ${k}`).toBe(true);
          });
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('is read whole across empty parts between its pieces (an empty block, a picture: nothing shown between them)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...values), fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), fc.array(fc.nat({ max: 2 }), { minLength: 5, maxLength: 5 }), ([d, v], cuts, empties) => {
        const at = [...new Set(cuts.map((c) => 1 + (c % (v.length - 1))))].sort((a, b) => a - b);
        const pieces = at.map((c, i) => v.slice(i === 0 ? 0 : at[i - 1], c)).concat(v.slice(at[at.length - 1]));
        // Before each piece but the first, none, one or two empty parts.
        const parts: string[] = ['see '];
        pieces.forEach((piece, i) => {
          if (i > 0) for (let k = 0; k < empties[i % empties.length]!; k++) parts.push('');
          parts.push(piece);
        });
        parts.push(' ok');
        const c = new DetectionCache();
        const joined = c.join(parts);
        expect(c.kinds(d, joined), JSON.stringify(parts)).not.toEqual([]);
        for (const piece of pieces) {
          const spans = c.spans(d, piece);
          for (let k = 0; k < piece.length; k++) expect(spans.some((sp) => sp.start <= k && k < sp.end), `${JSON.stringify(parts)} ${piece} char ${k}`).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('masks a long value whole (an AWS session token, an ID token), wherever it is cut in two', () => {
    // An AWS session token runs to hundreds of characters, a JWT to a thousand or two: each piece is the value's.
    const session = `aws_session_token = FwoGZXIvYXdzE${'Q7uC+kGnHEl+quze5i9nRveLyMfPVMrmU43Y2XFoDFbe8nL3TgJwPwH0yaJjvkrQENUU0OPVpa+t3D'.repeat(5)}`;
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const claims = { iss: 'https://login.example.com', sub: 'user-1', groups: Array.from({ length: 40 }, (_, i) => `group-${i}-engineering`) };
    const idToken = `id_token: ${b64({ alg: 'RS256', typ: 'JWT', kid: 'k1' })}.${b64(claims)}.${'Zx9Lm2Pq8Rt5Vw3Yb7Nc-_'.repeat(16)}`;
    const lines: Array<[string, number]> = [[session, 20], [idToken, 10]];
    fc.assert(
      fc.property(fc.constantFrom(...lines).chain(([line, value]) => fc.tuple(fc.constant(line), fc.constant(value), fc.integer({ min: value + 1, max: line.length - 1 }))), ([line, value, cut]) => {
        const parts = ['here it is:', line.slice(0, cut), line.slice(cut), 'ok'];
        const c = new DetectionCache();
        c.join(parts);
        for (const [i, from] of [[1, value], [2, 0]] as const) {
          const p = parts[i]!;
          const spans = c.spans('secrets', p);
          for (let k = from; k < p.length; k++) expect(spans.some((sp) => sp.start <= k && k < sp.end), `cut ${cut}, part ${i}, char ${k}`).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("masks a PuTTY key's private lines cut at a line break, those after the cut read back from the `Private-MAC:` under them", () => {
    const lines = ['AAABAQLy0IZGUo0YPrsj6PXCe6jNHDn9Hn433g8b4XJ9pw/qBzBSP/7LlpW6g4nn', 'Dxw1KT+Txn8XMpz2c5nOfKbWWwgdTJuPFz2KPXex2oyo8UZjplpTPp8Ms4BkZxuL', 'pStJURiCw/g4W+RdHLtn='];
    const key = `PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\nAAAAB3NzaC1yc2EAAAABJQAAAQEAHG3Gb6BPmtDkmh8rAtcF\nPrivate-Lines: 3\n${lines.join('\n')}\nPrivate-MAC: 506a1e2caca5fbd5d1261cc5531bf02b4b255cb6`;
    for (const line of lines) {
      // Cut before the line, and after it (the line break on either side of the seam).
      for (const at of [key.indexOf(line), key.indexOf(line) - 1]) {
        const parts = [key.slice(0, at), key.slice(at)];
        const c = new DetectionCache();
        c.join(parts);
        for (const l of lines) {
          const p = parts.find((x) => x.includes(l))!;
          const from = p.indexOf(l);
          expect(c.spans('secrets', p).some((sp) => sp.start <= from && from + l.length <= sp.end), `${JSON.stringify(parts)}: ${l}`).toBe(true);
        }
      }
    }
    // And the tail of such a file alone: `tail -n 3` of it.
    expect(detectKinds('secrets', `$ tail -n 3 deploy.ppk\n${lines.slice(1).join('\n')}\nPrivate-MAC: 506a1e2caca5fbd5d1261cc5531bf02b4b255cb6`)).toContain('putty-private-key-end');
  });

  it('masks every line of a key in armour read in chunks of any size (a file read a few hundred characters to a block)', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const keys = [rsa.export({ type: 'pkcs1', format: 'pem' }), rsa.export({ type: 'pkcs8', format: 'pem' }), ec.export({ type: 'sec1', format: 'pem' })].map(String);
    fc.assert(
      fc.property(fc.constantFrom(...keys), fc.integer({ min: 8, max: 900 }), fc.constantFrom('', 'Here is the file:\n', '$ cat deploy.pem\n'), (key, size, before) => {
        const text = `${before}${key}\nok`;
        const parts: string[] = [];
        for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
        const c = new DetectionCache();
        c.join(parts);
        // Every character of the key's lines (between its armour's lines) inside a span of the block that holds it.
        const from = text.indexOf('\n', text.indexOf('-----BEGIN')) + 1;
        const to = text.indexOf('-----END');
        parts.forEach((p, n) => {
          const spans = c.spans('secrets', p);
          for (let i = Math.max(0, from - n * size); i < Math.min(p.length, to - n * size); i++) {
            if (p[i] === '\n') continue;
            expect(spans.some((sp) => sp.start <= i && i < sp.end), `chunks of ${size}, block ${n}, character ${i}`).toBe(true);
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it('reads a long run of parts in bounded work: each character a few times', () => {
    // 20,000 one-character parts that all run together: the runs are cut and read again, linear in the parts.
    const parts = Array.from({ length: 20_000 }, (_, i) => 'abcdefghij'[i % 10]!);
    const c = new DetectionCache();
    c.join(parts);
    expect(c.stopped).toBe(false);
    // Two detectors, each run read in at most four ways, each token character in at most two runs, and the pairs.
    expect(c.scannedInSeams).toBeLessThan(2 * (4 * 2 + 2) * (parts.length + 64 * 2));
  });
});

describe('a credential a rule knows by a line in another part', () => {
  it('is masked in a part between others, wherever the parts before it and after it are cut', () => {
    // (An expect script: `expect "*assword:"` before the password `send` types. The read that crosses the seams before
    // the value's part holds it whole inside a piece between others; so cut, `e` | `xpect "*assword:` | `"` then the
    // `send` line | the rest, it went out.)
    const value = 'Rt4#kWq9Zm2Lx7Vp';
    const script = `#!/usr/bin/expect -f\nset timeout 20\nspawn ssh backup@10.20.0.14\nexpect "*assword:"\nsend "${value}\\r"\nexpect "$ "\nsend "tar czf /tmp/etc.tgz /etc\\r"\n`;
    const v0 = script.indexOf(value);
    const outside = fc.integer({ min: 1, max: script.length - 1 }).filter((c) => c <= v0 || c >= v0 + value.length);
    fc.assert(
      fc.property(fc.uniqueArray(outside, { minLength: 1, maxLength: 5 }), (cuts) => {
        const at = [0, ...cuts.sort((a, b) => a - b), script.length];
        const parts = at.slice(1).map((e, i) => script.slice(at[i], e));
        const c = new DetectionCache();
        c.join(parts);
        const k = parts.findIndex((p) => p.includes(value));
        const i = parts[k]!.indexOf(value);
        expect(c.spans('secrets', parts[k]!).some((sp) => sp.start <= i && i + value.length <= sp.end), JSON.stringify(parts)).toBe(true);
      }),
      { numRuns: 300, examples: [[[1, 65, 81, 154]]] },
    );
  });
});

describe('a result cut into many short parts around what names a value', () => {
  it('is read in bounded work: what stands before each short part is read with it a bounded number of times', () => {
    // Every seam a value's piece after a name, a command's word, a pair's name cut: each read with up to 176 characters
    // of the parts before it, 16 parts back at most.
    const shapes: Array<(i: number) => string> = [
      (i) => ['password: ', 'Xk9', 'mQ2', ' '][i % 4]!,
      (i) => ['key ', 'echo ', '"x', "' | sudo -S "][i % 4]!,
      (i) => ['"N', 'ame": "/a/b/api_key", "Value": "x', '"}, {'][i % 3]!,
      (i) => ['P', 'A', 'S', 'S', 'W', 'O', 'R', 'D', ': ', 'k', '7'][i % 11]!,
      // Short parts between what names a value and the value, and a line that names one read on to its end.
      (i) => ['docker login', ' -u ', 'deploy -p Hq7n', ' ', 'x'.repeat(600)][i % 5]!,
      (i) => ['gh sec', 're', `t set X --body "${'k'.repeat(300)}\n`, 'define( \'A', `UTH_KEY', '${'z'.repeat(500)}`][i % 5]!,
    ];
    for (const shape of shapes) {
      const parts = Array.from({ length: 20_000 }, (_, i) => shape(i));
      const chars = parts.reduce((n, p) => n + p.length, 0);
      const c = new DetectionCache();
      c.join(parts);
      expect(c.stopped).toBe(false);
      // (Measured at 4 to 13 times; linear in the parts whatever their shape.)
      expect(c.scannedInSeams, parts.slice(0, 4).join('|')).toBeLessThan(24 * chars + 600 * parts.length);
    }
  });
});

describe('DetectionCache lookups', () => {
  it('answer what a scan of the string answers, for strings repeated, equal but built apart, and past the ones compared by identity', () => {
    const texts = ['mail jane.doe@example.com', 'key AKIAIOSFODNN7EXAMPLE', 'card 4111 1111 1111 1111', 'nothing', 'a', 'b', '+44 20 7946 0958', 'ghp_0123456789abcdefghijABCDEFGHIJ012345'];
    const text = fc.oneof(fc.constantFrom(...texts), fc.string({ maxLength: 6 }));
    const scan: Record<Detector, typeof scanPii> = { pii: scanPii, secrets: scanSecrets };
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom<Detector>('pii', 'secrets'), text, fc.boolean()), { maxLength: 40 }), (lookups) => {
        const c = new DetectionCache();
        const seen: Record<Detector, Set<string>> = { pii: new Set(), secrets: new Set() };
        for (const [d, s, apart] of lookups) {
          // The same content as a string of its own (not the same pointer).
          const t = apart ? [...s].join('') : s;
          expect(c.spans(d, t)).toEqual(scan[d](s));
          if (s.length > 0) seen[d].add(s);
        }
        // Each distinct string scanned once per detector.
        expect(c.scans).toEqual({ pii: seen.pii.size, secrets: seen.secrets.size });
      }),
      { numRuns: 500 },
    );
  });
});

describe('the deadline outside the rules', () => {
  it('reading the seams of many parts stops at the deadline, never throws, and what was not scanned is withheld whole', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 400 }), fc.integer({ min: 0, max: 20 }), (count, asks) => {
        // Parts whose seams all hold a token: each seam is read unless the deadline stops it.
        const parts = Array.from({ length: count }, (_, i) => `part ${i} key${i}`);
        let left = asks;
        const c = new DetectionCache(() => left-- <= 0);
        expect(() => c.join(parts)).not.toThrow();
        if (c.stopped) for (const p of parts) expect(c.spans('secrets', p)).toEqual([{ kind: UNCHECKED_KIND, start: 0, end: p.length }]);
        // A deadline never reached reads every seam and stops nothing.
        const open = new DetectionCache(() => false);
        open.join(parts);
        expect(open.stopped).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it('a text that is one long number token is read under the deadline, and answers as before when the deadline is not reached', () => {
    const long = '4 5 '.repeat(50_000) + '4111 1111 1111 1111';
    let asks = 0;
    expect(() => scanPii(long, () => ++asks > 2)).toThrow(DetectionStopped);
    // Stopped inside the token: far fewer asks than one per 4,096 places of the whole text.
    expect(asks).toBe(3);
    expect(scanPii(long, () => false)).toEqual(scanPii(long));
    expect(scanPii(long).map((s) => s.kind)).toContain('credit-card');
    // A short card after it is read the same.
    expect(scanPii('card 4111 1111 1111 1111')).toEqual([{ kind: 'credit-card', start: 5, end: 24 }]);
  });

  it('a text crowded with finds answers each, and the scan after it answers its own', () => {
    // More finds than the scan keeps room for between texts (65,536): the room grows, and is given back after.
    const crowded = '4111 1111 1111 1111 a@b.example '.repeat(40_000);
    const found = scanPii(crowded);
    expect(found).toHaveLength(80_000);
    expect(found[79_999]).toEqual({ kind: 'email', start: 32 * 39_999 + 20, end: 32 * 39_999 + 31 });
    expect(scanPii('x 4111 1111 1111 1111')).toEqual([{ kind: 'credit-card', start: 2, end: 21 }]);
    expect(scanPii('nothing here')).toEqual([]);
  });
});

describe('the deadline inside the rules', () => {
  it('a rule over many short strings stops at the deadline between their scans, and what was not scanned is withheld whole (after the rules too)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6_000 }), fc.integer({ min: 0, max: 30 }), fc.constantFrom<Detector>('pii', 'secrets'), (count, asks, d) => {
        // Short cells with nothing to find and no seam worth reading (blank on one side): no scan of one lasts long
        // enough to ask the deadline itself.
        const parts = Array.from({ length: count }, (_, i) => `cell ${i} `);
        let left = asks;
        let asked = 0;
        // The deadline counts only in the rules (the join reads the seams under it too).
        let inRules = false;
        const c = new DetectionCache(() => {
          if (!inRules) return false;
          asked++;
          return left-- <= 0;
        });
        const text = c.join(parts);
        inRules = true;
        let stopped = false;
        try {
          withDetection(c, () => c.kinds(d, text));
        } catch (err) {
          expect(err).toBeInstanceOf(DetectionStopped);
          stopped = true;
        }
        expect(c.stopped).toBe(stopped);
        // Cells enough for the deadline to be asked past its last allowed time: the rule must stop.
        if (count > (asks + 2) * 64) expect(stopped).toBe(true);
        // The deadline is asked as the scans go: once its time is spent, at most a few thousand characters are read
        // before the rule stops (about 64 of these cells).
        if (stopped) {
          expect(asked).toBe(asks + 1);
          expect(c.scans[d]).toBeLessThanOrEqual(Math.ceil((asks + 1) * 4096 / (64 + 7)) + 1);
          const last = parts[parts.length - 1]!;
          expect(c.spans(d, last)).toEqual([{ kind: UNCHECKED_KIND, start: 0, end: last.length }]);
        } else expect(c.scans[d]).toBe(count);
        // After the rules (masking), the same deadline answers the strings not scanned as unchecked, never throwing.
        let outsideLeft = asks;
        const outside = new DetectionCache(() => outsideLeft-- <= 0);
        const answers = parts.map((p) => outside.spans(d, p));
        expect(outside.stopped).toBe(stopped);
        if (stopped) expect(answers[answers.length - 1]).toEqual([{ kind: UNCHECKED_KIND, start: 0, end: parts[parts.length - 1]!.length }]);
      }),
      { numRuns: 100 },
    );
  });
});
