/**
 * A Streamable HTTP server with the fixtures of the conformance suite's
 * server scenarios, written from the requirements the suite prints for
 * each: the tools in which the server turns to the client during a call
 * (`tools-call-sampling`, `tools-call-elicitation`,
 * `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`, logging and
 * progress), the tools of every content type (image, audio, embedded
 * resource, mixed), the resources (text, binary, a template,
 * subscriptions), the prompts (simple, with arguments, with an embedded
 * resource, with an image) and completion. The suite's own reference server
 * is not on npm; this one lets `npm run conformance:proxy -- --server 'node
 * --import tsx scripts/conformance-server.ts'` run those scenarios through
 * the proxy, so that what the proxy judges (results of every content type,
 * `resources/read`, `prompts/get`, `completion/complete`, the server's own
 * requests) is held to the suite.
 * Sampling and elicitation are asked on the server's own stream (no related
 * request), as a plain `elicitInput` does: the shape that once got lost
 * through `--upstream`. Listens on PORT (default: any), prints `listening <port>`.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { completable } from '@modelcontextprotocol/sdk/server/completable.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SubscribeRequestSchema, UnsubscribeRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
/** A 1x1 red PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
/** A WAV header with no samples (44 bytes). */
const WAV = Buffer.concat([
  Buffer.from('RIFF'),
  Buffer.from([36, 0, 0, 0]),
  Buffer.from('WAVEfmt '),
  Buffer.from([16, 0, 0, 0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0]),
  Buffer.from('data'),
  Buffer.from([0, 0, 0, 0]),
]).toString('base64');

function server(): McpServer {
  const s = new McpServer({ name: 'trustgate-conformance-server', version: '1.0.0' }, { capabilities: { logging: {} } });
  const elicit = async (params: ElicitRequest['params']) => {
    const r = await s.server.elicitInput(params);
    return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  };
  s.registerTool('test_simple_text', { description: 'Simple text' }, () => text('This is a simple text response for testing.'));
  s.registerTool('test_image_content', { description: 'An image' }, () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }));
  s.registerTool('test_audio_content', { description: 'An audio clip' }, () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }));
  s.registerTool('test_embedded_resource', { description: 'An embedded resource' }, () => ({
    content: [{ type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' } }],
  }));
  s.registerTool('test_multiple_content_types', { description: 'Text, an image and a resource' }, () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
    ],
  }));
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

  s.registerResource('static-text', 'test://static-text', { description: 'A text resource', mimeType: 'text/plain' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
  }));
  s.registerResource('static-binary', 'test://static-binary', { description: 'A binary resource', mimeType: 'image/png' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }],
  }));
  s.registerResource('watched-resource', 'test://watched-resource', { description: 'A resource to subscribe to', mimeType: 'text/plain' }, (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched.' }],
  }));
  s.registerResource('template', new ResourceTemplate('test://template/{id}/data', { list: undefined }), { description: 'Data by id', mimeType: 'application/json' }, (uri, { id }) => ({
    contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${String(id)}` }) }],
  }));
  // Subscriptions are accepted and answered `{}`: this server never changes a resource, so it has no update to send.
  s.server.registerCapabilities({ resources: { subscribe: true } });
  s.server.setRequestHandler(SubscribeRequestSchema, () => ({}));
  s.server.setRequestHandler(UnsubscribeRequestSchema, () => ({}));

  s.registerPrompt('test_simple_prompt', { description: 'A simple prompt' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  s.registerPrompt(
    'test_prompt_with_arguments',
    { description: 'A prompt with two arguments', argsSchema: { arg1: completable(z.string().describe('First test argument'), (v) => [`${v}1`, `${v}2`]), arg2: z.string().describe('Second test argument') } },
    ({ arg1, arg2 }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }] }),
  );
  s.registerPrompt('test_prompt_with_embedded_resource', { description: 'A prompt embedding a resource', argsSchema: { resourceUri: z.string() } }, ({ resourceUri }) => ({
    messages: [
      { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ],
  }));
  s.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));
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
