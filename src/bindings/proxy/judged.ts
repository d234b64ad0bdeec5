/**
 * What the proxy judges of a message that carries server text toward the
 * host (docs/bindings/proxy.md), as one shape the core already judges: a
 * CallToolResult whose blocks are the message's text.
 *
 * A message is taken apart into slots: content blocks where MCP has them
 * (a prompt message's `content`, a sampling message's `content`, a
 * `resources/read` item as an embedded resource block) and one text block
 * for every other string a reader would see (a completion value, an
 * elicitation message, a log line, a description, an error message). The
 * core judges them together, under the connection's session, with the
 * message's trust claim (`_meta`) as the result's. The message the host gets
 * is rebuilt from the forwarded blocks, slot by slot: a withheld block
 * becomes Trustgate's placeholder, a fenced one its fenced text. Strings
 * left out of the slots are only the values MCP gives its identifiers and
 * keywords (`uri`, `mimeType`, `type`, `role`, `name`, cursors, tokens,
 * levels, ids, annotations, icons): they are `identifiers`, read by the
 * detectors and masked rather than fenced (mask-strings.ts), and put back
 * by `rebuild`. A keyword's value of another shape (a sentence where a
 * token goes, an object) is text like any other.
 *
 * Member names are read by the host too (a requested schema's property
 * names are the labels of a form). A name is passed on only when it is a
 * name: letters (with their marks), digits and `_.-/:@$#+`, at most 128
 * characters (MCP's tool-name alphabet, widened for `_meta` keys and
 * other scripts). A member whose name is anything else (spaces,
 * punctuation, a sentence) is text no slot judges, and is withheld with
 * its value. A `_meta`'s strings are slots too, but for the trust claim's
 * (the core reads the claim); the message's own `_meta` goes out as the
 * core forwarded it (the trust claim alone once an effect touched the
 * message), never as the server sent it.
 *
 * Pure: no transport, no session; the relay owns both.
 */
import { TRUST_KEY } from '../../mcp/meta-key.js';
import { hasOwn, isRecord } from '../../json/record.js';
import type { OperatorEntry } from '../../trust/operator.js';

type Msg = Record<string, unknown>;

/** The messages in which a server speaks of itself: its instructions and its lists (contract section 19, "discovery text is content"). */
export const DISCOVERY: ReadonlySet<string> = new Set(['initialize', 'tools/list', 'resources/list', 'resources/templates/list', 'prompts/list']);

/**
 * The `tool` a message of `method` is judged as: discovery is the server's
 * own word about itself, believed closed-world only where the operator
 * believes the server (`hints: "declared"`), as its tool descriptions
 * are; anything else is about `subject` (a tool's name, or none).
 */
export function judgedAs(method: string, subject: string, operator: OperatorEntry | undefined): Msg {
  if (!DISCOVERY.has(method)) return { name: subject };
  return { name: subject, annotations: { openWorldHint: operator?.hints !== 'declared' } };
}

/** Members whose strings are identifiers or keywords of the protocol, not text shown to a reader. */
export const KEYWORDS: ReadonlySet<string> = new Set([
  'uri',
  'uriTemplate',
  'mimeType',
  'type',
  'role',
  'name',
  'nextCursor',
  'cursor',
  'progressToken',
  'level',
  'taskId',
  'status',
  'createdAt',
  'lastUpdatedAt',
  'protocolVersion',
  'version',
  'includeContext',
  'action',
  'mode',
  'format',
  'elicitationId',
  'requestId',
  'model',
  'stopReason',
  'data', // base64 of image and audio blocks; a log line's data is slotted by its own adapter
  'blob',
  'icons',
  // A resource's or prompt's audience, priority and lastModified: exempt as in a result (contract section 11, law 2);
  // fenced, `audience` would no longer be one of MCP's values and the host would refuse the whole list.
  'annotations',
]);

