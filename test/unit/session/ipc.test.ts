/**
 * The worker's side of the primary-held memory store, over a real IPC
 * channel: operations reach the one store; a primary that does not answer
 * in time fails the operation with SessionStoreUnavailable instead of
 * holding the request, and healthy() turns true again by itself once it
 * answers; a primary that is gone fails what was waiting at once.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { IpcSessionStore } from '../../../src/session/ipc.js';
import { SessionStoreUnavailable } from '../../../src/session/store.js';

const PRIMARY = fileURLToPath(new URL('../../fixtures/session/primary.ts', import.meta.url));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

async function connect(timeoutMs = 300): Promise<{ child: ChildProcess; store: IpcSessionStore; errors: string[] }> {
  const child = fork(PRIMARY, { execArgv: ['--import', 'tsx'], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  await new Promise<void>((resolve) => child.once('message', () => resolve()));
  const errors: string[] = [];
  const store = new IpcSessionStore({
    send: (id, op) => child.send({ kind: 'session', id, op }),
    connected: () => child.connected,
    timeoutMs,
    onError: (op) => errors.push(op),
  });
  child.on('message', (m: any) => m.kind === 'sessionAnswer' && store.answer(m.id, m));
  child.on('exit', () => store.disconnected());
  return { child, store, errors };
}

describe('the memory store over IPC', () => {
  it('reaches the one store: merges, pins, delete', async () => {
    const { store } = await connect();
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.update('s', i % 2 ? { result: true } : { call: { tool: `t${i % 3}` } })));
    expect(await store.get('s')).toMatchObject({ calls: 25, results: 25, tools: ['t0', 't2', 't1'] });
    expect(await store.checkPin('srv', 'tool', 'd1')).toEqual({ status: 'first-seen', pinned: 'd1' });
    expect(await store.checkPin('srv', 'tool', 'd2')).toEqual({ status: 'changed', pinned: 'd1' });
    await store.acceptPin('srv', 'tool', 'd2');
    expect(await store.getPin('srv', 'tool')).toBe('d2');
    expect(await store.delete('s')).toBe(true);
    expect(await store.get('s')).toBeUndefined();
    expect(store.healthy()).toBe(true);
  });

  it('fails closed when the primary does not answer in time, and is healthy again once it does', async () => {
    const { child, store, errors } = await connect();
    child.send({ kind: 'stall', on: true });
    await expect(store.update('s', { result: true })).rejects.toBeInstanceOf(SessionStoreUnavailable);
    await expect(store.checkPin('a', 'b', 'c')).rejects.toBeInstanceOf(SessionStoreUnavailable);
    expect(store.healthy()).toBe(false);
    expect(errors).toEqual(['update', 'pin']);
    child.send({ kind: 'stall', on: false });
    // No request needed: the store probes while failing.
    const deadline = Date.now() + 10_000;
    while (!store.healthy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(store.healthy()).toBe(true);
    // The update that timed out may have been applied late or not at all; the next one is answered.
    expect((await store.update('s', { result: true })).results).toBeGreaterThanOrEqual(1);
    await store.close();
  });

  it('fails what was waiting at once when the primary is gone, and every operation after', async () => {
    const { child, store } = await connect(60_000);
    child.send({ kind: 'stall', on: true });
    const waiting = store.get('s');
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
    await expect(waiting).rejects.toBeInstanceOf(SessionStoreUnavailable);
    await expect(store.get('s')).rejects.toBeInstanceOf(SessionStoreUnavailable);
    expect(store.healthy()).toBe(false);
    await store.close();
  });
});
