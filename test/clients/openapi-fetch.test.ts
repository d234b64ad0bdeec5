/**
 * The generated types with openapi-fetch against the real service
 * (`npm start`): every call below is type-checked by `npm run typecheck`.
 */
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components, paths } from '../../clients/trustgate-api.js';
import { deriveDigest } from '../../src/evidence/digest.js';
import { isRunning, startService, type Running } from '../helpers/process.js';
import { believingServersFile } from '../helpers/app.js';

type Problem = components['schemas']['Problem'];
type CallToolResult = components['schemas']['CallToolResult'];

const K = 'io.modelcontextprotocol/trust-annotations';
const TOKEN = 'openapi-fetch-test-token';

let service: Running;
let client: ReturnType<typeof createClient<paths>>;

beforeAll(async () => {
  const s = await startService({ TRUSTGATE_TOKEN: TOKEN, TRUSTGATE_SERVERS: believingServersFile() });
  if (!isRunning(s)) throw new Error(`service did not start (exit ${s.code}):\n${s.stderr}\n${s.stdout}`);
  service = s;
  client = createClient<paths>({ baseUrl: s.base, headers: { Authorization: `Bearer ${TOKEN}` } });
});

afterAll(async () => {
  if (service) expect(await service.stop('SIGTERM')).toBe(0);
});

describe('POST /v1/evaluate', () => {
  it('allow: the result comes back unchanged', async () => {
    const result: CallToolResult = { content: [{ type: 'text', text: 'It is 12:00 UTC.' }] };
    const { data, error, response } = await client.POST('/v1/evaluate', {
      body: { result, tool: { name: 'get_time', annotations: { openWorldHint: false } }, server: { name: 'clock' }, context: { destination: 'external-model' } },
    });
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(data?.outcome).toBe('allow');
    expect(data?.modified).toBe(false);
    expect(data?.requiresConsent).toBe(false);
    expect(data?.result).toEqual(result);
    expect(data?.policyRevision).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The forwarded result is MCP's own CallToolResult type: its content is indexed without a cast (tsc --strict, test/unit/typecheck.test.ts).
    const first = data?.result?.content[0];
    expect(first?.type === 'text' ? first.text : undefined).toBe('It is 12:00 UTC.');
  });

  it('warn: sensitive content bound for an external model needs consent', async () => {
    const result: CallToolResult = { _meta: { [K]: { sensitive: true } }, content: [{ type: 'text', text: 'Jane Doe, DE89 3704' }] };
    const { data } = await client.POST('/v1/evaluate', {
      body: { result, tool: { name: 'lookup_customer', annotations: { openWorldHint: false } }, server: { name: 'crm' }, context: { destination: 'external-model' } },
    });
    expect(data?.outcome).toBe('warn');
    expect(data?.requiresConsent).toBe(true);
    expect(data?.labels).toEqual({ sensitive: true, untrusted: null });
    const consent = data?.findings.filter((f) => f.effect === 'consent') ?? [];
    expect(consent.map((f) => `${f.policy}/${f.rule} ${f.mode}`)).toEqual(['sensitive/consent-sensitive-egress enforce']);
    expect(data?.result).toEqual(result);
  });

  it('deny: an evidenceRef whose record does not re-derive withholds the result', async () => {
    const minted = { class: 'public', labels: ['weather'] };
    const supplied = { class: 'confidential', labels: ['weather'] };
    const expected = deriveDigest(minted, 'jcs/rfc8785', 'sha256').digest;
    const derived = deriveDigest(supplied, 'jcs/rfc8785', 'sha256').digest;
    const result: CallToolResult = {
      _meta: {
        [K]: { evidenceRef: { type: 'data-class.v1', digest: expected, canonicalization: 'jcs/rfc8785', ref: 'audit://weather/1' } },
      },
      content: [{ type: 'text', text: 'Sunny, 21 °C' }],
    };
    const { data } = await client.POST('/v1/evaluate', {
      body: { result, evidence: [{ digest: expected, ref: 'audit://weather/1', record: supplied }] },
    });
    expect(data?.outcome).toBe('deny');
    expect(data?.result).toBeUndefined();
    expect(data?.evidence).toEqual([
      expect.objectContaining({ pointer: `/_meta/${K.replace('/', '~1')}/evidenceRef`, status: 'mismatch', expected, derived }),
    ]);
    expect(data?.findings.filter((f) => f.effect === 'deny').map((f) => `${f.policy}/${f.rule}`)).toEqual([
      'evidence/deny-evidence-mismatch',
    ]);
  });

  it('400: an unknown protocol revision is a typed problem', async () => {
    const { data, error, response } = await client.POST('/v1/evaluate', {
      body: { result: { content: [] }, protocolVersion: '1999-01-01' },
    });
    expect(data).toBeUndefined();
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const problem: Problem | undefined = error;
    expect(problem?.code).toBe('TG_ERR_PROTOCOL_VERSION_UNKNOWN');
    expect(problem?.status).toBe(400);
    expect(problem?.type).toBe('urn:trustgate:problem:TG_ERR_PROTOCOL_VERSION_UNKNOWN');
  });

  it('400: a body of the wrong shape is rejected by the types and by the service', async () => {
    const { error, response } = await client.POST('/v1/evaluate', {
      // @ts-expect-error `context` is an object, not a string
      body: { result: { content: [] }, context: 'external-model' },
    });
    expect(response.status).toBe(400);
    expect(error?.code).toBe('TG_ERR_BODY_SCHEMA');
    expect(error?.errors?.length).toBeGreaterThan(0);
  });

  it('401: without the bearer token', async () => {
    const anonymous = createClient<paths>({ baseUrl: service.base });
    const { error, response } = await anonymous.POST('/v1/evaluate', { body: { result: { content: [] } } });
    expect(response.status).toBe(401);
    expect(error?.code).toBe('TG_ERR_AUTH_TOKEN');
  });
});

