/**
 * Captures a corpus of real tool results from the official MCP reference
 * servers installed as dev dependencies, driven over stdio with the MCP SDK
 * client, and writes one fixture per call under test/corpus/<server>/.
 *
 *   npm run corpus:capture
 *
 * Each fixture is `{ server, serverVersion, tool, arguments,
 * requestedProtocolVersion, protocolVersion, result }`: `protocolVersion` is
 * the revision the server negotiated. Most calls ask for the SDK's latest
 * revision; a few are repeated asking for `2024-10-07`, which the SDKs still
 * offer, so the corpus holds results as servers send them under it.
 *
 * Everything runs offline, in a fresh temporary folder holding small files
 * made here (text, JSON, a PNG, a WAV, a PDF). Paths under it are written
 * as `/corpus` so that fixtures do not depend on the machine; the servers
 * run with a minimal environment so that no variable of this machine ends
 * up in a fixture (the `get-env` tool of the everything server prints it).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { VERSION } from '../src/version.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'test', 'corpus');
const BIN = join(ROOT, 'node_modules', '.bin');
/** How paths under the temporary folder appear in fixtures. */
const PLACEHOLDER = '/corpus';

/** A transport that records the negotiated revision and can ask for another one than the SDK's latest. */
class NegotiationRecorder implements Transport {
  negotiated: string | undefined;
  private initId: string | number | undefined;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(
    private readonly inner: Transport,
    private readonly ask: string | undefined,
  ) {}

