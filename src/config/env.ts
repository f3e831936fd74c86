import 'reflect-metadata';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { fileURLToPath } from 'node:url';
import { plainToInstance, Transform } from 'class-transformer';
import ipaddr from 'ipaddr.js';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  getMetadataStorage,
  validateSync,
} from 'class-validator';
import { StartupRefusal } from '../common/errors/startup-refusal.js';
import { InvalidAllowListEntry, parseAddressAllowList } from '../common/http/address-allow-list.js';
import { withoutPassword } from './without-password.js';

/** WS_COMPRESSION's values, listed here so config imports nothing of the stream; what each does is told in notification/streams/stream-compression.ts. */
export const WS_COMPRESSION_MODES = ['on', 'off', 'context-takeover'] as const;
export type WsCompression = (typeof WS_COMPRESSION_MODES)[number];

// Reads the raw string (obj[key]): implicit conversion would already have made "false" true.
const toBoolean = ({ obj, key }: { obj: Record<string, unknown>; key: string }) => {
  const raw = obj[key];
  if (typeof raw !== 'string') return raw;
  return ({ true: true, false: false, '1': true, '0': false } as Record<string, boolean>)[raw.toLowerCase()] ?? raw;
};
const httpUrl = { require_tld: false, require_protocol: true, protocols: ['http', 'https'] };

/** The application's folder: this file is src/config/env.ts, or dist/config/env.js once built. */
const APP_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The helper flow's token responses at /sso/token: expires_in is 3600 in all of them. */
export const USER_ACCESS_TOKEN_TTL = 3600;

/** Seconds resource servers may keep the JWKS (its Cache-Control max-age): how long a new signing key waits, by default, before it signs. */
export const JWKS_MAX_AGE = 60;

/** How long closing the pool, saving cursors and stopping the embedded database may take after requests are cut. */
export const SHUTDOWN_GRACE_MS = 15_000;

/**
 * Every setting of the service. Each property is one environment variable with its default;
 * `.env.example` documents the same list.
 */
export class Env {
  /** TCP port for HTTP, the login page and the WebSocket stream. */
  @Min(0) @Max(65535) @IsInt()
  PORT: number = 3000;

  /** Interface to listen on. */
  @IsString() @MinLength(1)
  HOST: string = '0.0.0.0';

  /** Environment name reported by /health. */
  @IsString() @MinLength(1)
  APP_ENV: string = 'development';

  /** pino log level. */
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL: string = 'info';

  /** External PostgreSQL; unset starts the embedded server under DATA_DIR. */
  @IsOptional() @Matches(/^postgres(ql)?:\/\/\S+$/, { message: '$property must be a postgres:// URL' })
  DATABASE_URL?: string;

  /** Largest number of pooled connections to PostgreSQL per instance. */
  @Min(1) @Max(1000) @IsInt()
  DATABASE_POOL_SIZE: number = 20;

  /** Milliseconds a pooled connection may wait to be handed out or opened before the request fails with 503. */
  @Min(100) @Max(60000) @IsInt()
  DATABASE_CONNECT_TIMEOUT_MS: number = 3000;

  /** Milliseconds one SQL statement may run (PostgreSQL statement_timeout) before it is cancelled. */
  @Min(100) @Max(600000) @IsInt()
  DATABASE_STATEMENT_TIMEOUT_MS: number = 5000;

  /** Milliseconds a statement may wait for a lock (PostgreSQL lock_timeout) before it gives up. */
  @Min(100) @Max(600000) @IsInt()
  DATABASE_LOCK_TIMEOUT_MS: number = 2000;

  /** Folder for the embedded PostgreSQL data and its credentials; a relative one lies in the application's folder. */
  @IsString() @MinLength(1)
  DATA_DIR: string = './.data';

  /** Port of the embedded PostgreSQL on 127.0.0.1 (ignored with DATABASE_URL); below the ports the system hands out to outgoing connections (32768 and up). */
  @Min(1) @Max(65535) @IsInt()
  EMBEDDED_PG_PORT: number = 25432;