describe('the other operations', () => {
  it('POST /v1/validate', async () => {
    const { data } = await client.POST('/v1/validate', {
      body: { result: { content: [{ type: 'text', text: 'x', annotations: { priority: 2 } }] }, protocolVersion: '2025-06-18' },
    });
    expect(data?.valid).toBe(false);
    expect(data?.protocolVersion).toBe('2025-06-18');
    expect(data?.validation.map((v) => `${v.rule} ${v.severity} ${v.pointer}`)).toEqual([
      'mcp.annotations.priority error /content/0/annotations/priority',
    ]);
  });

  it('POST /v1/digest mints the digest deriveDigest computes', async () => {
    const record = { class: 'personal', regulatory: ['GDPR'], n: 1.5 };
    for (const canonicalization of ['jcs/rfc8785', 'cbor/rfc8949'] as const) {
      const { data } = await client.POST('/v1/digest', { body: { record, canonicalization, algorithm: 'sha384' } });
      const local = deriveDigest(record, canonicalization, 'sha384');
      expect(data?.digest).toBe(local.digest);
      expect(data?.canonicalization).toBe(canonicalization);
      const canonical =
        canonicalization === 'jcs/rfc8785' ? Buffer.from(local.bytes).toString('utf8') : Buffer.from(local.bytes).toString('base64');
      expect(data?.canonical).toBe(canonical);
    }
  });

  it('GET /v1/policies lists the shipped policies', async () => {
    const { data } = await client.GET('/v1/policies');
    expect(data?.policyRevision).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(data?.policies.map((p) => p.id).sort()).toEqual(['audience', 'evidence', 'flows', 'labels', 'pii', 'secrets', 'sensitive', 'session', 'untrusted', 'validation']);
    const evidence = data?.policies.find((p) => p.id === 'evidence');
    expect(evidence?.rules).toEqual(['deny-evidence-mismatch', 'flag-dataclass-unchecked']);
    expect(evidence?.ruleDetails.map((r) => `${r.id} ${r.scope} ${r.mode ?? '-'} ${r.effect}`)).toEqual([
      'deny-evidence-mismatch result - deny',
      'flag-dataclass-unchecked result warn flag',
    ]);
    const session = data?.policies.find((p) => p.id === 'session');
    expect(session?.ruleDetails.map((r) => `${r.id} ${r.scope} ${r.effect}`)).toEqual([
      'deny-changed-definition call deny',
      'deny-unpinned-definition call deny',
      'deny-unlisted-tool call deny',
      'deny-sampling-context result deny',
    ]);
  });

  it('GET /healthz and /readyz need no token', async () => {
    const anonymous = createClient<paths>({ baseUrl: service.base });
    expect((await anonymous.GET('/healthz')).data?.status).toBe('ok');
    const ready = await anonymous.GET('/readyz');
    expect(ready.data?.status).toBe('ready');
    expect(ready.data?.policyRevision).toMatch(/^sha256:/);
  });
});

describe('sessions and pre-call decisions', () => {
  it('POST /v1/evaluate-call: typed request and answer', async () => {
    const { data, error } = await client.POST('/v1/evaluate-call', {
      body: {
        call: { name: 'send_email', arguments: { to: 'x@example.com' } },
        tool: { name: 'send_email', description: 'Send an email', annotations: { openWorldHint: true } },
        server: { name: 'mail-openapi-fetch' },
        session: { id: 'openapi-fetch-1' },
      },
    });
    expect(error).toBeUndefined();
    expect(data?.outcome).toBe('allow');
    expect(data?.tool.hints).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    expect(data?.tool.pin).toBe('first-seen');
    expect(data?.session).toMatchObject({ id: 'openapi-fetch-1', calls: 1, results: 0, tools: ['send_email'] });
  });

  it('GET and DELETE /v1/sessions/{id}, GET and PUT /v1/pins: typed problems and answers', async () => {
    const missing = await client.GET('/v1/sessions/{id}', { params: { path: { id: 'never-used' } } });
    expect(missing.response.status).toBe(404);
    expect((missing.error as Problem | undefined)?.code).toBe('TG_ERR_SESSION_NOT_FOUND');
    const gone = await client.DELETE('/v1/sessions/{id}', { params: { path: { id: 'never-used' } } });
    expect(gone.response.status).toBe(404);
    const noPin = await client.GET('/v1/pins', { params: { query: { server: 'nowhere', tool: 'nothing' } } });
    expect((noPin.error as Problem | undefined)?.code).toBe('TG_ERR_PIN_NOT_FOUND');
    const digest = `sha256:${'b'.repeat(64)}`;
    const put = await client.PUT('/v1/pins', { body: { server: 'ops-openapi-fetch', tool: 'deploy', digest } });
    expect(put.data).toEqual({ server: 'ops-openapi-fetch', tool: 'deploy', digest, previous: null });
  });
});
