import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../../../src/config/env.js';
import { readPortalLogo } from '../../../src/portal/portal-logo.js';

const PNG_HEADER = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe('PORTAL_LOGO_FILE', () => {
  const dir = mkdtempSync(join(tmpdir(), 'voyage-connect-logo-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, bytes: Buffer | string) => {
    writeFileSync(join(dir, name), bytes);
    return loadEnv({ PORTAL_LOGO_FILE: join(dir, name) });
  };

  it('serves an image of the type its name says, with an ETag of its bytes', () => {
    const logo = readPortalLogo(file('logo.png', Buffer.concat([PNG_HEADER, Buffer.alloc(64)])))!;
    expect(logo.contentType).toBe('image/png');
    expect(logo.etag).toMatch(/^"[\w-]{16}"$/);
    expect(readPortalLogo(file('logo.SVG', '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"></svg>'))!.contentType).toBe('image/svg+xml');
    expect(readPortalLogo(loadEnv({}))).toBeUndefined();
  });

  it('refuses, in one line naming it, a file whose content is not its type, one over 256 KiB, or another type', () => {
    expect(() => readPortalLogo(file('fake.png', '<svg></svg>'))).toThrow(/^Invalid configuration: PORTAL_LOGO_FILE \S+fake\.png is not the image\/png its name says$/);
    expect(() => readPortalLogo(file('big.png', Buffer.concat([PNG_HEADER, Buffer.alloc(300 * 1024)])))).toThrow(/is 301 KiB: a logo may have 256 KiB at most$/);
    expect(() => readPortalLogo(file('logo.bmp', 'BM'))).toThrow(/is not a \.png, \.jpg, \.gif, \.webp or \.svg file$/);
  });

  it('takes a portal name of 1 to 60 characters without control characters', () => {
    expect(loadEnv({}).PORTAL_NAME).toBe('voyage-planning portal');
    expect(loadEnv({ PORTAL_NAME: 'Northwind Fleet Portal' }).PORTAL_NAME).toBe('Northwind Fleet Portal');
    expect(() => loadEnv({ PORTAL_NAME: 'x'.repeat(61) })).toThrow(/PORTAL_NAME/);
    expect(() => loadEnv({ PORTAL_NAME: 'Fleet\u0007Portal' })).toThrow(/PORTAL_NAME must not contain control characters/);
  });
});
