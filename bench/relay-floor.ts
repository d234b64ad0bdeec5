/**
 * The floor of any stdio relay, for bench/proxy.ts: a process between the
 * host and the server that judges nothing, so what a third process on the
 * path costs by itself is measured beside the proxy in the same run.
 *
 *   pipe: bytes from stdin to the server and back, not even parsed;
 *   sdk:  the SDK's stdio transports on both sides (framing, JSON parse and
 *         schema check, serialize), each message passed on as it came.
 *
 * Run: node --import tsx bench/relay-floor.ts pipe|sdk -- <command> [args]
 */
import { spawn } from 'node:child_process';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const argv = process.argv.slice(2);
const mode = argv[0];
const at = argv.indexOf('--');
const [command, ...args] = at >= 0 ? argv.slice(at + 1) : [];
if ((mode !== 'pipe' && mode !== 'sdk') || command === undefined) {
  console.error('usage: relay-floor.ts pipe|sdk -- <command> [args]');
  process.exit(2);
}

if (mode === 'pipe') {
  const server = spawn(command, args, { stdio: ['pipe', 'pipe', 'ignore'] });
  process.stdin.pipe(server.stdin);
  server.stdout.pipe(process.stdout);
  server.on('exit', (code) => process.exit(code ?? 0));
  process.stdin.on('end', () => server.kill());
} else {
  const host = new StdioServerTransport();
  const upstream = new StdioClientTransport({ command, args, stderr: 'ignore' });
  host.onmessage = (m) => void upstream.send(m);
  upstream.onmessage = (m) => void host.send(m);
  host.onclose = () => void upstream.close().then(() => process.exit(0));
  upstream.onclose = () => process.exit(0);
  await upstream.start();
  await host.start();
}
