import fc from 'fast-check';
import type { BodySpec } from './http.js';
import { deepMarker, type FuzzRequest, type HeaderValue } from './requests.js';

/**
 * The input shapes the whole suite draws from: hostile text, wrong types, nesting, media types,
 * Authorization headers, path tricks, odd methods and headers, big bodies.
 */

// ---------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------

/** NUL, the other C0 controls that matter, DEL, C1, Unicode separators, BOM, lone surrogates, a noncharacter. */
export const controlChar = fc.constantFrom('\0', '\x01', '\x08', '\t', '\n', '\x0b', '\r', '\x1b', '\x7f', '\x85', '\u2028', '\ufeff', '\ud800', '\udfff', '\uffff');

/** 1,000 to 4,000 characters: past column limits, index row sizes, header lines. */
export const longText = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1_000, maxLength: 4_000 }),
  fc.string({ unit: 'grapheme-ascii', minLength: 1_000, maxLength: 4_000 }),
);

/** Any text: the whole code point range, graphemes, ASCII, control characters, long values. */
export const anyText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit: fc.oneof(controlChar, fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 })), maxLength: 30 }) },
  { weight: 1, arbitrary: longText },
);

/** Text that can stand in a header line: anything but CR and LF (those would frame a different request). */
export const headerText = anyText.map((text) => text.replace(/[\r\n]/g, ''));

/** A real value (or placeholder), hostile text, the real value with a control character before or after it, or empty. */
export function fieldValue(...real: string[]): fc.Arbitrary<string> {
  const arbitraries: fc.WeightedArbitrary<string>[] = [
    { weight: 3, arbitrary: anyText },
    { weight: 1, arbitrary: fc.constant('') },
  ];
  if (real.length > 0) {
    arbitraries.push(
      { weight: 4, arbitrary: fc.constantFrom(...real) },
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...real), controlChar, fc.boolean()).map(([value, char, before]) => (before ? char + value : value + char)) },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...real), longText).map(([value, tail]) => value + tail) },
    );
  }
  return fc.oneof(...arbitraries);
}

/** Percent sequences that do not decode to UTF-8 (or at all): lone continuation, overlong, surrogate, truncated, not hex. */
export const badPercent = fc.constantFrom('%FF', '%C0%AF', '%C3%28', '%ED%A0%80', '%E0%A4%A', '%F4%90%80%80', '%', '%%', '%zz', '%u0041', '%00', '%0D%0A', '%252F');

/** Percent-encodes UTF-8 bytes, keeping RFC 3986 unreserved characters and `{{placeholders}}` as they are. */
export function pct(text: string): string {
  return text
    .split(/(\{\{\w+\}\})/)
    .map((part, index) =>
      index % 2 === 1 ? part : [...Buffer.from(part, 'utf8')].map((byte) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)).join(''),
    )
    .join('');
}

// ---------------------------------------------------------------------------------------------
// Parameters: forms and query strings
// ---------------------------------------------------------------------------------------------

export type Fields = Record<string, fc.Arbitrary<string>>;

/** Each field absent, present, or repeated, plus a few unknown parameters; as name/value pairs. */
export function paramsOf(fields: Fields): fc.Arbitrary<[string, string][]> {
  const perField = Object.entries(fields).map(([name, value]) =>
    fc.oneof(
      { weight: 1, arbitrary: fc.constant([] as [string, string][]) },
      { weight: 5, arbitrary: value.map((item): [string, string][] => [[name, item]]) },
      { weight: 1, arbitrary: fc.array(value, { minLength: 2, maxLength: 3 }).map((items) => items.map((item): [string, string] => [name, item])) },
    ),
  );
  const unknown = fc.array(fc.tuple(fc.oneof(fc.webSegment(), anyText), anyText), { maxLength: 2 });
  return fc.tuple(fc.tuple(...perField), unknown).map(([known, extra]) => [...known.flat(), ...extra]);
}

/**
 * A valid request's parameters with up to three of them changed (fuzzed, dropped, or repeated
 * with a fuzzed second value), plus maybe an unknown one. Starting from a valid request gets past
 * the first checks to the deep ones, and a counterexample shrinks to the one change that matters.
 */
