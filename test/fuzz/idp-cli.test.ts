import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestingModule } from '@nestjs/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/common/errors/app-error.js';
import { IdentityProvidersModule } from '../../src/identity-providers/identity-providers.module.js';
import { IdentityProvidersService, type NewIdentityProvider } from '../../src/identity-providers/identity-providers.service.js';
import { isLoopback } from '../../src/identity-providers/upstream-clients.service.js';
import { startTestingModule } from '../factories/testing-module.js';
import { createTestDatabase, query } from '../setup/database.js';
import { freePort } from '../setup/free-port.js';
import { runCli } from '../setup/processes.js';
import { startUpstreamProvider, type UpstreamProvider } from '../setup/upstream/upstream-provider.js';
import { anyText, controlChar, fieldValue } from './support/arbitraries.js';
import { brief, expectProcessAlive, FUZZ_RUNS, FuzzSession, TEST_TIMEOUT_MS } from './support/fuzz.js';

/**
 * idp:create's inputs (name, issuer, client id, display name, scopes, mode, client secret), each
 * a real value or a hostile one, against a real upstream provider. Through the service, as the
 * command calls it: every input is registered, or refused with an AppError of one line (the CLI
 * prints `error: …` and exits 1), never another error; a refused one stores nothing, and no
 * message holds the secret. A few of them through the built CLI too (a run costs about a second):
 * exit 0, or exit 1 with one `error:` line, never a stack trace.
 */

const KEK = randomBytes(32).toString('hex');
const FRONTEND_URL = 'https://connect.example.com';
/** Inputs sent through the built CLI, whatever FUZZ_RUNS says. */
const CLI_RUNS = 6;

const session = new FuzzSession('idp-cli');
let databaseUrl: string;
let upstream: UpstreamProvider;
let closedPort: number;
let app: TestingModule;
let providers: IdentityProvidersService;
let cwd: string;

beforeAll(async () => {
  [databaseUrl, upstream, closedPort, cwd] = await Promise.all([
    createTestDatabase(),
    startUpstreamProvider(),
    freePort(),
    mkdtemp(join(tmpdir(), 'voyage-connect-idp-fuzz-')),
  ]);
  app = await startTestingModule(databaseUrl, IdentityProvidersModule, { KEYS_ENCRYPTION_KEY: KEK, FRONTEND_URL, IDP_HTTP_TIMEOUT_MS: '2000' });
  providers = app.get(IdentityProvidersService);
});
afterAll(async () => {
  await session.summarize();
  await app?.close();
  await upstream?.stop();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

interface Input {
  provider: NewIdentityProvider;
  secret: string | null;
}

/** Whether discovery would leave this machine: such an issuer is never generated (the suite stays offline). */
function leavesLoopback(issuer: string): boolean {
  if (!URL.canParse(issuer)) return false;
  const url = new URL(issuer);
  return url.protocol === 'https:' && !isLoopback(url);
}

/**
 * The CLI decodes its arguments and stdin from UTF-8, so what reaches the service never holds a
 * lone surrogate (half of a UTF-16 pair): each one becomes U+FFFD first, as here.
 */
const wellFormed = (value: unknown): unknown => (typeof value === 'string' ? Buffer.from(value, 'utf8').toString('utf8') : Array.isArray(value) ? value.map(wellFormed) : value);

const validName = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,62}$/);
const FIELDS = ['name', 'issuer', 'clientId', 'displayName', 'scopes', 'mode', 'secret'] as const;
type Field = (typeof FIELDS)[number];

