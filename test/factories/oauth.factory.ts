import { ClientsService } from '../../src/clients/clients.service.js';
import type { GrantType } from '../../src/clients/client.entity.js';
import { UsersService } from '../../src/users/users.service.js';
import type { TestApp } from '../setup/test-app.js';

let sequence = 0;

export interface TestClient {
  id: string;
  secret: string;
}

/** A registered client with a unique name (defaults: the helper flow's grants, no patterns). */
export async function createClient(
  app: TestApp,
  options: { grants?: GrantType[]; redirectPatterns?: string[]; scopes?: string[]; heartbeatInterval?: number } = {},
): Promise<TestClient> {
  const created = await app.get(ClientsService).create({ name: `client-${process.pid}-${++sequence}`, ...options });
  return { id: created.client_id, secret: created.client_secret };
}

/** A public client (token_endpoint_auth_method none): no secret, PKCE required; the helper flow's grants unless given. */
export async function createPublicClient(
  app: TestApp,
  options: { grants?: GrantType[]; redirectPatterns?: string[]; scopes?: string[]; postLogoutRedirectUris?: string[] } = {},
): Promise<{ id: string }> {
  const created = await app.get(ClientsService).create({ name: `public-client-${process.pid}-${++sequence}`, tokenEndpointAuthMethod: 'none', ...options });
  return { id: created.client_id };
}

/** A portal user; the password is returned for the login form. */
export async function createUser(app: TestApp, username = `user-${process.pid}-${++sequence}`, password = 'correct horse battery') {
  await app.get(UsersService).create({ username, password });
  return { username, password };
}