  /** Public base URL of the API ({api_url}); default http://localhost:$PORT. */
  @IsOptional() @IsUrl(httpUrl)
  API_URL?: string;

  /** Public base URL of the web frontend ({frontend_url}); default http://localhost:$PORT. */
  @IsOptional() @IsUrl(httpUrl)
  FRONTEND_URL?: string;

  /** Public base URL of the identity provider ({identity_url}); default http://localhost:$PORT. */
  @IsOptional() @IsUrl(httpUrl)
  IDENTITY_URL?: string;

  /** Fastify trustProxy: false, true, a hop count, or comma-separated addresses/CIDRs. */
  @IsString()
  TRUST_PROXY: string = 'false';

  /** PEM certificate; with TLS_KEY_FILE the service serves https:// and wss:// itself. */
  @IsOptional() @IsString()
  TLS_CERT_FILE?: string;

  /** PEM private key for TLS_CERT_FILE. */
  @IsOptional() @IsString()
  TLS_KEY_FILE?: string;

  /** The portal's name, at the top of every page and in "Use your … account": whose pages these are. */
  @IsString() @MinLength(1) @MaxLength(60) @Matches(/^[^\u0000-\u001f\u007f-\u009f]*$/, { message: '$property must not contain control characters' })
  PORTAL_NAME: string = 'voyage-planning portal';

  /** A logo beside the portal's name on every page: a PNG, JPEG, GIF, WebP or SVG file of at most 256 KiB, read at start. */
  @IsOptional() @IsString()
  PORTAL_LOGO_FILE?: string;

  /**
   * Algorithm of access tokens and the service's other JWTs. The service keeps an active key of
   * each of ES256 and RS256 (ID tokens use their client's), so a change only picks the other key.
   */
  @IsIn(['ES256', 'RS256'])
  SIGNING_ALG: string = 'ES256';

  /**
   * Key-encryption key for the private signing keys at rest: 32 random bytes as base64 or hex
   * (`openssl rand -base64 32`). Required with APP_ENV=production.
   */
  @IsOptional() @Matches(/^(?:[A-Za-z0-9+/]{43}=|[A-Za-z0-9_-]{43}|[0-9a-fA-F]{64})$/, { message: '$property must be 32 bytes as base64 or hex' })
  KEYS_ENCRYPTION_KEY?: string;

  /**
   * Seconds a key made by keys:rotate is published before it signs,
   * so instances and resource servers holding the JWKS know it first; 0 signs at once (tests, one instance).
   */
  @Min(0) @Max(86400) @IsInt()
  KEY_ACTIVATION_DELAY: number = JWKS_MAX_AGE;

  /** Comma-separated resource servers (RFC 8707) a client may name as `resource`; unset: the API URL only. */
  @IsOptional() @IsString()
  ALLOWED_RESOURCES?: string;

  /** Seconds a client-credentials access token lives (its stream is closed with 4003 then). */
  @Min(5) @Max(86400) @IsInt()
  CLIENT_TOKEN_TTL: number = 3600;

  /** Scope a client-credentials token gets when the request names none. */
  @Matches(/^[\x21\x23-\x5B\x5D-\x7E]+$/, { message: '$property must be one scope token (RFC 6749 §3.3)' })
  DEFAULT_CLIENT_SCOPE: string = 'notification:subscribe';

  /** The scopes a client registered from software (POST /sso/register) may be given, space-separated; the OpenID Connect ones are always allowed. */
  @Matches(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, { message: '$property must be scope tokens (RFC 6749 §3.3) separated by single spaces' })
  REGISTRATION_SCOPES: string = 'notification:subscribe';

  /** Most clients one `clients:register` token's client may register in a minute; the next is refused with 429 and Retry-After. */
  @Min(1) @Max(100_000) @IsInt()
  REGISTRATION_RATE_LIMIT: number = 60;

  /** Seconds a browser's sign-in at the service lasts (single sign-on): within it, sign-in pages ask for no password. */
  @Min(60) @Max(2592000) @IsInt()
  SESSION_TTL: number = 43200;

