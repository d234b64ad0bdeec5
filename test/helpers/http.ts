/**
 * Requests to a service a test started (test/helpers/process.ts), and
 * waiting for a condition: shared by the tests that drive the real process.
 */
import { request, type IncomingHttpHeaders } from 'node:http';

/** What `call` answers: the status, the headers, the content type and the body (parsed when it is JSON). */
export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The `content-type` header, `''` when there is none. */
  type: string;
  /** The body parsed when its content type says JSON; else the text (`''` when empty). */
  json: any;
}

/**
 * One request on a connection of its own (no keep-alive), so that with
 * worker processes the primary hands each request to the next worker.
 * A JSON `body` is sent with `content-type: application/json`; `headers`
 * are added (and win).
 */
export function call(s: { base: string }, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const sent = text === undefined ? headers : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers };
    const req = request(s.base + path, { method, agent: false, headers: sent }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (data += d));
      res.on('error', reject);
      res.on('end', () => {
        const type = res.headers['content-type'] ?? '';
        try {
          resolve({ status: res.statusCode!, headers: res.headers, type, json: data !== '' && type.includes('json') ? JSON.parse(data) : data });
        } catch (e) {
          reject(new Error(`${method} ${path}: ${String(e)}: ${data.slice(0, 200)}`));
        }
      });
    });
    req.on('error', reject);
    req.end(text);
  });
}

/**
 * Resolves once `check` holds, polling every 50 ms; rejects after `ms`.
 * Wait for the condition a test needs (a log line, a metric a worker pushes
 * each second), never for a fixed time.
 */
export async function waitFor(check: () => boolean | Promise<boolean>, ms = 20_000, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
