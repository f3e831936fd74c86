import type { BodySpec, WireRequest } from './http.js';

/**
 * A generated request, as data: strings may hold `{{placeholders}}` (see World); `route` and
 * `kind` label its shape for the counts.
 */
export interface FuzzRequest {
  /** The route it aims at, e.g. "POST /sso/token". */
  route: string;
  /** The input category, e.g. "form", "json-to-form-route", "path-trick". */
  kind: string;
  method: string;
  target: string | Uint8Array;
  headers?: [string, HeaderValue][];
  body?: BodySpec;
  framing?: 'length' | 'chunked';
  httpVersion?: string;
}

/**
 * A header value: text (sent as UTF-8), raw bytes, or HTTP Basic credentials built after the
 * placeholders are filled (`form`: RFC 6749 §2.3.1 form-encoding before base64, as clients should).
 */
export type HeaderValue = string | Uint8Array | { basic: [string, string]; encoding: 'form' | 'raw' };

function headerValue(value: HeaderValue): string | Uint8Array {
  if (typeof value === 'string' || value instanceof Uint8Array) return value;
  const encode = value.encoding === 'form' ? (text: string) => new URLSearchParams({ v: text }).toString().slice(2) : (text: string) => text;
  return `Basic ${Buffer.from(`${encode(value.basic[0])}:${encode(value.basic[1])}`, 'utf8').toString('base64')}`;
}

/** JSON strings of this form are replaced, quotes included, by `depth` nested arrays or objects. */
export const deepMarker = (container: 'array' | 'object', depth: number) => `{{deep:${container}:${depth}}}`;
const DEEP = /"\{\{deep:(array|object):(\d+)\}\}"/g;

function nested(container: string, depth: number): string {
  return container === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}null${'}'.repeat(depth)}`;
}

export function bodyBytes(body: BodySpec): Buffer {
  if ('form' in body) return Buffer.from(new URLSearchParams(body.form).toString(), 'utf8');
  if ('json' in body) {
    const text = JSON.stringify(body.json) ?? 'null';
    return Buffer.from(text.replace(DEEP, (_, container: string, depth: string) => nested(container, Number(depth))), 'utf8');
  }
  if ('text' in body) return Buffer.from(body.text, 'utf8');
  if ('bytes' in body) return Buffer.from(body.bytes);
  const unit = Buffer.from(body.repeat, 'utf8');
  return Buffer.alloc(body.size, unit.length ? unit : 'x');
}

export function toWire(request: FuzzRequest): WireRequest {
  return {
    method: request.method,
    target: request.target,
    headers: (request.headers ?? []).map(([name, value]) => [name, headerValue(value)]),
    body: request.body && bodyBytes(request.body),
    framing: request.framing,
    httpVersion: request.httpVersion,
  };
}

/**
 * What is nasty about a request's values, for the shape counts: the first that applies of NUL,
 * other control characters, invalid UTF-8, long values, wrong types, deep nesting, repeated
 * parameters, big bodies; else "plain".
 */
export function valueCategory(request: FuzzRequest): string {
  const strings: string[] = [];
  const binaries: Uint8Array[] = [];
  let wrongType = false;
  let depth = 0;
  const walk = (value: unknown, level: number) => {
    depth = Math.max(depth, level);
    if (typeof value === 'string') strings.push(value);
    else if (value instanceof Uint8Array) binaries.push(value);
    else if (Array.isArray(value)) value.forEach((item) => walk(item, level + 1));
    else if (value !== null && typeof value === 'object') Object.entries(value).forEach(([key, item]) => (strings.push(key), walk(item, level + 1)));
    else wrongType = true;
  };
  walk(request.target, 0);
  for (const [, value] of request.headers ?? []) walk(typeof value === 'object' && 'basic' in value ? value.basic : value, 0);
  const body = request.body;
  let repeated = false;
  if (body && 'form' in body) {
    body.form.forEach(([name, value]) => strings.push(name, value));
    repeated = new Set(body.form.map(([name]) => name)).size < body.form.length;
  } else if (body && 'json' in body) {
    depth = 0;
    walk(body.json, 0);
    if (body.json !== null && typeof body.json === 'object') wrongType = wrongType || hasNonStringLeaf(body.json);
  } else if (body && 'text' in body) strings.push(body.text);
  else if (body && 'bytes' in body) binaries.push(body.bytes);
  const all = strings.join('');
  const target = typeof request.target === 'string' ? request.target : '';
  if (body && 'repeat' in body) return body.size >= 10_000_000 ? 'body-10mb' : body.size >= 1_000_000 ? 'body-1mb' : 'body-large';
  if (all.includes('\0') || /%00/i.test(all) || /%00/i.test(target)) return 'nul';
  if (/[\x01-\x1f\x7f\x80-\x9f\u2028\u2029]/.test(all) || /%(0[1-9a-f]|1[0-9a-f]|7f)/i.test(all)) return 'control-chars';
  if (binaries.some((bytes) => !isUtf8(bytes)) || /%(c0|c1|f[5-9a-f]|ed%[ab])/i.test(all) || /[\ud800-\udfff]/.test(all)) return 'invalid-utf8';
  if (all.includes('{{deep:') || depth > 8) return 'deep';
  if (strings.some((value) => value.length > 1000) || (typeof request.target !== 'string' ? request.target.length : target.length) > 2000) return 'long';
  if (repeated) return 'repeated';
  if (wrongType) return 'wrong-type';
  if (/[^\x00-\x7f]/.test(all)) return 'unicode';
  return 'plain';
}

function hasNonStringLeaf(value: object): boolean {
  return Object.values(value).some((item) => (item !== null && typeof item === 'object' ? hasNonStringLeaf(item) : typeof item !== 'string'));
}

function isUtf8(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}
