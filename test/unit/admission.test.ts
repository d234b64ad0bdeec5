/**
 * The budget of bytes in flight (src/http/admission.ts): its
 * bookkeeping on generated sequences, and a chunked body refused through the
 * real app on a real socket.
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InflightBudget } from '../../src/http/admission.js';
import { testApp, type TestApp } from '../helpers/app.js';

describe('InflightBudget', () => {
  it('admits what fits, queues the rest first come first served, and grants on release', () => {
    const b = new InflightBudget(100, 60_000);
    expect(b.tryTake(60)).toBe(true);
    const granted: string[] = [];
    b.take(50, 0, (ok) => granted.push(`a:${ok}`));
    // A small request does not overtake the one waiting before it.
    expect(b.tryTake(10)).toBe(false);
    b.take(10, 0, (ok) => granted.push(`b:${ok}`));
    expect(granted).toEqual([]);
    expect(b.pressure()).toMatchObject({ inflightBytes: 60, waiting: 2 });
    b.release(60);
    expect(granted).toEqual(['a:true', 'b:true']);
    expect(b.inflight).toBe(60);
  });

  it('always admits a request that finds nothing else in flight, however large', () => {
    const b = new InflightBudget(100, 60_000);
    expect(b.tryTake(1_000)).toBe(true);
    expect(b.tryTake(1)).toBe(false);
    // A chunked body's next chunk: it holds everything in flight itself.
    expect(b.tryTake(500, 1_000)).toBe(true);
  });

  it('refuses a waiting request after the wait and counts it', async () => {
    const b = new InflightBudget(100, 20);
    b.tryTake(100);
    const ok = await new Promise<boolean>((resolve) => b.take(10, 0, resolve));
    expect(ok).toBe(false);
    expect(b.pressure()).toMatchObject({ inflightBytes: 100, waiting: 0, refused: 1 });
  });

  it('on any sequence of charges and releases: never over the limit unless one holder alone, and back to 0 once all is released', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000 }),
        fc.array(fc.record({ n: fc.integer({ min: 1, max: 2_000 }), release: fc.boolean() }), { maxLength: 60 }),
        (limit, steps) => {
          const b = new InflightBudget(limit, 60_000);
          const held = new Map<number, number>();
          let next = 0;
          let waiting = 0;
          const releaseOldest = (): void => {
            const [k, n] = held.entries().next().value as [number, number];
            held.delete(k);
            b.release(n);
          };
          for (const s of steps) {
            if (s.release && held.size > 0) {
              releaseOldest();
            } else {
              const k = next++;
              waiting++;
              b.take(s.n, 0, (ok) => {
                expect(ok).toBe(true);
                waiting--;
                held.set(k, s.n);
              });
            }
            const sum = [...held.values()].reduce((x, y) => x + y, 0);
            expect(b.inflight).toBe(sum);
            expect(b.pressure().waiting).toBe(waiting);
            if (held.size > 1) expect(sum).toBeLessThanOrEqual(limit);
          }
          // Releasing what is held lets every waiter in, in turn.
          while (held.size > 0) releaseOldest();
          expect(waiting).toBe(0);
          expect(b.inflight).toBe(0);
        },
      ),
    );
  });
});

describe('a chunked body is charged as it arrives', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await testApp({ LOG_LEVEL: 'warn', TRUSTGATE_MAX_INFLIGHT_BYTES: '65536', TRUSTGATE_MAX_EVENT_LOOP_DELAY_MS: '0' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(() => t.close());

  function chunked(body: string): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/v1/evaluate', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += String(d)));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      });
      req.on('error', reject);
      for (let i = 0; i < body.length; i += 8192) req.write(body.slice(i, i + 8192));
      req.end();
    });
  }

  const body = JSON.stringify({ result: { content: [{ type: 'text', text: 'x'.repeat(200_000) }] } });

  it('alone, a chunked body larger than the budget is decided', async () => {
    const r = await chunked(body);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).outcome).toBeDefined();
  });

  it('a request that goes away before its body has arrived releases what it was charged', async () => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => {});
    s.write(`POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000\r\n\r\n{"result":`);
    const budget = async () => (JSON.parse((await t.app.inject({ method: 'GET', url: '/readyz' })).body) as { admission: { inflightBytes: number } }).admission;
    while ((await budget()).inflightBytes < 50_000) await new Promise((r) => setTimeout(r, 20));
    s.destroy();
    while ((await budget()).inflightBytes > 0) await new Promise((r) => setTimeout(r, 20));
    expect((await budget()).inflightBytes).toBe(0);
  });

  it('past the budget held by another request, it is refused with 503 TG_ERR_OVERLOADED, and the service goes on', async () => {
    const held = JSON.stringify({ result: { content: [{ type: 'text', text: 'y'.repeat(60_000) }] } });
    const s = connect(port, '127.0.0.1');
    s.on('error', () => {});
    let answer = '';
    s.on('data', (d) => (answer += String(d)));
    s.write(`POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${held.length}\r\n\r\n${held.slice(0, 100)}`);
    const budget = async () => (JSON.parse((await t.app.inject({ method: 'GET', url: '/readyz' })).body) as { admission: { inflightBytes: number } }).admission;
    while ((await budget()).inflightBytes < held.length) await new Promise((r) => setTimeout(r, 20));
    const r = await chunked(body);
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('1');
    expect(JSON.parse(r.text)).toMatchObject({ code: 'TG_ERR_OVERLOADED', status: 503 });
    s.write(held.slice(100));
    while (!/"outcome"/.test(answer)) await new Promise((r) => setTimeout(r, 20));
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    s.destroy();
    while ((await budget()).inflightBytes > 0) await new Promise((r) => setTimeout(r, 20));
    expect((await chunked(body)).status).toBe(200);
  });
});
