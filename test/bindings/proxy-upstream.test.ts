/**
 * `trustgate proxy --upstream`: a request the server sends to the client
 * right after the session starts (server-everything asks for roots as soon
 * as the client says it is initialized) reaches the host, every time.
 */
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { expect, it } from 'vitest';
import { CLI, ENV, EVERYTHING, httpServer, MCP_POLICIES } from '../helpers/mcp.js';
import { freePort } from '../helpers/process.js';

it('a server request sent right after the session starts reaches the host through --upstream, in every session', async () => {
  const port = await freePort();
  const s = await httpServer([...EVERYTHING, 'streamableHttp'], { PORT: String(port) });
  try {
    for (let i = 0; i < 4; i++) {
      const c = new Client({ name: 'c', version: '1' }, { capabilities: { roots: { listChanged: true } } });
      let asked = 0;
      c.setRequestHandler(ListRootsRequestSchema, async () => {
        asked++;
        return { roots: [] };
      });
      await c.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--policies', join(MCP_POLICIES, 'none'), '--upstream', s.url], env: ENV, stderr: 'pipe' }));
      try {
        await expect.poll(() => asked, { timeout: 20_000 }).toBe(1);
      } finally {
        await c.close();
      }
    }
  } finally {
    await s.stop();
  }
}, 120_000);