  /** Seconds a helper state (the sign-in link of endpoint 1) stays valid. */
  @Min(60) @Max(86400) @IsInt()
  STATE_TTL: number = 600;

  /** Seconds an authorization code stays valid (the helper flow allows 30 to 60). */
  @Min(30) @Max(60) @IsInt()
  AUTH_CODE_TTL: number = 60;

  /** Seconds a refresh token stays valid; every refresh issues a new one. */
  @Min(60) @Max(365 * 86400) @IsInt()
  REFRESH_TOKEN_TTL: number = 14 * 86400;

  /** Seconds after a rotation in which the old refresh token is refused without revoking the grant (0: reuse always revokes). */
  @Min(0) @Max(60) @IsInt()
  REFRESH_REUSE_GRACE: number = 0;

  /**
   * Milliseconds each call to an upstream identity provider (discovery, keys, token, revocation) may
   * take; less than REQUEST_TIMEOUT_MS, which bounds them together (unset: 5000, or half of a
   * shorter REQUEST_TIMEOUT_MS).
   */
  @Min(100) @Max(60000) @IsInt()
  IDP_HTTP_TIMEOUT_MS: number = 5000;

  /** Seconds of clock difference tolerated in an upstream provider's ID token (exp, iat). */
  @Min(0) @Max(300) @IsInt()
  IDP_CLOCK_TOLERANCE: number = 60;

  /** Seconds between two re-checks of a brokered user at their provider on refresh (0: every refresh). */
  @Min(0) @Max(86400) @IsInt()
  IDP_RECHECK_INTERVAL: number = 0;

  /** Seconds a device must wait between two polls of one state (faster polls get 429). */
  @Min(0) @Max(60) @IsInt()
  CODE_POLL_MIN_INTERVAL: number = 4;

  /** Seconds a device code of the standard device flow (RFC 8628) stays valid: its `expires_in`. */
  @Min(60) @Max(1800) @IsInt()
  DEVICE_CODE_TTL: number = 600;

  /** Seconds a device must wait between two polls of one device code at first: its `interval` (each `slow_down` adds 5). */
  @Min(1) @Max(60) @IsInt()
  DEVICE_POLL_INTERVAL: number = 5;

  /** Seconds between purges of expired states, codes and tokens. */
  @Min(1) @Max(86400) @IsInt()
  HOUSEKEEPING_INTERVAL: number = 60;

  /** Seconds a notification is kept for a recipient that has not received it (7 days). */
  @Min(1) @Max(90 * 86400) @IsInt()
  NOTIFICATION_RETENTION: number = 7 * 86400;

  /** Seconds an administrative change is kept in the audit trail (365 days): events:list and GET /admin/v1/events reach this far back. */
  @Min(1) @Max(10 * 366 * 86400) @IsInt()
  AUDIT_RETENTION: number = 365 * 86400;

  /** Most notifications in one request to the batch publish route; more is refused with 413. */
  @Min(1) @Max(10_000) @IsInt()
  PUBLISH_BATCH_MAX: number = 1000;

  /** Largest body the batch publish route reads, in bytes (4 MiB); a larger one is refused with 413. */
  @Min(65_536) @Max(64 * 1024 * 1024) @IsInt()
  PUBLISH_BATCH_MAX_BYTES: number = 4 * 1024 * 1024;

  /** Publishes that may wait for a transaction on an instance; a publish or batch request that finds this many waiting is answered 503. */
  @Min(1) @Max(1_000_000) @IsInt()
  PUBLISH_QUEUE_MAX: number = 10_000;

  /**
   * Milliseconds a publish transaction runs alone before another starts beside it: publishes that
   * arrive meanwhile share the next commit (group commit). 0 starts one at once, up to four.
   */
  @Min(0) @Max(1_000) @IsInt()
  PUBLISH_GROUP_COMMIT_MS: number = 10;