  async start(): Promise<void> {
    this.inner.onmessage = (m) => {
      if ('id' in m && m.id === this.initId && 'result' in m) {
        const v = (m.result as { protocolVersion?: unknown }).protocolVersion;
        if (typeof v === 'string') this.negotiated = v;
      }
      this.onmessage?.(m);
    };
    this.inner.onerror = (e) => this.onerror?.(e);
    this.inner.onclose = () => this.onclose?.();
    await this.inner.start();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    let m = message;
    if ('method' in m && m.method === 'initialize' && 'id' in m) {
      this.initId = m.id;
      if (this.ask !== undefined) m = { ...m, params: { ...m.params, protocolVersion: this.ask } };
    }
    await this.inner.send(m);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  setProtocolVersion(v: string): void {
    this.inner.setProtocolVersion?.(v);
  }
}

interface Call {
  tool: string;
  arguments: Record<string, unknown>;
  /** Distinguishes two calls of one tool in the file name. */
  variant?: string;
}

interface ServerSpec {
  /** Folder name under test/corpus. */
  name: string;
  bin: string;
  args: string[];
  env?: Record<string, string>;
  calls: Call[];
  /** Calls repeated on a connection that asks for 2024-10-07. */
  old?: string[];
}

/** A valid PNG of w x h RGB pixels (RFC 2083 chunks, zlib-compressed scanlines). */
function png(w: number, h: number): Buffer {
  const crcTable = new Int32Array(256).map((_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c;
  });
  const crc = (b: Buffer) => {
    let c = -1;
    for (const x of b) c = crcTable[(c ^ x) & 0xff]! ^ (c >>> 8);
    return (c ^ -1) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const rows = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) rows.set([x * 60, y * 60, 200], y * (w * 3 + 1) + 1 + x * 3);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A short PCM WAV (8 kHz, 8-bit mono, silence). */
function wav(samples: number): Buffer {
  const b = Buffer.alloc(44 + samples, 0x80);
  b.write('RIFF', 0, 'ascii');
  b.writeUInt32LE(36 + samples, 4);
  b.write('WAVEfmt ', 8, 'ascii');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(8000, 28);
  b.writeUInt16LE(1, 32);
  b.writeUInt16LE(8, 34);
  b.write('data', 36, 'ascii');
  b.writeUInt32LE(samples, 40);
  return b;
}

/** A one-page PDF with one line of text and a correct cross-reference table. */
function pdf(text: string): Buffer {
  const stream = `BT /F1 18 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const off of offsets) body += `${String(off).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

function makeFiles(dir: string): void {
  mkdirSync(join(dir, 'docs', 'sub'), { recursive: true });
  writeFileSync(join(dir, 'notes.txt'), 'Meeting notes\nline two: budget 42k\nline three: ship on Friday\n');
  writeFileSync(join(dir, 'data.json'), JSON.stringify({ customer: 'ACME', items: [1, 2, 3] }, null, 2) + '\n');
  writeFileSync(join(dir, 'docs', 'readme.md'), '# Docs\n\nSee notes.txt.\n');
  writeFileSync(join(dir, 'docs', 'sub', 'deep.txt'), 'deep file\n');
  writeFileSync(join(dir, 'pixel.png'), png(4, 3));
  writeFileSync(join(dir, 'beep.wav'), wav(400));
  writeFileSync(join(dir, 'paper.pdf'), pdf('Trustgate corpus PDF'));
}

function servers(dir: string): ServerSpec[] {
  const p = (...parts: string[]) => join(dir, ...parts);
  const dataUri = 'data:text/plain;base64,' + Buffer.from('compress me, offline\n').toString('base64');
  return [
    {
      name: 'filesystem',
      bin: 'mcp-server-filesystem',
      args: [dir],
      calls: [
        { tool: 'list_allowed_directories', arguments: {} },
        { tool: 'list_directory', arguments: { path: dir } },
        { tool: 'list_directory_with_sizes', arguments: { path: dir, sortBy: 'size' } },
        { tool: 'directory_tree', arguments: { path: p('docs') } },
        { tool: 'read_text_file', arguments: { path: p('notes.txt') } },
        { tool: 'read_text_file', arguments: { path: p('notes.txt'), head: 1 }, variant: 'head' },
        { tool: 'read_file', arguments: { path: p('data.json') } },
        { tool: 'read_media_file', arguments: { path: p('pixel.png') }, variant: 'png' },
        { tool: 'read_media_file', arguments: { path: p('beep.wav') }, variant: 'wav' },
        { tool: 'read_multiple_files', arguments: { paths: [p('notes.txt'), p('data.json'), p('missing.txt')] } },
        { tool: 'get_file_info', arguments: { path: p('notes.txt') } },
        { tool: 'search_files', arguments: { path: dir, pattern: '**/*.txt' } },
        { tool: 'write_file', arguments: { path: p('out.txt'), content: 'written by the corpus script\n' } },
        { tool: 'edit_file', arguments: { path: p('out.txt'), edits: [{ oldText: 'written', newText: 'edited' }], dryRun: true }, variant: 'dry-run' },
        { tool: 'edit_file', arguments: { path: p('out.txt'), edits: [{ oldText: 'written', newText: 'edited' }] } },
        { tool: 'create_directory', arguments: { path: p('made') } },
        { tool: 'move_file', arguments: { source: p('out.txt'), destination: p('made', 'out.txt') } },
        { tool: 'read_text_file', arguments: { path: '/etc/hostname' }, variant: 'outside-denied' },
      ],
      old: ['read_text_file', 'read_media_file', 'list_directory'],
    },
    {
      name: 'everything',
      bin: 'mcp-server-everything',
      args: [],
      calls: [
        { tool: 'echo', arguments: { message: 'Hello from the corpus' } },
        { tool: 'get-sum', arguments: { a: 2, b: 40 } },
        { tool: 'get-env', arguments: {} },
        { tool: 'get-tiny-image', arguments: {} },
        { tool: 'get-annotated-message', arguments: { messageType: 'error' }, variant: 'error' },
        { tool: 'get-annotated-message', arguments: { messageType: 'success', includeImage: true }, variant: 'success-image' },
        { tool: 'get-annotated-message', arguments: { messageType: 'debug' }, variant: 'debug' },
        { tool: 'get-resource-links', arguments: { count: 3 } },
        { tool: 'get-resource-reference', arguments: { resourceType: 'Text', resourceId: 1 }, variant: 'text' },
        { tool: 'get-resource-reference', arguments: { resourceType: 'Blob', resourceId: 2 }, variant: 'blob' },
        { tool: 'get-structured-content', arguments: { location: 'New York' }, variant: 'new-york' },
        { tool: 'get-structured-content', arguments: { location: 'Chicago' }, variant: 'chicago' },
        { tool: 'gzip-file-as-resource', arguments: { name: 'note.txt.gz', data: dataUri, outputType: 'resource' }, variant: 'resource' },
        { tool: 'gzip-file-as-resource', arguments: { name: 'note2.txt.gz', data: dataUri, outputType: 'resourceLink' }, variant: 'link' },
        { tool: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } },
        { tool: 'toggle-simulated-logging', arguments: {}, variant: 'on' },
        { tool: 'toggle-simulated-logging', arguments: {}, variant: 'off' },
        { tool: 'toggle-subscriber-updates', arguments: {}, variant: 'on' },
        { tool: 'toggle-subscriber-updates', arguments: {}, variant: 'off' },
        { tool: 'simulate-research-query', arguments: { topic: 'MCP trust annotations' } },
      ],
      old: ['echo', 'get-tiny-image', 'get-annotated-message', 'get-resource-reference', 'get-structured-content'],
    },
    {
      name: 'memory',
      bin: 'mcp-server-memory',
      args: [],
      env: { MEMORY_FILE_PATH: p('memory.jsonl') },
      calls: [
        {
          tool: 'create_entities',
          arguments: {
            entities: [
              { name: 'Ada', entityType: 'person', observations: ['writes programs', 'likes tea'] },
              { name: 'Analytical Engine', entityType: 'machine', observations: ['designed by Babbage'] },
            ],
          },
        },
        { tool: 'create_relations', arguments: { relations: [{ from: 'Ada', to: 'Analytical Engine', relationType: 'programs' }] } },
        { tool: 'add_observations', arguments: { observations: [{ entityName: 'Ada', contents: ['born 1815'] }] } },
        { tool: 'read_graph', arguments: {} },
        { tool: 'search_nodes', arguments: { query: 'tea' } },
        { tool: 'open_nodes', arguments: { names: ['Ada'] } },
        { tool: 'delete_observations', arguments: { deletions: [{ entityName: 'Ada', observations: ['likes tea'] }] } },
        { tool: 'delete_relations', arguments: { relations: [{ from: 'Ada', to: 'Analytical Engine', relationType: 'programs' }] } },
        { tool: 'delete_entities', arguments: { entityNames: ['Analytical Engine'] } },
      ],
      old: ['read_graph'],
    },
    {
      name: 'sequential-thinking',
      bin: 'mcp-server-sequential-thinking',
      args: [],
      env: { DISABLE_THOUGHT_LOGGING: 'true' },
      calls: [
        { tool: 'sequentialthinking', arguments: { thought: 'First, list what the result holds.', nextThoughtNeeded: true, thoughtNumber: 1, totalThoughts: 2 }, variant: '1' },
        { tool: 'sequentialthinking', arguments: { thought: 'Then decide what to forward.', nextThoughtNeeded: false, thoughtNumber: 2, totalThoughts: 2 }, variant: '2' },
      ],
      old: ['sequentialthinking'],
    },
    {
      name: 'pdf',
      bin: 'mcp-pdf-server',
      args: ['--stdio', p('paper.pdf')],
      calls: [
        { tool: 'list_pdfs', arguments: {} },
        { tool: 'read_pdf_bytes', arguments: { url: p('paper.pdf'), offset: 0, byteCount: 4096 } },
        { tool: 'display_pdf', arguments: { url: p('paper.pdf') } },
        { tool: 'read_pdf_bytes', arguments: { url: p('not-listed.pdf') }, variant: 'not-allowed' },
      ],
      old: ['list_pdfs'],
    },
  ];
}

/** Replace every occurrence of the temporary folder, in any JSON string, by PLACEHOLDER. */
function scrub(value: unknown, dir: string): unknown {
  const text = JSON.stringify(value);
  // The folder may appear JSON-escaped (it never holds characters JSON escapes) or as a file:// URL.
  return JSON.parse(text.split(dir).join(PLACEHOLDER));
}

function fileName(c: Call, old: boolean): string {
  return `${c.tool}${c.variant ? '.' + c.variant : ''}${old ? '.2024-10-07' : ''}.json`;
}

async function capture(spec: ServerSpec, dir: string, ask: string | undefined, calls: Call[]): Promise<number> {
  const env: Record<string, string> = {
    // Only what a Node bin needs to start: no variable of this machine reaches a fixture.
    PATH: [dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
    HOME: dir,
    ...(spec.env ?? {}),
  };
  const inner = new StdioClientTransport({ command: join(BIN, spec.bin), args: spec.args, env, cwd: dir, stderr: 'ignore' });
  const transport = new NegotiationRecorder(inner, ask);
  const client = new Client({ name: 'trustgate-corpus', version: VERSION }, { capabilities: {} });
  await client.connect(transport);
  const server = client.getServerVersion();
  let written = 0;
  try {
    for (const c of calls) {
      let result: unknown;
      try {
        result = await client.callTool({ name: c.tool, arguments: c.arguments }, undefined, { timeout: 20_000 });
      } catch (err) {
        process.stderr.write(`  ${spec.name}/${c.tool}${c.variant ? ` (${c.variant})` : ''}: no result (${(err as Error).message})\n`);
        continue;
      }
      const fixture = {
        server: spec.name,
        serverVersion: server ? `${server.name} ${server.version}` : undefined,
        tool: c.tool,
        arguments: c.arguments,
        requestedProtocolVersion: ask ?? 'latest',
        protocolVersion: transport.negotiated,
        result,
      };
      writeFileSync(join(OUT, spec.name, fileName(c, ask !== undefined)), JSON.stringify(scrub(fixture, dir), null, 2) + '\n');
      written++;
    }
  } finally {
    await client.close();
  }
  return written;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'trustgate-corpus-'));
  try {
    makeFiles(dir);
    let total = 0;
    for (const spec of servers(dir)) {
      const folder = join(OUT, spec.name);
      rmSync(folder, { recursive: true, force: true });
      mkdirSync(folder, { recursive: true });
      const n = await capture(spec, dir, undefined, spec.calls);
      // The same calls on a connection that asks for 2024-10-07: first call of each listed tool.
      const olds = (spec.old ?? []).map((t) => spec.calls.find((c) => c.tool === t)!).filter(Boolean);
      const m = olds.length > 0 ? await capture(spec, dir, '2024-10-07', olds) : 0;
      process.stdout.write(`${spec.name}: ${n} results, ${m} more negotiated at 2024-10-07\n`);
      total += n + m;
    }
    process.stdout.write(`${total} fixtures under ${OUT} (${readdirSync(OUT).length} servers)\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
