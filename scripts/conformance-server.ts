/**
 * A Streamable HTTP server with the tools of the conformance suite's
 * scenarios in which the server turns to the client during a call
 * (`tools-call-sampling`, `tools-call-elicitation`,
 * `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`, logging and
 * progress), written from the requirements the suite prints for each
 * scenario. The suite's own reference server is not on npm; this one lets
 * `npm run conformance:proxy -- --server 'node --import tsx
 * scripts/conformance-server.ts'` run those scenarios through the proxy.
 * Sampling and elicitation are asked on the server's own stream (no related
 * request), as a plain `elicitInput` does: the shape that once got lost
 * through `--upstream`. Listens on PORT (default: any), prints `listening <port>`.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

function server(): McpServer {
  const s = new McpServer({ name: 'trustgate-conformance-server', version: '1.0.0' }, { capabilities: { logging: {} } });
  const elicit = async (params: ElicitRequest['params']) => {
    const r = await s.server.elicitInput(params);
    return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  };
  s.registerTool('test_simple_text', { description: 'Simple text' }, () => text('This is a simple text response for testing.'));
  s.registerTool('test_tool_with_logging', { description: 'Three log messages during the call' }, async (extra) => {
    for (const [i, data] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
      if (i > 0) await pause(50);
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data } });
    }
    return text('Tool with logging executed successfully');
  });
  s.registerTool('test_tool_with_progress', { description: 'Progress 0, 50, 100 of 100' }, async (extra) => {
    const token = extra._meta?.progressToken;
    for (const [i, progress] of [0, 50, 100].entries()) {
      if (i > 0) await pause(50);
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100 } });
    }
    return text('Tool with progress executed successfully');
  });
  s.registerTool('test_sampling', { description: 'Asks the client to sample', inputSchema: { prompt: z.string() } }, async ({ prompt }) => {
    const r = await s.server.createMessage({ messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 });
    return text(`LLM response: ${r.content.type === 'text' ? r.content.text : r.content.type}`);
  });
  s.registerTool('test_elicitation', { description: 'Asks the user', inputSchema: { message: z.string() } }, async ({ message }) => {
    const r = await s.server.elicitInput({
      message,
      requestedSchema: {
        type: 'object',
        properties: { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } },
        required: ['username', 'email'],
      },
    });
    return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  });
  s.registerTool('test_elicitation_sep1034_defaults', { description: 'Asks with defaults' }, () =>
    elicit({
      message: 'Please review and update the form fields with defaults',
      requestedSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'User name', default: 'John Doe' },
          age: { type: 'integer', description: 'User age', default: 30 },
          score: { type: 'number', description: 'User score', default: 95.5 },
          status: { type: 'string', description: 'User status', enum: ['active', 'inactive', 'pending'], default: 'active' },
          verified: { type: 'boolean', description: 'Verification status', default: true },
        },
      },
    }),
  );
  s.registerTool('test_elicitation_sep1330_enums', { description: 'Asks with every enum form' }, () =>
    elicit({
      message: 'Please select options from the enum fields',
      requestedSchema: {
        type: 'object',
        properties: {
          untitledSingle: { type: 'string', description: 'Untitled single-select', enum: ['option1', 'option2', 'option3'] },
          titledSingle: {
            type: 'string',
            description: 'Titled single-select',
            oneOf: [
              { const: 'value1', title: 'First Option' },
              { const: 'value2', title: 'Second Option' },
              { const: 'value3', title: 'Third Option' },
            ],
          },
          legacyEnum: { type: 'string', description: 'Legacy titled enum', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
          untitledMulti: { type: 'array', description: 'Untitled multi-select', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
          titledMulti: {
            type: 'array',
            description: 'Titled multi-select',
            items: {
              anyOf: [
                { const: 'value1', title: 'First Choice' },
                { const: 'value2', title: 'Second Choice' },
                { const: 'value3', title: 'Third Choice' },
              ],
            },
          },
        },
      },
      // enumNames and untyped anyOf items are what the scenario asks for; the SDK's schema type has neither.
    } as unknown as ElicitRequest['params']),
  );
  return s;
}

const sessions = new Map<string, StreamableHTTPServerTransport>();
const http = createServer((req, res) => {
  const sid = req.headers['mcp-session-id'];
  const known = typeof sid === 'string' ? sessions.get(sid) : undefined;
  if (known) return void known.handleRequest(req, res);
  const t: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void sessions.set(id, t) });
  t.onclose = () => void (t.sessionId && sessions.delete(t.sessionId));
  void server()
    .connect(t)
    .then(() => t.handleRequest(req, res));
});
http.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => console.log(`listening ${(http.address() as AddressInfo).port}`));
