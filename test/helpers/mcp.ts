/** Start MCP servers and the Trustgate MCP bindings as users do, and connect the SDK Client to them. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Client, type ClientOptions } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { freePort, ROOT } from './process.js';

const require = createRequire(import.meta.url);

export const CLI = join(ROOT, 'dist/cli.js');
export const MCP_POLICIES = join(ROOT, 'test/fixtures/mcp/policies');
export const EVERYTHING = [process.execPath, require.resolve('@modelcontextprotocol/server-everything/dist/index.js')];
export const FILESYSTEM = [process.execPath, require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js')];
/** The tests' own server (test/fixtures/mcp/changing-server.ts), runnable from any working directory. */
export const CHANGING = [process.execPath, '--import', import.meta.resolve('tsx'), join(ROOT, 'test/fixtures/mcp/changing-server.ts')];

/** One environment for direct and proxied servers, so that what a server reports of it (get-env) is the same. */
export const ENV: Record<string, string> = {
  ...(Object.fromEntries(Object.entries(process.env).filter((e) => e[1] !== undefined)) as Record<string, string>),
  LOG_LEVEL: 'warn',
};

export interface Connected {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
}

async function connect(command: string[], options: ClientOptions | undefined, setup?: (c: Client) => void): Promise<Connected> {
  const transport = new StdioClientTransport({ command: command[0]!, args: command.slice(1), env: ENV, cwd: ROOT, stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (d) => (err += String(d)));
  const client = new Client({ name: 'trustgate-tests', version: '1.0.0' }, options);
  setup?.(client);
  await client.connect(transport);
  return { client, transport, stderr: () => err };
}

/** The SDK Client on the server itself. */
export function direct(server: string[], options?: ClientOptions, setup?: (c: Client) => void): Promise<Connected> {
  return connect(server, options, setup);
}

/** The SDK Client on `trustgate proxy --policies <dir> -- <server>`. */
export function proxied(policies: string, server: string[], options?: ClientOptions, setup?: (c: Client) => void, flags: string[] = []): Promise<Connected> {
  return connect([process.execPath, CLI, 'proxy', '--policies', policies, ...flags, '--', ...server], options, setup);
}

/** Start a Streamable HTTP server that prints `listening <port>` (or, for server-everything, runs on PORT). */
export async function httpServer(command: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; stop(): Promise<void> }> {
  const child = spawn(command[0]!, command.slice(1), { cwd: ROOT, env: { ...ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<string>((resolve, reject) => {
    let out = '';
    const onData = (d: unknown) => {
      out += String(d);
      const m = /listening (?:on port )?(\d+)/i.exec(out);
      if (m) resolve(m[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${out}`)));
    setTimeout(() => reject(new Error(`server did not start: ${out}`)), 30_000).unref();
  });
  return {
    child,
    url: `http://127.0.0.1:${port}/mcp`,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A gateway on Streamable HTTP, once it listens. */
export interface ListeningGateway {
  pid: number;
  port: number;
  base: string;
  url: string;
  stderr: () => string;
  stop(): Promise<void>;
}

/** `trustgate proxy --config <file> [args] --listen 127.0.0.1:<free port>` with `env` over ENV, once it says it listens (or fails, stopped). */
export async function listeningGateway(file: string, args: string[], env: Record<string, string>): Promise<ListeningGateway> {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'proxy', '--config', file, ...args, '--listen', `127.0.0.1:${port}`], { env: { ...ENV, ...env }, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err += String(d)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  // Waited for by hand rather than with expect.poll, which a beforeAll cannot use.
  const deadline = Date.now() + 30_000;
  while (!/gateway listening/.test(err)) {
    if (Date.now() > deadline || child.exitCode !== null) {
      await stop();
      throw new Error(`the gateway did not listen:\n${err}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const base = `http://127.0.0.1:${port}`;
  return { pid: child.pid!, port, base, url: `${base}/mcp`, stderr: () => err, stop };
}