/** The members passed on of the messages whose shape MCP defines (results, and the server's requests' params). */
const MEMBERS: Readonly<Record<string, readonly string[]>> = {
  'resources/read': ['contents', '_meta'],
  'prompts/get': ['description', 'messages', '_meta'],
  'completion/complete': ['completion', '_meta'],
  'sampling/createMessage': ['messages', 'systemPrompt', 'includeContext', 'temperature', 'maxTokens', 'stopSequences', 'metadata', 'modelPreferences', 'tools', 'toolChoice', 'task', '_meta'],
  'elicitation/create': ['message', 'requestedSchema', 'mode', 'url', 'elicitationId', 'task', '_meta'],
  'notifications/message': ['level', 'logger', 'data', '_meta'],
  'notifications/progress': ['progressToken', 'progress', 'total', 'message', '_meta'],
  // A JSON-RPC error of the server's: its message alone (its `data` is never forwarded).
  error: ['message'],
  // Requests whose params MCP gives nothing but `_meta`.
  ping: ['_meta'],
  'roots/list': ['_meta'],
};

/** One judged piece of a message: its block, and how the forwarded block goes back in its place. */
interface Slot {
  block: Msg;
  put(forwarded: Msg | undefined): void;
}

/**
 * Members among KEYWORDS whose strings a host shows people (a URI, a name,
 * a media type, a version, a model, annotations, icons): identifiers
 * whatever they hold, a name with blanks too. The rest of KEYWORDS are
 * protocol tokens, enumerations and opaque ids, which hold no blank: one
 * of those with a blank is text. Every one of them is read by the
 * detectors and masked (mask-strings.ts), so a credential in a resource's
 * URI, a cursor or a task id never passes.
 */
export const SHOWN_KEYWORDS: ReadonlySet<string> = new Set(['uri', 'uriTemplate', 'name', 'mimeType', 'version', 'model', 'annotations', 'icons']);

/** Keywords whose value MCP makes an object or a list of objects (annotations, icons): read whole as identifiers. */
const SHAPED_KEYWORDS: ReadonlySet<string> = new Set(['annotations', 'icons']);

/** Whether a string holds a blank: a token, an id, an enumeration value, a date or base64 never does; a sentence does. */
const BLANK = /\s/;

/** One string of an identifier member, and how its masked form goes back in its place. */
interface IdSlot {
  text: string;
  put(text: string): void;
  /** A member name: withheld (with its value) after every value is put back, so no value's put brings it back. */
  name?: true;
}

export interface Judgeable {
  /** The CallToolResult the core judges: one block per slot, the message's trust claim as its `_meta`. */
  result: Msg;
  /**
   * The message rebuilt from the forwarded result (the core's), slot by
   * slot, with `identifiers` as masked (one for each of `identifiers`, in
   * order; none given: as they were).
   */
  rebuild(forwarded: Msg, identifiers?: readonly string[]): Msg;
  /** How many slots it has; 0: nothing of the server's text to judge. */
  slots: number;
  /** How many members were withheld for a name that is not a name. */
  withheld: number;
  /** The strings of identifier members (SHOWN_KEYWORDS) in the message, to be masked rather than judged as text. */
  identifiers: string[];
}

const textOf = (b: Msg | undefined): string | undefined => (b !== undefined && b.type === 'text' && typeof b.text === 'string' ? b.text : undefined);

/** Of a `_meta`, what is the claim rather than text. */
const CLAIM: ReadonlySet<string> = new Set([TRUST_KEY]);