export function paramsAround(valid: [string, string][], fields: Fields): fc.Arbitrary<[string, string][]> {
  type Change = { to: 'value' | 'repeat'; value: string } | { to: 'absent' };
  const changes = valid.map(([name]) => {
    const fuzzed = fields[name] ?? anyText;
    return fc.oneof(
      { weight: 4, arbitrary: fuzzed.map((value): Change => ({ to: 'value', value })) },
      { weight: 1, arbitrary: fc.constant<Change>({ to: 'absent' }) },
      { weight: 1, arbitrary: fuzzed.map((value): Change => ({ to: 'repeat', value })) },
    );
  });
  const unknown = fc.array(fc.tuple(fc.oneof(fc.webSegment(), anyText), anyText), { maxLength: 1 });
  return fc.tuple(fc.subarray(valid.map((_, index) => index), { maxLength: Math.min(3, valid.length) }), fc.tuple(...changes), unknown).map(([changed, planned, extra]) => [
    ...valid.flatMap(([name, real], index): [string, string][] => {
      if (!changed.includes(index)) return [[name, real]];
      const change = planned[index];
      if (change.to === 'absent') return [];
      return change.to === 'repeat' ? [[name, real], [name, change.value]] : [[name, change.value]];
    }),
    ...extra,
  ]);
}

/** The JSON counterpart: a valid object with up to three fields replaced by hostile values or wrong types, or dropped. */
export function objectAround(valid: Record<string, unknown>, fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(valid);
  const changes = names.map((name) =>
    fc.oneof({ weight: 5, arbitrary: (fields[name] ?? jsonFieldValue()).map((value) => ({ value })) }, { weight: 1, arbitrary: fc.constant(null) }),
  );
  const unknown = fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'prototype')), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 });
  return fc.tuple(fc.subarray(names, { maxLength: Math.min(3, names.length) }), fc.tuple(...changes), fc.option(unknown, { freq: 4 })).map(([changed, replacements, extra]) => {
    const object: Record<string, unknown> = {};
    const set = (key: string, value: unknown) => Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
    names.forEach((name, index) => {
      if (!changed.includes(name)) set(name, valid[name]);
      else if (replacements[index] !== null) set(name, replacements[index]!.value);
    });
    for (const [key, value] of Object.entries(extra ?? {})) set(key, value);
    return object;
  });
}

/** A query string from random pairs or pairs around `valid` (percent-encoded, placeholders kept), or with raw bad percent sequences spliced in. */
export function queryOf(fields: Fields, valid?: [string, string][]): fc.Arbitrary<string> {
  const params = valid ? fc.oneof(paramsOf(fields), paramsAround(valid, fields)) : paramsOf(fields);
  const encoded = params.map((pairs) => pairs.map(([name, value]) => `${pct(name)}=${pct(value)}`).join('&'));
  const names = Object.keys(fields);
  const spliced = fc
    .tuple(encoded, fc.constantFrom(...names), badPercent, fc.string({ unit: 'grapheme-ascii', maxLength: 8 }))
    .map(([query, name, bad, text]) => `${query}${query ? '&' : ''}${name}=${pct(text)}${bad}`);
  return fc.oneof({ weight: 4, arbitrary: encoded }, { weight: 1, arbitrary: spliced }, { weight: 1, arbitrary: fc.webQueryParameters() });
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

/** Values of the wrong type where a string is expected. */
export const wrongType: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
  fc.object({ maxDepth: 2, values: [fc.jsonValue({ maxDepth: 1 })] }),
);

/** Nested arrays and objects of any shape (fc.letrec), a few levels deep. */
export const nestedJson: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown; array: unknown[]; object: Record<string, unknown> }>((tie) => ({
  node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.jsonValue({ maxDepth: 0 }), tie('array'), tie('object')),
  array: fc.array(tie('node'), { maxLength: 3 }),
  object: fc.dictionary(fc.string({ maxLength: 4 }), tie('node'), { maxKeys: 3 }),
})).node;

/** Pathological depth, rendered at send time (see deepMarker): from a few levels to 100,000. */
export const deepValue = fc.tuple(fc.constantFrom('array' as const, 'object' as const), fc.integer({ min: 2, max: 100_000 })).map(([container, depth]) => deepMarker(container, depth));

/** Where a string field is expected: a hostile string, a wrong type, nesting, or pathological depth. */
export function jsonFieldValue(...real: string[]): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 4, arbitrary: fieldValue(...real) },
    { weight: 2, arbitrary: wrongType },
    { weight: 1, arbitrary: nestedJson },
    { weight: 1, arbitrary: deepValue },
  );
}

