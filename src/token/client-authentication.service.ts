import { Injectable } from '@nestjs/common';
import { type ClientEntity, isPublicClient } from '../clients/client.entity.js';
import { ClientsService } from '../clients/clients.service.js';
import type { Requester } from '../common/http/requester.js';
import { SecurityEvents } from '../common/logging/security-events.js';
import { invalidRequest, OAuthError } from '../oauth/oauth-error.js';
import type { OAuthParams } from '../oauth/oauth-params.js';

type PresentedCredentials =
  | { clientId: string; secret: string; method: 'client_secret_basic' | 'client_secret_post' }
  /** A client_id alone: a public client's way (RFC 6749 §2.3, token_endpoint_auth_method `none`). */
  | { clientId: string; method: 'none' };

/**
 * client_secret_basic and client_secret_post (RFC 6749 §2.3.1), exactly one per request, for
 * confidential clients; a public client names itself with `client_id` alone and sends no secret
 * (one sent for it is refused). A confidential client that sends no secret is refused as before.
 */
@Injectable()
export class ClientAuthenticationService {
  constructor(
    private readonly clients: ClientsService,
    private readonly events: SecurityEvents,
  ) {}

  /**
   * Any client: at the token endpoint, revocation (RFC 7009 §2.1: a public client identifies
   * itself) and device authorization (RFC 8628 §3.1, ditto).
   */
  async authenticate(authorization: string | undefined, params: OAuthParams, requester: Requester): Promise<ClientEntity> {
    const credentials = presentedCredentials(authorization, params);
    if (credentials.method === 'none') return this.identifyPublic(credentials.clientId, requester);
    const checked = await this.clients.checkSecret(credentials.clientId, credentials.secret);
    if ('refused' in checked) {
      const basic = credentials.method === 'client_secret_basic';
      this.events.emit('client.refused', { reason: checked.refused, clientId: credentials.clientId.slice(0, 200) }, requester);
      const description = checked.refused === 'public_client_sent_secret' ? 'a public client sends no client secret: client_id alone identifies it' : 'client authentication failed';
      throw new OAuthError('invalid_client', description, { basicChallenge: basic });
    }
    return checked.client;
  }

  /**
   * Confidential clients only, for introspection: RFC 7662 §2.1 requires the caller to be
   * authenticated, and a public client's client_id proves nothing (anyone can send it).
   */
  async authenticateConfidential(authorization: string | undefined, params: OAuthParams, requester: Requester): Promise<ClientEntity> {
    const client = await this.authenticate(authorization, params, requester);
    if (isPublicClient(client)) {
      this.events.emit('client.refused', { reason: 'public_client_not_allowed', clientId: client.id }, requester);
      throw new OAuthError('invalid_client', 'a public client cannot authenticate, which this endpoint requires');
    }
    return client;
  }

  /** A client_id without a secret: a public client's, or a confidential client's that forgot its secret (refused as it always was). */
  private async identifyPublic(clientId: string, requester: Requester): Promise<ClientEntity> {
    const checked = await this.clients.checkPublic(clientId);
    if ('client' in checked) return checked.client;
    // A confidential (or unknown) client without a secret is refused as it always was: no event, as nothing was tried.
    if (checked.refused !== 'disabled_client') throw new OAuthError('invalid_client', 'client authentication is required');
    this.events.emit('client.refused', { reason: checked.refused, clientId: clientId.slice(0, 200) }, requester);
    throw new OAuthError('invalid_client', 'client authentication failed');
  }
}

function presentedCredentials(authorization: string | undefined, params: OAuthParams): PresentedCredentials {
  const bodySecret = params.get('client_secret');
  const bodyId = params.get('client_id');
  if (authorization !== undefined) {
    const basic = parseBasic(authorization);
    if (bodySecret !== undefined) throw invalidRequest('client credentials were sent both in the Authorization header and in the body');
    if (bodyId !== undefined && bodyId !== basic.clientId) throw invalidRequest('client_id does not match the Authorization header');
    return { ...basic, method: 'client_secret_basic' };
  }
  if (bodyId === undefined) throw new OAuthError('invalid_client', 'client authentication is required');
  if (bodySecret === undefined) return { clientId: bodyId, method: 'none' };
  return { clientId: bodyId, secret: bodySecret, method: 'client_secret_post' };
}

/** Basic credentials are form-urlencoded before base64 (RFC 6749 §2.3.1). */
function parseBasic(header: string): { clientId: string; secret: string } {
  const match = /^Basic ([A-Za-z0-9+/]+={0,2})$/i.exec(header.trim());
  const decoded = match ? Buffer.from(match[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new OAuthError('invalid_client', 'malformed HTTP Basic credentials', { basicChallenge: true });
  try {
    return { clientId: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    throw new OAuthError('invalid_client', 'malformed HTTP Basic credentials', { basicChallenge: true });
  }
}

const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, ' '));
