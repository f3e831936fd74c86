import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { InvalidConfigError, loadEnv } from '../../../src/config/env.js';

describe('loadEnv', () => {
  it('applies defaults when nothing is set', () => {
    const env = loadEnv({});
    expect(env.PORT).toBe(3000);
    expect(env.SIGNING_ALG).toBe('ES256');
    expect(env.LOG_REQUESTS).toBe(true);
    expect(env.apiUrl).toBe('http://localhost:3000');
  });

  it('converts numbers and booleans from strings', () => {
    const env = loadEnv({ PORT: '8080', LOG_REQUESTS: 'false' });
    expect(env.PORT).toBe(8080);
    expect(env.LOG_REQUESTS).toBe(false);
    expect(env.frontendUrl).toBe('http://localhost:8080');
  });

  it('names the variable in a one-line message for a bad value', () => {
    expect(() => loadEnv({ PORT: 'eighty' })).toThrow(/^Invalid configuration: PORT must be an integer number \(got "eighty"\)$/);
    expect(() => loadEnv({ SIGNING_ALG: 'HS256' })).toThrow(/SIGNING_ALG must be one of the following values: ES256, RS256 \(got "HS256"\)/);
    expect(() => loadEnv({ LOG_REQUESTS: 'maybe' })).toThrow(/LOG_REQUESTS must be a boolean value \(got "maybe"\)/);
  });

  it('lists every problem, one line each', () => {
    try {
      loadEnv({ PORT: '-1', API_URL: 'ftp://x', DATABASE_URL: 'mysql://a' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidConfigError);
      const lines = (error as InvalidConfigError).problems;
      expect(lines).toHaveLength(3);
      expect(lines.map((line) => line.split(' ')[2])).toEqual(expect.arrayContaining(['PORT', 'API_URL', 'DATABASE_URL']));
    }
  });

  it('ignores unrelated variables and treats empty strings as unset', () => {
    const env = loadEnv({ PATH: '/bin', DATABASE_URL: '', API_URL: 'https://api.example.com/' });
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.apiUrl).toBe('https://api.example.com');
    expect((env as unknown as Record<string, unknown>).PATH).toBeUndefined();
  });

  it('takes TRUST_PROXY as true, false, a hop count, or addresses and ranges, and names it for anything else', () => {
    for (const value of ['true', 'false', '2', '10.0.0.1', '10.0.0.0/8, fd00::/8', 'loopback,uniquelocal', '::1']) expect(loadEnv({ TRUST_PROXY: value }).TRUST_PROXY).toBe(value);
    for (const value of ['maybe', '10.0.0.300', '10.0.0.0/33', 'yes,10.0.0.1', ',']) {
      expect(() => loadEnv({ TRUST_PROXY: value }), value).toThrow(
        `Invalid configuration: TRUST_PROXY must be true, false, a hop count, or comma-separated addresses/CIDRs (got ${JSON.stringify(value)})`,
      );
    }
  });

  it("takes a relative DATA_DIR from the application's folder, not the working directory", () => {
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const cwd = process.cwd();
    process.chdir(tmpdir());
    try {
      expect(loadEnv({}).dataDir).toBe(join(root, '.data'));
      expect(loadEnv({ DATA_DIR: 'var/db' }).dataDir).toBe(join(root, 'var/db'));
      expect(loadEnv({ DATA_DIR: '/srv/voyage' }).dataDir).toBe('/srv/voyage');
    } finally {
      process.chdir(cwd);
    }
  });

  it('refuses an IDP_HTTP_TIMEOUT_MS not shorter than REQUEST_TIMEOUT_MS in one line, and shrinks its default to half a shorter REQUEST_TIMEOUT_MS', () => {
    expect(() => loadEnv({ IDP_HTTP_TIMEOUT_MS: '20000' })).toThrow(
      /^Invalid configuration: IDP_HTTP_TIMEOUT_MS \(20000\) must be less than REQUEST_TIMEOUT_MS \(10000\): a call to an identity provider is part of a request, which is answered 503 at REQUEST_TIMEOUT_MS$/,
    );
    expect(() => loadEnv({ IDP_HTTP_TIMEOUT_MS: '3000', REQUEST_TIMEOUT_MS: '3000' })).toThrow(/IDP_HTTP_TIMEOUT_MS \(3000\) must be less than REQUEST_TIMEOUT_MS \(3000\)/);
    expect(loadEnv({ IDP_HTTP_TIMEOUT_MS: '2999', REQUEST_TIMEOUT_MS: '3000' }).IDP_HTTP_TIMEOUT_MS).toBe(2999);
    expect(loadEnv({}).IDP_HTTP_TIMEOUT_MS).toBe(5000);
    expect(loadEnv({ REQUEST_TIMEOUT_MS: '3000' }).IDP_HTTP_TIMEOUT_MS).toBe(1500);
  });

  it('requires TLS certificate and key together', () => {
    expect(() => loadEnv({ TLS_CERT_FILE: 'cert.pem' })).toThrow(/TLS_CERT_FILE and TLS_KEY_FILE/);
  });

  it('refuses a METRICS_ALLOWED_CIDRS entry that is no address or range while reading the settings, before anything starts', () => {
    expect(() => loadEnv({ METRICS_ALLOWED_CIDRS: '10.0.0.0/8, localhost' })).toThrow(
      /^Invalid configuration: METRICS_ALLOWED_CIDRS: "localhost" is neither an IPv4\/IPv6 address nor a CIDR range \(got "10\.0\.0\.0\/8, localhost"\)$/,
    );
    expect(loadEnv({ METRICS_ALLOWED_CIDRS: '127.0.0.1, ::1, 10.0.0.0/8' }).METRICS_ALLOWED_CIDRS).toBe('127.0.0.1, ::1, 10.0.0.0/8');
  });

  it('never shows a secret in its errors: the encryption key by its length, a database URL without its password', () => {
    const key = 'not-the-right-length-but-very-secret';
    expect(() => loadEnv({ KEYS_ENCRYPTION_KEY: key })).toThrow(`Invalid configuration: KEYS_ENCRYPTION_KEY must be 32 bytes as base64 or hex (got a value of ${key.length} characters)`);
    expect(() => loadEnv({ DATABASE_URL: 'mysql://app:hunter2@db.internal/voyage?password=hunter3' })).toThrow(
      'Invalid configuration: DATABASE_URL must be a postgres:// URL (got "mysql://app@db.internal/voyage")',
    );
    expect(() => loadEnv({ DATABASE_URL: 'postgres:// app:hunter2@db' })).toThrow('Invalid configuration: DATABASE_URL must be a postgres:// URL (got "postgres://%20app@db")');
  });

  it("runs the embedded PostgreSQL on a port outside Linux's ephemeral range (32768-60999), and not on PostgreSQL's own 5432", () => {
    const port = loadEnv({}).EMBEDDED_PG_PORT;
    expect(port < 32768 || port > 60999).toBe(true);
    expect(port).not.toBe(5432);
  });
});