  /** Most WebSocket connections one instance holds; the next one is closed with 1008. */
  @Min(1) @Max(1_000_000) @IsInt()
  WS_MAX_CONNECTIONS: number = 10000;

  /** Seconds between pings; a connection that missed the previous pong is dropped. */
  @Min(1) @Max(3600) @IsInt()
  WS_HEARTBEAT_INTERVAL: number = 30;

  /** permessage-deflate on the stream, for clients that offer it: `on` (no context kept between messages), `off`, or `context-takeover` (fewer bytes, 1 KiB of window per connection). */
  @IsIn(WS_COMPRESSION_MODES)
  WS_COMPRESSION: WsCompression = 'on';

  /** Largest frame a client may send, in bytes (clients have nothing to say; bigger frames close the connection). */
  @Min(16) @Max(1_048_576) @IsInt()
  WS_MAX_INCOMING_BYTES: number = 4096;

  /** Bytes a connection may have waiting to be sent before it is closed as a slow consumer (it gets the rest on reconnect). */
  @Min(1024) @Max(64 * 1_048_576) @IsInt()
  WS_MAX_BUFFERED_BYTES: number = 1_048_576;

  /** Milliseconds a stream that was told to close (slow, token expired, revoked, shutdown) has to take the rest before its socket is destroyed: ws's close timer for a WebSocket, the same bound for an event stream. */
  @Min(100) @Max(300_000) @IsInt()
  WS_CLOSE_TIMEOUT_MS: number = 30_000;

  /** Most stream connections one client may hold on an instance; the next one is closed with 1008. */
  @Min(1) @Max(1_000_000) @IsInt()
  WS_MAX_CONNECTIONS_PER_CLIENT: number = 100;

  /** Comma-separated origins allowed to open the stream from a browser; unset allows any (devices send none). */
  @IsOptional() @IsString()
  WS_ALLOWED_ORIGINS?: string;

  /** Seconds a previous client secret keeps working after client:rotate-secret. */
  @Min(0) @Max(30 * 86400) @IsInt()
  CLIENT_SECRET_OVERLAP: number = 86400;

  /** Milliseconds /health waits for PostgreSQL before calling it down. */
  @Min(100) @Max(60000) @IsInt()
  HEALTH_DB_TIMEOUT_MS: number = 2000;

  /** Milliseconds SIGTERM waits for in-flight requests before closing them. */
  @Min(0) @Max(600000) @IsInt()
  SHUTDOWN_TIMEOUT_MS: number = 10000;

  /** Milliseconds between SIGTERM and the start of the shutdown, with /health already 503 (for load balancers to notice). */
  @Min(0) @Max(600000) @IsInt()
  SHUTDOWN_DELAY_MS: number = 0;

  /** Milliseconds a request may take before it is answered 503 (its database work is bounded by the timeouts above anyway); a stream's start too (closed with 1013). */
  @Min(1000) @Max(600000) @IsInt()
  REQUEST_TIMEOUT_MS: number = 10000;

  /** Milliseconds a client may take to send a request's headers; slower connections are cut. */
  @Min(1000) @Max(600000) @IsInt()
  HTTP_HEADERS_TIMEOUT_MS: number = 10000;

  /** Milliseconds a client may take to send a whole request, headers and body; slower ones are answered 408 and cut. */
  @Min(1000) @Max(600000) @IsInt()
  HTTP_RECEIVE_TIMEOUT_MS: number = 30000;

  /** Password checks (argon2) running at once on an instance; a sign-in beyond them is answered 503 at once. */
  @Min(1) @Max(256) @IsInt()
  PASSWORD_CHECK_CONCURRENCY: number = 4;

  /** Comma-separated addresses/CIDRs allowed to read /metrics; unset allows any. */
  @IsOptional() @IsString()
  METRICS_ALLOWED_CIDRS?: string;

  /** Log HTTP requests (method, path, status, time; never queries or headers). */
  @Transform(toBoolean) @IsBoolean()
  LOG_REQUESTS: boolean = true;

