/**
 * An MCP server over stdio that takes BENCH_SLOW_START_MS (default 1500)
 * to start, as an `npx` server fetching and loading its package does, then
 * serves one tool. For bench/gateway-start.ts.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const ms = Number(process.env.BENCH_SLOW_START_MS ?? 1500);
await new Promise((r) => setTimeout(r, ms));
const server = new McpServer({ name: 'slow', version: '1.0.0' });
server.registerTool('now', { description: 'The time', annotations: { readOnlyHint: true, openWorldHint: false } }, async () => ({ content: [{ type: 'text', text: new Date(0).toISOString() }] }));
await server.connect(new StdioServerTransport());
