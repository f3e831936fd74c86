import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createClient, createUser } from '../../factories/oauth.factory.js';
import { LOOPBACK_PATTERN, userId } from '../../factories/token-flow.factory.js';
import { signIn } from '../../setup/browserless-login.js';
import { freePort } from '../../setup/free-port.js';
import { spawnExample } from '../../setup/run-example.js';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/oidc-app.ts', import.meta.url));

// The README's "Standard sign-in (OpenID Connect)": examples/oidc-app.ts, openid-client as the
// relying party, signs a user in and prints the ID token's claims and userinfo.
describe('the OpenID Connect example app', () => {
  let app: TestApp;

  beforeAll(async () => {
    app = await startTestApp({});
  });
  afterAll(() => app?.close());

  it('signs a user in with openid-client and prints the ID token claims and userinfo', async () => {
    const client = await createClient(app, { redirectPatterns: [LOOPBACK_PATTERN] });
    const user = await createUser(app);
    const child = spawnExample(EXAMPLE, ['--api', app.baseUrl, '--port', String(await freePort())], {
      env: { PATH: process.env.PATH, CLIENT_ID: client.id, CLIENT_SECRET: client.secret },
    });
    onTestFinished(() => {
      if (child.exitCode === null) child.kill();
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const signInAt = await new Promise<string>((resolve) => {
      child.stdout.on('data', () => {
        const match = /Sign in at (\S+)/.exec(output);
        if (match) resolve(match[1]);
      });
    });
    const login = await signIn(signInAt, user);
    expect(login.status).toBe(302);
    const page = await fetch(login.headers.get('location')!);
    expect(await page.text()).toBe(`Signed in as ${user.username}. You can close this page.`);
    const [code] = await once(child, 'exit');
    expect(code, output).toBe(0);
    const sub = await userId(app, user);
    expect(output).toContain(`"sub":"${sub}"`);
    expect(output).toMatch(new RegExp(`userinfo: \\{"sub":"${sub}","name":"${user.username}","preferred_username":"${user.username}"`));
    expect(output).toMatch(new RegExp(`refreshed ID token claims: \\{[^\\n]*"sub":"${sub}"`));
  }, 60_000);
});
