import type { DataSource, EntityManager } from 'typeorm';
import { describe, expect, it, vi } from 'vitest';
import type { ClientEntity } from '../../../src/clients/client.entity.js';
import type { SecurityEvents } from '../../../src/common/logging/security-events.js';
import { NO_DEADLINE } from '../../../src/common/http/request-deadlines.js';
import type { GrantRevocationsService } from '../../../src/grants/grant-revocations.service.js';
import type { RelayService } from '../../../src/identity-providers/relay/relay.service.js';
import type { AuthorizationCodeRow, AuthorizationCodesRepository } from '../../../src/codes/authorization-codes.repository.js';
import { AuthorizationCodeGrant, refusal } from '../../../src/token/grants/authorization-code.grant.js';
import { s256Challenge } from '../../../src/oauth/pkce.js';
import type { UserTokenIssuerService } from '../../../src/token/user-token-issuer.service.js';

const VERIFIER = 'v'.repeat(43);
const REDIRECT = 'https://rp.example/callback';
const REQUESTER = { address: '192.0.2.1', requestId: 'r1' } as never;
const CLIENT = { id: 'rp', scopes: [], tokenEndpointAuthMethod: 'client_secret_basic', idTokenSignedResponseAlg: 'RS256' } as unknown as ClientEntity;

/** An unspent code of CLIENT that nothing refuses: its user may be issued tokens, it has not expired, its binding matches. */
const redeemable = (changes: Partial<AuthorizationCodeRow> = {}): AuthorizationCodeRow => ({
  client_id: CLIENT.id,
  user_id: 'u1',
  redirect_url: REDIRECT,
  code_challenge: s256Challenge(VERIFIER),
  expired: false,
  consumed_at: null,
  grant_id: null,
  upstream_session_id: null,
  request: { scope: 'openid' },
  issued_at: new Date(),
  auth_time: new Date(),
  sid: null,
  user_issuable: true,
  ...changes,
});

/** The grant with its collaborators faked: `redeemed` is what the REDEEM statement answers, `locked` the code's row under the lock. */
function grantWith({ redeemed, locked }: { redeemed: Awaited<ReturnType<AuthorizationCodesRepository['redeem']>>; locked: AuthorizationCodeRow | undefined }) {
  const manager = {} as EntityManager;
  const dataSource = { transaction: (work: (manager: EntityManager) => Promise<unknown>) => work(manager) } as unknown as DataSource;
  const codes = { redeem: vi.fn(async () => redeemed), lock: vi.fn(async () => locked), markConsumed: vi.fn(async () => {}) };
  const revocations = { revoke: vi.fn(async (_: EntityManager, which: { grantId: string }) => [{ id: which.grantId, until: new Date() }]) };
  const tokens = {
    newRefreshToken: () => ({ value: 'refresh', hash: Buffer.from('hash'), lifetimeSeconds: 60 }),
    signing: vi.fn(async () => ({}) as never),
    respond: vi.fn(async () => ({ access_token: 'at', expires_in: 60, token_type: 'bearer' as const })),
    issue: vi.fn(async () => ({ access_token: 'at', expires_in: 60, token_type: 'bearer' as const })),
  };
  const relay = { redeem: vi.fn(async () => undefined), replay: vi.fn(async () => undefined) };
  const events = { emit: vi.fn() };
  const grant = new AuthorizationCodeGrant(
    dataSource,
    codes as unknown as AuthorizationCodesRepository,
    revocations as unknown as GrantRevocationsService,
    tokens as unknown as UserTokenIssuerService,
    events as unknown as SecurityEvents,
    relay as unknown as RelayService,
  );
  const exchange = (params: Record<string, string> = { code: 'the-code', code_verifier: VERIFIER, redirect_uri: REDIRECT }) =>
    grant.handle(new Map(Object.entries(params)), CLIENT, NO_DEADLINE, REQUESTER);
  return { exchange, codes, revocations, tokens };
}