// ---------------------------------------------------------------------------------------------
// Bodies and media types
// ---------------------------------------------------------------------------------------------

export const FORM = 'application/x-www-form-urlencoded';
export const JSON_TYPE = 'application/json';

/** Content types that are wrong, odd, or almost right. */
export const oddMediaType = fc.oneof(
  fc.constantFrom(
    'text/plain',
    'text/csv',
    'application/octet-stream',
    'multipart/form-data; boundary=xyz',
    'multipart/form-data',
    'application/xml',
    'application/json; charset=utf-16',
    'application/json; charset=bogus',
    'application/JSON',
    'application/json;;',
    'application/x-www-form-urlencoded; charset=iso-8859-1',
    'APPLICATION/X-WWW-FORM-URLENCODED',
    'application/x-www-form-urlencoded, application/json',
    'application/jwt',
    'application/merge-patch+json',
    '*/*',
    '',
    ';',
    'application/',
    'application/json\u0000',
  ),
  headerText,
);

/** A body whose media type and content disagree with the route (or with each other), or that is not text at all. */
export function confusedBody(form: fc.Arbitrary<[string, string][]>, json: fc.Arbitrary<unknown>): fc.Arbitrary<{ kind: string; contentType?: string; body: BodySpec }> {
  return fc.oneof(
    json.map((value) => ({ kind: 'json', contentType: JSON_TYPE, body: { json: value } })),
    form.map((pairs) => ({ kind: 'form', contentType: FORM, body: { form: pairs } })),
    fc.tuple(oddMediaType, fc.oneof(form.map((pairs): BodySpec => ({ form: pairs })), json.map((value): BodySpec => ({ json: value })))).map(([contentType, body]) => ({ kind: 'wrong-media-type', contentType, body })),
    fc.oneof(form.map((pairs): BodySpec => ({ form: pairs })), json.map((value): BodySpec => ({ json: value }))).map((body) => ({ kind: 'missing-media-type', body })),
    fc.tuple(fc.constantFrom(FORM, JSON_TYPE, 'text/plain'), fc.uint8Array({ minLength: 1, maxLength: 200 })).map(([contentType, bytes]) => ({ kind: 'raw-bytes', contentType, body: { bytes } })),
    fc.tuple(fc.constantFrom(FORM, JSON_TYPE), fc.json(), badPercent).map(([contentType, text, bad]) => ({ kind: 'invalid-utf8', contentType, body: { bytes: invalidUtf8(text, bad) } })),
    fc.constantFrom(FORM, JSON_TYPE).chain((contentType) => fc.json().map((text) => ({ kind: 'json-text', contentType, body: { text } }))),
  );
}

/** `text` with raw bytes that are not UTF-8 in it (0xFF, an overlong slash, a lone surrogate, a truncated sequence). */
function invalidUtf8(text: string, hint: string): Uint8Array {
  const raw = { '%FF': [0xff], '%C0%AF': [0xc0, 0xaf], '%ED%A0%80': [0xed, 0xa0, 0x80], '%E0%A4%A': [0xe0, 0xa4] }[hint] ?? [0xc3, 0x28];
  const bytes = Buffer.from(text, 'utf8');
  const middle = Math.floor(bytes.length / 2);
  return Buffer.concat([bytes.subarray(0, middle), Buffer.from(raw), bytes.subarray(middle)]);
}

/** 1 MB and 10 MB (and just over the 64 KiB limit), with a media type a route might parse. */
export const bigBody = fc
  .tuple(fc.constantFrom(70_000, 1_048_576, 10_485_760), fc.constantFrom(FORM, JSON_TYPE, 'text/plain', 'application/octet-stream'), fc.constantFrom('length' as const, 'chunked' as const), fc.constantFrom('a', '[', '{"a":', '%00', 'a=b&'))
  .map(([size, contentType, framing, unit]) => ({ size, contentType, framing, unit }));

// ---------------------------------------------------------------------------------------------
// Authorization
// ---------------------------------------------------------------------------------------------

/** JWT-shaped text that is not one of ours: random JSON segments, alg none, garbage signature. */
export const jwtLike = fc
  .tuple(fc.oneof(fc.json(), fc.constant('{"alg":"none","typ":"at+jwt"}'), fc.constant('{"alg":"HS256","kid":"x"}')), fc.json(), fc.oneof(fc.base64String({ maxLength: 80 }), fc.constant('')))
  .map(([header, payload, signature]) => `${Buffer.from(header).toString('base64url')}.${Buffer.from(payload).toString('base64url')}.${signature.replace(/=+$/, '')}`);