/** A member name passed on: an identifier, not a sentence (see the module comment). */
const NAME = /^[\p{L}\p{M}\p{N}_.\-/:@$#+]{1,128}$/u;

/** What stands in a slot whose content Trustgate withholds and no rule's placeholder names. */
const WITHHELD = '[content withheld by Trustgate]';

/** A withheld block's words, or Trustgate's own when it has none. */
const placeholder = (b: Msg | undefined): string => textOf(b) ?? WITHHELD;

function clone<T>(v: T): T {
  return structuredClone(v);
}

/**
 * Lists whose entries hosts show people in pickers (attach a resource, pick
 * a prompt), not prose a model reads: an entry's `title` or `description`
 * that judging would change (fence, mask, withhold) is left out rather
 * than put in a picker inside a fence. Its name and URI stay.
 */
const PICKER_LISTS: ReadonlySet<string> = new Set(['resources/list', 'resources/templates/list', 'prompts/list']);

/** The members of a picker entry that are display strings. */
const DISPLAY: ReadonlySet<string> = new Set(['title', 'description']);

class Builder {
  readonly slots: Slot[] = [];
  readonly ids: IdSlot[] = [];
  /** Members withheld because their name is not a name. */
  withheld = 0;

  constructor(private readonly picker = false) {}

  /** A content block in place (`holder[key]`). */
  block(holder: Msg | unknown[], key: string | number): void {
    const b = (holder as Record<string | number, unknown>)[key];
    if (!isRecord(b)) {
      // A block that is not an object is not forwarded (the core would withhold it too).
      (holder as Record<string | number, unknown>)[key] = { type: 'text', text: WITHHELD };
      return;
    }
    this.slots.push({ block: b, put: (f) => ((holder as Record<string | number, unknown>)[key] = isRecord(f) ? f : { type: 'text', text: placeholder(f) }) });
  }

  /** A `resources/read` item, judged as an embedded resource block. */
  resource(holder: unknown[], index: number): void {
    const item = holder[index];
    const uri = isRecord(item) && typeof item.uri === 'string' ? item.uri : '';
    if (!isRecord(item)) {
      holder[index] = { uri, mimeType: 'text/plain', text: WITHHELD };
      return;
    }
    const block: Msg = { type: 'resource', resource: item };
    if (isRecord(item._meta)) block._meta = item._meta;
    this.slots.push({
      block,
      put: (f) => {
        holder[index] = isRecord(f) && f.type === 'resource' && isRecord(f.resource) ? f.resource : { uri, mimeType: 'text/plain', text: placeholder(f) };
      },
    });
  }

  /** One string in place, as a text block. */
  text(holder: Msg | unknown[], key: string | number): void {
    const s = (holder as Record<string | number, unknown>)[key];
    if (typeof s !== 'string') return;
    const display = this.picker && typeof key === 'string' && DISPLAY.has(key);
    this.slots.push({
      block: { type: 'text', text: s },
      put: (f) => {
        const t = textOf(f);
        if (display && t !== s) delete (holder as Msg)[key];
        else (holder as Record<string | number, unknown>)[key] = t ?? placeholder(f);
      },
    });
  }

  /** Every string under `v` that is not a keyword, as text; `skip` names members an adapter slotted already. */
  strings(v: unknown, skip: ReadonlySet<string> = new Set()): void {
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        if (typeof v[i] === 'string') this.text(v, i);
        else this.strings(v[i]);
      }
      return;
    }
    if (!isRecord(v)) return;
    for (const k of Object.keys(v)) {
      if (!NAME.test(k)) {
        delete v[k];
        this.withheld++;
        continue;
      }
      this.memberName(v, k);
      if (skip.has(k)) continue;
      if (KEYWORDS.has(k)) {
        this.keyword(v, k, SHOWN_KEYWORDS.has(k));
        continue;
      }
      // `_meta` is read by the host too: its strings are text like any other, but for the trust claim, which the core reads.
      if (k === '_meta') {
        if (typeof v[k] === 'string') this.text(v, k);
        else this.strings(v[k], CLAIM);
        continue;
      }
      if (typeof v[k] === 'string') this.text(v, k);
      else this.strings(v[k]);
    }
  }

  /**
   * The value of a protocol keyword at `holder[key]`, as MCP shapes it: a
   * string is an identifier, read by the detectors and masked in place, not
   * fenced (a fenced URI, cursor or id is none); but a string with a blank
   * in a member that is no shown name (a sentence in `status` or `level`)
   * is text. A list is read item by item; any other object is read as the
   * message's other members are (text), but where MCP makes the keyword an
   * object (`annotations`, `icons`). Numbers and booleans hold no text.
   */
  keyword(holder: Msg | unknown[], key: string | number, shown: boolean): void {
    const v = (holder as Record<string | number, unknown>)[key];
    if (typeof v === 'string') {
      if (shown || !BLANK.test(v)) this.identifier(holder, key);
      else this.text(holder, key);
    } else if (typeof key === 'string' && SHAPED_KEYWORDS.has(key)) this.identifier(holder, key);
    else if (Array.isArray(v)) for (let i = 0; i < v.length; i++) this.keyword(v, i, shown);
    else this.strings(v);
  }

  /** Every string at `holder[key]` (a string, or strings deep inside), as an identifier to mask in place. */
  identifier(holder: Msg | unknown[], key: string | number): void {
    const v = (holder as Record<string | number, unknown>)[key];
    if (typeof v === 'string') {
      if (v !== '') this.ids.push({ text: v, put: (t) => ((holder as Record<string | number, unknown>)[key] = t) });
    } else if (Array.isArray(v)) for (let i = 0; i < v.length; i++) this.identifier(v, i);
    else if (isRecord(v))
      for (const k of Object.keys(v)) {
        this.memberName(v, k);
        this.identifier(v, k);
      }
  }

  /** A member name a host reads (a form's field, a key of `_meta`): read as an identifier; one that holds a finding is withheld with its value. */
  memberName(holder: Msg, key: string): void {
    this.ids.push({ text: key, put: (t) => void (t !== key && delete holder[key]), name: true });
  }

  /** A log line's `data`: a string as text; anything else as its JSON, forwarded as the judged text only when judging changed it. */
  json(holder: Msg, key: string): void {
    const v = holder[key];
    if (v === undefined) return;
    if (typeof v === 'string') return this.text(holder, key);
    const s = JSON.stringify(v);
    this.slots.push({
      block: { type: 'text', text: s },
      put: (f) => {
        const t = textOf(f);
        if (t !== s) holder[key] = t ?? placeholder(f);
      },
    });
  }
}

