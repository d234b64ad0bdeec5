/**
 * What every route that answers a decision shares (/v1/evaluate,
 * /v1/evaluate-call, the playground, the Docker interceptor route): the
 * request's decision log line writer, and the serializer of answers built
 * from allow-listed fields.
 */
import type { FastifyRequest } from 'fastify';
import pino from 'pino';
import type { DecisionLogEntry } from '../decision/log.js';
import { decisionLineWriter } from '../logger.js';

/** The decision log line writer for a request, or nothing when info is off (the entry is then never built). */
export function decisionLogger<T extends object = DecisionLogEntry>(request: FastifyRequest): ((entry: T) => void) | undefined {
  if ((pino.levels.values[request.log.level] ?? Infinity) > pino.levels.values.info!) return undefined;
  const write = decisionLineWriter(request.log as pino.Logger);
  return (entry) => {
    request.decisionLogged = true;
    write(entry);
  };
}

/**
 * Decisions are built from allow-listed fields only, so plain JSON.stringify
 * serializes them; the schema stays the validator of tests and the OpenAPI
 * entry. (fast-json-stringify was the larger cost on this route.)
 */
export const plainJson = () => (data: unknown) => JSON.stringify(data);