/** A bearer credential: a real token, a forged or truncated one, JWT-shaped garbage, hostile text, or a huge value. */
export function bearerToken(...real: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...real) },
    { weight: 1, arbitrary: fc.constantFrom(...real).map((token) => `${token}x`) },
    { weight: 1, arbitrary: fc.constantFrom(...real).map((token) => token.replace(/\}\}$/, '}}.')) },
    { weight: 2, arbitrary: jwtLike },
    { weight: 2, arbitrary: headerText },
    { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.'), minLength: 5_000, maxLength: 20_000 }) },
  );
}

/** Authorization headers: real ones, wrong schemes, bad spacing, Basic with garbage, wrong base64, bytes, huge. */
export function authorization(options: { bearer?: string[]; basic?: [string, string][] }): fc.Arbitrary<HeaderValue> {
  const bearer = options.bearer ?? [];
  const basic = options.basic ?? [];
  const arbitraries: fc.Arbitrary<HeaderValue>[] = [
    fc.tuple(fc.constantFrom('Bearer', 'bearer', 'BEARER', 'Basic', 'basic', 'Digest', 'Negotiate', 'DPoP', 'Token', 'Bearer,', ''), fc.constantFrom(' ', '  ', '\t', '', ' \t '), bearerToken(...(bearer.length ? bearer : ['x']))).map(([scheme, space, token]) => `${scheme}${space}${token}`),
    fc.uint8Array({ maxLength: 64 }).map((bytes) => `Basic ${Buffer.from(bytes).toString('base64')}`),
    fc.tuple(headerText, fc.constantFrom('', '=', '==', '===', '!', '%')).map(([text, tail]) => `Basic ${text}${tail}`),
    fc.tuple(fieldValue(...basic.map(([id]) => id)), fieldValue(...basic.map(([, secret]) => secret)), fc.constantFrom('form' as const, 'raw' as const)).map(
      ([id, secret, encoding]): HeaderValue => ({ basic: [id, secret], encoding }),
    ),
    fc.tuple(fc.constantFrom(...(basic.length ? basic.map(([id]) => id) : ['x'])), badPercent).map(([id, bad]) => `Basic ${Buffer.from(`${id}${bad}:x`).toString('base64')}`),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Uint8Array.from(bytes.filter((byte) => byte !== 10 && byte !== 13))),
  ];
  if (bearer.length) arbitraries.push(fc.constantFrom(...bearer).map((token) => `Bearer ${token}`));
  if (basic.length) arbitraries.push(fc.constantFrom(...basic).map(([id, secret]): HeaderValue => ({ basic: [id, secret], encoding: 'form' })));
  return fc.oneof(...arbitraries);
}

// ---------------------------------------------------------------------------------------------
// The envelope: methods, paths, headers
// ---------------------------------------------------------------------------------------------

export const oddMethod = fc.oneof(
  fc.constantFrom('PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'CONNECT', 'PROPFIND', 'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'SEARCH', 'QUERY', 'PURGE', 'REPORT', 'MKCALENDAR', 'LINK', 'UNLINK', 'SOURCE', 'M-SEARCH', 'NOTIFY', 'SUBSCRIBE', 'get', 'Post', 'BREW'),
  fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZ-_!'), minLength: 1, maxLength: 30 }),
);

