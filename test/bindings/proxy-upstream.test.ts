/**
 * `trustgate proxy --upstream`: a request the server sends to the client
 * right after the session starts reaches the host, every time.
 * server-everything asks for roots as soon as the client says it is
 * initialized; an SDK McpServer asks for elicitation and sampling inside the
 * first tool call, on its own stream (no related request) or on the call's.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server as HttpServer } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ENV, EVERYTHING, httpServer, MCP_POLICIES } from '../helpers/mcp.js';
import { freePort } from '../helpers/process.js';

function viaProxy(url: string): StdioClientTransport {
  return new StdioClientTransport({ command: process.execPath, args: [CLI, 'proxy', '--policies', join(MCP_POLICIES, 'none'), '--upstream', url], env: ENV, stderr: 'pipe' });
}

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
      await c.connect(viaProxy(s.url));
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

describe('elicitation and sampling inside the first tool call, through --upstream', () => {
  let http: HttpServer;
  let url: string;
  const transports = new Set<StreamableHTTPServerTransport>();

  /** `ask` elicits and samples on the server's own stream; `ask-related` on the call's. */
  function mcpServer(): McpServer {
    const s = new McpServer({ name: 'asks-early', version: '1.0.0' });
    const ask = async (related: string | number | undefined) => {
      const options = related === undefined ? undefined : { relatedRequestId: related };
      const e = await s.server.elicitInput({ message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } }, options);
      const m = await s.server.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }], maxTokens: 10 }, options);
      const said = m.content.type === 'text' ? m.content.text : m.content.type;
      return { content: [{ type: 'text' as const, text: `elicitation ${e.action} ${JSON.stringify(e.content ?? {})}, sampling ${said}` }] };
    };
    s.registerTool('ask', { description: 'Asks the client, unrelated to the call' }, () => ask(undefined));
    s.registerTool('ask-related', { description: 'Asks the client, on the call' }, (extra) => ask(extra.requestId));
    return s;
  }

  beforeAll(async () => {
    const sessions = new Map<string, StreamableHTTPServerTransport>();
    http = createServer((req, res) => {
      const sid = req.headers['mcp-session-id'];
      const known = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (known) return void known.handleRequest(req, res);
      const t: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void sessions.set(id, t) });
      transports.add(t);
      void mcpServer()
        .connect(t)
        .then(() => t.handleRequest(req, res));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`;
  });

  afterAll(async () => {
    await Promise.allSettled([...transports].map((t) => t.close()));
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });

  for (const tool of ['ask', 'ask-related']) {
    it(`${tool}: the host is asked and the call completes, in every session`, async () => {
      for (let i = 0; i < 4; i++) {
        const c = new Client({ name: 'c', version: '1' }, { capabilities: { elicitation: {}, sampling: {} } });
        const asked: string[] = [];
        c.setRequestHandler(ElicitRequestSchema, async () => {
          asked.push('elicitation');
          return { action: 'accept', content: { name: 'Ada' } };
        });
        c.setRequestHandler(CreateMessageRequestSchema, async () => {
          asked.push('sampling');
          return { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'test' };
        });
        await c.connect(viaProxy(url));
        try {
          // Directly the call takes well under a second; a request the proxy lost leaves it hanging.
          const r = await c.callTool({ name: tool, arguments: {} }, undefined, { timeout: 15_000 });
          expect(asked).toEqual(['elicitation', 'sampling']);
          expect(r.content).toEqual([{ type: 'text', text: 'elicitation accept {"name":"Ada"}, sampling hi' }]);
        } finally {
          await c.close();
        }
      }
    }, 120_000);
  }
});
