import { BadRequestException } from '@nestjs/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** Deepest nesting of arrays and objects a JSON body may have; the service's own bodies need 4. */
export const MAX_JSON_DEPTH = 32;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * Whether `json` nests arrays and objects deeper than `limit`, found in one pass over its bytes
 * (brackets inside strings do not count), without parsing it and without recursion, so no input
 * can exhaust the stack here. Bytes of multi-byte UTF-8 characters are never ASCII, so reading
 * bytes is exact. Malformed JSON is JSON.parse's to refuse.
 */
export function nestsDeeperThan(json: Buffer, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const byte = json[i];
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}

/**
 * The JSON body parser of every route: Fastify's own (which refuses `__proto__` and `constructor`
 * keys that could poison prototypes), after a depth check; an empty body is no body. class-transformer and class-validator
 * walk a body recursively, so a few kilobytes of `[[[[…` would otherwise overflow their stack (a 500).
 */
export function depthLimitedJsonParser(fastify: FastifyInstance, limit = MAX_JSON_DEPTH) {
  const parse = fastify.getDefaultJsonParser('error', 'error');
  return (request: FastifyRequest, body: Buffer, done: (error: Error | null, parsed?: unknown) => void) => {
    // An action without a body (POST /admin/v1/keys/rotate) from a client that labels every request
    // JSON: no body, as without the label, for the route to judge (a route that needs one refuses it).
    if (body.length === 0) return done(null, undefined);
    if (nestsDeeperThan(body, limit)) return done(new BadRequestException(`JSON body nested deeper than ${limit} levels`));
    parse(request, body.toString('utf8'), done);
  };
}