/** Encoded slashes, dot segments, %00, double encoding, backslashes, case, long paths, raw bytes. */
export function pathTrick(path: string): fc.Arbitrary<string | Uint8Array> {
  const insertions = fc.constantFrom('%00', '%2f', '%2F', '%5c', '\\', '%2e%2e/', '../', './', '/./', '//', '%252f', '%c0%af', '%ff', '%', '%%', '%zz', ';x=1', ';', '%20', '%09', '#frag', '?', '%3f', '%23', '..%2f', '.%2e/', '%u002e');
  // Placeholders keep their case: upper-casing "{{client_id}}" would name no value at all.
  const upper = path.split(/(\{\{\w+\}\})/).map((part, index) => (index % 2 === 1 ? part : part.toUpperCase())).join('');
  const fixed = [
    upper,
    `${path}/`,
    `${path}//`,
    `/${path}`,
    path.replace(/\//g, '//'),
    path.replace(/\//g, '%2F'),
    path.replace(/\//g, '%252F'),
    `/x/..${path}`,
    `${path}/..`,
    `${path}/.`,
    `/.${path}`,
    `/%2e%2e${path}`,
    path.replace(/[a-z]/, (char) => `%${char.charCodeAt(0).toString(16)}`),
    path.replace(/[a-z]/, (char) => `%25${char.charCodeAt(0).toString(16)}`),
    `${path}%00`,
    `${path}%00.json`,
    `${path}.json`,
    `http://localhost${path}`,
    `//evil.example${path}`,
    '*',
  ];
  return fc.oneof(
    fc.constantFrom(...fixed),
    fc.tuple(fc.nat({ max: path.length }), insertions).map(([at, text]) => path.slice(0, at) + text + path.slice(at)),
    fc.webPath().map((suffix) => path + suffix),
    fc.webSegment().map((segment) => `${path}/${segment}`),
    fc.integer({ min: 1_000, max: 20_000 }).map((length) => `${path}/${'a'.repeat(length)}`),
    fc.uint8Array({ minLength: 1, maxLength: 40 }).map((bytes) => Buffer.concat([Buffer.from(path), Buffer.from(bytes.filter((byte) => byte !== 10 && byte !== 13 && byte !== 32))])),
  );
}

/** Headers that change how a request is framed or handled: h2c and other upgrades, Transfer-Encoding tricks, Expect, odd Host, cookies. */
export const oddHeaders: fc.Arbitrary<{ headers: [string, HeaderValue][]; framing?: 'chunked'; label: string }> = fc.oneof(
  fc.constant({ label: 'upgrade-h2c', headers: [['Connection', 'Upgrade, HTTP2-Settings'], ['Upgrade', 'h2c'], ['HTTP2-Settings', 'AAMAAABkAARAAAAAAAIAAAAA']] as [string, HeaderValue][] }),
  fc.constant({ label: 'upgrade-h2c-no-connection', headers: [['Upgrade', 'h2c']] as [string, HeaderValue][] }),
  fc.constant({ label: 'upgrade-websocket', headers: [['Connection', 'Upgrade'], ['Upgrade', 'websocket'], ['Sec-WebSocket-Version', '13'], ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ==']] as [string, HeaderValue][] }),
  headerText.map((value) => ({ label: 'upgrade-garbage', headers: [['Connection', 'upgrade'], ['Upgrade', value]] as [string, HeaderValue][] })),
  fc.constantFrom('chunked', 'Chunked', 'gzip, chunked', 'chunked, chunked', ' chunked', 'chunked ', 'identity, chunked').map((value) => ({ label: 'transfer-encoding', framing: 'chunked' as const, headers: [['Transfer-Encoding', value]] as [string, HeaderValue][] })),
  fc.constantFrom('chunked, identity', 'gzip', 'identity', 'xchunked', 'chunked\u000b', 'chunk').map((value) => ({ label: 'transfer-encoding-not-chunked', headers: [['Transfer-Encoding', value], ['Content-Length', '0']] as [string, HeaderValue][] })),
  fc.constant({ label: 'te-and-length', framing: 'chunked' as const, headers: [['Transfer-Encoding', 'chunked'], ['Content-Length', '4']] as [string, HeaderValue][] }),
  fc.constant({ label: 'te-twice', framing: 'chunked' as const, headers: [['Transfer-Encoding', 'chunked'], ['Transfer-Encoding', 'chunked']] as [string, HeaderValue][] }),
  fc.constantFrom('100-continue', '100-Continue', 'something-else', '100-continue, foo').map((value) => ({ label: 'expect', headers: [['Expect', value]] as [string, HeaderValue][] })),
  fc.constantFrom('-1', '1, 2', '+5', '0x10', ' 3', '99999999999999999999', 'abc').map((value) => ({ label: 'content-length-malformed', headers: [['Content-Length', value]] as [string, HeaderValue][] })),
  fc.constant({ label: 'content-length-twice', headers: [['Content-Length', '0'], ['Content-Length', '5']] as [string, HeaderValue][] }),
  fc.oneof(headerText, fc.constantFrom('', 'a b', '[::1', 'localhost:99999', 'évil.example')).map((value) => ({ label: 'host', headers: [['Host', value]] as [string, HeaderValue][] })),
  fc.constant({ label: 'host-twice', headers: [['Host', 'a.example'], ['Host', 'b.example']] as [string, HeaderValue][] }),
  fc.oneof(headerText, fc.constantFrom('vc_csrf=%E0%A4%A', 'vc_csrf="unterminated', '=;=;=', 'a=b; a=c', 'vc_csrf=x; vc_csrf=y', '__proto__=1')).map((value) => ({ label: 'cookie', headers: [['Cookie', value]] as [string, HeaderValue][] })),
  headerText.map((value) => ({ label: 'x-request-id', headers: [['X-Request-Id', value]] as [string, HeaderValue][] })),
  fc.tuple(headerText, headerText).map(([forwarded, proto]) => ({ label: 'forwarded', headers: [['X-Forwarded-For', forwarded], ['X-Forwarded-Proto', proto], ['Forwarded', `for=${forwarded}`]] as [string, HeaderValue][] })),
  fc.tuple(headerText, headerText).map(([accept, encoding]) => ({ label: 'accept', headers: [['Accept', accept], ['Accept-Encoding', encoding], ['Accept-Language', accept]] as [string, HeaderValue][] })),
  fc.tuple(fc.webSegment(), headerText).map(([name, value]) => ({ label: 'unknown-header', headers: [[`X-${name || 'a'}`, value]] as [string, HeaderValue][] })),
  fc.integer({ min: 50, max: 300 }).map((count) => ({ label: 'many-headers', headers: Array.from({ length: count }, (_, index): [string, HeaderValue] => [`X-Fuzz-${index}`, 'x']) })),
  fc.uint8Array({ minLength: 1, maxLength: 60 }).map((bytes) => ({ label: 'header-bytes', headers: [['X-Bytes', Uint8Array.from(bytes.filter((byte) => byte !== 10 && byte !== 13))]] as [string, HeaderValue][] })),
  fc.constantFrom('HTTP/1.0', 'HTTP/0.9', 'HTTP/1.2', 'HTTP/2.0', 'HTTP/3', 'http/1.1', 'HTTX/1.1').map((version) => ({ label: `version ${version}`, headers: [] as [string, HeaderValue][] })),
);

/** A request carrying one of `confusedBody`'s bodies (its media type, if any, as Content-Type). */
export function withBody(
  request: Omit<FuzzRequest, 'kind'>,
  kind: string,
  body: { kind: string; contentType?: string; body: BodySpec } | null,
): FuzzRequest {
  if (!body) return { ...request, kind };
  const headers: [string, HeaderValue][] = body.contentType === undefined ? [] : [['Content-Type', body.contentType]];
  return { ...request, kind: `${kind}+${body.kind}`, headers: [...(request.headers ?? []), ...headers], body: body.body };
}

/** The route's own request with an odd method, a path trick, odd headers, a wrong media type or a big body. */
/** The double-submit value of the page fuzzers: any value works when the cookie and the form field agree. */
export const PAGE_CSRF = 'fuzz-csrf-0123456789abcdef';

/** A page's CSRF cookie: matching the form's field, another value, absent, doubled, under the https name, or hostile. */
export const pageCsrfCookie: fc.Arbitrary<HeaderValue | null> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(`vc_csrf=${PAGE_CSRF}`) },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant(`vc_csrf=other; vc_csrf=${PAGE_CSRF}`) },
  { weight: 1, arbitrary: fc.constant(`__Host-vc_csrf=${PAGE_CSRF}`) },
  { weight: 1, arbitrary: headerText.map((text) => `vc_csrf=${text}`) },
  { weight: 1, arbitrary: headerText },
);

/**
 * A page's form post (`route` is "POST /path") with a generated CSRF cookie: mostly a form as a
 * browser sends it; sometimes the same fields as JSON, a wrong media type or raw bytes.
 */
export function pageFormPost(route: string, pairs: fc.Arbitrary<[string, string][]>, fields: Fields): fc.Arbitrary<FuzzRequest> {
  const target = route.slice(route.indexOf(' ') + 1);
  return fc.tuple(pairs, pageCsrfCookie, fc.integer({ min: 0, max: 9 })).chain(([form, cookie, confusion]) => {
    const headers: [string, HeaderValue][] = cookie === null ? [] : [['Cookie', cookie]];
    const request = { route, method: 'POST', target, headers };
    if (confusion > 2) return fc.constant(withBody(request, 'form', { kind: 'fields', contentType: FORM, body: { form } }));
    const json = objectAround(Object.fromEntries(form), Object.fromEntries(Object.keys(fields).map((name) => [name, jsonFieldValue()])));
    return confusedBody(fc.constant(form), fc.oneof(json, fc.jsonValue())).map((body) => withBody(request, 'form', body));
  });
}

export interface RouteTemplate {
  method: string;
  /** Target with placeholders, e.g. "/sso/token" or "/external/oauth2helper/code/get/{{client_id}}?state={{state}}". */
  target: string;
  /** A body of the right kind for the route, if it takes one. */
  body?: { contentType: string; body: BodySpec };
  headers?: [string, HeaderValue][];
}

export function envelope(name: string, template: RouteTemplate): fc.Arbitrary<FuzzRequest> {
  const base = (kind: string): FuzzRequest => ({
    route: name,
    kind,
    method: template.method,
    target: template.target,
    headers: [...(template.headers ?? []), ...(template.body ? ([['Content-Type', template.body.contentType]] as [string, HeaderValue][]) : [])],
    body: template.body?.body,
  });
  const [path, search] = template.target.split(/\?(.*)/s);
  return fc.oneof(
    oddMethod.map((method) => ({ ...base('odd-method'), method })),
    pathTrick(path).map((target) => ({ ...base('path-trick'), target: typeof target === 'string' && search ? `${target}?${search}` : target })),
    oddHeaders.map(({ headers, framing, label }) => {
      const request = base(`header:${label}`);
      if (label.startsWith('version')) return { ...request, httpVersion: label.slice('version '.length) };
      const names = new Set(headers.map(([header]) => header.toLowerCase()));
      // A body long enough for any Content-Length the server might accept (" 3" is a valid 3).
      const body = request.body ?? (framing || label.startsWith('content-length') ? { text: 'abcdefgh' } : undefined);
      return { ...request, headers: [...(request.headers ?? []).filter(([header]) => !names.has(header.toLowerCase())), ...headers], body, framing };
    }),
    fc.tuple(oddMediaType, fc.option(fc.uint8Array({ maxLength: 100 }))).map(([contentType, bytes]) => ({
      ...base('wrong-media-type'),
      headers: [...(template.headers ?? []), ['Content-Type', contentType]] as [string, HeaderValue][],
      body: bytes ? { bytes } : (template.body?.body ?? { text: 'x' }),
    })),
    bigBody.map(({ size, contentType, framing, unit }) => ({
      ...base(size >= 10_000_000 ? 'body-10mb' : size >= 1_000_000 ? 'body-1mb' : 'body-over-limit'),
      headers: [...(template.headers ?? []), ['Content-Type', contentType]] as [string, HeaderValue][],
      body: { repeat: unit, size },
      framing,
    })),
  );
}

/** One value of `arbitrary`, always the same: for the examples every run tries first. */
export function sampleOf<T>(arbitrary: fc.Arbitrary<T>, seed = 1): T {
  return fc.sample(arbitrary, { seed, numRuns: 1 })[0];
}

/** The envelope cases every route must always get: h2c and WebSocket upgrades, CONNECT, TRACE, both framings at once, Expect. */
export function envelopeExamples(route: string, template: RouteTemplate): FuzzRequest[] {
  const headers = [...(template.headers ?? []), ...(template.body ? ([['Content-Type', template.body.contentType]] as [string, HeaderValue][]) : [])];
  const base: FuzzRequest = { route, kind: '', method: template.method, target: template.target, headers, body: template.body?.body };
  return [
    { ...base, kind: 'header:upgrade-h2c', headers: [...headers, ['Connection', 'Upgrade, HTTP2-Settings'], ['Upgrade', 'h2c'], ['HTTP2-Settings', 'AAMAAABkAARAAAAAAAIAAAAA']] },
    { ...base, kind: 'header:upgrade-websocket', headers: [...headers, ['Connection', 'Upgrade'], ['Upgrade', 'websocket'], ['Sec-WebSocket-Version', '13'], ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ==']] },
    { ...base, kind: 'odd-method', method: 'CONNECT' },
    { ...base, kind: 'odd-method', method: 'TRACE' },
    { ...base, kind: 'header:te-and-length', headers: [...headers, ['Transfer-Encoding', 'chunked'], ['Content-Length', '4']], body: base.body ?? { text: 'a=b' }, framing: 'chunked' },
    { ...base, kind: 'header:expect', headers: [...headers, ['Expect', '100-continue']] },
    { ...base, kind: 'path-trick', target: template.target.replace(/^\/([^/?]+)/, '/$1%00') },
  ];
}
