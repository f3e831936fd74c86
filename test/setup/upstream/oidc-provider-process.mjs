// A real OpenID Connect provider (oidc-provider) in its own process, as the upstream identity
// provider of voyage-connect's tests: `node oidc-provider-process.mjs [PORT]` with its settings as
// JSON in UPSTREAM_PROVIDER_CONFIG:
//   { port, accounts: [{ sub, preferred_username, name, email, email_verified, password }],
//     clients: [{ client_id, client_secret?, redirect_uris, post_logout_redirect_uris?, token_endpoint_auth_method? }],
//     jwks?: { keys: [private JWK] }, ttl?: { AccessToken, IdToken, RefreshToken } (seconds),
//     rotateRefreshToken?: boolean, claimsInIdToken?: boolean, stateFile?: path, cookieKey?: string,
//     exitWithParent?: boolean (exit when stdin closes) }
// Prints {"ready":true,"issuer":…,"port":…} once listening; exits 0 on SIGTERM.
// Beside OIDC, tests get `POST /test/accounts/:sub/delete`, `POST /test/clients` (JSON metadata)
// and `POST /test/delays` ({ "/token": ms, … }: requests to those paths wait that long first).
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname } from 'node:path';
import Provider from 'oidc-provider';
import { createFileStore, fileAdapter } from './file-adapter.mjs';
import { errorPage, handleInteraction, logoutPage, signedOutPage } from './interaction-pages.mjs';

const settings = JSON.parse(process.env.UPSTREAM_PROVIDER_CONFIG ?? '{}');
const port = Number(process.argv[2] ?? settings.port);
const issuer = `http://127.0.0.1:${port}`;
const ttl = { AccessToken: 300, IdToken: 300, RefreshToken: 3600, ...settings.ttl };

const store = createFileStore(settings.stateFile);
store.extra.deletedSubs ??= [];
const accounts = new Map((settings.accounts ?? []).filter((account) => !store.extra.deletedSubs.includes(account.sub)).map((account) => [account.sub, account]));

function withDefaults(client) {
  return {
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: client.client_secret ? 'client_secret_basic' : 'none',
    ...client,
  };
}

const provider = new Provider(issuer, {
  adapter: fileAdapter(store),
  clients: (settings.clients ?? []).map(withDefaults),
  ...(settings.jwks ? { jwks: settings.jwks } : {}),
  cookies: { keys: [settings.cookieKey ?? randomBytes(32).toString('base64url')] },
  async findAccount(_ctx, sub) {
    const account = accounts.get(sub);
    if (!account) return undefined;
    const { password: _password, ...claims } = account;
    return { accountId: sub, claims: async () => claims };
  },
  claims: { openid: ['sub'], profile: ['name', 'preferred_username'], email: ['email', 'email_verified'] },
  scopes: ['openid', 'offline_access'],
  // oidc-provider's default (true) puts scope claims only in userinfo when an access token is issued
  // (OpenID Connect Core §5.4); many providers also put them in the ID token.
  conformIdTokenClaims: !settings.claimsInIdToken,
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    revocation: {
      enabled: true,
      allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId,
    },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: async (ctx, form) => {
        ctx.type = 'html';
        ctx.body = logoutPage(form);
      },
      postLogoutSuccessSource: async (ctx) => {
        ctx.type = 'html';
        ctx.body = signedOutPage();
      },
    },
  },
  responseTypes: ['code'],
  pkce: { required: () => true },
  // A refresh token for every client allowed the refresh_token grant, offline_access asked or not
  // (the default issues one only with offline_access, which a prompt other than consent drops).
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: settings.rotateRefreshToken ?? true,
  ttl: { ...ttl, AuthorizationCode: 60, Interaction: 600, Session: 24 * 3600, Grant: 14 * 24 * 3600 },
  clientBasedCORS: () => false,
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = errorPage(out);
  },
});

/** Milliseconds requests to each path wait before this provider starts on them (POST /test/delays). */
let delays = {};

/**
 * Holds a request for its path's delay: true when its client went away meanwhile, and this
 * provider never starts on it (as a provider does with a request still queued in front of it).
 */
async function heldUntilGone(request, response) {
  const delay = delays[new URL(request.url, issuer).pathname];
  if (!delay) return false;
  let gone = false;
  response.once('close', () => (gone = true));
  await new Promise((resolve) => setTimeout(resolve, delay));
  return gone;
}

async function readJson(request) {
  let body = '';
  for await (const chunk of request) body += chunk;
  return JSON.parse(body || '{}');
}

/** The tests' control surface, not part of OpenID Connect. */
async function handleTestRoute(request, response) {
  const { pathname } = new URL(request.url, issuer);
  if (!pathname.startsWith('/test/') || request.method !== 'POST') return false;
  const deletion = /^\/test\/accounts\/([^/]+)\/delete$/.exec(pathname);
  if (deletion) {
    const sub = decodeURIComponent(deletion[1]);
    const existed = accounts.delete(sub);
    store.extra.deletedSubs.push(sub);
    store.save();
    response.writeHead(existed ? 204 : 404).end();
  } else if (pathname === '/test/delays') {
    delays = await readJson(request);
    response.writeHead(204).end();
  } else if (pathname === '/test/clients') {
    const client = withDefaults(await readJson(request));
    await new (fileAdapter(store))('Client').upsert(client.client_id, client);
    response.writeHead(201).end();
  } else {
    response.writeHead(404).end();
  }
  return true;
}

const oidc = provider.callback();
const server = createServer(async (request, response) => {
  try {
    if (await handleTestRoute(request, response)) return;
    if (await heldUntilGone(request, response)) return;
    if (await handleInteraction(provider, accounts, request, response)) return;
    oidc(request, response);
  } catch (error) {
    // An expired or unknown interaction (no cookie, a stale uid) lands here, as a page.
    console.error(error);
    if (!response.headersSent) response.writeHead(400, { 'content-type': 'text/html; charset=utf-8' });
    response.end(errorPage({ error: error.name, error_description: error.message }));
  }
});

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ ready: true, issuer, port })}\n`);
});

function shutDown() {
  server.close(() => process.exit(0));
  server.closeAllConnections();
}
process.on('SIGTERM', shutDown);

// Started by a test: its end closes our stdin, so a test that dies before stopping us leaves no
// provider (and no state folder, which its launcher made for us alone) behind.
if (settings.exitWithParent) {
  process.stdin
    .on('close', () => {
      if (settings.stateFile) rmSync(dirname(settings.stateFile), { recursive: true, force: true });
      shutDown();
    })
    .resume();
}
