import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { type Env, InvalidConfigError } from '../config/env.js';

/** The operator's logo as the service serves it. */
export interface PortalLogo {
  bytes: Buffer;
  contentType: string;
  /** A strong ETag of the bytes; also the version in the logo's address, so a new file is a new address. */
  etag: string;
}

const MAX_BYTES = 256 * 1024;

/** The image types a page may show, by file extension, each with how its bytes begin. */
const TYPES: Record<string, { contentType: string; looksRight: (bytes: Buffer) => boolean }> = {
  '.png': { contentType: 'image/png', looksRight: (bytes) => bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) },
  '.jpg': { contentType: 'image/jpeg', looksRight: (bytes) => bytes.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff])) },
  '.jpeg': { contentType: 'image/jpeg', looksRight: (bytes) => bytes.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff])) },
  '.gif': { contentType: 'image/gif', looksRight: (bytes) => /^GIF8[79]a/.test(bytes.subarray(0, 6).toString('latin1')) },
  '.webp': { contentType: 'image/webp', looksRight: (bytes) => bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP' },
  '.svg': { contentType: 'image/svg+xml', looksRight: (bytes) => /<svg[\s>]/.test(bytes.subarray(0, 4096).toString('utf8')) },
};

/**
 * PORTAL_LOGO_FILE read and checked (an image type by its extension and its first bytes, at most
 * 256 KiB), or undefined without one. Anything else stops the start in one line, as a bad setting.
 */
export function readPortalLogo(env: Env): PortalLogo | undefined {
  const path = env.PORTAL_LOGO_FILE;
  if (!path) return undefined;
  const refuse = (why: string) => new InvalidConfigError([`Invalid configuration: PORTAL_LOGO_FILE ${path} ${why}`]);
  const type = TYPES[extname(path).toLowerCase()];
  if (!type) throw refuse(`is not a .png, .jpg, .gif, .webp or .svg file`);
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    throw refuse(`cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  if (bytes.length > MAX_BYTES) throw refuse(`is ${Math.ceil(bytes.length / 1024)} KiB: a logo may have 256 KiB at most`);
  if (!type.looksRight(bytes)) throw refuse(`is not the ${type.contentType} its name says`);
  return { bytes, contentType: type.contentType, etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 16)}"` };
}