/** Messages of `role` + `content` (a block, or from 2025-11-25 a list of blocks). */
function messages(b: Builder, list: unknown[]): void {
  for (let i = 0; i < list.length; i++) {
    const m = list[i];
    if (!isRecord(m)) {
      // Not a message: whatever text it holds is judged as text.
      if (typeof m === 'string') b.text(list, i);
      else b.strings(m);
      continue;
    }
    if (Array.isArray(m.content)) for (let j = 0; j < m.content.length; j++) b.block(m.content, j);
    else if (m.content !== undefined) b.block(m, 'content');
    b.strings(m, new Set(['content']));
  }
}

/**
 * The judgeable form of `payload` (a result, or a server request's or
 * notification's params) of `method`; `shape` `'error'` when it is a
 * JSON-RPC error's `{ message }` (whose members are not the method's
 * result's). The payload is copied; the copy is what `rebuild` fills in.
 */
export function judgeable(method: string, payload: Msg, shape: string = method): Judgeable {
  const members = MEMBERS[shape];
  const copy: Msg = members ? {} : clone(payload);
  // Of a message MCP defines, only its own members pass: a member the server adds could hold anything.
  if (members) for (const k of members) if (hasOwn(payload, k) && payload[k] !== undefined) copy[k] = clone(payload[k]);
  const b = new Builder(PICKER_LISTS.has(shape));
  switch (shape) {
    // A member of another shape than MCP's is judged as strings like any other: no member is passed over unjudged.
    case 'resources/read':
      if (Array.isArray(copy.contents)) {
        for (let i = 0; i < copy.contents.length; i++) b.resource(copy.contents, i);
        b.strings(copy, new Set(['contents']));
      } else b.strings(copy);
      break;
    case 'prompts/get':
    case 'sampling/createMessage':
      if (Array.isArray(copy.messages)) {
        messages(b, copy.messages);
        b.strings(copy, new Set(['messages']));
      } else b.strings(copy);
      break;
    case 'notifications/message':
      b.json(copy, 'data');
      b.strings(copy, new Set(['data']));
      break;
    default:
      b.strings(copy);
  }
  const result: Msg = { content: b.slots.map((s) => s.block) };
  if (isRecord(copy._meta)) result._meta = copy._meta;
  return {
    result,
    slots: b.slots.length,
    withheld: b.withheld,
    identifiers: b.ids.map((x) => x.text),
    rebuild(forwarded, identifiers = []) {
      const blocks = Array.isArray(forwarded.content) ? forwarded.content : [];
      b.slots.forEach((s, i) => s.put(blocks.length === b.slots.length && isRecord(blocks[i]) ? blocks[i] : undefined));
      // The core's `_meta`: what it kept of the message's claim (only the trust claim once an effect touched the message).
      if (hasOwn(forwarded, '_meta') && forwarded._meta !== undefined) copy._meta = forwarded._meta;
      else delete copy._meta;
      // Last: a member name withheld for a finding goes with whatever the slots put under it.
      for (const names of [false, true])
        b.ids.forEach((x, i) => {
          if ((x.name === true) === names && identifiers[i] !== undefined && identifiers[i] !== x.text) x.put(identifiers[i]!);
        });
      return copy;
    },
  };
}