/** Valid values for every field, then up to three fields changed to hostile ones (which fields: the shape). */
function inputs(): fc.Arbitrary<Input & { changed: Field[] }> {
  const valid = {
    name: validName,
    issuer: fc.constant(upstream.issuer),
    clientId: fc.constantFrom('voyage-connect', 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d'),
    displayName: fc.option(fc.constantFrom('Fleet account', 'Schiff & Crew — Anmeldung'), { nil: undefined }),
    scopes: fc.option(fc.subarray(['openid', 'profile', 'email', 'offline_access', 'groups'], { minLength: 1 }), { nil: undefined }),
    mode: fc.option(fc.constantFrom('broker', 'relay'), { nil: undefined }),
    secret: fc.oneof(fc.constant(null), fc.constant(''), fc.constant(`s3cret-${randomBytes(12).toString('hex')}`)),
  };
  const hostile = {
    name: fc.oneof(
      fc.constantFrom('local', 'Corp', '-corp', '_corp', 'a'.repeat(64), 'corp.example', 'cörp', 'corp/..', 'corp%2F'),
      fc.tuple(validName, controlChar).map(([value, char]) => value + char),
      anyText,
    ),
    issuer: fc
      .oneof(
        fc.webPath().map((path) => `${upstream.issuer}${path}`),
        fc.constantFrom(
          `http://127.0.0.1:${closedPort}`,
          `https://127.0.0.1:${closedPort}`,
          `http://[::1]:${closedPort}/realms/x`,
          `http://localhost:${upstream.port}`,
          `https://127.0.0.1:${upstream.port}`,
          `${upstream.issuer}?realm=fleet`,
          `${upstream.issuer}#top`,
          `http://user:pw@127.0.0.1:${upstream.port}`,
          'ftp://127.0.0.1/',
          'javascript:alert(1)',
          'http://[::1',
          '//127.0.0.1/',
        ),
        fc.webUrl({ validSchemes: ['http'] }),
        fieldValue(upstream.issuer),
      )
      .filter((text) => !leavesLoopback(text)),
    clientId: fieldValue('voyage-connect'),
    displayName: fieldValue('Fleet account'),
    scopes: fc.array(fc.oneof(fc.constantFrom('openid', 'profile'), anyText), { maxLength: 5 }),
    mode: fieldValue('broker', 'relay'),
    secret: fc.oneof(fieldValue('s3cret'), fc.string({ minLength: 995, maxLength: 1005 })),
  };
  return fc.tuple(fc.record(valid), fc.subarray([...FIELDS], { maxLength: 3 })).chain(([base, changed]) =>
    fc.record(Object.fromEntries(changed.map((field) => [field, hostile[field].map(wellFormed)]))).map((changes) => {
      const { secret, ...provider } = { ...base, ...changes } as typeof base;
      return { provider, secret, changed };
    }),
  );
}

const countProviders = async () => (await query<{ count: number }>(databaseUrl, 'SELECT count(*)::int AS count FROM identity_providers'))[0].count;

/** A message must not hold a secret given with the input (unless it is short enough to be a coincidence, or part of another field). */
function expectNoSecret(text: string, { provider, secret }: Input) {
  if (secret === null || secret.length < 12 || Object.values(provider).some((value) => JSON.stringify(value ?? '').includes(secret))) return;
  expect(text).not.toContain(secret);
}

const shapeOf = (changed: Field[]) => (changed.length === 0 ? 'valid' : `changed ${[...changed].sort().join('+')}`);

/** The file's figures (printed and written to results/ by the session): each input by its shape and outcome. */
function count(shape: string, outcome: string) {
  session.requests++;
  session.shapes.set(shape, (session.shapes.get(shape) ?? 0) + 1);
  session.statuses.set(outcome, (session.statuses.get(outcome) ?? 0) + 1);
}

describe('idp:create, fuzzed', () => {
  it(
    'registers an input or refuses it with one line, storing nothing and never saying the secret',
    async () => {
      await session.check(inputs(), async (input) => {
        const before = await countProviders();
        const result = await providers.create(input.provider, input.secret).then(
          (view) => ({ view }),
          (error: unknown) => ({ error }),
        );
        if ('error' in result) {
          // A refusal by the rules is an AppError; anything else is a bug the CLI would print as a bare message.
          if (!(result.error instanceof AppError)) throw new Error(`not a refusal but ${(result.error as Error)?.stack ?? String(result.error)}`);
          expect(result.error.message).not.toMatch(/[\r\n]/);
          expectNoSecret(result.error.message, input);
          expect(await countProviders()).toBe(before);
        } else {
          const { view } = result;
          expect(view.name).toBe(input.provider.name);
          expectNoSecret(JSON.stringify(view), input);
          expect(await countProviders()).toBe(before + 1);
          // What it printed is what was stored.
          const [stored] = await query(databaseUrl, 'SELECT name, issuer, client_id, display_name, scopes, mode FROM identity_providers WHERE name = $1', [view.name]);
          expect(stored).toStrictEqual({ name: view.name, issuer: view.issuer, client_id: view.client_id, display_name: view.display_name, scopes: view.scopes, mode: view.mode });
        }
        const outcome = 'error' in result ? (result.error as AppError).code : 'registered';
        count(`service × ${shapeOf(input.changed)}`, outcome);
        expectProcessAlive();
      });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'through the built CLI: exits 0 with the view, or 1 with one error line and never a stack trace',
    async () => {
      // The same seed draws the same first inputs as above: their names must be free again.
      await query(databaseUrl, 'DELETE FROM identity_providers');
      // An argument cannot hold NUL; each value goes as --flag=value, so one starting with "-" is still that option's.
      const cliInputs = inputs().filter(({ provider }) => !JSON.stringify(provider).includes('\\u0000'));
      await session.check(
        cliInputs,
        async (input) => {
          const { name, issuer, clientId, displayName, scopes, mode } = input.provider;
          const args = [
            'idp:create',
            `--name=${name}`,
            `--issuer=${issuer}`,
            `--client-id=${clientId}`,
            ...(displayName === undefined ? [] : [`--display-name=${displayName}`]),
            ...(scopes ?? []).map((scope) => `--scope=${scope}`),
            ...(mode === undefined ? [] : [`--mode=${mode}`]),
          ];
          const run = await runCli(args, {
            cwd,
            stdin: `${input.secret ?? ''}\n`,
            env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', KEYS_ENCRYPTION_KEY: KEK, FRONTEND_URL, IDP_HTTP_TIMEOUT_MS: '2000' },
          });
          const what = `${brief(args)} → ${run.code}\n${run.stderr}`;
          expect(run.signal, what).toBeNull();
          expect(run.stderr, what).not.toMatch(/\n\s+at /);
          if (run.code === 0) expect(JSON.parse(run.stdout), what).toMatchObject({ name });
          else expect(run, what).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/^error: [^\n]*\n$/) });
          expectNoSecret(run.stdout + run.stderr, input);
          count(`cli × ${shapeOf(input.changed)}`, run.code === 0 ? 'registered' : `exit ${run.code}`);
        },
        Math.min(CLI_RUNS, FUZZ_RUNS),
      );
    },
    TEST_TIMEOUT_MS,
  );
});