  /** Longest lifetime of anything signed with the keys: how long a retired key stays published. */
  get longestSignedLifetime() {
    return Math.max(USER_ACCESS_TOKEN_TTL, this.CLIENT_TOKEN_TTL, this.STATE_TTL);
  }

  /**
   * The longest a stop may take, from SIGTERM to exit: the delay, the drain, then the grace for
   * closing; a supervisor's stop timeout must be longer.
   */
  get shutdownDeadlineMs() {
    return this.SHUTDOWN_DELAY_MS + this.SHUTDOWN_TIMEOUT_MS + SHUTDOWN_GRACE_MS;
  }

  /** Resource servers a token may be issued for (RFC 8707), without trailing slashes. */
  get allowedResources(): string[] {
    const listed = this.ALLOWED_RESOURCES?.split(',').map((value) => trimSlash(value.trim())).filter(Boolean);
    return listed?.length ? listed : [this.apiUrl];
  }

  /**
   * DATA_DIR as a full path. A relative one is taken from the application's folder, not the
   * working directory, so the CLI run from elsewhere finds the service's database instead of
   * creating a new empty one.
   */
  get dataDir() {
    return resolve(APP_ROOT, this.DATA_DIR);
  }

  get apiUrl() {
    return trimSlash(this.API_URL ?? this.localUrl);
  }

  get frontendUrl() {
    return trimSlash(this.FRONTEND_URL ?? this.localUrl);
  }

  /** REGISTRATION_SCOPES as a list. */
  get registrationScopes(): string[] {
    return this.REGISTRATION_SCOPES.split(' ');
  }

  get identityUrl() {
    return trimSlash(this.IDENTITY_URL ?? this.localUrl);
  }

  private get localUrl() {
    return `http://localhost:${this.PORT}`;
  }
}

export class InvalidConfigError extends StartupRefusal {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
  }
}

/** How a bad value is quoted in its error: a secret never is, a URL that may hold a password is without it. */
function quoted(key: string, value: string | undefined): string {
  if (value === undefined) return 'nothing';
  if (key === 'KEYS_ENCRYPTION_KEY') return `a value of ${value.length} characters`;
  if (key === 'DATABASE_URL') return JSON.stringify(withoutPassword(value));
  return JSON.stringify(value);
}

/** Read on every token check: the usual URL, without a trailing slash, skips the regular expression. */
const trimSlash = (url: string) => (url.endsWith('/') ? url.replace(/\/+$/, '') : url);

function isAbsoluteUrlWithoutFragment(value: string): boolean {
  try {
    return new URL(value) !== null && !value.includes('#');
  } catch {
    return false;
  }
}

/** Names Fastify's proxy-addr accepts for ranges of addresses. */
const NAMED_PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** TRUST_PROXY as Fastify reads it: true, false, a hop count, or addresses, CIDR ranges and named ranges. */
function isTrustProxySetting(value: string): boolean {
  if (/^(true|false|\d+)$/.test(value)) return true;
  const entries = value.split(',').map((entry) => entry.trim()).filter(Boolean);
  return entries.length > 0 && entries.every((entry) => NAMED_PROXY_RANGES.has(entry) || ipaddr.isValid(entry) || isCidr(entry));
}

function isCidr(entry: string): boolean {
  try {
    ipaddr.parseCIDR(entry);
    return true;
  } catch {
    return false;
  }
}

