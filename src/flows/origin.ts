/**
 * What a session keeps of the values it has seen (docs/behaviour/flows.md):
 * never the text, a keyed digest of it (HMAC-SHA-256 under the flow key:
 * TRUSTGATE_FLOW_KEY, or a random key made once per store and kept in it,
 * so replicas on one store agree), with origin bits that only go up and up
 * to MAX_SOURCES sources, first seen first.
 */
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/** Seen in forwarded content labelled untrusted (block or result, after label rules). */
export const UNTRUSTED = 1;
/** Seen in content labelled sensitive, or found by a content detector. */
export const SENSITIVE = 2;
/** Seen in forwarded content labelled neither. */
export const TRUSTED = 4;
/** In the user's own words. */
export const USER = 8;
/**
 * Seen inside running text (a sentence, a paragraph), where instructions
 * hide, rather than as a field's value of structured data (a YAML or JSON
 * result, a list of addresses): `inText` in `call.flows`.
 */
export const IN_TEXT = 16;

/** Most sources kept per value. */
export const MAX_SOURCES = 4;

/** One value as a session keeps it. */
export interface FlowEntry {
  bits: number;
  /** `<server>/<tool>` (or `user`), first seen first, at most MAX_SOURCES. */
  sources: string[];
}

/** One value a request adds to its session. */
export interface FlowWrite {
  digest: string;
  bits: number;
  source: string;
}

/** A fresh random flow key (32 bytes). */
export function newFlowKey(): Buffer {
  return randomBytes(32);
}

/** Key objects made once per key (importing the key is most of an HMAC's cost on a short value). */
const keyObjects = new WeakMap<Uint8Array, KeyObject>();

/** The digest a value is kept under: HMAC-SHA-256 of its normalized text under the flow key, its first 132 bits in base64url (22 characters). */
export function flowDigest(key: Uint8Array, value: string): string {
  let k = keyObjects.get(key);
  if (k === undefined) keyObjects.set(key, (k = createSecretKey(key)));
  return createHmac('sha256', k).update(value).digest('base64url').slice(0, 22);
}

/** Merge one write into what is kept (bits OR, the source appended when new and room is left); the same entry object, changed. */
export function mergeEntry(e: FlowEntry, w: FlowWrite): FlowEntry {
  e.bits |= w.bits;
  if (w.source !== '' && e.sources.length < MAX_SOURCES && !e.sources.includes(w.source)) e.sources.push(w.source);
  return e;
}
