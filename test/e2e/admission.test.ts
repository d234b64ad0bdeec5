/**
 * Admission by bytes in flight (TRUSTGATE_MAX_INFLIGHT_BYTES), against the
 * real process started with a small V8 heap: requests past the budget get
 * 503 TG_ERR_OVERLOADED with Retry-After instead of taking the process down,
 * and clients that never read their answer are closed and their bytes freed.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alive, serviceStarter, type Running } from '../helpers/process.js';

const BUDGET = 4 * 1024 * 1024;
const JSON_HEADERS = { 'content-type': 'application/json' };

/** An evaluate request of about `bytes` bytes: text blocks of 60,000 characters. */
function bigRequest(bytes: number): string {
  const blocks = Math.max(1, Math.round(bytes / 60_020));
  const content = Array.from({ length: blocks }, (_, i) => ({ type: 'text', text: String.fromCharCode(97 + (i % 26)).repeat(60_000) }));
  return JSON.stringify({ result: { content } });
}

interface Admission {
  inflightBytes: number;
  maxInflightBytes: number;
  waiting: number;
  refused: number;
}

async function admission(base: string): Promise<Admission> {
  const r = await fetch(`${base}/readyz`);
  return ((await r.json()) as { admission: Admission }).admission;
}

/** Poll until `check` holds; the test's own timeout bounds the wait. */
async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 50));
}

/** The service with a V8 heap of `heapMb` (node --max-old-space-size), one process; killed after the file. */
function smallHeapStarter(heapMb: number): (env: Record<string, string>) => Promise<Running> {
  return serviceStarter(['node', `--max-old-space-size=${heapMb}`, 'dist/server.js']);
}

/** A raw HTTP/1.1 client that sends the head and part of a body, then what is left on demand. */
function rawRequest(port: number, text: string, sendFirst: number): { socket: Socket; rest: () => void; answer: () => string; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  let answer = '';
  socket.on('data', (d) => (answer += String(d)));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(`POST /v1/evaluate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n`);
  socket.write(text.slice(0, sendFirst));
  return { socket, rest: () => socket.write(text.slice(sendFirst)), answer: () => answer, closed };
}

describe('admission by bytes in flight, process with a 96 MB heap', () => {
  const start = smallHeapStarter(96);
  let svc: Running;
  beforeAll(async () => {
    svc = await start({
      LOG_LEVEL: 'warn',
      TRUSTGATE_WORKERS: '1',
      TRUSTGATE_MAX_INFLIGHT_BYTES: String(BUDGET),
      TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0',
      TRUSTGATE_REQUEST_TIMEOUT_MS: '60000',
    });
  }, 90_000);
  afterAll(async () => {
    if (svc && alive(svc.pid)) await svc.stop();
  });

  it('bodies still arriving hold the budget: requests past it get 503 TG_ERR_OVERLOADED with Retry-After, the held ones are then decided', async () => {
    const one = bigRequest(1_000_000);
    expect(Buffer.byteLength(one) * 4).toBeLessThanOrEqual(BUDGET);
    expect(Buffer.byteLength(one) * 5).toBeGreaterThan(BUDGET);
    // Four requests announce their length and send only part of their body: charged before it is read.
    const held = Array.from({ length: 4 }, () => rawRequest(svc.port, one, 1000));
    await until(async () => (await admission(svc.base)).inflightBytes >= 4 * Buffer.byteLength(one));
    const before = await admission(svc.base);
    expect(before.maxInflightBytes).toBe(BUDGET);

    const refused = await Promise.all(
      Array.from({ length: 20 }, () => fetch(`${svc.base}/v1/evaluate`, { method: 'POST', headers: JSON_HEADERS, body: one })),
    );
    for (const r of refused) {
      expect(r.status).toBe(503);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(r.headers.get('retry-after')).toBe('1');
      const p = (await r.json()) as { code: string; status: number; type: string };
      expect(p).toMatchObject({ code: 'TG_ERR_OVERLOADED', status: 503, type: 'urn:trustgate:problem:TG_ERR_OVERLOADED' });
    }
    expect((await admission(svc.base)).refused).toBeGreaterThanOrEqual(before.refused + 20);
    const metrics = await (await fetch(`${svc.base}/metrics`)).text();
    expect(Number(/^trustgate_admissions_refused_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(20);
    expect(Number(/^trustgate_inflight_bytes (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(4 * Buffer.byteLength(one));

    // The held requests finish arriving and are decided; their bytes are released.
    for (const h of held) h.rest();
    await until(() => held.every((h) => /\r\n\r\n[\s\S]*"outcome"/.test(h.answer())));
    for (const h of held) {
      expect(h.answer()).toMatch(/^HTTP\/1\.1 200 /);
      h.socket.destroy();
    }
    await until(async () => (await admission(svc.base)).inflightBytes === 0);
  }, 120_000);

  it('many concurrent big requests: each is decided or refused with 503, the process stays up and releases every byte', async () => {
    const body = bigRequest(2_000_000);
    const statuses = await Promise.all(
      Array.from({ length: 48 }, async () => {
        const r = await fetch(`${svc.base}/v1/evaluate`, { method: 'POST', headers: JSON_HEADERS, body });
        const p = (await r.json()) as { code?: string; outcome?: string };
        if (r.status === 503) expect(p.code).toBe('TG_ERR_OVERLOADED');
        else expect(p.outcome).toBeDefined();
        return r.status;
      }),
    );
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses).toContain(200);
    expect(alive(svc.pid)).toBe(true);
    await until(async () => (await admission(svc.base)).inflightBytes === 0);
    const next = await fetch(`${svc.base}/v1/evaluate`, { method: 'POST', headers: JSON_HEADERS, body: '{"result":{"content":[]}}' });
    expect(next.status).toBe(200);
  }, 120_000);
});

describe('clients that never read their answer', () => {
  const start = smallHeapStarter(128);
  let svc: Running;
  beforeAll(async () => {
    svc = await start({
      LOG_LEVEL: 'warn',
      TRUSTGATE_WORKERS: '1',
      TRUSTGATE_MAX_INFLIGHT_BYTES: String(64 * 1024 * 1024),
      TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0',
      TRUSTGATE_REQUEST_TIMEOUT_MS: '8000',
    });
  }, 90_000);
  afterAll(async () => {
    if (svc && alive(svc.pid)) await svc.stop();
  });

  it('hold their bytes in flight until the request timeout closes them, then release them', async () => {
    // An answer of about 7 MB (the result is forwarded): more than the kernel takes for a client that does not read.
    const body = bigRequest(7_000_000);
    const clients = Array.from({ length: 3 }, () => {
      const c = rawRequest(svc.port, body, body.length);
      c.socket.pause();
      return c;
    });
    // Their answers are written but not taken: the requests' and the answers' bytes stay in flight.
    await until(async () => (await admission(svc.base)).inflightBytes > 3 * body.length);
    // The deadline closes the connections, and their bytes are freed.
    await until(async () => (await admission(svc.base)).inflightBytes === 0);
    expect(alive(svc.pid)).toBe(true);
    // What the clients can still read ends short of the answer: the service cut them off.
    for (const c of clients) c.socket.resume();
    await Promise.all(clients.map((c) => c.closed));
    for (const c of clients) expect(Buffer.byteLength(c.answer())).toBeLessThan(body.length);
  }, 120_000);
});