describe('AuthorizationCodeGrant: one issuing path', () => {
  it('answers with the tokens of the grant the REDEEM statement issued', async () => {
    const { exchange, tokens, codes } = grantWith({ redeemed: { user_id: 'u1', request: { scope: 'openid' } } as never, locked: undefined });
    await expect(exchange()).resolves.toMatchObject({ access_token: 'at' });
    expect(tokens.respond).toHaveBeenCalledOnce();
    expect(codes.lock).not.toHaveBeenCalled();
  });

  it('never issues on the locked path, even for a code nothing refuses: it answers try again and leaves the code unspent', async () => {
    const { exchange, tokens, codes } = grantWith({ redeemed: undefined, locked: redeemable() });
    await expect(exchange()).rejects.toMatchObject({ error: 'temporarily_unavailable' });
    expect(tokens.issue).not.toHaveBeenCalled();
    expect(tokens.respond).not.toHaveBeenCalled();
    expect(codes.markConsumed).not.toHaveBeenCalled();
  });

  it('names why a code is refused on the locked path and spends it, issuing nothing', async () => {
    const { exchange, tokens, codes } = grantWith({ redeemed: undefined, locked: redeemable({ expired: true }) });
    await expect(exchange()).rejects.toMatchObject({ error: 'invalid_grant', description: 'the authorization code has expired' });
    expect(codes.markConsumed).toHaveBeenCalledWith(expect.anything(), expect.any(Buffer), null);
    expect(tokens.issue).not.toHaveBeenCalled();
    expect(tokens.respond).not.toHaveBeenCalled();
  });

  it('revokes the grant of a replayed code on the locked path, issuing nothing', async () => {
    const { exchange, tokens, revocations } = grantWith({ redeemed: undefined, locked: redeemable({ consumed_at: new Date(), grant_id: 'g1' }) });
    await expect(exchange()).rejects.toMatchObject({ error: 'invalid_grant', description: 'the authorization code was already used' });
    expect(revocations.revoke).toHaveBeenCalledWith(expect.anything(), { grantId: 'g1' });
    expect(tokens.issue).not.toHaveBeenCalled();
    expect(tokens.respond).not.toHaveBeenCalled();
  });
});

describe('refusal (why the locked path refuses an unspent code)', () => {
  const check = (changes: Partial<AuthorizationCodeRow>, verifier: string | undefined, redirectUri: string | undefined, pkceRequired = false) =>
    refusal(redeemable(changes), verifier, redirectUri, pkceRequired);

  it.each([
    ['a signed-out or disabled user', { user_issuable: false }, VERIFIER, REDIRECT, /signed out or disabled/],
    ['an expired code', { expired: true }, VERIFIER, REDIRECT, /has expired/],
    ['a standard request without its redirect_uri', {}, VERIFIER, undefined, /redirect_uri is required/],
    ['a missing verifier', {}, undefined, REDIRECT, /code_verifier is required/],
    ['a verifier that does not match', {}, 'w'.repeat(43), REDIRECT, /does not match the code challenge/],
    ['a verifier without a challenge', { code_challenge: null }, VERIFIER, REDIRECT, /had no code_challenge/],
    ['another redirect_uri', {}, VERIFIER, 'https://rp.example/other', /redirect_uri does not match/],
  ] as const)('names %s', (_, changes, verifier, redirectUri, reason) => {
    expect(check(changes, verifier, redirectUri)).toMatch(reason);
  });

  it("refuses a public client's code without a challenge", () => {
    expect(check({ code_challenge: null }, undefined, REDIRECT, true)).toMatch(/public client must use PKCE/);
  });

  it('finds nothing to refuse in a code REDEEM would redeem', () => {
    expect(check({}, VERIFIER, REDIRECT)).toBeNull();
    expect(check({ request: null, code_challenge: null }, undefined, undefined)).toBeNull();
  });
});
