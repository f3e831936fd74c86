import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createUser } from '../factories/oauth.factory.js';
import { signIn } from '../setup/browserless-login.js';
import { startTestApp, type TestApp } from '../setup/test-app.js';

const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
const EXAMPLE = fileURLToPath(new URL('../../examples/device-client.ts', import.meta.url));

/** Runs examples/device-client.ts until it has exchanged a code and refreshed once. */
function runExample(app: TestApp, client: { id: string; secret: string }, extraArgs: string[]) {
  const child = spawn(TSX, [EXAMPLE, '--api', app.baseUrl, '--refresh-margin', '3599', '--once', ...extraArgs], {
    env: { PATH: process.env.PATH, CLIENT_ID: client.id, CLIENT_SECRET: client.secret },
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const authorizeUrl = new Promise<string>((resolve) => {
    child.stdout.on('data', () => {
      const match = /(http:\/\/\S+\/sso\/authorize\?\S+)/.exec(output);
      if (match) resolve(match[1]);
    });
  });
  const exited = once(child, 'exit').then(([code]) => code);
  return { authorizeUrl, exited, output: () => output };
}

describe('examples/device-client.ts', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('signs in by polling, exchanges the code and refreshes before expiry', async () => {
    const client = await createClient(app);
    const user = await createUser(app);
    const example = runExample(app, client, []);
    expect((await signIn(await example.authorizeUrl, user)).status).toBe(200);
    expect(await example.exited).toBe(0);
    expect(example.output()).toMatch(/Signed in: exchanging the code for tokens\.[\s\S]*Access token for [\s\S]*Refreshed\./);
  }, 30_000);

  it('signs in through its own loopback callback', async () => {
    const client = await createClient(app, { redirectPatterns: ['http://127.0.0.0/8:*/callback'] });
    const user = await createUser(app);
    const example = runExample(app, client, ['--redirect']);
    const login = await signIn(await example.authorizeUrl, user);
    expect(login.status).toBe(302);
    // What the browser does next: follow the redirect to the device.
    expect((await fetch(login.headers.get('location')!)).status).toBe(200);
    expect(await example.exited).toBe(0);
    expect(example.output()).toContain('Refreshed.');
  });
});
