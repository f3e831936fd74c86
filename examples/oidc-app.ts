/**
 * Example app: signs a user in with OpenID Connect through voyage-connect, using openid-client (an
 * OpenID Certified relying party library) exactly as a web or native app would: discovery, the
 * authorization code flow with PKCE, state and nonce, the ID token's checks, and userinfo.
 *
 *   CLIENT_ID=… CLIENT_SECRET=… npm run example:oidc -- [--api URL] [--port 8080]
 *
 * The client needs the redirect URI http://127.0.0.1:PORT/callback (a loopback pattern such as
 * http://127.0.0.0/8:*\/callback allows any port). The app prints a sign-in address; once the user
 * has signed in there, it prints the ID token's claims, the userinfo answer and the claims of the
 * ID token a refresh brings, and exits.
 */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import * as client from 'openid-client';

const { values } = parseArgs({ options: { api: { type: 'string' }, port: { type: 'string', default: '8080' } } });
const issuer = new URL(values.api ?? process.env.API_URL ?? `http://localhost:${process.env.PORT ?? 3000}`);
if (!process.env.CLIENT_ID) {
  console.error('Set CLIENT_ID (and CLIENT_SECRET, unless the client is public) to a client registered with client:create.');
  process.exit(2);
}
const redirectUri = `http://127.0.0.1:${values.port}/callback`;
// openid-client refuses plain http but for a service on this machine, during development.
const insecure = issuer.protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : {};

// What an app needs: discovery, the authorization URL, then the code at its redirect URI.
const config = await client.discovery(issuer, process.env.CLIENT_ID, process.env.CLIENT_SECRET, undefined, insecure);
const [verifier, state, nonce] = [client.randomPKCECodeVerifier(), client.randomState(), client.randomNonce()];
const challenge = await client.calculatePKCECodeChallenge(verifier);
const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid profile', state, nonce, code_challenge: challenge, code_challenge_method: 'S256' });
console.log(`Sign in at ${url.href}`);
async function signedIn(callback: URL) {
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
  const claims = tokens.claims()!;
  const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  return { claims, userinfo, refreshed: refreshed.claims()! };
}

const server = createServer((request, response) => {
  const callback = new URL(request.url ?? '/', redirectUri);
  if (callback.pathname !== '/callback') return void response.writeHead(404).end();
  signedIn(callback).then(
    ({ claims, userinfo, refreshed }) => {
      console.log('ID token claims:', JSON.stringify(claims));
      console.log('userinfo:', JSON.stringify(userinfo));
      console.log('refreshed ID token claims:', JSON.stringify(refreshed));
      response.end(`Signed in as ${String(claims.preferred_username ?? claims.sub)}. You can close this page.`);
      server.close();
    },
    (error: Error) => {
      console.error(`The sign-in failed: ${error.message}`);
      response.writeHead(400).end('The sign-in failed: see the app’s output.');
      server.close(() => process.exit(1));
    },
  );
});
server.listen(Number(values.port), '127.0.0.1');