/** Validates raw variables (process.env or a test's overrides); empty strings count as unset. */
export function loadEnv(source: Record<string, string | undefined>): Env {
  const raw = Object.fromEntries(
    Object.entries(source).filter(([key, value]) => value !== undefined && value !== '' && envKeys().has(key)),
  );
  const env = plainToInstance(Env, raw, { enableImplicitConversion: true, exposeDefaultValues: true });
  const problems = validateSync(env, { forbidUnknownValues: false, stopAtFirstError: true }).map(
    (error) => `Invalid configuration: ${Object.values(error.constraints ?? {}).join('; ')} (got ${quoted(error.property, source[error.property])})`,
  );
  if ((env.TLS_CERT_FILE === undefined) !== (env.TLS_KEY_FILE === undefined)) {
    problems.push('Invalid configuration: TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  const notResource = env.ALLOWED_RESOURCES?.split(',').map((value) => value.trim()).find((value) => value !== '' && !isAbsoluteUrlWithoutFragment(value));
  if (notResource !== undefined) {
    problems.push(`Invalid configuration: ALLOWED_RESOURCES must list absolute URLs without a fragment (got ${JSON.stringify(notResource)})`);
  }
  if (!isTrustProxySetting(env.TRUST_PROXY)) {
    problems.push(`Invalid configuration: TRUST_PROXY must be true, false, a hop count, or comma-separated addresses/CIDRs (got ${JSON.stringify(env.TRUST_PROXY)})`);
  }
  const notAddress = metricsAllowListProblem(env.METRICS_ALLOWED_CIDRS);
  if (notAddress !== undefined) {
    problems.push(`Invalid configuration: METRICS_ALLOWED_CIDRS: ${notAddress} (got ${JSON.stringify(env.METRICS_ALLOWED_CIDRS)})`);
  }
  const providerTimeoutProblem = fitProviderTimeout(env, raw.IDP_HTTP_TIMEOUT_MS !== undefined);
  if (providerTimeoutProblem !== undefined) problems.push(providerTimeoutProblem);
  if (env.APP_ENV === 'production' && env.KEYS_ENCRYPTION_KEY === undefined) {
    problems.push('Invalid configuration: KEYS_ENCRYPTION_KEY must be set with APP_ENV=production (private signing keys are encrypted at rest with it)');
  }
  if (problems.length > 0) throw new InvalidConfigError(problems);
  return env;
}

/**
 * A call to an identity provider is made while a request waits, and stops at that request's
 * deadline: a provider timeout as long as REQUEST_TIMEOUT_MS could never be waited out, so it is
 * refused when set, and the default shrinks to half a shorter deadline.
 */
function fitProviderTimeout(env: Env, set: boolean): string | undefined {
  const [provider, request] = [env.IDP_HTTP_TIMEOUT_MS, env.REQUEST_TIMEOUT_MS];
  if (!Number.isInteger(provider) || !Number.isInteger(request)) return undefined; // refused above already
  if (!set) {
    env.IDP_HTTP_TIMEOUT_MS = Math.min(provider, Math.floor(request / 2));
    return undefined;
  }
  if (provider < request) return undefined;
  return `Invalid configuration: IDP_HTTP_TIMEOUT_MS (${provider}) must be less than REQUEST_TIMEOUT_MS (${request}): a call to an identity provider is part of a request, which is answered 503 at REQUEST_TIMEOUT_MS`;
}

function metricsAllowListProblem(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    parseAddressAllowList(value);
    return undefined;
  } catch (error) {
    if (!(error instanceof InvalidAllowListEntry)) throw error;
    return error.message;
  }
}

/** The variable names, read from the decorators above so the list cannot drift. */
const envKeys = () =>
  new Set(getMetadataStorage().getTargetValidationMetadatas(Env, '', false, false).map((meta) => meta.propertyName));

/** The process environment, after reading `.env` when present (variables already set win). */
export function loadProcessEnv(): Env {
  return loadEnvWithFile(process.env);
}

/**
 * `variables` after reading `.env` in `folder` (the working directory when absent), when it is
 * there; variables already set win. The process environment takes the file in (Node's own
 * reader), so the processes it starts see it too; other variables (a test's) are left as given.
 */
export function loadEnvWithFile(variables: Record<string, string | undefined>, folder?: string): Env {
  const file = folder === undefined ? '.env' : join(folder, '.env');
  if (!existsSync(file)) return loadEnv(variables);
  if (variables === process.env) {
    process.loadEnvFile(file);
    return loadEnv(process.env);
  }
  return loadEnv({ ...parseEnv(readFileSync(file, 'utf8')), ...variables });
}
